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
from rdmasim.checks import check_int
from rdmasim.sim import INT64_MAX, Host, Simulator
from rdmasim.units import parse_time

Packet = dict[str, Any]
Handler = Callable[["ScriptedPeer", Packet], None]

# RC request opcodes that end a message: SEND_LAST(_IMM), SEND_ONLY(_IMM), WRITE_LAST_IMM,
# WRITE_ONLY_IMM, WRITE_LAST, WRITE_ONLY, READ_REQUEST, COMPARE_SWAP, FETCH_ADD, SEND_*_INV, FLUSH,
# ATOMIC_WRITE.
_MESSAGE_ENDS = frozenset({0x02, 0x03, 0x04, 0x05, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x13, 0x14, 0x16, 0x17,
                           0x1C, 0x1D})
_REQUESTS = frozenset(range(0x00, 0x0D)) | {0x13, 0x14, 0x16, 0x17, 0x1C, 0x1D}


def corrupt_icrc(frame: bytes) -> bytes:
    """``frame`` (a RoCEv2 frame) with its ICRC bits inverted: the same frame, no longer valid."""
    if len(frame) < 18 or frame[12:14] != b"\x08\x00":
        raise ValueError("corrupt_icrc needs an IPv4 RoCEv2 frame")
    end = 14 + int.from_bytes(frame[16:18], "big")  # the ICRC ends the IP datagram
    if not 14 + 20 + 8 + 12 + 4 <= end <= len(frame):
        raise ValueError(f"corrupt_icrc: IPv4 total length {end - 14} does not fit a {len(frame)}-byte frame")
    return frame[:end - 4] + bytes(b ^ 0xFF for b in frame[end - 4:end]) + frame[end:]


