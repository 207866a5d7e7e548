"""``pyverbs.cq``: CQ, CompChannel and WC.

A completion channel delivers one event per armed CQ: ``cq.req_notify()`` arms the CQ,
``channel.get_cq_event(cq)`` waits for the next completion after arming (running the simulation
until it arrives), ``cq.ack_events(n)`` acknowledges events.
"""

from __future__ import annotations

import errno
import math
import os
import sys
import time
import warnings
import weakref
from typing import Any

import numpy as np

from rdmasim import _core
from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.pyverbs import _devices, libibverbs_enums
from rdmasim.verbs import cq as _cq
from rdmasim.verbs._checks import U32, instance, int_in
from rdmasim.verbs._threads import another_thread_may_act
from rdmasim.verbs.device import Context
from rdmasim.verbs.wc import WC

__all__ = ["CQ", "CQEX", "WC", "CompChannel", "CqInitAttrEx", "PollCqAttr"]

_INT64_MAX = (1 << 63) - 1
# how long a blocking wait sleeps when nothing can happen until another thread acts (it only
# lets that thread run: simulated time does not depend on it)
_WAIT_S = 0.001


class TruncatedCqeWarning(UserWarning):
    """A float ``cqe`` was truncated to an integer, as pyverbs' C conversion does it
    (``CQ(ctx, 1.5)`` is a CQ of 1). ``warnings.simplefilter("error", TruncatedCqeWarning)``
    makes it an error."""


def _cqe_as_pyverbs_converts(cqe: Any) -> Any:
    """``cqe`` as pyverbs hands it to ``ibv_create_cq``'s ``int``: Cython's conversion takes a
    float's ``__int__`` (truncation toward zero), so a finite float becomes that integer, with a
    TruncatedCqeWarning; anything else is returned for the integer check to judge (a bool, a
    str, NaN are refused there by name)."""
    if not isinstance(cqe, (float, np.floating)) or not math.isfinite(cqe):
        return cqe
    n = int(cqe)
    if n != cqe:
        level, frame = 1, sys._getframe(0)
        while frame is not None and frame.f_globals.get("__name__") == __name__:
            frame, level = frame.f_back, level + 1  # point at the caller of CQ / CQEX
        warnings.warn(f"CQ cqe={cqe!r} is not an integer: truncated to {n}, as pyverbs' C int "
                      "conversion does", TruncatedCqeWarning, stacklevel=level)
    return n


_OPEN_CHANNELS: weakref.WeakSet[CompChannel] = weakref.WeakSet()


def _remote(core: Any) -> bool:
    """The core is the fabric daemon's (rdmasim exec), not this process's."""
    return bool(getattr(core, "remote", False))


def _refresh_channels() -> None:
    """Make each open channel's ``fd`` readable for the events that have become due."""
    for channel in list(_OPEN_CHANNELS):
        channel._refresh()


