"""``pyverbs.mr``: memory regions; ``write`` also takes a str, ``rereg`` re-registers."""

from __future__ import annotations

import errno
from typing import Any

import numpy as np

from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.pyverbs._unsupported import unsupported
from rdmasim.verbs import mr as _mr
from rdmasim.verbs._checks import U32, instance, int_in
from rdmasim.verbs.device import PD

__all__ = ["DMMR", "MR", "MW", "DmaBufMR", "MWBind", "MWBindInfo"]

# ibv_rereg_mr flags (verbs.h enum ibv_rereg_mr_flags)
IBV_REREG_MR_CHANGE_TRANSLATION = 1
IBV_REREG_MR_CHANGE_PD = 2
IBV_REREG_MR_CHANGE_ACCESS = 4
_REREG_FLAGS = IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS


class MR(_mr.MR):
    """``MR(pd, length, access)``; also ``MR(pd, access=..., buffer=buf)`` (rdmasim's own)."""

    def __init__(self, pd: PD, length: int | None = None, access: int = 0, address: Any = None,
                 implicit: bool = False, buffer: Any = None, **kwargs: Any) -> None:
        if kwargs:
            raise PyverbsUserError(f"MR: unsupported arguments {sorted(kwargs)}")
        if implicit:
            raise PyverbsRDMAError("MR implicit=True: implicit ODP MRs are not emulated "
                                   "(Linux rxe has no ODP either)", errno.EOPNOTSUPP)
        if address is not None:
            raise PyverbsUserError(
                f"MR address={address!r}: a process address cannot be registered in the emulator; "
                "pass the memory itself as buffer= (a bytearray or numpy array)")
        try:
            super().__init__(pd, length, access, buffer)
        except PyverbsRDMAError as exc:  # pyverbs' message for a refused ibv_reg_mr
            msg = str(exc).rsplit(". Errno:", 1)[0]
            raise PyverbsRDMAError(f"Failed to register a MR: {msg}", exc.error_code) from None

    def write(self, data: Any, length: int | None = None, offset: int = 0) -> None:  # type: ignore[override]
        """Copy ``data`` (bytes-like, or a str as its UTF-8 bytes, as pyverbs) into the region."""
        if isinstance(data, str):
            data = data.encode()
        super().write(data, length, offset)

    def rereg(self, flags: int, pd: PD | None = None, addr: int = 0, length: int = 0,
              access: int = 0) -> None:
        """``ibv_rereg_mr``: change the PD (IBV_REREG_MR_CHANGE_PD) and/or the access
        (IBV_REREG_MR_CHANGE_ACCESS). The region is registered again, so ``lkey``/``rkey`` are
        read again afterwards (as pyverbs does). Changing the translation (the memory) is refused
        with EOPNOTSUPP, as rxe does."""
        flags = int_in("MR.rereg flags", flags, 0, U32)
        if flags & ~_REREG_FLAGS or flags == 0:
            raise PyverbsRDMAError(f"MR.rereg flags=0x{flags:x}: give IBV_REREG_MR_CHANGE_PD (2) and/or "
                                   "IBV_REREG_MR_CHANGE_ACCESS (4)", errno.EINVAL)
        if flags & IBV_REREG_MR_CHANGE_TRANSLATION:
            raise PyverbsRDMAError("MR.rereg: IBV_REREG_MR_CHANGE_TRANSLATION is not supported "
                                   "(rxe refuses it too)", errno.EOPNOTSUPP)
        if self._closed:
            raise PyverbsUserError(f"MR.rereg: {self!r} is deregistered")
        new_pd = self.pd
        if flags & IBV_REREG_MR_CHANGE_PD:
            new_pd = instance("MR.rereg pd", pd, PD)
            new_pd._check_open("MR.rereg")
            if new_pd.ctx.host is not self.pd.ctx.host:
                raise PyverbsRDMAError("MR.rereg: the new PD is on another device", errno.EINVAL)
        new_access = int_in("MR.rereg access", access, 0, U32) if flags & IBV_REREG_MR_CHANGE_ACCESS \
            else self.access
        array: np.ndarray = self._array
        self.close()
        _mr.MR.__init__(self, new_pd, None, new_access, array)


class MWBindInfo:
    """``struct ibv_mw_bind_info``."""

    def __init__(self, mr: MR, addr: int, length: int, mw_access_flags: int) -> None:
        self.mr, self.addr, self.length, self.mw_access_flags = mr, addr, length, mw_access_flags


class MW:
    """``ibv_alloc_mw``: memory windows are not supported by the device (``max_mw`` 0, as in
    rxe_param.h): EOPNOTSUPP, on which rdma-core's tests skip."""

    def __init__(self, pd: PD, mw_type: int) -> None:
        raise PyverbsRDMAError("Failed to allocate MW: the device has no memory windows (max_mw 0)",
                               errno.EOPNOTSUPP)


MWBind = unsupported("MWBind", "memory windows are not emulated (max_mw 0)", __name__)
DMMR = unsupported("DMMR", "device memory is not supported (max_dm_size 0, as on rxe)", __name__)
DmaBufMR = unsupported("DmaBufMR", "dma-buf memory regions are not supported (nor by rxe)", __name__)
