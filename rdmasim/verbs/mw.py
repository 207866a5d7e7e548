"""Memory windows (``ibv_alloc_mw``, ``ibv_bind_mw``, IBV_WR_BIND_MW), as Linux rxe has them."""

from __future__ import annotations

from typing import Any

from rdmasim.errors import PyverbsUserError
from rdmasim.verbs._checks import U32, U64, MRKey, instance, int_in
from rdmasim.verbs.device import CLOSE_MW, PD
from rdmasim.verbs.mr import MR

IBV_MW_TYPE_1 = 1
IBV_MW_TYPE_2 = 2


def inc_rkey(rkey: int) -> int:
    """``ibv_inc_rkey``: the next key of a window (the low 8 bits step, the index stays)."""
    rkey = int_in("inc_rkey rkey", rkey, 0, U32)
    return (rkey & 0xFFFFFF00) | ((rkey + 1) & 0xFF)


class MWBindInfo:
    """``struct ibv_mw_bind_info``: the region, the window's start address (an address inside the
    region, ``mr.buf`` + offset), its length (0 unbinds a type 1 window) and the access it grants
    (IBV_ACCESS_REMOTE_READ / _WRITE / _ATOMIC, IBV_ACCESS_ZERO_BASED)."""

    def __init__(self, mr: MR, addr: int, length: int, mw_access_flags: int) -> None:
        self.mr = instance("MWBindInfo mr", mr, MR)
        self.addr = int_in("MWBindInfo addr", addr, 0, U64)
        self.length = int_in("MWBindInfo length", length, 0, U64)
        self.mw_access_flags = int_in("MWBindInfo mw_access_flags", mw_access_flags, 0, U32)

    def __repr__(self) -> str:
        return (f"MWBindInfo(mr lkey=0x{self.mr.lkey:x}, addr=0x{self.addr:x}, length={self.length}, "
                f"access=0x{self.mw_access_flags:x})")


class MWBind:
    """``struct ibv_mw_bind`` for ``QP.bind_mw`` (type 1 windows): the bind info, the send flags
    (IBV_SEND_SIGNALED for a completion) and the work request id of its completion."""

    def __init__(self, mw_bind_info: MWBindInfo, send_flags: int, wr_id: int = 0) -> None:
        self.bind_info = instance("MWBind mw_bind_info", mw_bind_info, MWBindInfo)
        self.send_flags = int_in("MWBind send_flags", send_flags, 0, U32)
        self.wr_id = int_in("MWBind wr_id", wr_id, 0, U64)


class MW:
    """A memory window of type 1 or 2 on a PD (``ibv_alloc_mw``).

    ``rkey`` is the window's current key. A type 1 window is bound with ``QP.bind_mw(mw, bind)``
    (which advances ``rkey``); a type 2 window with a ``SendWR(opcode=IBV_WR_BIND_MW)`` after
    ``wr.set_bind_wr(mw, bind_info)`` (the new key is ``wr.rkey``), and is then bound to that QP
    only. Remote work under the window's key may touch only the window's bytes with its access.
    """

    _close_rank = CLOSE_MW

    def __init__(self, pd: PD, mw_type: int) -> None:
        instance("MW pd", pd, PD)
        pd._check_open("MW")
        mw_type = int_in("MW type", mw_type, 0, U32)
        self.pd = pd
        self.type = mw_type
        self._host = pd.ctx.host
        self._index, rkey = self._host.sim._core.mw_alloc(self._host.index, pd.handle, mw_type)
        self.rkey: int = MRKey(rkey, self._host.sim)
        self._closed = False
        pd._children.add(self)

    @property
    def handle(self) -> int:
        """The window's handle on its device."""
        return int(self._index)

    def close(self) -> None:
        """``ibv_dealloc_mw``: the window's key stops working at once. Closing twice does nothing."""
        if not self._closed:
            self._host.sim._core.mw_dealloc(self._host.index, self._index)
            self._closed = True
            self.pd._children.discard(self)

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise PyverbsUserError(f"{what}: {self!r} is deallocated")

    def __enter__(self) -> MW:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MW(type={self.type}, rkey=0x{int(self.rkey):x}, closed={self._closed})"