class CompChannel:
    """A completion event channel (``ibv_create_comp_channel``) on a Context.

    ``fd`` is a real file descriptor (an eventfd), readable while an event waits to be taken by
    :meth:`get_cq_event`: an armed CQ of this channel has received its completion. Simulated time
    passes only inside verbs calls, so the completion must first have happened in one (a
    ``CQ.poll``, ``get_cq_event``): ``select``/``poll`` on ``fd`` report what is already due and
    never make time pass. ``get_cq_event`` itself waits for a completion not yet due."""

    def __init__(self, ctx: Context) -> None:
        instance("CompChannel ctx", ctx, Context)
        ctx._check_open("CompChannel")
        self.ctx = ctx
        self.closed = False
        self._fd = os.eventfd(0, os.EFD_SEMAPHORE | os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._cqs: weakref.WeakSet[CQ] = weakref.WeakSet()
        self._core = ctx.host.sim._core
        # on the fabric daemon: the daemon's channel, which writes to this eventfd per event
        self._rid = self._core.call("CREATE_CHANNEL", fds=(self._fd,))[0] if _remote(self._core) else 0
        if not self._rid:
            _OPEN_CHANNELS.add(self)

    @property
    def fd(self) -> int:
        """The channel's file descriptor (``ibv_comp_channel.fd``): readable while an event
        waits; -1 once the channel is closed."""
        if self.closed:
            return -1
        if not self._rid:
            self._refresh()
        return self._fd

    def _refresh(self) -> None:
        if self.closed:
            return
        for cq in list(self._cqs):
            if (not cq._signalled and cq._armed_at is not None and not cq._closed
                    and cq._polled + len(cq) > cq._armed_at):
                os.eventfd_write(self._fd, 1)
                cq._signalled = True

    def get_cq_event(self, cq: CQ) -> None:
        """Wait for ``cq``'s next event: runs the simulation until a completion arrives on the
        armed CQ. Refused (it would block forever) when the CQ is not armed. When the simulation
        goes idle with no completion to come, it keeps waiting while another thread of the
        program is alive (that thread may post), and raises PyverbsRDMAError (EIO) when none is
        (no event can ever come)."""
        instance("get_cq_event cq", cq, CQ)
        if self.closed:
            raise PyverbsUserError("get_cq_event: the channel is closed")
        if cq.channel is not self:
            raise PyverbsUserError(f"get_cq_event: {cq!r} was not created on this channel")
        if cq._armed_at is None:
            raise PyverbsUserError("get_cq_event: the CQ is not armed (call cq.req_notify() first); "
                                   "no event can come, so this would block forever")
        if self._rid:  # the daemon waits until the event is due (simulated time passes meanwhile)
            self._core.call("GET_CQ_EVENT", (self._rid,))
            try:
                os.eventfd_read(self._fd)
            except BlockingIOError:
                pass
            cq._armed_at = None
            cq._events += 1
            return
        sim = cq.ctx.sim
        # armed at the running total of completions; the event needs one more than that, i.e.
        # this many waiting in the CQ given what has been polled since
        want = cq._armed_at + 1 - cq._polled
        while True:
            have = len(cq)
            if have >= want:
                break
            reason = sim._core.run(_INT64_MAX, 0, cq._host.index, cq._handle, want)
            if reason in (_core.RUN_PEER, _core.RUN_STEP):
                continue
            if len(cq) < want and reason != _core.RUN_CQ:
                if another_thread_may_act():  # another thread may post: block, as ibv_get_cq_event
                    time.sleep(_WAIT_S)
                    continue
                raise PyverbsRDMAError(
                    f"get_cq_event: the simulation went idle with no new completion on {cq!r}: "
                    "nothing is in flight and no other thread is running, so no event can come "
                    "(was work posted?)", errno.EIO)
        cq._armed_at = None
        cq._events += 1
        if cq._signalled:  # the event fd announced it: taken now
            os.eventfd_read(self._fd)
            cq._signalled = False

    def close(self) -> None:
        """Destroy the channel (its ``fd`` is closed)."""
        if not self.closed:
            self.closed = True
            _OPEN_CHANNELS.discard(self)
            if self._rid:
                try:
                    self._core.call("DESTROY_CHANNEL", (self._rid,))
                except PyverbsRDMAError:  # CQs still use it: the daemon frees it with this process
                    pass
            os.close(self._fd)

    def __del__(self) -> None:
        if not getattr(self, "closed", True):
            self.close()

    def __enter__(self) -> CompChannel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CQ(_cq.CQ):
    """A completion queue; ``channel`` (a CompChannel) enables ``req_notify``.

    ``cqe`` is limited by the device's ``max_cqe`` (rxe: 32767), EINVAL above it, as rxe. A float
    ``cqe`` is truncated as pyverbs' C conversion truncates it (rdma-core's own tests create
    ``CQ(ctx, max_cqe/2)``), with a :class:`TruncatedCqeWarning` saying so; a bool or any other
    non-number is a TypeError (PyverbsTypeError)."""

    def __init__(self, ctx: Context, cqe: int = 100, cq_context: object = None,
                 channel: CompChannel | None = None, comp_vector: int = 0) -> None:
        n = int_in("CQ cqe", _cqe_as_pyverbs_converts(cqe), 0, U32)
        max_cqe = _devices.RXE_DEVICE_ATTR["max_cqe"]
        if n > max_cqe:
            raise PyverbsRDMAError(f"CQ cqe={n}: the device allows at most max_cqe={max_cqe}", errno.EINVAL)
        if channel is not None:
            instance("CQ channel", channel, CompChannel)
        nvec = ctx.num_comp_vectors if hasattr(ctx, "num_comp_vectors") else 1
        if int_in("CQ comp_vector", comp_vector, 0, U32) >= nvec:
            raise PyverbsRDMAError(f"Failed to create CQ: comp_vector={comp_vector}, the device has "
                                   f"{nvec} completion vector(s) (0..{nvec - 1})", errno.EINVAL)
        core = ctx.host.sim._core
        if channel is not None and _remote(core):
            core.pending_channel = channel._rid  # the daemon's CQ raises its events on that channel
        super().__init__(ctx, n, cq_context, None, comp_vector)
        self._polled = 0  # completions taken by poll() so far (for req_notify)
        self.channel = channel
        self.cq_context = cq_context
        self._armed_at: int | None = None
        self._signalled = False  # the channel's fd announces this CQ's event
        self._events = 0
        self._acked = 0
        if channel is not None:
            channel._cqs.add(self)

    def req_notify(self, solicited_only: bool = False) -> None:
        """``ibv_req_notify_cq``: arm the CQ for one event at its next completion."""
        if self._closed:
            raise PyverbsUserError(f"req_notify: {self!r} is destroyed")
        if self.channel is None:
            raise PyverbsRDMAError("req_notify: the CQ has no completion channel", errno.EINVAL)
        core = self._host.sim._core
        if _remote(core):
            core.call("REQ_NOTIFY", (self._host.index, self._handle, int(bool(solicited_only))))
        self._armed_at = self._polled + len(self)  # completions so far, polled or not

    def ack_events(self, num_events: int) -> None:
        """``ibv_ack_cq_events``: acknowledge ``num_events`` of the events received."""
        n = int_in("ack_events num_events", num_events, 0, U32)
        if self._acked + n > self._events:
            left = self._events - self._acked
            raise PyverbsUserError(f"ack_events({n}): only {left} event(s) unacknowledged")
        self._acked += n

    def poll(self, num_entries: int = 1) -> tuple[int, list[WC]]:
        """Take up to ``num_entries`` completions (``ibv_poll_cq``)."""
        core = self._host.sim._core
        if getattr(core, "remote", False):  # on the fabric daemon: an empty CQ waits there
            n = int_in("CQ.poll num_entries", num_entries, 0, 1 << 31)
            if self._closed:
                raise PyverbsUserError(f"CQ.poll: {self!r} is destroyed")
            wcs = core.cq_poll(self._host.index, self._handle, n, WC) if n else []
            self._polled += len(wcs)
            return len(wcs), wcs
        n, wcs = super().poll(num_entries)
        self._polled += n
        if _OPEN_CHANNELS:
            _refresh_channels()
        return n, wcs

    def poll_batch(self, max_entries: int | None = None) -> Any:
        """rdmasim's numpy poll (rdmasim.verbs.CQ.poll_batch); in one process only."""
        if _remote(self._host.sim._core):
            raise PyverbsRDMAError("poll_batch: not available to a process attached to the fabric daemon "
                                   "(rdmasim exec); use poll()", errno.EOPNOTSUPP)
        return super().poll_batch(max_entries)

    def resize(self, cqe: int) -> None:
        """``ibv_resize_cq``: room for ``cqe`` completions (``cqe`` reads it back), keeping the
        completions the CQ holds in order. EINVAL when ``cqe`` is 0, above the device's
        ``max_cqe`` or below the completions the CQ holds, as rxe."""
        n = int_in("CQ.resize cqe", cqe, 0, U32)
        max_cqe = _devices.RXE_DEVICE_ATTR["max_cqe"]
        if n < 1 or n > max_cqe:
            raise PyverbsRDMAError(f"CQ.resize cqe={n}: the device allows 1..max_cqe={max_cqe}",
                                   errno.EINVAL)
        core = self._host.sim._core
        if _remote(core):  # on the fabric daemon: ibv_resize_cq there (the work in flight goes on)
            if self._closed:
                raise PyverbsUserError(f"CQ.resize: {self!r} is destroyed")
            core.cq_resize(self._host.index, self._handle, n)
            self.cqe = n
            return
        super().resize(n)

    @property
    def comp_channel(self) -> CompChannel | None:
        """The completion channel given at creation (None without one), as pyverbs names it."""
        return self.channel

    def close(self) -> None:
        """Destroy the CQ, after the QPs that use it (pyverbs closes an object's users first)."""
        if not self._closed:
            for pd in list(self.ctx._children):
                for child in list(getattr(pd, "_children", ())):
                    if self in (getattr(child, "send_cq", None), getattr(child, "recv_cq", None)):
                        child.close()
        super().close()

    def __enter__(self) -> CQ:
        return self


_CQ_WC = libibverbs_enums.ibv_create_cq_wc_flags
IBV_WC_STANDARD_FLAGS = int(_CQ_WC.IBV_WC_STANDARD_FLAGS)


class CqInitAttrEx:
    """``struct ibv_cq_init_attr_ex``. ``wc_flags`` may ask for the standard fields
    (IBV_WC_STANDARD_FLAGS); anything else (timestamps, ...) is EOPNOTSUPP, as on rxe."""

    def __init__(self, cqe: int = 100, cq_context: object = None, channel: CompChannel | None = None,
                 comp_vector: int = 0, wc_flags: int = 0, comp_mask: int = 0, flags: int = 0,
                 parent_domain: object = None) -> None:
        self.cqe = cqe
        self.cq_context = cq_context
        self.channel = channel
        self.comp_vector = comp_vector
        self.wc_flags = int_in("CqInitAttrEx wc_flags", wc_flags, 0, (1 << 64) - 1)
        self.comp_mask = int_in("CqInitAttrEx comp_mask", comp_mask, 0, U32)
        self.flags = int_in("CqInitAttrEx flags", flags, 0, U32)
        if parent_domain is not None:
            raise PyverbsUserError("CqInitAttrEx parent_domain: parent domains are not emulated")


class PollCqAttr:
    """``struct ibv_poll_cq_attr`` (no fields in use)."""

    def __init__(self, comp_mask: int = 0) -> None:
        self.comp_mask = int_in("PollCqAttr comp_mask", comp_mask, 0, U32)


class CQEX(CQ):
    """An extended CQ (``ibv_create_cq_ex``) read with ``start_poll`` / ``next_poll`` /
    ``end_poll`` and the ``read_*`` accessors. It is a CQ: QPs take it as ``scq``/``rcq``."""

    def __init__(self, context: Context, init_attr: CqInitAttrEx) -> None:
        instance("CQEX init_attr", init_attr, CqInitAttrEx)
        extra = init_attr.wc_flags & ~IBV_WC_STANDARD_FLAGS
        if extra:
            raise PyverbsRDMAError(f"CQEX wc_flags=0x{init_attr.wc_flags:x}: bits 0x{extra:x} (e.g. "
                                   "completion timestamps) are not supported (nor by rxe)", errno.EOPNOTSUPP)
        super().__init__(context, init_attr.cqe, init_attr.cq_context, init_attr.channel,
                         init_attr.comp_vector)
        self.wc_flags = init_attr.wc_flags
        self._cur: WC | None = None

    def _take(self) -> int:
        n, wcs = self.poll(1)
        if n == 0:
            self._cur = None
            return errno.ENOENT
        self._cur = wcs[0]
        return 0

    def start_poll(self, attr: PollCqAttr) -> int:
        """``ibv_start_poll``: 0 with the first completion current, or ENOENT when empty."""
        instance("start_poll attr", attr, PollCqAttr)
        return self._take()

    def next_poll(self) -> int:
        """``ibv_next_poll``: 0 with the next completion current, or ENOENT."""
        return self._take()

    def end_poll(self) -> None:
        """``ibv_end_poll``: end the polling sequence."""
        self._cur = None

    def _wc(self, what: str) -> WC:
        if self._cur is None:
            raise PyverbsUserError(f"CQEX.{what}: no current completion "
                                   "(start_poll/next_poll must have returned 0)")
        return self._cur

    @property
    def status(self) -> int:
        """The current completion's status."""
        return self._wc("status").status

    @property
    def wr_id(self) -> int:
        """The current completion's wr_id."""
        return self._wc("wr_id").wr_id

    def read_opcode(self) -> int:
        """The current completion's opcode (IBV_WC_*)."""
        return self._wc("read_opcode").opcode

    def read_vendor_err(self) -> int:
        """The current completion's vendor error."""
        return self._wc("read_vendor_err").vendor_err

    def read_byte_len(self) -> int:
        """Bytes received (receive completions)."""
        return self._wc("read_byte_len").byte_len

    def read_imm_data(self) -> int:
        """Immediate data (``__be32``, as WC.imm_data)."""
        return self._wc("read_imm_data").imm_data

    def read_qp_num(self) -> int:
        """The local QP number."""
        return self._wc("read_qp_num").qp_num

    def read_src_qp(self) -> int:
        """The remote QP number (UD)."""
        return self._wc("read_src_qp").src_qp

    def read_wc_flags(self) -> int:
        """IBV_WC_* completion flags."""
        return self._wc("read_wc_flags").wc_flags

    def read_slid(self) -> int:
        """Source LID (WC.slid): 0 on RoCE."""
        return self._wc("read_slid").slid

    def read_sl(self) -> int:
        """Service level (WC.sl)."""
        return self._wc("read_sl").sl

    def read_dlid_path_bits(self) -> int:
        """DLID path bits (WC.dlid_path_bits): 0 on RoCE."""
        return self._wc("read_dlid_path_bits").dlid_path_bits
