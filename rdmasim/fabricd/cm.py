"""The emulated RDMA connection manager (rdma_cm) of the fabric daemon.

Each host has the IPv4 address its scenario gives it (``Host.ip``); an rdma_cm identifier binds to
one of them and a port, listens, resolves a peer's address and route, connects, and is accepted,
rejected, established and disconnected as librdmacm's are, each step queueing the events
librdmacm reports on the identifiers' event channels. The messages of the IB CM protocol (REQ,
REP, RTU, REJ, DREQ) are not put on the fabric: each takes effect at once, in zero simulated time.
Multicast groups are membership lists: a UD send to a group is sent by the client as one unicast
copy to each member QP but the sender's own (the fabric's switches do not replicate frames).
The client library (rdmasim/pyverbs/cmid.py) does the QP transitions librdmacm does for a
program, from what the events carry (the peer's QP number, first PSN, host and the connection
parameters).

Requests: ``RSD_CM_CREATE_CHANNEL`` (an eventfd; the daemon writes 1 to it per event),
``RSD_CM_DESTROY_CHANNEL``, ``RSD_CM_GET_EVENT`` (the oldest event, JSON; EAGAIN when none) and
``RSD_CM_CALL`` (a JSON object naming the operation, answered with a JSON object).
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import sys
from collections import deque
from dataclasses import dataclass, field
from typing import Any

# rdma_cm_event_type (librdmacm's rdma_cma.h)
ADDR_RESOLVED, ADDR_ERROR, ROUTE_RESOLVED, ROUTE_ERROR, CONNECT_REQUEST, CONNECT_RESPONSE = 0, 1, 2, 3, 4, 5
CONNECT_ERROR, UNREACHABLE, REJECTED, ESTABLISHED, DISCONNECTED, DEVICE_REMOVAL = 6, 7, 8, 9, 10, 11
MULTICAST_JOIN, MULTICAST_ERROR, ADDR_CHANGE, TIMEWAIT_EXIT = 12, 13, 14, 15
RDMA_PS_TCP, RDMA_PS_UDP, RDMA_PS_IB, RDMA_PS_IPOIB = 0x0106, 0x0111, 0x013F, 0x0002
#: the REJ reason when nobody listens on the address (IB CM: invalid service ID), as rdma_cm reports it
REJ_INVALID_SERVICE_ID = 8
#: a consumer's rdma_reject (IB CM: consumer-defined)
REJ_CONSUMER_DEFINED = 28
_EPHEMERAL = 32768


@dataclass
class CmChannel:
    id: int
    efd: int
    owner: int  # the client's socket descriptor number
    events: deque[dict[str, Any]] = field(default_factory=deque)


@dataclass
class CmId:
    id: int
    owner: int
    channel: int
    ps: int
    host: int = -1  # position of the bound host (-1: not bound)
    port: int = 0
    listening: bool = False
    backlog: int = 0
    dst: tuple[int, int] | None = None  # (host, port) resolved
    peer: int = 0  # the other end's id once connected (or requested)
    state: str = "idle"  # idle, bound, listen, addr, route, connect, connected, disconnected
    info: dict[str, Any] = field(default_factory=dict)  # what this end advertised (qpn, psn, ...)


@dataclass
class CmState:
    channels: dict[int, CmChannel] = field(default_factory=dict)
    ids: dict[int, CmId] = field(default_factory=dict)
    next_channel: int = 1
    next_id: int = 1
    next_port: dict[int, int] = field(default_factory=dict)  # host -> next ephemeral port
    # multicast group (IPv4 text) -> members: (host, QP number) -> the identifier that joined
    groups: dict[str, dict[tuple[int, int], int]] = field(default_factory=dict)


def _state(d: Any) -> CmState:
    st = getattr(d, "_cm_state", None)
    if st is None:
        st = d._cm_state = CmState()
    return st


def _err(code: int, msg: str) -> Exception:
    from rdmasim.fabricd.objects import VerbsError

    return VerbsError(code, msg)


def _owner(c: Any) -> int:
    return id(c)


def _push(d: Any, st: CmState, cid: CmId, event: int, status: int = 0, **extra: Any) -> None:
    """Queue an event for ``cid`` on its channel and make the channel's descriptor readable."""
    ch = st.channels.get(cid.channel)
    if ch is None:
        return
    ch.events.append({"event": event, "status": status, "id": cid.id, **extra})
    try:
        os.write(ch.efd, (1).to_bytes(8, sys.byteorder))
    except OSError:
        pass


