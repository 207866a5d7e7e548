"""Memory regions over real, Python-owned bytes."""

from __future__ import annotations

from typing import Any

import numpy as np

from rdmasim import checks
from rdmasim.errors import PyverbsUserError
from rdmasim.verbs import enums as e
from rdmasim.verbs._checks import U32, MRKey, instance, int_in
from rdmasim.verbs.device import CLOSE_MR, PD

# The largest region MR(pd, length) allocates itself (4 GiB); register a buffer of your own for more.
_MAX_MR_BYTES = 1 << 32


_WRITE_ACCESS = {"IBV_ACCESS_LOCAL_WRITE": e.IBV_ACCESS_LOCAL_WRITE,
                 "IBV_ACCESS_REMOTE_WRITE": e.IBV_ACCESS_REMOTE_WRITE,
                 "IBV_ACCESS_REMOTE_ATOMIC": e.IBV_ACCESS_REMOTE_ATOMIC}


def _byte_view(buffer: Any, access: int) -> np.ndarray:
    """The bytes of ``buffer`` as a flat uint8 array (a view), or PyverbsUserError saying why the
    buffer cannot be a memory region: only plain, contiguous memory of fixed-size values whose
    bytes the NIC may read (and write, with a write access) without breaking Python objects."""
    if isinstance(buffer, np.ndarray):
        if buffer.dtype.hasobject:
            raise PyverbsUserError(
                f"buffer is a numpy array of dtype {buffer.dtype}: it holds Python object pointers, not "
                "data; register a buffer of fixed-size values (e.g. dtype=np.uint8)")
        contiguous, nbytes, readonly = buffer.flags.c_contiguous, buffer.nbytes, not buffer.flags.writeable
    else:
        try:
            view = memoryview(buffer)
        except (TypeError, ValueError):
            raise PyverbsUserError(f"buffer {type(buffer).__name__} does not expose memory "
                                   "(use a bytearray, a numpy array or a memoryview)") from None
        if "O" in view.format or "P" in view.format:
            raise PyverbsUserError(f"buffer of format {view.format!r} holds pointers, not data")
        contiguous, nbytes, readonly = view.c_contiguous, view.nbytes, view.readonly
    if not contiguous:
        raise PyverbsUserError("buffer must be C-contiguous (a strided view cannot be registered: copy it)")
    if nbytes == 0:
        raise PyverbsUserError("buffer is empty: an MR needs at least 1 byte")
    if readonly:
        wants = [n for n, b in _WRITE_ACCESS.items() if access & b]
        if wants:
            raise PyverbsUserError(f"buffer is read-only but access asks for {' | '.join(wants)}: "
                                   "register writable memory (bytearray, numpy) or drop the write access")
    if isinstance(buffer, np.ndarray):
        return buffer.reshape(-1).view(np.uint8)
    try:
        return np.frombuffer(view.cast("B") if view.ndim != 1 or view.format != "B" else view, dtype=np.uint8)
    except (TypeError, ValueError) as exc:
        raise PyverbsUserError(f"buffer of format {view.format!r} cannot be seen as bytes: {exc}") from None


class MR:
    """A registered memory region (``ibv_reg_mr``).

    ``MR(pd, length, access)`` allocates zeroed memory; ``MR(pd, access=..., buffer=buf)``
    registers a buffer you own: C-contiguous memory of fixed-size values (numpy arrays of
    numeric dtypes, bytearray, memoryview); read-only memory only without write access.
    ``buf`` is the region's address for SGEs and ``set_wr_rdma``; ``lkey``/``rkey`` as on
    Linux rxe (one key: ``rkey == lkey``; the access flags decide what remote work may do).
    """

    _close_rank = CLOSE_MR

    def __init__(self, pd: PD, length: int | None = None, access: int = 0,
                 buffer: Any = None) -> None:
        instance("MR pd", pd, PD)
        pd._check_open("MR")
        access = int_in("MR access", access, 0, U32)
        if length is not None:
            length = int_in("MR length", length, 1, _MAX_MR_BYTES if buffer is None else checks.INT64_MAX)
        if buffer is None:
            if length is None:
                raise PyverbsUserError("MR needs a length (bytes) or a buffer")
            buffer = np.zeros(length, dtype=np.uint8)
        self._array = _byte_view(buffer, access)
        if length is not None and length != self._array.size:
            raise PyverbsUserError(f"length={length} but the buffer has {self._array.size} bytes")
        self.pd = pd
        self.access = access
        self._host = pd.ctx.host
        core = self._host.sim._core
        self._index, self.buf, lkey, rkey = core.mr_reg(
            self._host.index, pd.handle, self._array, self.access
        )
        self.lkey = MRKey(lkey, self._host.sim)
        self.rkey = MRKey(rkey, self._host.sim)
        self.length = int(self._array.size)
        self._closed = False
        pd._children.add(self)

    def _check_registered(self, what: str) -> None:
        """Once deregistered the memory is no longer the region's (memory given with pyverbs'
        ``address=`` may even be freed): its bytes are refused, as pyverbs refuses them once
        the MR's buffer is gone."""
        if self._closed:
            raise PyverbsUserError(f"{what}: {self!r} is deregistered (closed); its memory is no "
                                   "longer the region's")

    @property
    def array(self) -> np.ndarray:
        """The region's bytes as a numpy uint8 array (a view, not a copy); refused once the MR
        is closed."""
        self._check_registered("MR.array")
        return self._array

    def write(self, data: bytes | bytearray | np.ndarray, length: int | None = None,
              offset: int = 0) -> None:
        """Copy ``data`` into the region at ``offset`` (as pyverbs ``MR.write``); refused once
        the MR is closed."""
        self._check_registered("MR.write")
        if self._array.flags.writeable is False:
            raise PyverbsUserError("MR.write: the region's buffer is read-only")
        if not isinstance(data, (bytes, bytearray, memoryview, np.ndarray)):
            raise PyverbsUserError(f"MR.write data must be bytes-like, got {type(data).__name__}")
        src = np.frombuffer(bytes(data) if not isinstance(data, np.ndarray) else data.tobytes(),
                            dtype=np.uint8)
        n = src.size if length is None else int_in("MR.write length", length, 0, src.size)
        offset = int_in("MR.write offset", offset, 0, self.length)
        if offset + n > self.length:
            raise PyverbsUserError(
                f"write of {n} bytes at offset {offset} does not fit the {self.length}-byte MR"
            )
        self._array[offset:offset + n] = src[:n]

    def read(self, length: int, offset: int = 0) -> bytes:
        """Return ``length`` bytes of the region from ``offset``; refused once the MR is closed."""
        self._check_registered("MR.read")
        length = int_in("MR.read length", length, 0, self.length)
        offset = int_in("MR.read offset", offset, 0, self.length)
        if offset + length > self.length:
            raise PyverbsUserError(
                f"read of {length} bytes at offset {offset} does not fit the {self.length}-byte MR"
            )
        return self._array[offset:offset + length].tobytes()

    def close(self) -> None:
        """Deregister (``ibv_dereg_mr``). Later work using its keys fails with protection errors."""
        if not self._closed:
            self._host.sim._core.mr_dereg(self._host.index, self._index)
            self._closed = True
            self.pd._children.discard(self)

    def __enter__(self) -> MR:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"MR(host={self._host.name}, buf=0x{self.buf:x}, length={self.length}, "
                f"lkey=0x{self.lkey:x}, rkey=0x{self.rkey:x}, access=0x{self.access:x})")
