"""``pyverbs.cmid``: the RDMA connection manager (librdmacm's ``rdma_cm``), emulated by the fabric daemon.

The connection manager connects processes: a passive side binds to an IP address and port and
listens, an active side resolves that address and connects. It works for programs under
``rdmasim exec`` (whose devices are the daemon's hosts, shared with other processes): each host
has the IPv4 address of its scenario, the daemon serves the rdma_cm operations and queues their
events (rdmasim/fabricd/cm.py), and this module does the QP transitions librdmacm does for a
program (INIT at ``create_qp``, RTR and RTS at ``accept`` and at the connect response, ERR at
``disconnect``). In one process without a daemon (``rdmasim pyverbs-run``) there is no second
process to connect to: creating an event channel, an AddrInfo-based CMID or resolving raises
``PyverbsRDMAError`` with EOPNOTSUPP, saying so.

Emulated: event channels, ``CMID`` (asynchronous, from a channel; synchronous, from an
``AddrInfo``, as ``rdma_create_ep``), bind/listen, resolve_addr/route, connect/accept/reject/
establish/disconnect, ``get_request``, ``create_qp``, ``init_qp_attr`` (external QPs),
``query_qp``, ``set_option(RDMA_OPTION_ID_ACK_TIMEOUT)``, the ``post_*``/``get_*_comp`` helpers,
``reg_msgs``/``reg_read``/``reg_write``, RC and UD (``RDMA_PS_UDP``) connections, and multicast
groups (``join_multicast``/``leave_multicast``; a send to a group goes to each other member as a
unicast copy). Not emulated: ECE (``set_local_ece``/``get_remote_ece`` are EOPNOTSUPP, as on rxe),
IPv6 and host names.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import select
import weakref
from typing import Any

from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.pyverbs import _devices, _remote
from rdmasim.pyverbs._attrs import attr_class
from rdmasim.verbs import enums as e

__all__ = ["AddrInfo", "CMEvent", "CMEventChannel", "CMID", "ConnParam", "JoinMCAttrEx", "UDParam"]

_WHY = ("the RDMA connection manager connects processes on one fabric: run the program under "
        "`rdmasim exec -- python PROGRAM` (or `rdmasim exec -- rdmasim pyverbs-run PROGRAM`), whose "
        "devices are the fabric daemon's, with an emulated rdma_cm (docs/pyverbs.md)")

RDMA_PS_TCP, RDMA_PS_UDP = 0x0106, 0x0111
RAI_PASSIVE = 1
RDMA_OPTION_ID = 0
RDMA_OPTION_ID_ACK_TIMEOUT = 3
#: the Q_Key of rdma_cm's UD QPs (RDMA_UDP_QKEY)
RDMA_UDP_QKEY = 0x01234567
_EVENT_NAMES = tuple("RDMA_CM_EVENT_" + n for n in (
    "ADDR_RESOLVED", "ADDR_ERROR", "ROUTE_RESOLVED", "ROUTE_ERROR", "CONNECT_REQUEST", "CONNECT_RESPONSE",
    "CONNECT_ERROR", "UNREACHABLE", "REJECTED", "ESTABLISHED", "DISCONNECTED", "DEVICE_REMOVAL",
    "MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE", "TIMEWAIT_EXIT"))
(ADDR_RESOLVED, ADDR_ERROR, ROUTE_RESOLVED, ROUTE_ERROR, CONNECT_REQUEST, CONNECT_RESPONSE, CONNECT_ERROR,
 UNREACHABLE, REJECTED, ESTABLISHED, DISCONNECTED, DEVICE_REMOVAL, MULTICAST_JOIN) = range(13)
_ACCESS = e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC
_DEFAULT_ACK_TIMEOUT = 14

JoinMCAttrEx = attr_class("JoinMCAttrEx", __name__, "``rdma_cm_join_mc_attr_ex``.",
                          [("addr", None), ("comp_mask", 0), ("join_flags", 0)])


class ConnParam:
    """``struct rdma_conn_param``: ``resources`` (responder resources), ``depth`` (initiator
    depth), ``flow_control``, ``retry``, ``rnr_retry``, ``srq``, ``qp_num`` (an external QP's number)
    and private data (``set_private_data``)."""

    def __init__(self, resources: int = 1, depth: int = 1, flow_control: int = 0, retry: int = 5,
                 rnr_retry: int = 5, srq: int = 0, qp_num: int = 0, data_len: int = 0) -> None:
        self.resources, self.depth, self.flow_control = resources, depth, flow_control
        self.retry, self.rnr_retry, self.srq, self.qp_num = retry, rnr_retry, srq, qp_num
        self._data = b""

    @property
    def qpn(self) -> int:
        """The QP number given with the request (an external QP's)."""
        return int(self.qp_num)

    @qpn.setter
    def qpn(self, val: int) -> None:
        self.qp_num = val

    @property
    def private_data(self) -> bytes:
        """The private data sent with connect/accept."""
        return self._data

    def set_private_data(self, data: bytes | str) -> None:
        """Private data for the peer (at most 56 bytes with connect, 196 with accept, as IB CM)."""
        self._data = data.encode() if isinstance(data, str) else bytes(data)


def _core() -> Any:
    sim = _devices.simulation()
    if not _remote.is_remote(sim):
        raise PyverbsRDMAError(_WHY, errno.EOPNOTSUPP)
    return sim._core


def _cm(core: Any, op: str, **kw: Any) -> dict[str, Any]:
    return json.loads(core.call("CM_CALL", data=json.dumps({"op": op, **kw}).encode())[2] or b"{}")


def _text(x: Any) -> str | None:
    if x is None:
        return None
    return x.decode() if isinstance(x, bytes) else str(x)


def _address(x: Any, what: str) -> str | None:
    t = _text(x)
    if t is None or t == "":
        return None
    try:
        return str(ipaddress.IPv4Address(t))
    except ValueError:
        raise PyverbsRDMAError(f"Failed to get Address Info: {what} {t!r}: the emulated rdma_cm resolves "
                               "IPv4 addresses (the hosts' scenario addresses)", errno.EINVAL) from None


def _service(x: Any) -> int:
    t = _text(x)
    if not t:
        return 0
    if not t.isdigit() or int(t) > 65535:
        raise PyverbsRDMAError(f"Failed to get Address Info: service {t!r}: give a port number 0..65535",
                               errno.EINVAL)
    return int(t)


class AddrInfo:
    """``rdma_getaddrinfo``: ``src``/``dst`` IPv4 addresses with ``src_service``/``dst_service``
    ports, a port space and ``flags`` (RAI_PASSIVE: the source is where to listen)."""

    def __init__(self, src: Any = None, dst: Any = None, src_service: Any = None, dst_service: Any = None,
                 port_space: int = 0, flags: int = 0) -> None:
        self.src = _address(src, "src")
        self.dst = _address(dst, "dst")
        self.src_port = _service(src_service)
        self.dst_port = _service(dst_service)
        self.port_space = int(port_space) or RDMA_PS_TCP
        self.flags = int(flags)

    def close(self) -> None:
        """Nothing to free."""


class CMEventChannel:
    """``rdma_create_event_channel``: ``fd`` is readable while an event waits."""

    def __init__(self) -> None:
        self._core = _core()
        self._fd = os.eventfd(0, os.EFD_SEMAPHORE | os.EFD_CLOEXEC)
        self.id = self._core.call("CM_CREATE_CHANNEL", fds=(self._fd,))[0]
        self.closed = False

    @property
    def fd(self) -> int:
        """The channel's descriptor (-1 once closed)."""
        return -1 if self.closed else self._fd

    def _get(self) -> dict[str, Any]:
        """The next event, waiting for it (the daemon counts the wait as this process waiting)."""
        if self.closed:
            raise PyverbsUserError("CMEvent: the event channel is closed")
        if not select.select([self._fd], [], [], 0)[0]:
            self._core.call("IDLE", fds=(self._fd,))
        os.eventfd_read(self._fd)
        ev = json.loads(self._core.call("CM_GET_EVENT", (self.id,))[2])
        cid = _IDS.get(ev["id"])
        if cid is not None:
            ev = cid._on_event(ev)
        return ev

    def close(self) -> None:
        """``rdma_destroy_event_channel``."""
        if not self.closed:
            self.closed = True
            try:
                self._core.call("CM_DESTROY_CHANNEL", (self.id,))
            finally:
                os.close(self._fd)


class CMEvent:
    """``rdma_get_cm_event``: the next event of ``channel`` (waits for one)."""

    def __init__(self, channel: CMEventChannel) -> None:
        if not isinstance(channel, CMEventChannel):
            raise PyverbsUserError(f"CMEvent needs a CMEventChannel, got {channel!r}")
        self._ev = channel._get()

    @property
    def event_type(self) -> int:
        """An ``rdma_cm_event_type`` value."""
        return int(self._ev["event"])

    @property
    def status(self) -> int:
        """The event's status (a REJECTED event's reason)."""
        return int(self._ev.get("status", 0))

    @property
    def private_data(self) -> bytes:
        """The private data the peer sent with the request, reply or reject."""
        return bytes.fromhex(self._ev.get("private_data", ""))

    def event_str(self) -> str:
        """``rdma_event_str``."""
        t = self.event_type
        return _EVENT_NAMES[t] if 0 <= t < len(_EVENT_NAMES) else "UNKNOWN EVENT"

    def ack_cm_event(self) -> None:
        """``rdma_ack_cm_event``: nothing to free."""

    def close(self) -> None:
        """Acknowledge the event."""


class UDParam:
    """``struct rdma_ud_param`` of an ESTABLISHED event on a UD identifier: the peer's QP number,
    Q_Key and address."""

    def __init__(self, cm_event: CMEvent) -> None:
        peer = cm_event._ev.get("peer") or {}
        self.qp_num = int(peer.get("qpn", 0))
        self.qkey = int(peer.get("qkey", RDMA_UDP_QKEY))
        self._ip = peer.get("ip")

    @property
    def ah_attr(self) -> Any:
        """An AHAttr addressing the peer (GRH with its GID)."""
        from rdmasim.pyverbs.addr import AHAttr, GlobalRoute

        return AHAttr(gr=GlobalRoute(dgid=f"::ffff:{self._ip}", sgid_index=0), is_global=1, port_num=1)


_IDS: weakref.WeakValueDictionary[int, CMID] = weakref.WeakValueDictionary()


def _psn(cid: int) -> int:
    """The first PSN of the QP connected through identifier ``cid`` (deterministic: from the
    identifier's number, which the daemon gives out in order)."""
    return (cid * 2654435761) & 0xFFFFFF


class CMID:
    """``rdma_cm_id``: ``CMID(creator=CMEventChannel(), port_space=...)`` (asynchronous),
    ``CMID(creator=AddrInfo(...), qp_init_attr=...)`` (synchronous: ``rdma_create_ep``), or
    ``CMID(creator=cm_event, listen_id=listener)`` for a connection request."""

    def __init__(self, creator: Any = None, qp_init_attr: Any = None, pd: Any = None,
                 port_space: int = RDMA_PS_TCP, listen_id: CMID | None = None) -> None:
        self.pd = pd
        self.ctx: Any = None
        self.event_channel: CMEventChannel | None = None
        self.qp: Any = None
        self._own_cqs: list[Any] = []
        self._sync = False
        self._owns_channel = False
        self._qp_init = None
        self._ack_timeout: int | None = None
        self._peer: dict[str, Any] | None = None
        self._host = -1
        self._cid = 0
        self.closed = True
        self.ps = port_space
        if creator is None:
            return
        core = self._core = _core()
        if isinstance(creator, AddrInfo):
            self._sync = self._owns_channel = True
            self.ps = creator.port_space
            self.event_channel = CMEventChannel()
            self._create_id(core)
            if creator.flags & RAI_PASSIVE:
                self._bind(creator.src, creator.src_port)
                self._qp_init = qp_init_attr
            else:
                self.resolve_addr(creator)
                self.resolve_route()
                if qp_init_attr is not None:
                    self.create_qp(qp_init_attr)
        elif isinstance(creator, CMEventChannel):
            self.event_channel = creator
            self._create_id(core)
        elif isinstance(creator, CMEvent):
            if listen_id is None:
                raise PyverbsUserError("listen ID not provided")
            ev = creator._ev
            if ev["event"] != CONNECT_REQUEST:
                raise PyverbsUserError(f"CMID from a {creator.event_str()} event: only a connect request "
                                       "makes one")
            self._cid = int(ev["id"])
            self._peer = ev.get("peer")
            self.ps = listen_id.ps
            self.event_channel = listen_id.event_channel
            self._host = listen_id._host
            self.ctx, self.pd = listen_id.ctx, listen_id.pd
            self._sync = listen_id._sync
            self.closed = False
            _IDS[self._cid] = self
        else:
            raise PyverbsRDMAError(f"Cannot create CM ID from {type(creator)}", errno.EINVAL)

    def _create_id(self, core: Any) -> None:
        assert self.event_channel is not None
        self._cid = _cm(core, "create_id", channel=self.event_channel.id, ps=int(self.ps))["id"]
        self.closed = False
        _IDS[self._cid] = self

    def _call(self, op: str, **kw: Any) -> dict[str, Any]:
        if self.closed:
            raise PyverbsUserError(f"{op}: the CMID is closed")
        return _cm(self._core, op, id=self._cid, **kw)

    def _default_host(self) -> int:
        order = self._core.device_order()
        return order[0] if order else 0

    def _open_device(self, host: int) -> None:
        from rdmasim.pyverbs.device import Context
        from rdmasim.pyverbs.pd import PD

        self._host = host
        if self.ctx is None:
            self.ctx = Context(name=f"rxe{host}")
        if self.pd is None:
            self.pd = PD(self.ctx)

    def _bind(self, ip: str | None, port: int) -> None:
        out = self._call("bind", ip=ip, port=port, default_host=self._default_host())
        self._open_device(out["host"])

    def _wait(self, *want: int) -> dict[str, Any]:
        """A synchronous identifier's next event, which must be one of ``want``."""
        assert self.event_channel is not None
        ev = self.event_channel._get()
        if ev["event"] not in want:
            t = ev["event"]
            name = _EVENT_NAMES[t] if 0 <= t < len(_EVENT_NAMES) else str(t)
            code = errno.ECONNREFUSED if t in (REJECTED, UNREACHABLE) else errno.EINVAL
            raise PyverbsRDMAError(f"rdma_cm: {name} (status {ev.get('status', 0)})", code)
        return ev

    # ---- properties ----
    @property
    def context(self) -> Any:
        """The Context of the identifier's device (once bound or resolved)."""
        return self.ctx

    @property
    def qpn(self) -> int | None:
        """The number of the QP made by ``create_qp`` (None without one)."""
        return self.qp.qp_num if self.qp is not None else None

    @property
    def dev_name(self) -> str:
        """The device's name."""
        return f"rxe{self._host}"

    @property
    def port_num(self) -> int:
        """The device port (1)."""
        return 1

    # ---- addresses ----
    def bind_addr(self, lai: AddrInfo) -> None:
        """``rdma_bind_addr`` to the source address and port of ``lai``."""
        self._bind(lai.src, lai.src_port)

    def listen(self, backlog: int = 0) -> None:
        """``rdma_listen``."""
        self._call("listen", backlog=int(backlog))

    def resolve_addr(self, rai: AddrInfo, timeout_ms: int = 2000) -> None:
        """``rdma_resolve_addr``: an ADDR_RESOLVED event follows (waited for when synchronous)."""
        out = self._call("resolve_addr", src=rai.src, dst=rai.dst, port=rai.dst_port,
                         default_host=self._default_host())
        if "host" in out:
            self._open_device(out["host"])
        if self._sync:
            self._wait(ADDR_RESOLVED)

    def resolve_route(self, timeout_ms: int = 2000) -> None:
        """``rdma_resolve_route``: a ROUTE_RESOLVED event follows (waited for when synchronous)."""
        self._call("resolve_route")
        if self._sync:
            self._wait(ROUTE_RESOLVED)

    # ---- QP ----
    def create_qp(self, qp_init: Any) -> None:
        """``rdma_create_qp``: a QP on the identifier's PD (with CQs of its own when ``qp_init`` has
        none), moved to INIT (UD: to RTS) as librdmacm does."""
        from rdmasim.pyverbs.cq import CQ
        from rdmasim.pyverbs.qp import QP, QPAttr

        if self.pd is None:
            raise PyverbsRDMAError("rdma_create_qp: the identifier has no device yet (bind or resolve it)",
                                   errno.EINVAL)
        if qp_init.send_cq is None:
            cq = CQ(self.ctx, max(int(qp_init.cap.max_send_wr), 1))
            self._own_cqs.append(cq)
            qp_init.send_cq = cq
        if qp_init.recv_cq is None:
            cq = CQ(self.ctx, max(int(qp_init.cap.max_recv_wr), 1))
            self._own_cqs.append(cq)
            qp_init.recv_cq = cq
        self.qp = QP(self.pd, qp_init)
        if self.qp.qp_type == e.IBV_QPT_UD:
            self.qp.to_rts(QPAttr(qkey=RDMA_UDP_QKEY, port_num=1, sq_psn=_psn(self._cid)))
        else:
            attr, mask = self.init_qp_attr(e.IBV_QPS_INIT)
            self.qp.modify(attr, mask)

    def query_qp(self, attr_mask: int) -> tuple[Any, Any]:
        """``ibv_query_qp`` of the identifier's QP."""
        if self.qp is None:
            raise PyverbsRDMAError("Failed to query QP: the CMID has no QP", errno.EINVAL)
        return self.qp.query(attr_mask)

    def init_qp_attr(self, qp_state: int) -> tuple[Any, int]:
        """``rdma_init_qp_attr``: the attributes (and mask) of the transition to ``qp_state`` for a
        QP connected through this identifier (an external QP's, or the one ``create_qp`` made)."""
        from rdmasim.pyverbs.addr import AHAttr, GlobalRoute
        from rdmasim.pyverbs.qp import QPAttr

        attr = QPAttr(qp_state=qp_state, port_num=1)
        if qp_state == e.IBV_QPS_INIT:
            attr.qp_access_flags = _ACCESS
            return attr, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS
        peer = self._peer
        if peer is None:
            raise PyverbsRDMAError("Failed to get QP attributes: no connection request or reply yet",
                                   errno.EINVAL)
        if qp_state == e.IBV_QPS_RTR:
            attr.path_mtu = _devices.port_attr(self.ctx.host).active_mtu
            attr.dest_qp_num = int(peer["qpn"])
            attr.rq_psn = int(peer["psn"])
            attr.max_dest_rd_atomic = max(int(peer.get("depth", 1)), 1)
            attr.min_rnr_timer = 12
            attr.ah_attr = AHAttr(gr=GlobalRoute(dgid=f"::ffff:{peer['ip']}", sgid_index=0), is_global=1,
                                  port_num=1)
            return attr, (e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN
                          | e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
        if qp_state == e.IBV_QPS_RTS:
            mine = self._mine or {}
            attr.sq_psn = _psn(self._cid)
            attr.timeout = self._ack_timeout if self._ack_timeout is not None else _DEFAULT_ACK_TIMEOUT
            attr.retry_cnt = int(mine.get("retry", 5))
            attr.rnr_retry = int(mine.get("rnr_retry", 5))
            attr.max_rd_atomic = max(int(mine.get("depth", 1)), 1)
            return attr, (e.IBV_QP_STATE | e.IBV_QP_SQ_PSN | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT
                          | e.IBV_QP_RNR_RETRY | e.IBV_QP_MAX_QP_RD_ATOMIC)
        raise PyverbsRDMAError(f"Failed to get QP attributes: state {qp_state} (INIT, RTR or RTS)",
                               errno.EINVAL)

    _mine: dict[str, Any] | None = None

    def _info(self, param: ConnParam | None) -> dict[str, Any]:
        p = param if param is not None else ConnParam()
        qpn = self.qp.qp_num if self.qp is not None else int(p.qp_num)
        self._mine = {"qpn": qpn, "psn": _psn(self._cid), "resources": int(p.resources),
                      "depth": int(p.depth), "retry": int(p.retry), "rnr_retry": int(p.rnr_retry),
                      "qkey": RDMA_UDP_QKEY, "private_data": p.private_data.hex()}
        return self._mine

    def _to_rts(self) -> None:
        for state in (e.IBV_QPS_RTR, e.IBV_QPS_RTS):
            attr, mask = self.init_qp_attr(state)
            self.qp.modify(attr, mask)

    def _on_event(self, ev: dict[str, Any]) -> dict[str, Any]:
        """What librdmacm does with an event before the program sees it."""
        t = ev["event"]
        if t == CONNECT_RESPONSE:
            self._peer = ev.get("peer")
            if self.qp is not None:  # the QP goes to RTS, the RTU goes out: the program sees ESTABLISHED
                self._to_rts()
                self._call("establish")
                ev = dict(ev, event=ESTABLISHED)
        elif t == ESTABLISHED and self._peer is None:
            self._peer = ev.get("peer")
        elif t == DISCONNECTED and self.qp is not None:
            self._qp_to_error()
        return ev

    def _qp_to_error(self) -> None:
        from rdmasim.pyverbs.qp import QPAttr

        if self.qp is not None and not self.qp._closed and self.qp.qp_state != e.IBV_QPS_ERR:
            self.qp.modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)

    # ---- connections ----
    def connect(self, param: ConnParam | None = None) -> None:
        """``rdma_connect``: ESTABLISHED (or CONNECT_RESPONSE without a QP, or REJECTED) follows;
        a synchronous identifier waits for it."""
        self._call("connect", info=self._info(param))
        if self._sync:
            self._wait(ESTABLISHED)

    def accept(self, param: ConnParam | None = None) -> None:
        """``rdma_accept``: the QP (if ``create_qp`` made one) goes to RTS and the reply goes out;
        a synchronous identifier waits for ESTABLISHED."""
        info = self._info(param)
        if self.qp is not None and self.qp.qp_type != e.IBV_QPT_UD:
            self._to_rts()
        self._call("accept", info=info)
        if self._sync and self.ps == RDMA_PS_TCP:
            self._wait(ESTABLISHED)

    def reject(self, private_data: bytes | None = None) -> None:
        """``rdma_reject``: the peer sees REJECTED with ``private_data``."""
        self._call("reject", private_data=(private_data or b"").hex())

    def establish(self) -> None:
        """``rdma_establish``: after a CONNECT_RESPONSE on an identifier without a QP (the program
        moved its external QP to RTS): the passive side sees ESTABLISHED."""
        self._call("establish")

    def disconnect(self) -> None:
        """``rdma_disconnect``: the QP goes to the error state; both sides see DISCONNECTED."""
        self._qp_to_error()
        self._call("disconnect")

    def get_request(self) -> CMID:
        """``rdma_get_request`` on a synchronous listener: waits for a connection request and
        returns its identifier (with a QP, when the listener was made with ``qp_init_attr``)."""
        ev = self._wait(CONNECT_REQUEST)
        child = CMID()
        child._core = self._core
        child._cid, child._peer, child.ps = int(ev["id"]), ev.get("peer"), self.ps
        child.event_channel, child._sync, child._host = self.event_channel, True, self._host
        child.ctx, child.pd, child.closed = self.ctx, self.pd, False
        _IDS[child._cid] = child
        if self._qp_init is not None:
            from rdmasim.pyverbs.qp import QPInitAttr

            q = self._qp_init
            child.create_qp(QPInitAttr(qp_type=q.qp_type, cap=q.cap, sq_sig_all=q.sq_sig_all))
        return child

    def set_option(self, level: int, optname: int, optval: int, optlen: int) -> None:
        """``rdma_set_option``: RDMA_OPTION_ID_ACK_TIMEOUT (the QP's local ACK timeout at RTS)."""
        if optname != RDMA_OPTION_ID_ACK_TIMEOUT:
            raise PyverbsUserError("Currently only RDMA_OPTION_ID_ACK_TIMEOUT is supported in Pyverbs.")
        if not 0 <= int(optval) <= 31:
            raise PyverbsRDMAError(f"Failed to set option: ACK timeout {optval}: allowed 0..31", errno.EINVAL)
        self._ack_timeout = int(optval)

    def join_multicast(self, addr: AddrInfo | None = None, mc_attr: Any = None, context: int = 0) -> None:
        """``rdma_join_multicast`` (or ``_ex`` with ``mc_attr``): the identifier's UD QP joins the
        group at ``addr``'s (IPv4 multicast) address; RDMA_CM_EVENT_MULTICAST_JOIN follows, whose
        UDParam addresses the group (QPN 0xFFFFFF)."""
        if not addr and not mc_attr:
            raise PyverbsUserError("Join to multicast must have AddrInfo or JoinMCAttrEx arguments")
        ai = addr if addr is not None else mc_attr.addr
        if self.qp is None or self.qp.qp_type != e.IBV_QPT_UD:
            raise PyverbsRDMAError("Failed to Join multicast: the CMID needs a UD QP (create_qp first)",
                                   errno.EINVAL)
        self._call("join", group=ai.src, qpn=self.qp.qp_num, qkey=RDMA_UDP_QKEY)

    def leave_multicast(self, addr: AddrInfo) -> None:
        """``rdma_leave_multicast``: the QP leaves the group."""
        self._call("leave", group=addr.src)

    def set_local_ece(self, ece: Any) -> None:
        """ECE is not supported (EOPNOTSUPP, as on rxe)."""
        raise PyverbsRDMAError("Failed to set local ECE: not supported", errno.EOPNOTSUPP)

    def get_remote_ece(self) -> Any:
        """ECE is not supported (EOPNOTSUPP, as on rxe)."""
        raise PyverbsRDMAError("Failed to get remote ECE: not supported", errno.EOPNOTSUPP)

    # ---- memory and the data path (librdmacm's rdma_verbs.h helpers) ----
    def reg_msgs(self, size: int) -> Any:
        """``rdma_reg_msgs``: an MR for sends and receives."""
        from rdmasim.pyverbs.mr import MR

        return MR(self.pd, size, e.IBV_ACCESS_LOCAL_WRITE)

    def reg_read(self, size: int = 0) -> Any:
        """``rdma_reg_read``: an MR a peer may READ."""
        from rdmasim.pyverbs.mr import MR

        return MR(self.pd, size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ)

    def reg_write(self, size: int = 0) -> Any:
        """``rdma_reg_write``: an MR a peer may WRITE."""
        from rdmasim.pyverbs.mr import MR

        return MR(self.pd, size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)

    def _post(self, opcode: int, mr: Any, length: int, flags: int, remote_addr: int = 0, rkey: int = 0,
              ah: Any = None, rqpn: int = 0) -> None:
        from rdmasim.pyverbs.wr import SGE, SendWR

        if self.qp is None:
            raise PyverbsRDMAError("rdma_post_send: the CMID has no QP", errno.EINVAL)
        wr = SendWR(opcode=opcode, num_sge=1, sg=[SGE(mr.buf, length, mr.lkey)], send_flags=flags)
        if opcode in (e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_READ):
            wr.set_wr_rdma(rkey, remote_addr)
        if ah is not None:
            wr.set_wr_ud(ah, rqpn, RDMA_UDP_QKEY)
        self.qp.post_send(wr)

    def post_recv(self, mr: Any, length: int | None = None) -> None:
        """``rdma_post_recv`` of ``length`` bytes (default: the whole MR)."""
        from rdmasim.pyverbs.wr import SGE, RecvWR

        if self.qp is None:
            raise PyverbsRDMAError("rdma_post_recv: the CMID has no QP", errno.EINVAL)
        self.qp.post_recv(RecvWR(num_sge=1, sg=[SGE(mr.buf, length or mr.length, mr.lkey)]))

    def post_send(self, mr: Any, flags: int = e.IBV_SEND_SIGNALED, length: int | None = None) -> None:
        """``rdma_post_send`` of ``length`` bytes (default: the whole MR)."""
        self._post(e.IBV_WR_SEND, mr, length or mr.length, flags)

    def post_read(self, mr: Any, length: int, remote_addr: int, rkey: int, flags: int = 0) -> None:
        """``rdma_post_read``."""
        self._post(e.IBV_WR_RDMA_READ, mr, length, flags, remote_addr, rkey)

    def post_write(self, mr: Any, length: int, remote_addr: int, rkey: int, flags: int = 0) -> None:
        """``rdma_post_write``."""
        self._post(e.IBV_WR_RDMA_WRITE, mr, length, flags, remote_addr, rkey)

    def post_ud_send(self, mr: Any, ah: Any, rqpn: int = 0, flags: int = e.IBV_SEND_SIGNALED,
                     length: int | None = None) -> None:
        """``rdma_post_ud_send`` to QP ``rqpn`` at ``ah``."""
        self._post(e.IBV_WR_SEND, mr, length or mr.length, flags, ah=ah, rqpn=rqpn)

    def _comp(self, cq: Any) -> Any:
        while True:
            n, wcs = cq.poll()
            if n:
                return wcs[0]

    def get_send_comp(self) -> Any:
        """``rdma_get_send_comp``: waits for the next send completion."""
        return self._comp(self.qp.send_cq)

    def get_recv_comp(self) -> Any:
        """``rdma_get_recv_comp``: waits for the next receive completion."""
        return self._comp(self.qp.recv_cq)

    def close(self) -> None:
        """``rdma_destroy_id`` (and, for an identifier made from an AddrInfo, its QP, CQs and
        channel, as ``rdma_destroy_ep``)."""
        if self.closed:
            return
        self.closed = True
        _IDS.pop(self._cid, None)
        if self.qp is not None:
            self.qp.close()
        for cq in self._own_cqs:
            cq.close()
        try:
            _cm(self._core, "destroy_id", id=self._cid)
        finally:
            if self._owns_channel and self.event_channel is not None:
                self.event_channel.close()

    def __enter__(self) -> CMID:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