class ScriptedPeer:
    """The remote end of RC connections, scripted in Python, on host ``host``.

    ``qpn`` is the QP number the peer claims; the real QP's dest_qp_num must be it.
    Every received frame is kept in ``received`` (dicts with ``t_ps`` added). The script drives
    time (``run``), so creating a peer turns the simulation's ``auto_advance`` off: ``CQ.poll()``
    then takes only what is there (docs/pyverbs.md "Time").
    """

    def __init__(self, sim: Simulator, host: Host, qpn: int = 0x99, *, auto_msn: bool = False) -> None:
        qpn = check_int("ScriptedPeer qpn", qpn, 1, 2**24 - 1)
        if not isinstance(host, Host) or host.sim is not sim:
            raise ValueError(f"host {host!r} is not a host of this simulation")
        self.sim = sim
        self.host = host
        self.qpn = qpn
        self.received: list[Packet] = []
        self.sent: list[Packet] = []
        #: The MSN the peer puts in the AETH of ``reply()``; set it yourself, or let the peer keep it
        #: with ``auto_msn``.
        self.msn = 0
        #: Keep ``msn`` as a responder would: +1 for each request message received in order.
        self.auto_msn = bool(auto_msn)
        self._epsn: int | None = None  # auto_msn: the next request PSN expected
        self._mtu = 1024
        sim._core.set_scripted(host.index, True)
        sim.auto_advance = False  # a poll must not run time without the script answering

    def connect(self, qp: Any, *, peer_psn: int = 0, qp_psn: int = 0, path_mtu: int | None = None,
                **attrs: Any) -> None:
        """Walk the real ``qp`` RESET→RTS with the peer as its destination.

        ``qp_psn`` is the first PSN the real QP sends; ``peer_psn`` the first it expects from the peer.
        Extra keyword arguments go to the QP attributes (timeout, retry_cnt, ...).
        """
        from rdmasim.verbs import enums as e
        from rdmasim.verbs.ah import AHAttr, GlobalRoute
        from rdmasim.verbs.qp import QP, QPAttr

        if not isinstance(qp, QP) or qp._sim is not self.sim:
            raise ValueError(f"connect needs a QP of this simulation, got {qp!r}")
        peer_psn = check_int("connect peer_psn", peer_psn, 0, 2**24 - 1)
        qp_psn = check_int("connect qp_psn", qp_psn, 0, 2**24 - 1)

        mtu = path_mtu if path_mtu is not None else (qp._host.link.mtu if qp._host.link else 1024)
        defaults: dict[str, Any] = dict(
            qp_access_flags=e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
            | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC,
            timeout=14, retry_cnt=7, rnr_retry=7, min_rnr_timer=12, max_rd_atomic=4, max_dest_rd_atomic=4,
        )
        defaults.update(attrs)
        attr = QPAttr(path_mtu=e.mtu_enum(mtu), dest_qp_num=self.qpn, rq_psn=peer_psn, sq_psn=qp_psn,
                      ah_attr=AHAttr(is_global=1, gr=GlobalRoute(dgid=self.host.gid)), **defaults)
        qp.to_init(attr)
        qp.to_rtr(attr)
        qp.to_rts(attr)
        self._qp = qp
        self._epsn = qp_psn & 0xFFFFFF
        self._mtu = mtu

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

    def send(self, frame: Packet | bytes, *, bad_icrc: bool = False) -> None:
        """Transmit a frame: a dict of header fields (encoded by the codec) or exact bytes.

        The frame must decode as RoCEv2 or PFC (else ValueError: use ``send_raw``). A frame whose
        ICRC is wrong is sent as it is; ``bad_icrc=True`` corrupts the ICRC on purpose. The
        receiving NIC drops such a frame silently and counts it (``Context.rx_counters()``).
        """
        raw = bytes(frame) if isinstance(frame, (bytes, bytearray)) else codec.encode(dict(frame))
        if bad_icrc:
            raw = corrupt_icrc(raw)
        self.sim._core.peer_send(self.host.index, raw)
        self.sent.append(dict(frame) if not isinstance(frame, (bytes, bytearray)) and not bad_icrc
                         else codec.decode(raw) | {"raw": raw})

    def send_raw(self, frame: bytes, dest: Host | None = None) -> None:
        """Transmit 1..4096 bytes unchecked: a reserved opcode, a frame cut short, lengths that
        disagree, a bad ICRC, anything.

        A frame that decodes travels as ``send`` would; one that does not travels as bytes to
        ``dest`` (default: the connected QP's host, else the host its IPv4 destination names).
        Captures show the bytes as sent (padded to the 60-byte Ethernet minimum); the receiving
        NIC drops what it cannot parse and counts it (``Context.rx_counters()["malformed"]``).
        """
        if not isinstance(frame, (bytes, bytearray)):
            raise TypeError(f"send_raw needs bytes, not {type(frame).__name__}")
        if dest is None:
            qp = getattr(self, "_qp", None)
            dest = qp._host if qp is not None else None
        if dest is not None and (not isinstance(dest, Host) or dest.sim is not self.sim):
            raise ValueError(f"dest {dest!r} is not a host of this simulation")
        raw = bytes(frame)
        self.sim._core.peer_send_raw(self.host.index, raw, dest.index if dest is not None else -1)
        try:
            sent = codec.decode(raw)
        except ValueError:
            sent = {}
        self.sent.append(sent | {"raw": raw})

    def ack(self, psn: int, syndrome: int = 0x1F) -> None:
        """Send an ACKNOWLEDGE for ``psn`` (syndrome 0x1F = ACK, 0x60.. = NAK, 0x20|t = RNR NAK)."""
        psn = check_int("ack psn", psn, 0, 2**24 - 1)
        syndrome = check_int("ack syndrome", syndrome, 0, 0xFF)
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
            if self.auto_msn:
                self._count_message(pkt)
            if handler is not None:
                handler(self, pkt)

    def _count_message(self, pkt: Packet) -> None:
        """auto_msn: as an in-order responder counts: a request packet at the expected PSN moves
        the expected PSN on (a READ request by its response packets), and one that ends a message
        adds one to the MSN. Duplicates and out-of-sequence packets change nothing."""
        op = pkt["opcode"]
        if pkt.get("kind") != codec.PKT_ROCE or op not in _REQUESTS:
            return
        if self._epsn is None:
            self._epsn = pkt["psn"]
        if pkt["psn"] != self._epsn:
            return
        span = max(1, -(-pkt["reth_len"] // self._mtu)) if op == 0x0C else 1
        self._epsn = (self._epsn + span) & 0xFFFFFF
        if op in _MESSAGE_ENDS:
            self.msn = (self.msn + 1) & 0xFFFFFF

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
