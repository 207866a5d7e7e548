"""``pyverbs.cq``: CQ, CompChannel and WC.

A completion channel delivers one event per armed CQ: ``cq.req_notify()`` arms the CQ,
``channel.get_cq_event(cq)`` waits for the next completion after arming (running the simulation
until it arrives), ``cq.ack_events(n)`` acknowledges events.
"""

from __future__ import annotations

import errno

from rdmasim import _core
from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.pyverbs import _devices
from rdmasim.verbs import cq as _cq
from rdmasim.verbs._checks import U32, instance, int_in
from rdmasim.verbs.device import Context
from rdmasim.verbs.wc import WC

__all__ = ["CQ", "WC", "CompChannel"]

_INT64_MAX = (1 << 63) - 1


class CompChannel:
    """A completion event channel (``ibv_create_comp_channel``) on a Context."""

    def __init__(self, ctx: Context) -> None:
        instance("CompChannel ctx", ctx, Context)
        ctx._check_open("CompChannel")
        self.ctx = ctx
        self.closed = False

    def get_cq_event(self, cq: CQ) -> None:
        """Wait for ``cq``'s next event: runs the simulation until a completion arrives on the
        armed CQ. Refused (it would block forever) when the CQ is not armed, and a
        PyverbsRDMAError (EIO) when the simulation goes idle with no completion to come."""
        instance("get_cq_event cq", cq, CQ)
        if self.closed:
            raise PyverbsUserError("get_cq_event: the channel is closed")
        if cq.channel is not self:
            raise PyverbsUserError(f"get_cq_event: {cq!r} was not created on this channel")
        if cq._armed_at is None:
            raise PyverbsUserError("get_cq_event: the CQ is not armed (call cq.req_notify() first); "
                                   "no event can come, so this would block forever")
        sim = cq.ctx.sim
        want = cq._armed_at + 1
        while True:
            have = len(cq)
            if have >= want:
                break
            reason = sim._core.run(_INT64_MAX, 0, cq._host.index, cq._handle, want)
            if reason in (_core.RUN_PEER, _core.RUN_STEP):
                continue
            if len(cq) < want and reason != _core.RUN_CQ:
                raise PyverbsRDMAError(
                    f"get_cq_event: the simulation went idle with no new completion on {cq!r}: "
                    "nothing is in flight, so no event can come (was work posted?)", errno.EIO)
        cq._armed_at = None
        cq._events += 1

    def close(self) -> None:
        """Destroy the channel."""
        self.closed = True

    def __enter__(self) -> CompChannel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CQ(_cq.CQ):
    """A completion queue; ``channel`` (a CompChannel) enables ``req_notify``.

    ``cqe`` is limited by the device's ``max_cqe`` (rxe: 32767), EINVAL above it, as rxe."""

    def __init__(self, ctx: Context, cqe: int = 100, cq_context: object = None,
                 channel: CompChannel | None = None, comp_vector: int = 0) -> None:
        n = int_in("CQ cqe", cqe, 0, U32)
        max_cqe = _devices.RXE_DEVICE_ATTR["max_cqe"]
        if n > max_cqe:
            raise PyverbsRDMAError(f"CQ cqe={n}: the device allows at most max_cqe={max_cqe}", errno.EINVAL)
        if channel is not None:
            instance("CQ channel", channel, CompChannel)
        super().__init__(ctx, cqe, cq_context, None, comp_vector)
        self.channel = channel
        self.cq_context = cq_context
        self._armed_at: int | None = None
        self._events = 0
        self._acked = 0

    def req_notify(self, solicited_only: bool = False) -> None:
        """``ibv_req_notify_cq``: arm the CQ for one event at its next completion."""
        if self._closed:
            raise PyverbsUserError(f"req_notify: {self!r} is destroyed")
        if self.channel is None:
            raise PyverbsRDMAError("req_notify: the CQ has no completion channel", errno.EINVAL)
        self._armed_at = len(self)

    def ack_events(self, num_events: int) -> None:
        """``ibv_ack_cq_events``: acknowledge ``num_events`` of the events received."""
        n = int_in("ack_events num_events", num_events, 0, U32)
        if self._acked + n > self._events:
            left = self._events - self._acked
            raise PyverbsUserError(f"ack_events({n}): only {left} event(s) unacknowledged")
        self._acked += n

    def close(self) -> None:
        """Destroy the CQ."""
        super().close()

    def __enter__(self) -> CQ:
        return self
