"""Shared receive queues (``ibv_create_srq``), shaped like pyverbs' ``pyverbs.srq``.

QPs created with ``QPInitAttr(srq=srq)`` take their receive WQEs from the SRQ, oldest first, when a
message arrives.  ``modify`` resizes the SRQ (``IBV_SRQ_MAX_WR``) and arms the SRQ limit
(``IBV_SRQ_LIMIT``): the first time a WQE is taken and fewer than ``srq_limit`` remain, the NIC raises
``IBV_EVENT_SRQ_LIMIT_REACHED`` (``Context.get_async_event`` in :mod:`rdmasim.pyverbs.device`) and
disarms the limit, as rxe.
"""

from __future__ import annotations

import errno
from typing import Any

from rdmasim import _core
from rdmasim.errors import PyverbsRDMAError
from rdmasim.verbs._checks import U32, U64, MRKey, instance, int_in, wr_chain
from rdmasim.verbs.device import PD
from rdmasim.verbs.wr import SGE, RecvWR, report_bad_wr, sge_list

IBV_SRQ_MAX_WR = 1  # enum ibv_srq_attr_mask
IBV_SRQ_LIMIT = 2


class SrqAttr:
    """``struct ibv_srq_attr``: ``max_wr``, ``max_sge`` and ``srq_limit`` (0: not armed)."""

    def __init__(self, max_wr: int = 100, max_sge: int = 1, srq_limit: int = 0) -> None:
        self.max_wr = int_in("SrqAttr max_wr", max_wr, 0, U32)
        self.max_sge = int_in("SrqAttr max_sge", max_sge, 0, U32)
        self.srq_limit = int_in("SrqAttr srq_limit", srq_limit, 0, U32)

    def __repr__(self) -> str:
        return f"SrqAttr(max_wr={self.max_wr}, max_sge={self.max_sge}, srq_limit={self.srq_limit})"


class SrqInitAttr:
    """``struct ibv_srq_init_attr``: the SRQ's ``attr`` (an ``SrqAttr``)."""

    def __init__(self, attr: SrqAttr | None = None) -> None:
        self.attr = SrqAttr() if attr is None else instance("SrqInitAttr attr", attr, SrqAttr)


