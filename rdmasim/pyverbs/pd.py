"""``pyverbs.pd``: protection domains (rdmasim.verbs' PD, plus ``advise_mr``) and parent domains.

A parent domain (``ibv_alloc_parent_domain``) is provider-specific; rxe's provider does not
implement it, so ``ParentDomain`` raises ``PyverbsRDMAError`` with EOPNOTSUPP, as on rxe. Its
attribute classes hold values."""

from __future__ import annotations

import errno
from typing import Any

from rdmasim.errors import PyverbsRDMAError
from rdmasim.pyverbs._attrs import attr_class
from rdmasim.pyverbs._unsupported import unsupported
from rdmasim.verbs import device as _device
from rdmasim.verbs._checks import U32, int_in

_ON_DEMAND = 1 << 6  # IBV_ACCESS_ON_DEMAND
_ADVICES = (0, 1, 2)  # IBV_ADVISE_MR_ADVICE_PREFETCH, _PREFETCH_WRITE, _PREFETCH_NO_FAULT
_FLAG_FLUSH = 1  # IBV_ADVISE_MR_FLAG_FLUSH


class PD(_device.PD):
    """A protection domain (``ibv_alloc_pd``), with ``advise_mr``."""

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        core = self.ctx.host.sim._core
        if getattr(core, "remote", False):  # the fabric daemon numbers a process's PDs
            self.handle = core.pd_alloc(self.ctx.host.index)

    def close(self) -> None:
        """Deallocate the PD, after its QPs and MRs (``ibv_dealloc_pd``)."""
        was_open = not self.closed
        super().close()
        core = self.ctx.host.sim._core
        if was_open and getattr(core, "remote", False):
            core.pd_dealloc(self.ctx.host.index, self.handle)

    def advise_mr(self, advise: int, flags: int, sg_list: list[Any]) -> int:
        """``ibv_advise_mr``: prefetch the pages of on-demand-paging MRs, as rxe's
        ``rxe_ib_advise_mr`` checks it: EOPNOTSUPP for an advice other than PREFETCH,
        PREFETCH_WRITE and PREFETCH_NO_FAULT or a flag other than IBV_ADVISE_MR_FLAG_FLUSH,
        ENOENT for an lkey of no MR of this PD, EINVAL for an MR without IBV_ACCESS_ON_DEMAND,
        EFAULT for a range outside the MR. The emulated NIC reads and writes the process's memory
        directly, so every page is already where it needs it: a valid prefetch has nothing to do
        and returns 0 (synchronous or not)."""
        self._check_open("advise_mr")
        advice = int_in("advise_mr advise", advise, 0, U32)
        flags = int_in("advise_mr flags", flags, 0, U32)
        if advice not in _ADVICES:
            raise PyverbsRDMAError(f"Failed to advise MR: advice {advice} is not a prefetch (0, 1 or 2)",
                                   errno.EOPNOTSUPP)
        if flags & ~_FLAG_FLUSH:
            raise PyverbsRDMAError(f"Failed to advise MR: flags 0x{flags:x} (only "
                                   "IBV_ADVISE_MR_FLAG_FLUSH, 1)", errno.EOPNOTSUPP)
        mrs = {int(getattr(c, "lkey", -1)): c for c in self._children if hasattr(c, "lkey")}
        for sge in sg_list:
            mr = mrs.get(int(sge.lkey))
            if mr is None or getattr(mr, "_closed", False):
                raise PyverbsRDMAError(f"Failed to advise MR: lkey 0x{int(sge.lkey):x} is no MR of this PD",
                                       errno.ENOENT)
            if not mr.access & _ON_DEMAND:
                raise PyverbsRDMAError(f"Failed to advise MR: lkey 0x{int(sge.lkey):x} is not an "
                                       "on-demand-paging MR (IBV_ACCESS_ON_DEMAND)", errno.EINVAL)
            if sge.addr < mr.buf or sge.addr + sge.length > mr.buf + mr.length:
                raise PyverbsRDMAError(f"Failed to advise MR: [0x{sge.addr:x}, +{sge.length}) is outside "
                                       f"the MR [0x{mr.buf:x}, +{mr.length})", errno.EFAULT)
        return 0


__all__ = ["PD", "ParentDomain", "ParentDomainContext", "ParentDomainInitAttr"]

ParentDomainContext = attr_class("ParentDomainContext", __name__,
                                 "The allocator callbacks of a parent domain.",
                                 [("pd", None), ("alloc_func", None), ("free_func", None),
                                  ("user_data", None)])
ParentDomainInitAttr = attr_class("ParentDomainInitAttr", __name__, "``ibv_parent_domain_init_attr``.",
                                  [("pd", None), ("pd_context", None)])
ParentDomain = unsupported("ParentDomain", "parent domains (ibv_alloc_parent_domain) are not "
                           "supported by the emulated device (nor by rxe's provider)", __name__)
