"""Where a multi-packet RDMA WRITE's packets land: the RETH's range is resolved with the first
packet and the later packets follow it, unless a key of the responder's host changed mid-message
(a window invalidated or deallocated, a region re-registered): then the next packet is checked
again and refused as on rxe."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from support.verbs_pair import VerbsPair

from rdmasim.verbs import MW, SGE, MWBindInfo, SendWR
from rdmasim.verbs import enums as e

LW = e.IBV_ACCESS_LOCAL_WRITE
SIZE = 8 * 1024  # 8 packets at MTU 1024
PKT_PS = 90_000  # a bit more than one 1024-byte packet's frame time at the pair's rate


class Pair(VerbsPair):
    """Two connected RC QPs; b's 16 KiB region may be bound to windows."""

    def __init__(self, tmp_path: Path | None = None) -> None:
        super().__init__(mtu=1024, seed=3, cqe=32)
        self.src = self.mr_a(SIZE, LW)
        self.src.write(bytes(np.arange(SIZE, dtype=np.uint32).astype(np.uint8)))
        self.dst = self.mr_b(2 * SIZE, LW | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_MW_BIND)

    def bind2(self, mw: MW) -> int:
        wr = SendWR(wr_id=8, opcode=e.IBV_WR_BIND_MW)
        wr.set_bind_wr(mw, MWBindInfo(self.dst, self.dst.buf, 2 * SIZE, e.IBV_ACCESS_REMOTE_WRITE))
        self.qb.post_send(wr)
        self.t.sim.run_until_idle()
        assert [w.status for w in self.cq_b.poll(8)[1]] == [e.IBV_WC_SUCCESS]
        return wr.rkey

    def post_write(self, rkey: int, off: int) -> None:
        wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(self.src.buf, SIZE, self.src.lkey)])
        wr.set_wr_rdma(rkey, self.dst.buf + off)
        self.qa.post_send(wr)

    def placed(self) -> int:
        """Bytes of the WRITE (at offset 512) found in b's region."""
        got = bytes(self.dst.read(2 * SIZE, 0))[512:512 + SIZE]
        want = bytes(self.src.read(SIZE, 0))
        n = 0
        while n < SIZE and got[n:n + 1024] == want[n:n + 1024]:
            n += 1024
        return n

    def write_status(self) -> int:
        wcs = self.cq_a.poll(8)[1]
        assert len(wcs) == 1
        return wcs[0].status


def test_multi_packet_write_lands_in_order_at_its_offset() -> None:
    p = Pair()
    p.post_write(p.dst.rkey, 512)
    p.t.sim.run_until_idle()
    assert p.write_status() == e.IBV_WC_SUCCESS
    assert p.placed() == SIZE
    region = bytes(p.dst.read(2 * SIZE, 0))
    assert region[:512] == bytes(512) and region[512 + SIZE:] == bytes(SIZE - 512)


def test_window_deallocated_mid_write_refuses_the_next_packet() -> None:
    p = Pair()
    mw = MW(p.pd_b, 2)
    rkey = p.bind2(mw)
    p.post_write(rkey, 512)
    t0 = p.t.sim.now
    while p.placed() < 3 * 1024:  # a few packets in, the rest still to come
        p.t.sim.run(until=p.t.sim.now + PKT_PS)
        assert p.t.sim.now < t0 + 100 * PKT_PS
    mw.close()
    p.t.sim.run_until_idle()
    assert p.write_status() == e.IBV_WC_REM_ACCESS_ERR
    assert 3 * 1024 <= p.placed() < SIZE
