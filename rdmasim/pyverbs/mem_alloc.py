"""``pyverbs.mem_alloc``: the process-memory helpers of pyverbs (``posix_memalign``, ``free``,
``mmap``, ``munmap``, ``madvise``, ...), real calls into the C library through :mod:`ctypes`.
They return and take raw addresses (ints), as in pyverbs. The blocks they allocate are recorded,
so that ``MR(pd, length, access, address=addr)`` can register memory from here (the emulated
device maps it to a buffer); freeing or unmapping a block that an MR still registers is refused."""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap as _mmap

from rdmasim.errors import PyverbsRDMAError, PyverbsUserError

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

# Blocks allocated here and not yet freed: start address -> [length, how, MRs registering it].
_blocks: dict[int, list] = {}


def _record(addr: int, length: int, how: str) -> int:
    _blocks[addr] = [length, how, set()]
    return addr


def block_of(addr: int, length: int) -> tuple[int, int, str] | None:
    """The block allocated here that holds ``[addr, addr + length)``: (start, length, how), or
    None when no such block is allocated."""
    for start, (size, how, _) in _blocks.items():
        if start <= addr and addr + length <= start + size:
            return start, size, how
    return None


def _hold(start: int, mr: object) -> None:
    """An MR registers memory of the block at ``start`` (until :func:`_release`)."""
    _blocks[start][2].add(id(mr))


def _release(start: int, mr: object) -> None:
    entry = _blocks.get(start)
    if entry is not None:
        entry[2].discard(id(mr))


def _forget(addr: int, what: str) -> None:
    entry = _blocks.get(addr)
    if entry is not None and entry[2]:
        raise PyverbsUserError(f"{what}(0x{addr:x}): {len(entry[2])} MR(s) still register this memory; "
                               "close (deregister) them first")
    _blocks.pop(addr, None)


def mmap(addr: int = 0, length: int = 100, prot: int = _mmap.PROT_READ | _mmap.PROT_WRITE,
         flags: int = _mmap.MAP_PRIVATE | _mmap.MAP_ANONYMOUS, fd: int = 0, offset: int = 0) -> int:
    """``mmap(2)``: the address of the new mapping; MemoryError when it fails."""
    ptr = _libc.mmap(addr or None, length, prot, flags, fd, offset)
    if ptr is None or ptr == _MAP_FAILED:
        raise MemoryError(f"Failed to mmap memory (length={length}, errno {ctypes.get_errno()})")
    return _record(int(ptr), length, "mmap")


def madvise(addr: int, length: int, flags: int = _MADV_DONTNEED) -> None:
    """``madvise(2)``; PyverbsRDMAError with the errno when it fails."""
    if _libc.madvise(addr, length, flags):
        err = ctypes.get_errno()
        raise PyverbsRDMAError(f"Failed to madvise memory at 0x{addr:x} length {length}", err)


def munmap(addr: int, length: int) -> None:
    """``munmap(2)``; MemoryError when it fails. Refused while an MR registers the mapping."""
    _forget(addr, "munmap")
    if _libc.munmap(addr, length):
        raise MemoryError(f"Failed to munmap 0x{addr:x} length {length}")


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
    """``free(3)`` a block from :func:`malloc` or :func:`posix_memalign`. Refused while an MR
    registers the block."""
    _forget(ptr, "free")
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
