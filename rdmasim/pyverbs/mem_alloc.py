"""``pyverbs.mem_alloc``: the process-memory helpers of pyverbs (``posix_memalign``, ``free``,
``mmap``, ``munmap``, ``madvise``, ...), real calls into the C library through :mod:`ctypes`.
They return and take raw addresses (ints), as in pyverbs. The blocks they allocate are recorded,
so that ``MR(pd, length, access, address=addr)`` can register memory from here (the emulated
device maps it to a buffer); freeing or unmapping a block that an MR still registers is refused,
except under an on-demand-paging MR (``IBV_ACCESS_ON_DEMAND``), which does not pin its pages: the
block is released for the program at once and returned to the C library when the last such MR is
deregistered (until then the emulated NIC still reaches the old pages, where rxe would fault).
``madvise`` also takes an MR's ``buf`` (the device's address of the region, which is the process
address under pyverbs) and applies to the memory behind it.

Because the blocks are recorded, ``free`` and ``munmap`` take only what these functions handed
out: a pointer freed already, one inside a block, one from the other allocator (``free`` of an
``mmap`` block, ``munmap`` of a ``malloc`` block) or one never allocated here is refused with a
PyverbsUserError naming it, instead of reaching the C library (where glibc aborts the process on
a double or invalid free, and a stray pointer crashes it or corrupts the heap)."""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap as _mmap
import weakref
from typing import Any

from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.verbs._checks import U64, int_in

__all__ = ["MAP_ANONYMOUS_", "MAP_HUGETLB_", "MAP_PRIVATE_", "block_of", "free", "madvise", "malloc", "mmap",
           "munmap", "posix_memalign", "read32", "read64", "writebe32", "writebe64"]

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                       ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.malloc.restype = ctypes.c_void_p
_libc.malloc.argtypes = [ctypes.c_size_t]
_libc.free.argtypes = [ctypes.c_void_p]
_libc.posix_memalign.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_size_t]

MAP_ANONYMOUS_ = _mmap.MAP_ANONYMOUS
MAP_PRIVATE_ = _mmap.MAP_PRIVATE
MAP_HUGETLB_ = 0x40000  # linux mman-common.h
_MAP_FAILED = ctypes.c_void_p(-1).value
_MADV_DONTNEED = 4

# Blocks allocated here and not yet freed: start address -> [length, how, MRs registering it,
# on-demand-paging MRs registering it].
_blocks: dict[int, list] = {}
# Blocks the program released while ODP MRs still registered them: start -> [those MRs, the C
# library call that releases the memory once the last of them is deregistered].
_deferred: dict[int, list] = {}
# Every live MR of the namespace, for madvise of an MR's device address.
_mrs: weakref.WeakSet[Any] = weakref.WeakSet()
# Start addresses freed or unmapped here and not handed out again -> "freed" / "unmapped" (only
# to say so when one is released again; the oldest are forgotten beyond _RELEASED_MAX, and a
# forgotten one is still refused, as memory not allocated here).
_released: dict[int, str] = {}
_RELEASED_MAX = 1 << 16
_PAGE = _mmap.PAGESIZE


def _record(addr: int, length: int, how: str) -> int:
    _blocks[addr] = [length, how, set(), set()]
    _released.pop(addr, None)
    return addr


def _remember_released(addr: int, what: str) -> None:
    _released[addr] = what
    if len(_released) > _RELEASED_MAX:
        del _released[next(iter(_released))]


