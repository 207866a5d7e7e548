"""``pyverbs.dmabuf``: dma-buf exporters. The emulated devices, like rxe, cannot register dma-buf
memory: ``DmaBuf`` raises EOPNOTSUPP."""

from __future__ import annotations

from rdmasim.pyverbs._unsupported import unsupported

DmaBuf = unsupported("DmaBuf", "dma-buf memory is not supported (nor by rxe)", __name__)
__all__ = ["DmaBuf"]
