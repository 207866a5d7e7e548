"""``pyverbs.dma_util``: memory barriers and MMIO writes for provider-level (mlx5) code. The
barriers are no-ops (the emulator has no device memory ordering to enforce); MMIO writes need a
device BAR, which the emulated devices do not have (EOPNOTSUPP)."""

from __future__ import annotations

import errno

from rdmasim.errors import PyverbsRDMAError

__all__ = ["mmio_write32_as_be", "mmio_write64_as_be", "udma_from_dev_barrier",
           "udma_to_dev_barrier"]


def udma_to_dev_barrier() -> None:
    """Order CPU writes before the device reads them: nothing to order in the emulator."""


def udma_from_dev_barrier() -> None:
    """Order device writes before the CPU reads them: nothing to order in the emulator."""


def mmio_write64_as_be(addr: int, val: int) -> None:
    """Write a doorbell: the emulated devices have no MMIO space (EOPNOTSUPP)."""
    raise PyverbsRDMAError("mmio_write64_as_be: the emulated device has no MMIO space", errno.EOPNOTSUPP)


def mmio_write32_as_be(addr: int, val: int) -> None:
    """Write a doorbell: the emulated devices have no MMIO space (EOPNOTSUPP)."""
    raise PyverbsRDMAError("mmio_write32_as_be: the emulated device has no MMIO space", errno.EOPNOTSUPP)
