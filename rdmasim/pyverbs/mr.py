"""``pyverbs.mr``: memory regions; ``write`` also takes a str, ``rereg`` re-registers."""

from __future__ import annotations

import ctypes
import errno
from typing import Any

import numpy as np

from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.pyverbs import mem_alloc
from rdmasim.pyverbs._unsupported import unsupported
from rdmasim.verbs import mr as _mr
from rdmasim.verbs import mw as _mw
from rdmasim.verbs._checks import U32, U64, instance, int_in
from rdmasim.verbs.device import PD
from rdmasim.verbs.mw import MWBind, MWBindInfo

__all__ = ["DMMR", "MR", "MW", "DmaBufMR", "MWBind", "MWBindInfo"]

# ibv_rereg_mr flags (verbs.h enum ibv_rereg_mr_flags)
IBV_REREG_MR_CHANGE_TRANSLATION = 1
IBV_REREG_MR_CHANGE_PD = 2
IBV_REREG_MR_CHANGE_ACCESS = 4
_REREG_FLAGS = IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS


# IBV_ACCESS_OPTIONAL_RANGE (verbs.h): optional access bits, e.g. IBV_ACCESS_RELAXED_ORDERING.
# ibv_reg_mr(3): "optional flags ... if not supported, they are ignored"; the device has none.
IBV_ACCESS_OPTIONAL_RANGE = 0x3FF00000


def _optional_dropped(access: Any) -> Any:
    """``access`` without the optional bits when it is an integer; anything else (a bool, a
    float) as given, for the MR's own check to refuse by name."""
    if isinstance(access, (int, np.integer)) and not isinstance(access, bool):
        return int(access) & ~IBV_ACCESS_OPTIONAL_RANGE
    return access


_ON_DEMAND = 1 << 6  # IBV_ACCESS_ON_DEMAND


