"""``pyverbs.mem_alloc``: the process-memory helpers of pyverbs (``posix_memalign``, ``free``,
``mmap``, ``munmap``, ``madvise``, ...), real calls into the C library through :mod:`ctypes`.
They return and take raw addresses (ints), as in pyverbs. Note that the emulated devices cannot
register a raw process address (``MR(..., address=...)``): register a buffer instead."""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap as _mmap

from rdmasim.errors import PyverbsRDMAError

__all__ = ["MAP_ANONYMOUS_", "MAP_HUGETLB_", "MAP_PRIVATE_", "free", "madvise", "malloc", "mmap",
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


def mmap(addr: int = 0, length: int = 100, prot: int = _mmap.PROT_READ | _mmap.PROT_WRITE,
         flags: int = _mmap.MAP_PRIVATE | _mmap.MAP_ANONYMOUS, fd: int = 0, offset: int = 0) -> int:
    """``mmap(2)``: the address of the new mapping; MemoryError when it fails."""
    ptr = _libc.mmap(addr or None, length, prot, flags, fd, offset)
    if ptr is None or ptr == _MAP_FAILED:
        raise MemoryError(f"Failed to mmap memory (length={length}, errno {ctypes.get_errno()})")
    return int(ptr)


def madvise(addr: int, length: int, flags: int = _MADV_DONTNEED) -> None:
    """``madvise(2)``; PyverbsRDMAError with the errno when it fails."""
    if _libc.madvise(addr, length, flags):
        err = ctypes.get_errno()
        raise PyverbsRDMAError(f"Failed to madvise memory at 0x{addr:x} length {length}", err)


def munmap(addr: int, length: int) -> None:
    """``munmap(2)``; MemoryError when it fails."""
    if _libc.munmap(addr, length):
        raise MemoryError(f"Failed to munmap 0x{addr:x} length {length}")


def malloc(size: int) -> int:
    """``malloc(3)``: the address of the block; MemoryError when it fails."""
    ptr = _libc.malloc(size)
    if not ptr:
        raise MemoryError(f"Failed to allocate {size} bytes")
    return int(ptr)


def posix_memalign(size: int, alignment: int = 8) -> int:
    """``posix_memalign(3)`` then zero the block: its address, a multiple of ``alignment``."""
    ptr = ctypes.c_void_p()
    ret = _libc.posix_memalign(ctypes.byref(ptr), alignment, size)
    if ret or not ptr.value:
        raise MemoryError(f"Failed to allocate {size} bytes aligned to {alignment} (error {ret})")
    ctypes.memset(ptr.value, 0, size)
    return int(ptr.value)


def free(ptr: int) -> None:
    """``free(3)`` a block from :func:`malloc` or :func:`posix_memalign`."""
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