class SRQ:
    """A shared receive queue of a PD: ``SRQ(pd, SrqInitAttr(SrqAttr(max_wr, max_sge)))``."""

    def __init__(self, pd: PD, init_attr: SrqInitAttr) -> None:
        instance("SRQ pd", pd, PD)
        pd._check_open("SRQ")
        instance("SRQ init_attr", init_attr, SrqInitAttr)
        attr = instance("SrqInitAttr attr", init_attr.attr, SrqAttr)
        max_wr = int_in("SrqAttr max_wr", attr.max_wr, 0, U32)
        max_sge = int_in("SrqAttr max_sge", attr.max_sge, 0, U32)
        limit = int_in("SrqAttr srq_limit", attr.srq_limit, 0, U32)  # > 0 arms it, as rxe
        self.pd = pd
        self._host = pd.ctx.host
        self._sim = self._host.sim
        self.max_wr = max_wr
        self.max_sge = max_sge
        self.handle = int(self._sim._core.srq_create(self._host.index, pd.handle, max_wr, max_sge, limit))
        self._closed = False
        # plain work requests converted in C (rdmasim/_post.pxi RecvPoster), others checked by
        # _recv_args; the poster's post is this SRQ's post_recv (see QP.__init__ for why)
        remote = getattr(self._sim._core, "recv_poster", None)  # a core served by the fabric daemon
        self._poster = remote(self, self.handle) if remote is not None else _core.RecvPoster(
            self._sim._core, self._host.index, self.handle, self._sim, RecvWR, SGE, MRKey, self._recv_args,
            self._recv_chain, srq=True)
        self._poster.dead = self._raise_destroyed
        self._poster.report = report_bad_wr
        if type(self).post_recv is SRQ.post_recv:
            self.post_recv = self._poster.post  # type: ignore[method-assign]
        pd._children.add(self)

    def post_recv(self, wr: RecvWR, bad_wr: list[RecvWR] | None = None) -> None:
        """``ibv_post_srq_recv``: one receive work request or a chain (``next_wr``), in one call
        into the core; the failing one is appended to ``bad_wr`` (a list) or copied into it (a
        RecvWR)."""
        self._poster.post(wr, bad_wr)

    def _raise_destroyed(self) -> None:
        raise PyverbsRDMAError(f"SRQ.post_recv: {self!r} is destroyed")

    def _recv_chain(self, first: Any) -> list[RecvWR]:
        """The work requests of a chain from ``first``, or the error refusing it."""
        return wr_chain("SRQ.post_recv", first, RecvWR)

    def _recv_args(self, i: int, w: RecvWR) -> tuple[int, list[tuple[int, int, int]]]:
        """Work request ``i`` of a chain, checked: ``(wr_id, sges)`` (the reference checks; the
        fast path passes only what these accept unchanged)."""
        what = f"SRQ.post_recv work request {i}"
        sges = self._sges(what, w.sg, w.num_sge)
        return int_in(f"{what}: wr_id", w.wr_id, 0, U64), sges

    def _sges(self, what: str, sg: Any, num_sge: Any) -> list[tuple[int, int, int]]:
        """The first ``num_sge`` SGEs of a work request as checked (addr, length, lkey) tuples."""
        return sge_list(what, sg, num_sge, self._sim, "SRQ")

    def query(self) -> SrqAttr:
        """``ibv_query_srq``: max_wr, max_sge and the armed srq_limit (0 once the limit event
        has disarmed it)."""
        self._check_open("query")
        a = self._sim._core.srq_query(self._host.index, self.handle)
        return SrqAttr(max_wr=int(a["max_wr"]), max_sge=int(a["max_sge"]), srq_limit=int(a["limit"]))

    def modify(self, attr: SrqAttr, comp_mask: int) -> None:
        """``ibv_modify_srq``: ``IBV_SRQ_MAX_WR`` resizes the SRQ to ``attr.max_wr`` WQEs (the
        posted ones kept, in order), ``IBV_SRQ_LIMIT`` arms the limit at ``attr.srq_limit`` (0
        disarms). EINVAL as rxe: ``max_wr`` 0 or below the WQEs posted or an armed limit,
        ``srq_limit`` above ``max_wr``, other mask bits."""
        instance("SRQ.modify attr", attr, SrqAttr)
        mask = int_in("SRQ.modify comp_mask", comp_mask, 0, U32)
        self._check_open("modify")
        unknown = mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)
        if unknown:
            raise PyverbsRDMAError(f"SRQ.modify comp_mask=0x{mask:x}: bits 0x{unknown:x} are not "
                                   "IBV_SRQ_MAX_WR (1) or IBV_SRQ_LIMIT (2)", errno.EINVAL)
        max_wr = int_in("SrqAttr max_wr", attr.max_wr, 0, U32)
        limit = int_in("SrqAttr srq_limit", attr.srq_limit, 0, U32)
        self._sim._core.srq_modify(self._host.index, self.handle, mask, max_wr, limit)
        if mask & IBV_SRQ_MAX_WR:
            self.max_wr = max_wr

    def _take_limit_event(self) -> bool:
        """Take one pending IBV_EVENT_SRQ_LIMIT_REACHED of this SRQ (True if there was one)."""
        if self._closed:
            return False
        return bool(self._sim._core.srq_take_limit_event(self._host.index, self.handle))

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise PyverbsRDMAError(f"SRQ.{what}: {self!r} is destroyed", errno.EINVAL)

    def close(self) -> None:
        """``ibv_destroy_srq``: refused (EBUSY) while QPs use it."""
        if self._closed:
            return
        self._sim._core.srq_destroy(self._host.index, self.handle)
        self._closed = True
        self._poster.closed = True
        self.pd._children.discard(self)

    def __enter__(self) -> SRQ:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"SRQ(handle={self.handle}, max_wr={self.max_wr}, max_sge={self.max_sge}, "
                f"host={self._host.name})")