class MR(_mr.MR):
    """``MR(pd, length, access)``; also ``MR(pd, access=..., buffer=buf)`` (rdmasim's own).

    ``address=`` registers ``length`` bytes of process memory at that address, when the memory
    came from :mod:`rdmasim.pyverbs.mem_alloc` (``posix_memalign``, ``malloc``, ``mmap``): the
    device maps it to a buffer, so the MR's bytes are that memory. Any other address is EFAULT,
    as ``ibv_reg_mr`` answers for memory it cannot pin. As for every emulated MR, ``buf`` is the
    device's address of the region (use it in SGEs), not the process address.

    Optional access bits (``IBV_ACCESS_OPTIONAL_RANGE``, e.g. IBV_ACCESS_RELAXED_ORDERING) are
    ignored, as ibv_reg_mr does on a device that does not support them."""

    def __init__(self, pd: PD, length: int | None = None, access: int = 0, address: Any = None,
                 implicit: bool = False, buffer: Any = None, **kwargs: Any) -> None:
        if kwargs:
            raise PyverbsUserError(f"MR: unsupported arguments {sorted(kwargs)}")
        if implicit:
            raise PyverbsRDMAError("MR implicit=True: implicit ODP MRs are not supported (rxe has "
                                   "ODP without IBV_ODP_SUPPORT_IMPLICIT)", errno.EOPNOTSUPP)
        self._block: int | None = None
        if address is not None:
            if buffer is not None:
                raise PyverbsUserError("MR: give address= or buffer=, not both")
            buffer, self._block = _mapped_memory(address, length)
        core = pd.ctx.host.sim._core
        if buffer is None and getattr(core, "remote", False) and isinstance(length, int) and length > 0:
            buffer = core.mem.zeros(length)  # memory the fabric daemon maps too
        try:
            super().__init__(pd, length, _optional_dropped(access), buffer)
        except PyverbsRDMAError as exc:  # pyverbs' message for a refused ibv_reg_mr
            msg = str(exc).rsplit(". Errno:", 1)[0]
            raise PyverbsRDMAError(f"Failed to register a MR: {msg}", exc.error_code) from None
        if self._block is not None:
            mem_alloc._hold(self._block, self, bool(self.access & _ON_DEMAND))
        mem_alloc._track_mr(self)

    def close(self) -> None:
        """Deregister the region (``ibv_dereg_mr``); memory from ``address=`` may then be freed."""
        super().close()
        if self._closed and self._block is not None:
            mem_alloc._release(self._block, self)
            self._block = None

    @property
    def handle(self) -> int:
        """The region's handle on its device (what ``ibv_import_mr`` would take)."""
        return int(self._index)

    def write(self, data: Any, length: int | None = None, offset: int = 0) -> None:  # type: ignore[override]
        """Copy ``data`` (bytes-like, or a str as its UTF-8 bytes, as pyverbs) into the region."""
        if isinstance(data, str):
            data = data.encode()
        super().write(data, length, offset)

    def rereg(self, flags: int, pd: PD | None = None, addr: int = 0, length: int = 0,
              access: int = 0) -> None:
        """``ibv_rereg_mr``: change the PD (IBV_REREG_MR_CHANGE_PD) and/or the access
        (IBV_REREG_MR_CHANGE_ACCESS) in place, as rxe does: ``lkey`` stays, ``rkey`` is the lkey
        while remote access is granted (else 0). Changing the translation (the memory) is refused
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
        try:
            rkey = self._host.sim._core.mr_rereg(self._host.index, self._index, new_pd.handle,
                                                 _optional_dropped(new_access))
        except PyverbsRDMAError as exc:
            msg = str(exc).rsplit(". Errno:", 1)[0]
            raise PyverbsRDMAError(f"Failed to rereg MR: {msg}", exc.error_code) from None
        if new_pd is not self.pd:
            self.pd._children.discard(self)
            new_pd._children.add(self)
            self.pd = new_pd
        self.access = new_access
        self.rkey = _mr.MRKey(rkey, self._host.sim)


def _mapped_memory(address: Any, length: int | None) -> tuple[np.ndarray, int]:
    """A byte array over ``length`` bytes of process memory at ``address`` and the start of the
    mem_alloc block holding them; EFAULT when mem_alloc did not allocate them."""
    if isinstance(address, bool) or not isinstance(address, int):
        raise PyverbsUserError(f"MR address={address!r}: an int address (from rdmasim.pyverbs.mem_alloc)")
    if length is None:
        raise PyverbsUserError("MR address=...: give the length (bytes) to register")
    n = int_in("MR length", length, 1, U64)
    block = mem_alloc.block_of(address, n)
    if block is None:
        raise PyverbsRDMAError(
            f"Failed to register a MR: address=0x{address:x} length={n} is not memory allocated by "
            "rdmasim.pyverbs.mem_alloc (posix_memalign, malloc or mmap), so the emulated device cannot "
            "map it; allocate it there, or register a Python buffer with buffer=", errno.EFAULT)
    raw = (ctypes.c_uint8 * n).from_address(address)
    return np.frombuffer(raw, dtype=np.uint8), block[0]


class MW(_mw.MW):
    """``MW(pd, mw_type)`` (``ibv_alloc_mw``): a memory window of type 1 or 2, as rxe has them
    (rdmasim.verbs.mw); another type is refused with EINVAL, as ``ib_uverbs_alloc_mw`` does."""

    def __init__(self, pd: PD, mw_type: int) -> None:
        try:
            super().__init__(pd, mw_type)
        except PyverbsRDMAError as exc:
            msg = str(exc).rsplit(". Errno:", 1)[0]
            raise PyverbsRDMAError(f"Failed to allocate MW: {msg}", exc.error_code) from None


DMMR = unsupported("DMMR", "device memory is not supported (max_dm_size 0, as on rxe)", __name__)
DmaBufMR = unsupported("DmaBufMR", "dma-buf memory regions are not supported (nor by rxe)", __name__)
