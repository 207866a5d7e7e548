"""``pyverbs.fork``: ``ibv_fork_init`` and ``ibv_is_fork_initialized``.

Registered memory of the emulated devices is the process's own memory, read and written by the
emulator in the same process, so a ``fork()`` needs no preparation: ``is_fork_initialized()``
answers ``IBV_FORK_UNNEEDED``, what libibverbs answers on a kernel with copy-on-fork for pinned
pages, and ``fork_init()`` succeeds with nothing to do.
"""

from __future__ import annotations

from rdmasim.pyverbs import libibverbs_enums as _e

__all__ = ["fork_init", "is_fork_initialized"]


def fork_init() -> None:
    """``ibv_fork_init``: nothing to prepare (see the module docs); never fails."""


def is_fork_initialized() -> int:
    """``ibv_is_fork_initialized``: ``IBV_FORK_UNNEEDED``."""
    return int(_e.IBV_FORK_UNNEEDED)
