"""One real RC QP on host a facing a ScriptedPeer on host b: the setup the error-path and
IBA-rule conformance cases share (tests/conformance/test_error_paths.py, test_rc_rules.py).

The real QP sends from PSN ``qp_psn`` and expects ``peer_psn`` from the peer; ``mr`` is a
64 KiB region with every access right, filled with a known pattern (``pattern``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from support.wire import Op, Syn

import rdmasim
from rdmasim.peer import ScriptedPeer
from rdmasim.verbs import CQ, MR, PD, QP, SGE, WC, Context, QPCap, QPInitAttr, RecvWR, SendWR
from rdmasim.verbs import enums as e

REMOTE_VA, REMOTE_RKEY = 0x100000, 0x1234
MR_SIZE = 1 << 16


def pattern(n: int, seed: int = 1) -> bytes:
    """``n`` reproducible pseudo-random bytes."""
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


class PeerCase:
    """QP ``qp`` (host a, CQ ``cq``, region ``mr``) connected to ``peer`` (host b, QPN 0x99)."""

    def __init__(self, mtu: int = 1024, qp_psn: int = 100, peer_psn: int = 0, max_wr: int = 16,
                 **attrs: Any) -> None:
        self.mtu = mtu
        self.topo = rdmasim.back_to_back(mtu=mtu)
        self.sim = self.topo.sim
        self.peer = ScriptedPeer(self.sim, self.topo.b, qpn=0x99)
        ctx = Context(self.topo.a)
        self.pd = PD(ctx)
        self.cq = CQ(ctx, 4 * max_wr)
        self.qp = QP(self.pd, QPInitAttr(scq=self.cq, rcq=self.cq,
                                         cap=QPCap(max_send_wr=max_wr, max_recv_wr=max_wr)))
        self.peer.connect(self.qp, qp_psn=qp_psn, peer_psn=peer_psn, path_mtu=mtu, **attrs)
        self.mr = MR(self.pd, MR_SIZE, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
                     | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC)
        self.mr.array[:] = np.frombuffer(pattern(MR_SIZE, seed=99), dtype=np.uint8)

    # ---- posting on the real QP ----
    def post(self, opcode: int, length: int, wr_id: int = 1, off: int = 0, **kw: Any) -> None:
        """Post a WR of ``length`` bytes from/to ``mr`` at ``off`` (remote: REMOTE_VA/REMOTE_RKEY)."""
        wr = SendWR(wr_id=wr_id, opcode=opcode, sg=[SGE(self.mr.buf + off, length, self.mr.lkey)], **kw)
        if opcode in (e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_WRITE_WITH_IMM, e.IBV_WR_RDMA_READ):
            wr.set_wr_rdma(REMOTE_RKEY, REMOTE_VA + off)
        self.qp.post_send(wr)

    def post_atomic(self, opcode: int, wr_id: int = 1, off: int = 0, compare_add: int = 0,
                    swap: int = 0) -> None:
        wr = SendWR(wr_id=wr_id, opcode=opcode, sg=[SGE(self.mr.buf + off, 8, self.mr.lkey)])
        wr.set_wr_atomic(REMOTE_RKEY, REMOTE_VA, compare_add, swap)
        self.qp.post_send(wr)

    def post_recv(self, length: int, wr_id: int = 9, off: int = 0) -> None:
        self.qp.post_recv(RecvWR(wr_id=wr_id, sg=[SGE(self.mr.buf + off, length, self.mr.lkey)]))

    # ---- the peer's frames ----
    def request(self, opcode: int, psn: int, payload: bytes = b"", **fields: Any) -> None:
        """The peer sends a request frame to the real QP (its responder)."""
        f = self.peer.template()
        f.update(opcode=opcode, psn=psn, payload=payload, **fields)
        self.peer.send(f)

    def respond(self, opcode: int, psn: int, payload: bytes = b"", syndrome: int | None = Syn.ACK,
                **fields: Any) -> None:
        """The peer sends a response frame (ACK, READ response, ATOMIC_ACKNOWLEDGE) to the real QP."""
        f = self.peer.reply({"psn": psn}, opcode=opcode, payload=payload, **fields)
        if syndrome is not None:
            f["aeth_syndrome"] = syndrome
        self.peer.send(f)

    def wcs(self) -> list[WC]:
        n, wcs = self.cq.poll(1000)
        return list(wcs[:n])

    def statuses(self) -> list[tuple[int, int]]:
        return [(w.wr_id, w.status) for w in self.wcs()]

    def sent(self, opcode: int | None = None) -> list[tuple[int, int]]:
        """(opcode, PSN) of every frame the real QP sent, in order (only ``opcode`` if given)."""
        return [(p["opcode"], p["psn"]) for p in self.peer.received
                if opcode is None or p["opcode"] == opcode]

    def acks(self) -> list[tuple[int, int]]:
        """(syndrome, PSN) of every ACKNOWLEDGE the real QP's responder sent."""
        return [(p["aeth_syndrome"], p["psn"]) for p in self.peer.received if p["opcode"] == Op.ACK]

    def mem(self, off: int, n: int) -> bytes:
        return self.mr.read(n, off)
