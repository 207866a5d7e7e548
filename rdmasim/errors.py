"""Exceptions, shaped like pyverbs': a user error (bad argument on the Python side)
and an RDMA error (the verbs call failed, with the errno a real provider returns).

Data-path problems never raise: they arrive as work-completion statuses.
"""

from __future__ import annotations

import errno

from rdmasim import _core


class UserInputError(ValueError):
    """A file, key or command-line argument the user gave cannot be used; the message names it, the
    value and what is allowed. The ``rdmasim`` command shows it as one line and exits with status 2."""


class ResultsWriteError(OSError):
    """Results could not be written (a full disk, a folder that went away); the message names the
    folder, the file and what was kept. The ``rdmasim`` command shows it as one line (status 2)."""


class PyverbsError(Exception):
    """Base class of every rdmasim verbs error."""


class PyverbsUserError(PyverbsError, ValueError):
    """The call was malformed before it reached the simulated NIC (wrong type, missing object)."""


class PyverbsRDMAError(PyverbsError):
    """The simulated NIC refused the call, as ibv_* would with ``error_code`` (an errno)."""

    def __init__(self, msg: str, error_code: int = errno.EINVAL) -> None:
        super().__init__(f"{msg}. Errno: {error_code}, {errno.errorcode.get(error_code, '?')}")
        self.error_code = error_code


def _factory(code: int) -> type[PyverbsRDMAError]:
    class _E(PyverbsRDMAError):
        def __init__(self, msg: str) -> None:
            super().__init__(msg, code)

    _E.__name__ = _E.__qualname__ = "PyverbsRDMAError"
    return _E


# rs_err (csrc/include/rdmasim/sim.h) -> errno
_core._register_error_classes(
    {
        -1: _factory(errno.EINVAL),
        -2: _factory(errno.ENOMEM),
        -3: _factory(errno.EINVAL),
        -4: _factory(errno.EBUSY),
        -5: _factory(errno.EIO),
    }
)
