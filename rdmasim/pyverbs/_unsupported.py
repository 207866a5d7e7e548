"""Classes of pyverbs features the emulated devices do not have.

Constructing one raises ``PyverbsRDMAError`` with errno EOPNOTSUPP, the answer a device without
the feature gives (rdma-core's tests turn that errno into a skip). They exist so that code which
imports the names, as rdma-core's test helpers do at module level, can be imported.
"""

from __future__ import annotations

import errno
from typing import Any

from rdmasim.errors import PyverbsRDMAError


class Unsupported:
    """Base of the classes of a feature the device lacks; ``_why`` says which and why."""

    _why = "not supported by the emulated device"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise PyverbsRDMAError(f"{type(self).__name__}: {self._why}", errno.EOPNOTSUPP)


def unsupported(name: str, why: str, module: str) -> type[Unsupported]:
    """A subclass of :class:`Unsupported` named ``name`` (in ``module``) that refuses with ``why``."""
    cls = type(name, (Unsupported,), {"_why": why, "__module__": module,
                                      "__doc__": f"Not available: {why} (EOPNOTSUPP)."})
    return cls