def block_of(addr: int, length: int) -> tuple[int, int, str] | None:
    """The block allocated here that holds ``[addr, addr + length)``: (start, length, how), or
    None when no such block is allocated. An ``mmap`` block holds the whole pages it maps (the
    kernel maps whole pages, whatever length was asked for)."""
    for start, (size, how, *_) in _blocks.items():
        extent = -(-size // _PAGE) * _PAGE if how == "mmap" else size
        if start <= addr and addr + length <= start + extent:
            return start, size, how
    return None


def _hold(start: int, mr: object, on_demand: bool = False) -> None:
    """An MR (an on-demand-paging one: ``on_demand``) registers memory of the block at
    ``start`` (until :func:`_release`)."""
    _blocks[start][3 if on_demand else 2].add(id(mr))


def _release(start: int, mr: object) -> None:
    entry = _blocks.get(start)
    if entry is not None:
        entry[2].discard(id(mr))
        entry[3].discard(id(mr))
    pending = _deferred.get(start)
    if pending is not None:
        pending[0].discard(id(mr))
        if not pending[0]:
            del _deferred[start]
            pending[1]()


def _track_mr(mr: Any) -> None:
    """A live MR (``buf``, ``length``, ``array``): :func:`madvise` of its device address."""
    _mrs.add(mr)


def _live_block(addr: int, what: str, kinds: tuple[str, ...]) -> list:
    """The record of the block that starts at ``addr``, allocated by one of ``kinds`` and not
    registered by an MR, for ``what`` (free or munmap) to release; else PyverbsUserError naming
    the pointer and why it cannot be released."""
    entry = _blocks.get(addr)
    call = f"{what}(0x{addr:x})"
    if entry is None:
        inside = block_of(addr, 1)
        if inside is not None:
            start, size, how = inside
            release = "munmap" if how == "mmap" else "free"
            raise PyverbsUserError(f"{call}: 0x{addr:x} is inside the block at 0x{start:x} ({size} bytes "
                                   f"from {how}), {addr - start} bytes in: release it with "
                                   f"{release}(0x{start:x})")
        if addr in _released:
            raise PyverbsUserError(f"{call}: 0x{addr:x} was already {_released[addr]}")
        allocators = "mmap" if what == "munmap" else "malloc or posix_memalign"
        verb = "mapped" if what == "munmap" else "allocated"
        raise PyverbsUserError(f"{call}: 0x{addr:x} was not {verb} by rdmasim.pyverbs.mem_alloc "
                               f"({allocators}); releasing it would corrupt or crash the process")
    if entry[1] not in kinds:
        other = "munmap" if entry[1] == "mmap" else "free"
        raise PyverbsUserError(f"{call}: the block is from {entry[1]}: release it with {other}")
    if entry[2]:
        raise PyverbsUserError(f"{call}: {len(entry[2])} MR(s) still register this memory; "
                               "close (deregister) them first (only on-demand-paging MRs let it go)")
    return entry


def mmap(addr: int = 0, length: int = 100, prot: int = _mmap.PROT_READ | _mmap.PROT_WRITE,
         flags: int = _mmap.MAP_PRIVATE | _mmap.MAP_ANONYMOUS, fd: int = 0, offset: int = 0) -> int:
    """``mmap(2)``: the address of the new mapping; MemoryError when it fails."""
    ptr = _libc.mmap(addr or None, length, prot, flags, fd, offset)
    if ptr is None or ptr == _MAP_FAILED:
        raise MemoryError(f"Failed to mmap memory (length={length}, errno {ctypes.get_errno()})")
    return _record(int(ptr), length, "mmap")


def madvise(addr: int, length: int, flags: int = _MADV_DONTNEED) -> None:
    """``madvise(2)``; PyverbsRDMAError with the errno when it fails. An address inside a live
    MR's device range (its ``buf``, which pyverbs programs pass) means the memory behind it."""
    from rdmasim.pyverbs import _devices

    addr = int_in("madvise addr", addr, 0, U64)
    length = int_in("madvise length", length, 0, U64)
    sim = _devices._REG.sim  # MRs of the devices' current simulation only
    hits = {int(mr.array.ctypes.data) + (addr - mr.buf) for mr in list(_mrs)
            if not getattr(mr, "_closed", True) and mr._host.sim is sim
            and mr.buf <= addr and addr + length <= mr.buf + mr.length}
    if len(hits) > 1:
        raise PyverbsUserError(f"madvise(0x{addr:x}, {length}): the range is in MRs of several devices "
                               "(each device numbers its regions from the same start); give the "
                               "process address of the memory instead")
    if hits:
        addr = hits.pop()
    if _libc.madvise(addr, length, flags):
        err = ctypes.get_errno()
        raise PyverbsRDMAError(f"Failed to madvise memory at 0x{addr:x} length {length}", err)


def munmap(addr: int, length: int) -> None:
    """``munmap(2)`` of a mapping from :func:`mmap`, from its start address (its first
    ``length`` bytes, rounded up to pages; the rest stays mapped); MemoryError when it fails.
    Refused with PyverbsUserError while an MR that pins its pages registers the mapping (under
    on-demand-paging MRs only, the unmapping is done when the last is deregistered), and for any
    other address or a length beyond the mapping."""
    addr = int_in("munmap addr", addr, 0, U64)
    length = int_in("munmap length", length, 0, U64)
    entry = _live_block(addr, "munmap", ("mmap",))
    mapped = -(-entry[0] // _PAGE) * _PAGE
    if length > mapped:
        raise PyverbsUserError(f"munmap(0x{addr:x}): length {length} is beyond the {entry[0]}-byte "
                               f"mapping at 0x{addr:x} (its pages end at {mapped} bytes)")
    if entry[3]:  # ODP MRs register it: unmapped once the last of them is deregistered
        _deferred[addr] = [set(entry[3]), lambda: _libc.munmap(addr, length)]
    elif _libc.munmap(addr, length):
        raise MemoryError(f"Failed to munmap 0x{addr:x} length {length}")
    gone = -(-length // _PAGE) * _PAGE
    del _blocks[addr]
    _remember_released(addr, "unmapped")
    if gone < entry[0]:  # the tail pages stay mapped: still a block, from their start
        _record(addr + gone, entry[0] - gone, "mmap")


def malloc(size: int) -> int:
    """``malloc(3)``: the address of the block; MemoryError when it fails."""
    ptr = _libc.malloc(size)
    if not ptr:
        raise MemoryError(f"Failed to allocate {size} bytes")
    return _record(int(ptr), size, "malloc")


def posix_memalign(size: int, alignment: int = 8) -> int:
    """``posix_memalign(3)`` then zero the block: its address, a multiple of ``alignment``."""
    ptr = ctypes.c_void_p()
    ret = _libc.posix_memalign(ctypes.byref(ptr), alignment, size)
    if ret or not ptr.value:
        raise MemoryError(f"Failed to allocate {size} bytes aligned to {alignment} (error {ret})")
    ctypes.memset(ptr.value, 0, size)
    return _record(int(ptr.value), size, "posix_memalign")


def free(ptr: int) -> None:
    """``free(3)`` a block from :func:`malloc` or :func:`posix_memalign`, by the address they
    returned (``free(0)`` does nothing, as ``free(NULL)``). Refused with PyverbsUserError naming
    the pointer while an MR registers the block, and for a pointer freed already, inside a
    block, from :func:`mmap` or not allocated here."""
    ptr = int_in("free ptr", ptr, 0, U64)
    if ptr == 0:
        return
    entry = _live_block(ptr, "free", ("malloc", "posix_memalign"))
    del _blocks[ptr]
    _remember_released(ptr, "freed")
    if entry[3]:  # ODP MRs register it: freed once the last of them is deregistered
        _deferred[ptr] = [set(entry[3]), lambda: _libc.free(ptr)]
    else:
        _libc.free(ptr)


def writebe32(addr: int, val: int, offset: int = 0) -> None:
    """Store ``val`` big-endian as the ``offset``-th 32-bit word at ``addr``."""
    ctypes.memmove(addr + 4 * offset, val.to_bytes(4, "big"), 4)


def writebe64(addr: int, val: int, offset: int = 0) -> None:
    """Store ``val`` big-endian as the ``offset``-th 64-bit word at ``addr``."""
    ctypes.memmove(addr + 8 * offset, val.to_bytes(8, "big"), 8)


def read32(addr: int) -> int:
    """The native-endian 32-bit word at ``addr``."""
    return int(ctypes.c_uint32.from_address(addr).value)


def read64(addr: int) -> int:
    """The native-endian 64-bit word at ``addr``."""
    return int(ctypes.c_uint64.from_address(addr).value)
