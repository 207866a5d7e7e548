"""Context and PD: a host's NIC opened for verbs, and a protection domain on it."""

from __future__ import annotations

import errno
import itertools
import weakref

from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.transport.handle import Host, SimHandle
from rdmasim.verbs._checks import U16, int_in

# PD numbers are per host (the core checks an MR's or QP's PD by number on its host), so that PDs
# of two Contexts opened on one host never share a number: each PD is its own protection domain.
_PD_IDS: weakref.WeakKeyDictionary[Host, itertools.count[int]] = weakref.WeakKeyDictionary()
_PD_MAX = (1 << 32) - 1

# The order a close cascades in, as pyverbs': memory windows before the QPs and regions they are bound
# through, QPs before the MRs and CQs they use, a Context's PDs before its CQs. Each class says where
# its kind goes (``_close_rank``, lowest first); a kind without one (an extension's) closes last.
CLOSE_MW, CLOSE_QP, CLOSE_MR, CLOSE_PD, CLOSE_CQ = range(5)
_CLOSE_LAST = CLOSE_CQ + 1


def _next_pd_handle(host: Host) -> int:
    ids = _PD_IDS.get(host)
    if ids is None:
        ids = _PD_IDS[host] = itertools.count(1)
    handle = next(ids)
    if handle > _PD_MAX:
        raise PyverbsRDMAError(f"no PD numbers left on host {host.name}", errno.ENOMEM)
    return handle


class Context:
    """An opened device (``ibv_open_device``) on a simulated host.

    ``Context(host)``, or ``Context(sim, name="a")`` to find the host by name.
    """

    def __init__(self, host: Host | SimHandle, name: str | None = None) -> None:
        if isinstance(host, SimHandle):
            if not isinstance(name, str) or name not in host.hosts:
                raise PyverbsUserError(f"no host named {name!r}; hosts: {list(host.hosts)}")
            host = host.hosts[name]
        if not isinstance(host, Host):
            raise PyverbsUserError(f"Context needs a Host (or Simulator and name), got {host!r}")
        self.host = host
        self.sim = host.sim
        self.name = f"rxe_{host.name}"
        self.closed = False
        self._children: set[object] = set()  # open PDs and CQs

    def query_gid(self, port_num: int = 1, index: int = 0) -> str:
        """The RoCEv2 GID of the port (IPv4-mapped IPv6); the NIC has port 1, every index names it."""
        if int_in("query_gid port_num", port_num, 0, 255) != 1:
            raise PyverbsRDMAError(f"query_gid: port_num={port_num}: the NIC has one port, 1", errno.EINVAL)
        int_in("query_gid index", index, 0, U16)
        return self.host.gid

    def rx_counters(self) -> dict[str, int]:
        """Frames the NIC dropped on receive, by reason: ``unknown_qp`` (no such QPN),
        ``bad_state`` (the QP's state refuses them), ``bad_icrc`` (wrong ICRC) and ``malformed``
        (not parseable as RoCEv2 or PFC). All are dropped silently, as IBA and rxe do."""
        return {k: int(v) for k, v in self.sim._core.host_rx_counters(self.host.index).items()}

    def _check_open(self, what: str) -> None:
        if self.closed:
            raise PyverbsUserError(f"{what}: {self!r} is closed")

    def close(self) -> None:
        """Close the device and, first, everything opened on it (as pyverbs): its PDs (each
        closing its QPs and MRs), then its CQs. Closing twice does nothing."""
        if self.closed:
            return
        _close_children(self._children)
        self.closed = True

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Context({self.name}, host={self.host.name}, gid={self.host.gid})"


class PD:
    """Protection domain: memory regions and QPs must share one to work together."""

    _close_rank = CLOSE_PD

    def __init__(self, ctx: Context) -> None:
        if not isinstance(ctx, Context):
            raise PyverbsUserError(f"PD needs a Context, got {ctx!r}")
        ctx._check_open("PD")
        self.ctx = ctx
        self.handle = _next_pd_handle(ctx.host)
        self._children: set[object] = set()  # open MRs and QPs
        self.closed = False
        ctx._children.add(self)

    def _check_open(self, what: str) -> None:
        if self.closed:
            raise PyverbsUserError(f"{what}: {self!r} is deallocated")

    def close(self) -> None:
        """Deallocate the PD and, first, its memory windows, QPs and then MRs (as pyverbs' ``PD.close``).
        Closing twice does nothing."""
        if self.closed:
            return
        _close_children(self._children)  # windows first: a bound region cannot go
        self.closed = True
        self.ctx._children.discard(self)

    def __enter__(self) -> PD:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PD(handle={self.handle}, host={self.ctx.host.name})"


def _creation_order(obj: object) -> int:
    """A deterministic closing order within one kind: by the number the NIC gave the object."""
    for name in ("qp_num", "handle", "_handle", "_index"):
        v = getattr(obj, name, None)
        if isinstance(v, int):
            return v
    return 0


def _close_children(children: set[object]) -> None:
    """Close ``children`` kind by kind in the order of their ``_close_rank`` (``CLOSE_*``), as
    pyverbs' close cascades: QPs before the MRs and CQs they use, PDs before CQs; kinds without a
    rank (added by extensions) last; within a kind in creation order. A child may define
    ``_cascade_close`` for what its parent's close does to it."""
    def order(c: object) -> tuple[int, int]:
        return getattr(c, "_close_rank", _CLOSE_LAST), _creation_order(c)

    for child in sorted(list(children), key=order):
        if child in children:
            getattr(child, "_cascade_close", child.close)()  # type: ignore[attr-defined]
