"""``pyverbs.pyverbs_error``: the exception classes (the same classes as :mod:`rdmasim.errors`)."""

from rdmasim.errors import PyverbsError, PyverbsRDMAError, PyverbsUserError

__all__ = ["PyverbsError", "PyverbsRDMAError", "PyverbsUserError"]
