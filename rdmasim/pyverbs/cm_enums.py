"""``pyverbs.cm_enums``: librdmacm's port spaces (rdma_cma.h), which rdma-core's test base
imports. The connection manager itself is ``pyverbs.cmid`` (emulated by the fabric daemon)."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

rdma_port_space: Any = IntEnum("rdma_port_space", {"RDMA_PS_IPOIB": 0x0002, "RDMA_PS_TCP": 0x0106,
                                                   "RDMA_PS_UDP": 0x0111, "RDMA_PS_IB": 0x013F})
globals().update(rdma_port_space.__members__)
