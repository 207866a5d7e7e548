"""``pyverbs.base``: the base classes and the errno helper of pyverbs."""

from __future__ import annotations

import errno

from rdmasim.errors import PyverbsRDMAError


class PyverbsObject:
    """Base of every pyverbs object."""


class PyverbsCM(PyverbsObject):
    """Base of pyverbs objects that own a verbs resource (``close()``)."""


def PyverbsRDMAErrno(msg: str) -> PyverbsRDMAError:  # noqa: N802 (pyverbs' name)
    """A PyverbsRDMAError for ``msg`` with the errno of the failed call (EINVAL when none)."""
    return PyverbsRDMAError(msg, errno.EINVAL)


def inc_rkey(rkey: int) -> int:
    """The rkey with its low 8 bits (the key part) incremented, as ibv_inc_rkey."""
    return (rkey & 0xFFFFFF00) | ((rkey + 1) & 0xFF)
