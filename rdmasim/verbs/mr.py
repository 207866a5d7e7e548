"""Memory regions over real, Python-owned bytes."""

from __future__ import annotations

from typing import Any

import numpy as np

from rdmasim.errors import PyverbsUserError
from rdmasim.verbs.device import PD


class MR:
    """A registered memory region (``ibv_reg_mr``).

    ``MR(pd, length, access)`` allocates zeroed memory; ``MR(pd, access=..., buffer=buf)``
    registers a writable buffer you own (numpy uint8 array, bytearray, memoryview).
    ``buf`` is the region's address for SGEs and ``set_wr_rdma``; ``lkey``/``rkey`` as on
    hardware (rkey is 0 without remote access).
    """

    def __init__(self, pd: PD, length: int | None = None, access: int = 0,
                 buffer: Any = None) -> None:
        if not isinstance(pd, PD):
            raise PyverbsUserError(f"MR needs a PD, got {pd!r}")
        if buffer is None:
            if length is None or int(length) < 1:
                raise PyverbsUserError(f"MR length must be >= 1 byte, got {length!r}")
            buffer = np.zeros(int(length), dtype=np.uint8)
        try:
            view = memoryview(buffer)
        except TypeError:
            raise PyverbsUserError(f"buffer {type(buffer).__name__} does not expose memory") from None
        if view.readonly:
            raise PyverbsUserError("buffer is read-only: an MR needs writable memory (bytearray, numpy)")
        if not view.c_contiguous:
            raise PyverbsUserError("buffer must be contiguous")
        self._array = np.frombuffer(view.cast("B"), dtype=np.uint8)
        if length is not None and int(length) != self._array.size:
            raise PyverbsUserError(f"length={length} but the buffer has {self._array.size} bytes")
        self.pd = pd
        self.access = int(access)
        self._host = pd.ctx.host
        core = self._host.sim._core
        self._index, self.buf, self.lkey, self.rkey = core.mr_reg(
            self._host.index, pd.handle, self._array, self.access
        )
        self.length = int(self._array.size)
        self._closed = False
        pd._children.add(self)

    @property
    def array(self) -> np.ndarray:
        """The region's bytes as a numpy uint8 array (a view, not a copy)."""
        return self._array

    def write(self, data: bytes | bytearray | np.ndarray, length: int | None = None,
              offset: int = 0) -> None:
        """Copy ``data`` into the region at ``offset`` (as pyverbs ``MR.write``)."""
        src = np.frombuffer(bytes(data) if not isinstance(data, np.ndarray) else data.tobytes(),
                            dtype=np.uint8)
        n = src.size if length is None else int(length)
        if n > src.size or offset < 0 or offset + n > self.length:
            raise PyverbsUserError(
                f"write of {n} bytes at offset {offset} does not fit the {self.length}-byte MR"
            )
        self._array[offset:offset + n] = src[:n]

    def read(self, length: int, offset: int = 0) -> bytes:
        """Return ``length`` bytes of the region from ``offset``."""
        if length < 0 or offset < 0 or offset + length > self.length:
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
