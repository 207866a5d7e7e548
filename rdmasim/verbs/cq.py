"""Completion queues."""

from __future__ import annotations

import errno
import sys
import threading
import time
from typing import Any

from rdmasim import _core
from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.units import format_time, parse_time
from rdmasim.verbs._checks import INT32_MAX, U32, instance, int_in
from rdmasim.verbs.device import CLOSE_CQ, Context
from rdmasim.verbs.wc import WC


class CQ:
    """A completion queue with ``cqe`` entries (``ibv_create_cq``).

    ``poll(n)`` returns ``(count, [WC, ...])`` like pyverbs. On an empty CQ it first lets
    simulated time pass until a completion for this CQ is due (at most ``sim.poll_slice`` per
    call), so ``while npolled == 0: npolled, wcs = cq.poll()`` works as on hardware; set
    ``sim.auto_advance = False`` to drive time yourself (docs/pyverbs.md "Time").
    ``sim.wait_for(cq, n)`` waits for ``n`` completions at once. ``cq_context``, ``channel`` and
    ``comp_vector`` are accepted for pyverbs compatibility and ignored (no completion events).
    """

    _close_rank = CLOSE_CQ

    def __init__(self, ctx: Context, cqe: int = 100, cq_context: object = None,
                 channel: object = None, comp_vector: int = 0) -> None:
        instance("CQ ctx", ctx, Context)
        ctx._check_open("CQ")
        self.cqe = int_in("CQ cqe", cqe, 0, U32)  # 0 and too many: the core's EINVAL
        int_in("CQ comp_vector", comp_vector, 0, INT32_MAX)
        self.ctx = ctx
        self._host = ctx.host
        self._handle = self._host.sim._core.cq_create(self._host.index, self.cqe)
        self._closed = False
        self._idle_since: int | None = None  # sim.events when polls began finding it empty and idle
        self._idle_polls = 0  # such polls in a row since then
        ctx._children.add(self)

    def poll(self, num_entries: int = 1) -> tuple[int, list[WC]]:
        """Take up to ``num_entries`` completions (``ibv_poll_cq``), in one call into the core."""
        n = int_in("CQ.poll num_entries", num_entries, 0, INT32_MAX)
        if self._closed:
            raise PyverbsUserError(f"CQ.poll: {self!r} is destroyed")
        host = self._host
        if n and host.sim.auto_advance and len(self) == 0:
            self._advance()
        if not n:
            return 0, []
        n = min(n, len(self))  # never more than are waiting: no buffer sized by the caller's number
        wcs = _core.cq_poll_wcs(host.sim._core, host.index, self._handle, n, tuple.__new__, WC,
                                sys.byteorder == "little")
        return len(wcs), wcs

    def poll_batch(self, max_entries: int | None = None) -> Any:
        """Take up to ``max_entries`` completions (default: all waiting) as one numpy structured
        array (the fields of :class:`WC` but ``slid`` and ``dlid_path_bits``, 0 on RoCE:
        ``wr_id``, ``status``, ``opcode``, ``vendor_err``, ``byte_len``, ``imm_data``,
        ``qp_num``, ``src_qp``, ``wc_flags``, ``pkey_index``, ``sl``), in one call into the
        core. ``wcs["wr_id"]`` is then an array of the wr_ids, ``(wcs["status"] == 0).all()``
        says that all succeeded. On an empty CQ it first lets simulated time pass as
        :meth:`poll` does."""
        n = (INT32_MAX if max_entries is None
             else int_in("CQ.poll_batch max_entries", max_entries, 0, INT32_MAX))
        if self._closed:
            raise PyverbsUserError(f"CQ.poll_batch: {self!r} is destroyed")
        host = self._host
        if n and host.sim.auto_advance and len(self) == 0:
            self._advance()
        n = min(n, len(self))
        return _core.cq_poll_array(host.sim._core, host.index, self._handle, n, sys.byteorder == "little")

    def _advance(self) -> None:
        """Run the simulation until a completion for this CQ is due, the simulation is idle or
        ``sim.poll_slice`` of simulated time has passed. Polling an empty CQ of an idle
        simulation returns 0 (as ``ibv_poll_cq``), for as long as another thread of the program
        is alive (it may still post the work this poll waits for). Only a program that can never
        make progress gets an error instead of a hang: ``sim.idle_poll_limit`` such polls in a
        row, with nothing happening in between and no other thread alive, raise ETIMEDOUT."""
        sim = self._host.sim
        deadline = sim.now + parse_time(sim.poll_slice)
        reason, have = sim._run_until_cq(self, 1, deadline)
        if have or reason != _core.RUN_IDLE or self._idle_since != sim.events:
            self._idle_since = sim.events if not have and reason == _core.RUN_IDLE else None
            self._idle_polls = 1 if self._idle_since is not None else 0
            return
        if threading.active_count() > 1:
            # another thread may post: return 0 as ibv_poll_cq does, and let that thread run
            self._idle_polls = 0
            time.sleep(0)
            return
        self._idle_polls += 1
        if self._idle_polls >= sim.idle_poll_limit:
            self._idle_polls = 0
            raise PyverbsRDMAError(
                f"CQ.poll: {self!r} is empty and the simulation is idle at "
                f"{format_time(sim.now)}: nothing is in flight and no other thread is running, so no "
                f"completion can arrive (polled {sim.idle_poll_limit} times with nothing happening; "
                "was work posted, and signaled?)", errno.ETIMEDOUT)

    def resize(self, cqe: int) -> None:
        """Give the CQ room for ``cqe`` completions (``ibv_resize_cq``), keeping those it holds
        in order. EINVAL when ``cqe`` is below the completions the CQ holds, as rxe.

        With ``sim.auto_advance`` (see docs/pyverbs.md "Time") the send work already posted on
        the QPs that use this CQ completes first (on hardware it would have done so in the time
        the program took to get here), so the check counts those completions too."""
        n = int_in("CQ.resize cqe", cqe, 1, U32)
        if self._closed:
            raise PyverbsUserError(f"CQ.resize: {self!r} is destroyed")
        if self._host.sim.auto_advance:
            self._settle_send_work()
        self._host.sim._core.cq_resize(self._host.index, self._handle, n)
        self.cqe = n

    def _settle_send_work(self) -> None:
        """Run the simulation (at most ``sim.poll_slice``) until this CQ holds the completions
        of the send work outstanding on the QPs whose send CQ it is, or nothing is in flight."""
        owed = 0
        for pd in list(self.ctx._children):
            for qp in list(getattr(pd, "_children", ())):
                if getattr(qp, "send_cq", None) is self and not getattr(qp, "_closed", True):
                    owed += int(qp.inspect()["sq_outstanding"])
        if owed:
            sim = self._host.sim
            sim._run_until_cq(self, len(self) + owed, sim.now + parse_time(sim.poll_slice))

    def __len__(self) -> int:
        """Completions waiting to be polled (0 once destroyed)."""
        if self._closed:
            return 0
        return int(self._host.sim._core.cq_count(self._host.index, self._handle))

    def close(self) -> None:
        """Destroy the CQ; refused while a QP still uses it."""
        if not self._closed:
            self._host.sim._core.cq_destroy(self._host.index, self._handle)
            self._closed = True
            self.ctx._children.discard(self)

    def __enter__(self) -> CQ:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._closed:
            return f"CQ(host={self._host.name}, cqe={self.cqe}, destroyed)"
        return f"CQ(host={self._host.name}, cqe={self.cqe}, pending={len(self)})"
