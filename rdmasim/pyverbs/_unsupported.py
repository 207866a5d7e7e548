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


def unsupported(name: str, why: str, module: str, methods: tuple[str, ...] = (),
                base: type[Unsupported] = Unsupported) -> type[Unsupported]:
    """A subclass of ``base`` (:class:`Unsupported`) named ``name`` (in ``module``) that refuses
    with ``why``; ``methods`` are static methods of pyverbs' class (called on the class itself,
    as ``WqeDataSeg.sizeof()``), which refuse the same way."""

    def method(meth: str) -> staticmethod:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise PyverbsRDMAError(f"{name}.{meth}: {why}", errno.EOPNOTSUPP)

        return staticmethod(refuse)

    ns: dict[str, Any] = {"_why": why, "__module__": module, "__doc__": f"Not available: {why} (EOPNOTSUPP)."}
    ns.update({m: method(m) for m in methods})
    return type(name, (base,), ns)


def unsupported_module(module: str, why: str, names: tuple[str, ...],
                       methods: dict[str, tuple[str, ...]] | None = None) -> dict[str, type[Unsupported]]:
    """``{name: unsupported class}`` for each of ``names`` (``methods``: per class, its static
    methods), for a module of a feature the device lacks to ``globals().update()`` with."""
    return {n: unsupported(n, why, module, (methods or {}).get(n, ())) for n in names}
