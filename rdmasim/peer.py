"""A scripted peer: play the remote end of an RC connection from Python.

For conformance tests and teaching: the peer host has no transport; every frame it receives
is handed to your handler as a dict of decoded header fields, and you answer with crafted
frames (fields or raw bytes) — a ghost ACK for a PSN never sent, a READ response that skips
PSNs, an unexpected opcode, a partial retry.  Python runs per packet here, by design; use it
for small scenarios only.

Example::

    topo = rdmasim.back_to_back()
    peer = ScriptedPeer(topo.sim, topo.b, qpn=0x99)
    qp = ...  # a QP on topo.a
    peer.connect(qp)                      # walks qp to RTS, pointing at the peer
    def handler(peer, pkt):
        if pkt["ackreq"]:
            peer.send(peer.reply(pkt, opcode=0x11, aeth_syndrome=0x1F))
    peer.run(handler, until="1ms")
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rdmasim import _core, codec
from rdmasim.sim import INT64_MAX, Host, Simulator
from rdmasim.units import parse_time

Packet = dict[str, Any]
Handler = Callable[["ScriptedPeer", Packet], None]


class ScriptedPeer:
    """The remote end of RC connections, scripted in Python, on host ``host``.

    ``qpn`` is the QP number the peer claims; the real QP's dest_qp_num must be it.
    Every received frame is kept in ``received`` (dicts with ``t_ps`` added).
    """

    def __init__(self, sim: Simulator, host: Host, qpn: int = 0x99) -> None:
        if not 0 < qpn < 2**24:
            raise ValueError(f"qpn {qpn} outside 1..16777215")
        self.sim = sim
        self.host = host
        self.qpn = qpn
        self.received: list[Packet] = []
        self.sent: list[Packet] = []
        self.msn = 0
        sim._core.set_scripted(host.index, True)

    def connect(self, qp: Any, *, peer_psn: int = 0, qp_psn: int = 0, path_mtu: int | None = None,
                **attrs: Any) -> None:
        """Walk the real ``qp`` RESET→RTS with the peer as its destination.

        ``qp_psn`` is the first PSN the real QP sends; ``peer_psn`` the first it expects from the peer.
        Extra keyword arguments go to the QP attributes (timeout, retry_cnt, ...).
        """
        from rdmasim.verbs import enums as e
        from rdmasim.verbs.qp import AHAttr, GlobalRoute, QPAttr

        mtu = path_mtu if path_mtu is not None else (qp._host.link.mtu if qp._host.link else 1024)
        defaults: dict[str, Any] = dict(
            qp_access_flags=e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
            | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC,
            timeout=14, retry_cnt=7, rnr_retry=7, min_rnr_timer=12, max_rd_atomic=4, max_dest_rd_atomic=4,
        )
        defaults.update(attrs)
        attr = QPAttr(path_mtu=e.mtu_enum(mtu), dest_qp_num=self.qpn, rq_psn=peer_psn, sq_psn=qp_psn,
                      ah_attr=AHAttr(gr=GlobalRoute(dgid=self.host.gid)), **defaults)
        qp.to_init(attr)
        qp.to_rtr(attr)
        qp.to_rts(attr)
        self._qp = qp

    # ---- sending ----
    def template(self, dest_qpn: int | None = None) -> Packet:
        """Header fields for a frame from the peer to the connected QP's host."""
        qp = getattr(self, "_qp", None)
        if qp is None and dest_qpn is None:
            raise ValueError("connect() a QP first, or give dest_qpn")
        dst = qp._host if qp is not None else None
        mac_src, ip_src = self.sim._core.host_info(self.host.index)
        fields: Packet = {"src_mac": mac_src, "src_ip": ip_src, "tos": 0x02, "ttl": 64,
                          "udp_sport": 0xC000 | (self.qpn & 0x3FFF), "pkey": 0xFFFF,
                          "dest_qpn": dest_qpn if dest_qpn is not None else qp.qp_num}
        if dst is not None:
            mac_dst, ip_dst = self.sim._core.host_info(dst.index)
            fields.update(dst_mac=mac_dst, dst_ip=ip_dst)
        return fields

    def reply(self, pkt: Packet, **fields: Any) -> Packet:
        """Fields for an answer to ``pkt``: same PSN unless given, addressed to its sender."""
        out = self.template()
        out["psn"] = pkt["psn"]
        out["aeth_msn"] = self.msn
        out.update(fields)
        return out

    def send(self, frame: Packet | bytes) -> None:
        """Transmit a frame: a dict of header fields (encoded by the codec) or exact bytes."""
        raw = frame if isinstance(frame, (bytes, bytearray)) else codec.encode(dict(frame))
        self.sim._core.peer_send(self.host.index, bytes(raw))
        self.sent.append(codec.decode(bytes(raw)) if isinstance(frame, (bytes, bytearray)) else dict(frame))

    def ack(self, psn: int, syndrome: int = 0x1F) -> None:
        """Send an ACKNOWLEDGE for ``psn`` (syndrome 0x1F = ACK, 0x60.. = NAK, 0x20|t = RNR NAK)."""
        self.send(self.reply({"psn": psn}, opcode=0x11, aeth_syndrome=syndrome))

    # ---- running ----
    def _drain(self, handler: Handler | None) -> None:
        while True:
            got = self.sim._core.peer_recv(self.host.index)
            if got is None:
                return
            raw, t_ps = got
            pkt = codec.decode(raw)
            pkt["t_ps"] = t_ps
            self.received.append(pkt)
            if handler is not None:
                handler(self, pkt)

    def run(self, handler: Handler | None = None, until: str | int | None = None) -> int:
        """Advance the simulation, calling ``handler(peer, packet)`` for each frame the peer receives.

        Stops at ``until`` (absolute time) or when nothing is left to happen. Returns ``sim.now``.
        """
        until_ps = INT64_MAX if until is None else parse_time(until)
        while True:
            reason = self.sim._core.run(until_ps)
            self._drain(handler)
            if reason != _core.RUN_PEER:
                return self.sim.now

    def __repr__(self) -> str:
        return f"ScriptedPeer(host={self.host.name}, qpn=0x{self.qpn:x}, received={len(self.received)})"
