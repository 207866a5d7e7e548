"""``pyverbs.xrcd``: XRC domains. The emulated devices, like Linux rxe, have no XRC: opening an
XRCD fails with EOPNOTSUPP (rdma-core's tests skip on that errno)."""

from __future__ import annotations

import errno
from typing import Any

from rdmasim.errors import PyverbsRDMAError

__all__ = ["XRCD", "XRCDInitAttr"]


class XRCDInitAttr:
    """``struct ibv_xrcd_init_attr``."""

    def __init__(self, comp_mask: int = 0, oflags: int = 0, fd: int = -1) -> None:
        self.comp_mask, self.oflags, self.fd = comp_mask, oflags, fd


class XRCD:
    """``ibv_open_xrcd``: not supported by the device (EOPNOTSUPP), as on rxe."""

    def __init__(self, ctx: Any, init_attr: XRCDInitAttr) -> None:
        raise PyverbsRDMAError("Failed to allocate XRCD: the device (like rxe) has no XRC support",
                               errno.EOPNOTSUPP)