def create_channel(d: Any, c: Any, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
    """``rdma_create_event_channel``: the eventfd the client waits on arrives with the request."""
    if len(fds) != 1:
        raise _err(errno.EINVAL, "rdma_create_event_channel: the channel's eventfd did not arrive")
    st = _state(d)
    ch = CmChannel(st.next_channel, os.dup(fds[0]), _owner(c))
    st.next_channel += 1
    st.channels[ch.id] = ch
    return ch.id, ()


def destroy_channel(d: Any, c: Any, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
    st = _state(d)
    ch = st.channels.get(w[0])
    if ch is None or ch.owner != _owner(c):
        raise _err(errno.EINVAL, f"rdma_destroy_event_channel: no channel {w[0]}")
    if any(i.channel == ch.id for i in st.ids.values()):
        raise _err(errno.EBUSY, "rdma_destroy_event_channel: identifiers still use the channel")
    del st.channels[ch.id]
    os.close(ch.efd)
    return 0, ()


def get_event(d: Any, c: Any, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
    """The channel's oldest event (the client has read one count off the eventfd first)."""
    st = _state(d)
    ch = st.channels.get(w[0])
    if ch is None or ch.owner != _owner(c):
        raise _err(errno.EINVAL, f"rdma_get_cm_event: no channel {w[0]}")
    if not ch.events:
        raise _err(errno.EAGAIN, "rdma_get_cm_event: no event waits")
    return 0, (), json.dumps(ch.events.popleft()).encode()


def call(d: Any, c: Any, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
    """One rdma_cm operation: ``{"op": name, ...}``."""
    try:
        req = json.loads(data)
        op = req.pop("op")
    except (ValueError, KeyError, AttributeError):
        raise _err(errno.EINVAL, "rdma_cm request: not a JSON object with an op") from None
    fn = _OPS.get(op)
    if fn is None:
        raise _err(errno.EOPNOTSUPP, f"rdma_cm operation {op!r} is not emulated")
    out = fn(d, _state(d), c, req)
    return 0, (), json.dumps(out or {}).encode()


def _id(st: CmState, c: Any, req: dict[str, Any]) -> CmId:
    cid = st.ids.get(int(req.get("id", 0)))
    if cid is None or cid.owner != _owner(c):
        raise _err(errno.EINVAL, f"no rdma_cm identifier {req.get('id')}")
    return cid


def _host_of_ip(d: Any, ip: str) -> int:
    for i, h in enumerate(d.hosts):
        if h.ip == ip:
            return i
    raise _err(errno.EADDRNOTAVAIL, f"{ip}: no host of the fabric has this address "
               f"(hosts: {', '.join(f'{h.name} {h.ip}' for h in d.hosts)})")


def _ip(text: Any) -> str | None:
    if text in (None, "", "0.0.0.0"):
        return None
    try:
        return str(ipaddress.IPv4Address(text))
    except ValueError:
        raise _err(errno.EINVAL, f"address {text!r}: the emulated rdma_cm takes IPv4 addresses") from None


def _op_create_id(d: Any, st: CmState, c: Any, req: dict[str, Any]) -> dict[str, Any]:
    ch = int(req.get("channel", 0))
    if ch not in st.channels or st.channels[ch].owner != _owner(c):
        raise _err(errno.EINVAL, f"rdma_create_id: no event channel {ch}")
    ps = int(req.get("ps", RDMA_PS_TCP))
    if ps not in (RDMA_PS_TCP, RDMA_PS_UDP, RDMA_PS_IB, RDMA_PS_IPOIB):
        raise _err(errno.EINVAL, f"rdma_create_id: port space 0x{ps:x} is none of TCP, UDP, IB, IPOIB")
    cid = CmId(st.next_id, _owner(c), ch, ps)
    st.next_id += 1
    st.ids[cid.id] = cid
    return {"id": cid.id}


def _bound(st: CmState, host: int, port: int, ps: int) -> CmId | None:
    for i in st.ids.values():
        if i.port == port and i.ps == ps and i.host == host and i.state in ("bound", "listen"):
            return i
    return None


def _op_bind(d: Any, st: CmState, c: Any, req: dict[str, Any]) -> dict[str, Any]:
    cid = _id(st, c, req)
    ip = _ip(req.get("ip"))
    host = _host_of_ip(d, ip) if ip else int(req.get("default_host", 0))
    port = int(req.get("port") or 0)
    if not 0 <= port <= 65535:
        raise _err(errno.EINVAL, f"rdma_bind_addr: port {port}: allowed 0..65535")
    if port == 0:
        port = st.next_port.get(host, _EPHEMERAL)
        while _bound(st, host, port, cid.ps) is not None:
            port += 1
        st.next_port[host] = port + 1
    elif _bound(st, host, port, cid.ps) is not None:
        raise _err(errno.EADDRINUSE, f"rdma_bind_addr: {d.hosts[host].ip}:{port} is in use")
    cid.host, cid.port, cid.state = host, port, "bound"
    return {"host": host, "port": port, "ip": d.hosts[host].ip}


def _op_listen(d: Any, st: CmState, c: Any, req: dict[str, Any]) -> dict[str, Any]:
    cid = _id(st, c, req)
    if cid.state not in ("bound", "listen"):
        raise _err(errno.EINVAL, "rdma_listen: bind the identifier to an address first (rdma_bind_addr)")
    cid.state, cid.listening, cid.backlog = "listen", True, int(req.get("backlog", 0))
    return {}


def _op_resolve_addr(d: Any, st: CmState, c: Any, req: dict[str, Any]) -> dict[str, Any]:
    cid = _id(st, c, req)
    dst_ip = _ip(req.get("dst"))
    if dst_ip is None:
        raise _err(errno.EINVAL, "rdma_resolve_addr: no destination address")
    if ipaddress.IPv4Address(dst_ip).is_multicast:
        dst = -1  # a multicast group: resolved to the source's device (joining it is not emulated)
    else:
        try:
            dst = _host_of_ip(d, dst_ip)
        except Exception:  # noqa: BLE001 - an address nobody has: the ADDR_ERROR event, as librdmacm
            _push(d, st, cid, ADDR_ERROR, -errno.EHOSTUNREACH)
            return {}
    if cid.host < 0:
        src = _ip(req.get("src"))
        out = _op_bind(d, st, c, {"id": cid.id, "ip": src, "default_host": req.get("default_host", 0)})
        cid.host = out["host"]
    cid.dst, cid.state = (dst, int(req.get("port") or 0)), "addr"
    _push(d, st, cid, ADDR_RESOLVED)
    return {"host": cid.host, "port": cid.port}


def _op_resolve_route(d: Any, st: CmState, c: Any, req: dict[str, Any]) -> dict[str, Any]:
    cid = _id(st, c, req)
    if cid.dst is None:
        raise _err(errno.EINVAL, "rdma_resolve_route: resolve the address first (rdma_resolve_addr)")
    cid.state = "route"
    _push(d, st, cid, ROUTE_RESOLVED)
    return {}


def _listener(st: CmState, host: int, port: int, ps: int) -> CmId | None:
    for i in st.ids.values():
        if i.listening and i.port == port and i.ps == ps and i.host == host:
            return i
    return None


def _op_connect(d: Any, st: CmState, c: Any, req: dict[str, Any]) -> dict[str, Any]:
    cid = _id(st, c, req)
    if cid.dst is None or cid.state not in ("route", "addr") or cid.dst[0] < 0:
        raise _err(errno.EINVAL, "rdma_connect: resolve a host's address and the route first")
    host, port = cid.dst
    lis = _listener(st, host, port, cid.ps)
    cid.info = dict(req.get("info", {}), host=cid.host, ip=d.hosts[cid.host].ip, port=cid.port)
    cid.state = "connect"
    if lis is None:  # nobody listens there: the peer's CM rejects (invalid service ID)
        _push(d, st, cid, REJECTED if cid.ps == RDMA_PS_TCP else UNREACHABLE, REJ_INVALID_SERVICE_ID,
              private_data="")
        cid.state = "route"
        return {}
    child = CmId(st.next_id, lis.owner, lis.channel, lis.ps, host=lis.host, port=lis.port, peer=cid.id,
                 state="request")
    st.next_id += 1
    st.ids[child.id] = child
    cid.peer = child.id
    _push(d, st, child, CONNECT_REQUEST, listen_id=lis.id, peer=cid.info,
          private_data=cid.info.get("private_data", ""))
    return {}


def _peer(st: CmState, cid: CmId) -> CmId | None:
    return st.ids.get(cid.peer) if cid.peer else None


def _op_accept(d: Any, st: CmState, c: Any, req: dict[str, Any]) -> dict[str, Any]:
    cid = _id(st, c, req)
    peer = _peer(st, cid)
    if cid.state != "request" or peer is None:
        raise _err(errno.EINVAL, "rdma_accept: the identifier has no connection request to accept")
    cid.info = dict(req.get("info", {}), host=cid.host, ip=d.hosts[cid.host].ip, port=cid.port)
    if cid.ps == RDMA_PS_TCP:
        cid.state, peer.state = "accepted", "connected"
        _push(d, st, peer, CONNECT_RESPONSE, peer=cid.info, private_data=cid.info.get("private_data", ""))
    else:  # UD: the SIDR reply carries the QP and Q_Key; nothing more to establish
        cid.state, peer.state = "connected", "connected"
        _push(d, st, peer, ESTABLISHED, peer=cid.info, private_data=cid.info.get("private_data", ""))
    return {}


def _op_reject(d: Any, st: CmState, c: Any, req: dict[str, Any]) -> dict[str, Any]:
    cid = _id(st, c, req)
    peer = _peer(st, cid)
    if cid.state != "request" or peer is None:
        raise _err(errno.EINVAL, "rdma_reject: the identifier has no connection request to reject")
    cid.state, peer.state = "rejected", "route"
    peer.peer = 0
    _push(d, st, peer, REJECTED if cid.ps == RDMA_PS_TCP else UNREACHABLE, REJ_CONSUMER_DEFINED,
          private_data=str(req.get("private_data", "")))
    return {}


def _op_establish(d: Any, st: CmState, c: Any, req: dict[str, Any]) -> dict[str, Any]:
    """The active side is ready (its QP at RTS): the passive side's ESTABLISHED (the RTU)."""
    cid = _id(st, c, req)
    peer = _peer(st, cid)
    if cid.state != "connected" or peer is None:
        raise _err(errno.EINVAL, "rdma_establish: no accepted connection on the identifier")
    if peer.state == "accepted":
        peer.state = "connected"
        _push(d, st, peer, ESTABLISHED, peer=cid.info, private_data="")
    return {}


def _op_disconnect(d: Any, st: CmState, c: Any, req: dict[str, Any]) -> dict[str, Any]:
    cid = _id(st, c, req)
    _disconnect(d, st, cid)
    return {}


def _disconnect(d: Any, st: CmState, cid: CmId) -> None:
    """DREQ and its DREP: both ends that were connected see DISCONNECTED, once."""
    peer = _peer(st, cid)
    if cid.state in ("connected", "accepted"):
        cid.state = "disconnected"
        _push(d, st, cid, DISCONNECTED)
    if peer is not None and peer.state in ("connected", "accepted"):
        peer.state = "disconnected"
        _push(d, st, peer, DISCONNECTED)


def _op_destroy_id(d: Any, st: CmState, c: Any, req: dict[str, Any]) -> dict[str, Any]:
    cid = _id(st, c, req)
    _drop_id(d, st, cid)
    return {}


def _drop_id(d: Any, st: CmState, cid: CmId) -> None:
    peer = _peer(st, cid)
    if peer is not None and peer.state in ("connected", "accepted"):
        peer.state = "disconnected"
        _push(d, st, peer, DISCONNECTED)
    elif peer is not None and peer.state == "connect":  # a request nobody answered: rejected
        _push(d, st, peer, REJECTED, REJ_CONSUMER_DEFINED, private_data="")
    if peer is not None:
        peer.peer = 0
    for members in st.groups.values():
        for k in [k for k, v in members.items() if v == cid.id]:
            del members[k]
    st.ids.pop(cid.id, None)


def _group(req: dict[str, Any], what: str) -> str:
    ip = _ip(req.get("group"))
    if ip is None or not ipaddress.IPv4Address(ip).is_multicast:
        raise _err(errno.EINVAL, f"{what}: {req.get('group')!r} is not an IPv4 multicast address")
    return ip


def _op_join(d: Any, st: CmState, c: Any, req: dict[str, Any]) -> dict[str, Any]:
    """``rdma_join_multicast``: the identifier's UD QP joins the group; MULTICAST_JOIN carries the
    group's address, QPN 0xFFFFFF and the Q_Key."""
    cid = _id(st, c, req)
    group = _group(req, "rdma_join_multicast")
    if cid.host < 0 or not req.get("qpn"):
        raise _err(errno.EINVAL, "rdma_join_multicast: the identifier needs a bound device and a UD QP")
    st.groups.setdefault(group, {})[(cid.host, int(req["qpn"]))] = cid.id
    _push(d, st, cid, MULTICAST_JOIN, peer={"qpn": 0xFFFFFF, "qkey": int(req.get("qkey", 0)), "ip": group},
          private_data="")
    return {}


def _op_leave(d: Any, st: CmState, c: Any, req: dict[str, Any]) -> dict[str, Any]:
    cid = _id(st, c, req)
    group = _group(req, "rdma_leave_multicast")
    members = st.groups.get(group, {})
    mine = [k for k, v in members.items() if v == cid.id]
    if not mine:
        raise _err(errno.EADDRNOTAVAIL, f"rdma_leave_multicast: the identifier has not joined {group}")
    for k in mine:
        del members[k]
    return {}


def _op_members(d: Any, st: CmState, c: Any, req: dict[str, Any]) -> dict[str, Any]:
    """The (host, QP number) of each QP in the group, in the order they joined."""
    return {"members": [list(k) for k in st.groups.get(_group(req, "multicast send"), {})]}


_OPS = {
    "create_id": _op_create_id, "destroy_id": _op_destroy_id, "bind": _op_bind, "listen": _op_listen,
    "resolve_addr": _op_resolve_addr, "resolve_route": _op_resolve_route, "connect": _op_connect,
    "accept": _op_accept, "reject": _op_reject, "establish": _op_establish, "disconnect": _op_disconnect,
    "join": _op_join, "leave": _op_leave, "members": _op_members,
}


def client_gone(d: Any, c: Any) -> None:
    """A process went: its identifiers are destroyed (connected peers see DISCONNECTED) and its
    channels closed."""
    st = getattr(d, "_cm_state", None)
    if st is None:
        return
    me = _owner(c)
    for cid in sorted((i for i in st.ids.values() if i.owner == me), key=lambda i: i.id):
        _drop_id(d, st, cid)
    for ch in [ch for ch in st.channels.values() if ch.owner == me]:
        del st.channels[ch.id]
        try:
            os.close(ch.efd)
        except OSError:
            pass
