"""IRN selective repeat (csrc/transport/irn.c; docs/design.md "Loss recovery: IRN").

Every conformance test captures a pcap of a back-to-back transfer a -> b, decodes it with the codec
and counts, per PSN, how often the requester put it on the wire: a PSN seen twice was retransmitted.
The comparison at the end measures one long WRITE under i.i.d. loss without PFC, IRN against
Go-Back-N, and checks Go-Back-N against the analytical efficiency (protocol.md §9.1) with the pipe
computed in test_gbn_efficiency.py. Run this file as a script to print the goodput table:

    PYTHONPATH=.:tests python tests/conformance/test_irn.py
"""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.verbs_pair import ALL_REMOTE, CapturedPair, VerbsPair, mr, open_host, qp_pair, write_wr
from support.wire import PSN_MOD, psn_add

import rdmasim
from rdmasim.capture import read_pcap
from rdmasim.errors import PyverbsRDMAError
from rdmasim.verbs import SGE, QPCap, RecvWR, SendWR
from rdmasim.verbs import enums as e

HERE = Path(__file__).resolve().parent
ACK = 0x11
SYN_ACK = 0x1F
SYN_NAK_SEQ = 0x60


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


gbn_eff = _load(HERE / "test_gbn_efficiency.py", "_irn_gbn_efficiency")
transfers = _load(HERE.parent / "property" / "test_transfers.py", "_irn_transfers")


class Pair(CapturedPair):
    """Two RC QPs a -> b using IRN on a captured back-to-back link."""

    def __init__(self, tmp_path: Path, *, recovery: str = "irn", **kw: Any) -> None:
        super().__init__(tmp_path, recovery=recovery, **kw)
        self.recv_expect: list[tuple[int, int, int, int]] = []  # (wr_id, opcode, byte_len, imm)

    def post(self, length: int, offset: int = 0, opcode: int = e.IBV_WR_RDMA_WRITE, imm: int = 0,
             post_recv: bool = True) -> None:
        """CapturedPair.post, noting the receive completion each non-WRITE must produce."""
        if opcode != e.IBV_WR_RDMA_WRITE:
            wc_op = e.IBV_WC_RECV_RDMA_WITH_IMM if opcode == e.IBV_WR_RDMA_WRITE_WITH_IMM else e.IBV_WC_RECV
            with_imm = opcode in (e.IBV_WR_RDMA_WRITE_WITH_IMM, e.IBV_WR_SEND_WITH_IMM)
            self.recv_expect.append((self.n_posted, wc_op, length, imm if with_imm else 0))
        super().post(length, offset, opcode, imm, post_recv)

    def finish(self) -> list[Any]:
        """Run to completion; check completions (send and receive, in order); return a->b frames."""
        wcs = self.sim.wait_for(self.cq_a, self.n_posted, timeout="1s")
        assert [w.status for w in wcs] == [e.IBV_WC_SUCCESS] * self.n_posted, wcs
        assert [w.wr_id for w in wcs] == list(range(self.n_posted))
        if self.recv_expect:
            rwcs = self.sim.wait_for(self.cq_b, len(self.recv_expect), timeout="1s")
            got = [(w.wr_id, w.opcode, w.byte_len, w.imm_data) for w in rwcs]
            assert got == self.recv_expect
            assert all(w.status == e.IBV_WC_SUCCESS for w in rwcs)
        self.sim.run_until_idle()
        assert self.cq_a.poll(10)[0] == 0 and self.cq_b.poll(10)[0] == 0, "extra completions"
        self.sim.close_capture()
        frames = list(read_pcap(self.pcap))
        for fr in frames:
            assert fr.fields["icrc_ok"]
        return frames

    def data_frames(self, frames: list[Any]) -> list[Any]:
        return [f for f in frames if f.fields["src_ip"] == self.a_ip]

    def ack_frames(self, frames: list[Any]) -> list[Any]:
        return [f for f in frames if f.fields["src_ip"] != self.a_ip]

    def resent(self, frames: list[Any]) -> Counter[int]:
        """PSN -> how many times it was sent again."""
        c = Counter(f.fields["psn"] for f in self.data_frames(frames))
        return Counter({psn: n - 1 for psn, n in c.items() if n > 1})

    def intact(self, length: int, offset: int = 0) -> bool:
        return np.array_equal(self.src.array[offset:offset + length],
                              self.dst.array[offset:offset + length])


# ---------------------------------------------------------------------------------------------
# selective retransmission
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("start", [0, PSN_MOD - 30])
def test_single_loss_resends_only_that_packet(tmp_path: Path, start: int) -> None:
    size = 64 * 1024  # 64 packets
    pair = Pair(tmp_path, psn=start, size=size)
    lost = psn_add(start, 40)  # past the wrap when start is near it
    pair.t.link.ab.drop(psn=lost)
    pair.post(size)
    frames = pair.finish()
    assert pair.resent(frames) == Counter({lost: 1})
    st = pair.qa.stats()
    assert (st["pkts_retx"], st["timeouts"]) == (1, 0)
    assert st["pkts_sent"] == 65
    assert pair.intact(size)
    # Each out-of-order packet is NAKed with the cumulative ACK (the expected PSN = the lost one);
    # the retransmission is sent right after the first NAK arrives, not after a timeout.
    acks = pair.ack_frames(frames)
    naks = [a for a in acks if a.fields["aeth_syndrome"] == SYN_NAK_SEQ]
    assert naks and all(a.fields["psn"] == lost for a in naks)
    assert pair.qb.stats()["ooo_placed"] == len(naks)
    data = pair.data_frames(frames)
    retx = [f for f in data if f.fields["psn"] == lost][1]
    assert retx.t_ns - naks[0].t_ns < 3_000  # within one RTT of the NAK leaving b
    assert retx.fields["ackreq"] == 1


def test_several_losses_in_one_window_resend_exactly_those(tmp_path: Path) -> None:
    size = 96 * 1024
    pair = Pair(tmp_path, size=size)
    window = pair.qa.recovery["window"]
    lost = {10, 12, 13, 20, 10 + window - 3}
    for psn in lost:
        pair.t.link.ab.drop(psn=psn)
    pair.post(size)
    frames = pair.finish()
    assert pair.resent(frames) == Counter({p: 1 for p in lost})
    assert pair.qa.stats()["timeouts"] == 0
    assert pair.intact(size)


def test_losses_across_messages_complete_in_order(tmp_path: Path) -> None:
    """SEND, SEND_WITH_IMM, WRITE_WITH_IMM and WRITE with lost FIRST/LAST/ONLY packets: data is
    placed out of order, but receive and send completions come in posting order."""
    pair = Pair(tmp_path, size=1 << 20)
    plan = [  # (opcode, length)
        (e.IBV_WR_SEND, 5 * 1024 + 100),
        (e.IBV_WR_SEND_WITH_IMM, 700),
        (e.IBV_WR_RDMA_WRITE_WITH_IMM, 3 * 1024),
        (e.IBV_WR_RDMA_WRITE, 4 * 1024 + 1),
        (e.IBV_WR_SEND, 0),
        (e.IBV_WR_RDMA_WRITE_WITH_IMM, 2 * 1024),
    ]
    # psn: 0-5 SEND, 6 SEND_IMM, 7-9 WRITE_IMM, 10-14 WRITE, 15 SEND(0), 16-17 WRITE_IMM
    lost = {0, 5, 6, 9, 12, 15, 17}
    for psn in lost:
        pair.t.link.ab.drop(psn=psn)
    off, offsets = 0, []
    for i, (op, length) in enumerate(plan):
        offsets.append(off)
        pair.post(length, offset=off, opcode=op, imm=0x1000 + i)
        off += length + 64
    frames = pair.finish()
    resent = pair.resent(frames)
    assert set(resent) == lost and all(n == 1 for n in resent.values())
    for (_, length), o in zip(plan, offsets, strict=True):
        assert pair.intact(length, o)


def test_send_placed_before_its_receive_is_posted(tmp_path: Path) -> None:
    """An out-of-order SEND packet whose receive WQE is not posted yet is not kept (no SACK); once the
    WQE is there, it is resent and placed: RNR then completes normally."""
    pair = Pair(tmp_path, min_rnr_timer=1)
    pair.t.link.ab.drop(psn=0)
    pair.post(4 * 1024, opcode=e.IBV_WR_SEND, post_recv=False)
    pair.sim.run("20us")
    assert pair.qb.stats()["ooo_dropped"] == 3
    pair.post_recv(0, 4 * 1024, 0)
    pair.finish()
    assert pair.intact(4 * 1024)


def test_rnr_then_selective_resend(tmp_path: Path) -> None:
    """A SEND meets no receive WQE (RNR NAK) while WRITEs behind it are placed out of order: after
    the RNR wait only the SEND's packets go again; the WRITEs (SACKed) are not resent."""
    pair = Pair(tmp_path, min_rnr_timer=1)  # 10 us
    pair.post(3 * 1024, opcode=e.IBV_WR_SEND, post_recv=False)  # psn 0-2
    for i in range(3):
        pair.post(2 * 1024, offset=8192 + i * 4096)  # psn 3-8
    pair.sim.run("5us")
    assert pair.qa.stats()["rnr_naks_rcvd"] == 1
    pair.post_recv(0, 3 * 1024, 0)
    frames = pair.finish()
    assert pair.resent(frames) == Counter({0: 1, 1: 1, 2: 1})
    assert pair.intact(3 * 1024)
    for i in range(3):
        assert pair.intact(2 * 1024, 8192 + i * 4096)


# ---------------------------------------------------------------------------------------------
# timeouts: RTO_low with few packets in flight, RTO_high otherwise
# ---------------------------------------------------------------------------------------------

RTO_LOW_NS, RTO_HIGH_NS = 20_000, 200_000


def test_tail_loss_recovers_after_rto_low(tmp_path: Path) -> None:
    pair = Pair(tmp_path, rto_low="20us", rto_high="200us", rto_low_packets=3)
    pair.t.link.ab.drop(psn=0)
    pair.post(512)  # one packet: nothing after it to trigger a NAK
    frames = pair.finish()
    data = pair.data_frames(frames)
    assert [f.fields["psn"] for f in data] == [0, 0]
    assert data[1].t_ns - data[0].t_ns == pytest.approx(RTO_LOW_NS, abs=50)
    assert pair.qa.stats()["timeouts"] == 1


def test_tail_loss_of_many_recovers_after_rto_high(tmp_path: Path) -> None:
    """Eight packets all lost: at least N=3 were in flight when the timer ran out -> RTO_high, then
    exactly the eight are resent (none was SACKed)."""
    pair = Pair(tmp_path, rto_low="20us", rto_high="200us", rto_low_packets=3)
    for psn in range(8):
        pair.t.link.ab.drop(psn=psn)
    pair.post(8 * 1024)
    frames = pair.finish()
    data = pair.data_frames(frames)
    assert pair.resent(frames) == Counter({p: 1 for p in range(8)})
    assert data[8].t_ns - data[0].t_ns == pytest.approx(RTO_HIGH_NS, abs=50)
    assert pair.qa.stats()["timeouts"] == 1


def test_lost_retransmission_recovers_by_timeout(tmp_path: Path) -> None:
    size = 64 * 1024
    pair = Pair(tmp_path, rto_low="20us", rto_high="200us", size=size)
    pair.t.link.ab.drop(psn=30, count=2)
    pair.post(size)
    frames = pair.finish()
    assert pair.resent(frames) == Counter({30: 2})
    assert pair.qa.stats()["timeouts"] == 1
    assert pair.intact(size)


def test_sacked_packets_are_not_in_flight_for_the_timer(tmp_path: Path) -> None:
    """PSN 2 and its retransmission are lost; every other packet of the message is SACKed, so
    only one packet counts as in flight (< N = 3): the timer that resends PSN 2 a second time is
    RTO_low (20 us), not RTO_high (200 us), although ten PSNs are unacknowledged."""
    pair = Pair(tmp_path, rto_low="20us", rto_high="200us", rto_low_packets=3)
    pair.t.link.ab.drop(psn=2, count=2)
    pair.post(10 * 1024)
    frames = pair.finish()
    sends = [f.t_ns for f in pair.data_frames(frames) if f.fields["psn"] == 2]
    assert len(sends) == 3
    assert sends[2] - sends[0] < RTO_LOW_NS + 5_000
    assert pair.qa.stats()["timeouts"] == 1


def test_timeout_resends_only_unsacked(tmp_path: Path) -> None:
    """Losses at the end of a window plus a lost retransmission: after the timeout only PSNs the
    responder has not SACKed go out again."""
    size = 40 * 1024
    pair = Pair(tmp_path, rto_low="20us", rto_high="200us", size=size)
    pair.t.link.ab.drop(psn=5, count=2)
    pair.t.link.ab.drop(psn=39)
    pair.post(size)
    frames = pair.finish()
    assert pair.resent(frames) == Counter({5: 2, 39: 1})
    assert pair.intact(size)


# ---------------------------------------------------------------------------------------------
# READ / atomics (Go-Back-N fallback), API, determinism
# ---------------------------------------------------------------------------------------------

def test_read_and_atomic_under_irn_with_loss() -> None:
    pair = VerbsPair(mtu=1024, loss_ab=0.05, loss_ba=0.05, seed=3, cqe=64,
                     cap=(QPCap(max_send_wr=16), QPCap()), recovery="irn", max_rd_atomic=4, timeout=8)
    t, cqa, qa, qb = pair.t, pair.cq_a, pair.qa, pair.qb
    a_mem, b_mem = pair.mr_a(1 << 16, ALL_REMOTE), pair.mr_b(1 << 16, ALL_REMOTE)
    rng = np.random.default_rng(5)
    a_mem.array[:] = rng.integers(0, 256, a_mem.length, dtype=np.uint8)
    b_mem.array[:] = rng.integers(0, 256, b_mem.length, dtype=np.uint8)
    b_mem.array[32768:32776] = 0
    want_b = b_mem.array.copy()
    ops = []
    for i in range(4):
        w = SendWR(wr_id=10 * i, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(a_mem.buf + i * 4096, 4096, a_mem.lkey)])
        w.set_wr_rdma(b_mem.rkey, b_mem.buf + i * 4096)
        ops.append(w)
        want_b[i * 4096:(i + 1) * 4096] = a_mem.array[i * 4096:(i + 1) * 4096]
        r = SendWR(wr_id=10 * i + 1, opcode=e.IBV_WR_RDMA_READ,
                   sg=[SGE(a_mem.buf + 16384 + i * 3000, 3000, a_mem.lkey)])
        r.set_wr_rdma(b_mem.rkey, b_mem.buf + 20000 + i * 3000)
        ops.append(r)
        f = SendWR(wr_id=10 * i + 2, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD,
                   sg=[SGE(a_mem.buf + 40000 + 8 * i, 8, a_mem.lkey)])
        f.set_wr_atomic(b_mem.rkey, b_mem.buf + 32768, compare_add=1)
        ops.append(f)
    want_reads = [b_mem.array[20000 + i * 3000:23000 + i * 3000].copy() for i in range(4)]
    for w in ops:
        qa.post_send(w)
    wcs = t.sim.wait_for(cqa, len(ops), timeout="1s")
    assert [w.wr_id for w in wcs] == [w.wr_id for w in ops]
    assert all(w.ok for w in wcs), wcs
    want_b[32768:32776] = np.frombuffer(np.uint64(4).tobytes(), dtype=np.uint8)
    assert np.array_equal(b_mem.array, want_b)
    for i in range(4):
        assert np.array_equal(a_mem.array[16384 + i * 3000:19384 + i * 3000], want_reads[i])
        assert int.from_bytes(a_mem.array[40000 + 8 * i:40008 + 8 * i].tobytes(), "little") == i
    assert qb.stats()["atomics_executed"] == 4


def _four_reads(recovery: str) -> int:
    pair = VerbsPair(mtu=1024, cqe=16, cap=(QPCap(max_send_wr=16), QPCap()), recovery=recovery,
                     max_rd_atomic=4)
    acc = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
    a, b = pair.mr_a(1 << 16, acc), pair.mr_b(1 << 16, acc)
    for i in range(4):
        pair.qa.post_send(write_wr(i, a, b, 4096, off=i * 4096, opcode=e.IBV_WR_RDMA_READ))
    assert all(w.ok for w in pair.sim.wait_for(pair.cq_a, 4))
    return pair.sim.now


def test_reads_pipeline_under_irn_as_under_gbn() -> None:
    """READs back to back (max_rd_atomic=4) are one Go-Back-N phase: not serialised by IRN."""
    assert _four_reads("irn") == _four_reads("gbn") < 4_000_000  # ps: one round trip, not four


def test_recovery_api() -> None:
    pair = VerbsPair(mtu=1024, cqe=4, cap=QPCap(), connect=False)
    t, qa, qb = pair.t, pair.qa, pair.qb
    assert qa.recovery["mode"] == "gbn"
    with pytest.raises(PyverbsRDMAError, match="window"):
        qa.set_recovery("irn", window=0)
    with pytest.raises(PyverbsRDMAError, match="rto_low"):
        qa.set_recovery("irn", rto_low="300us", rto_high="100us")
    with pytest.raises(Exception, match="recovery"):
        qa.set_recovery("sack")
    qa.set_recovery("irn", window=50, rto_low="10us", rto_high="1ms", rto_low_packets=5)
    assert qa.recovery == {"mode": "irn", "window": 50, "rto_low_pkts": 5, "rto_low_ps": 10_000_000,
                           "rto_high_ps": 1_000_000_000}
    pair.connect(recovery="irn", irn_window=40)
    assert qa.recovery["window"] == qb.recovery["window"] == 40
    with pytest.raises(PyverbsRDMAError, match="RESET, INIT or RTR"):
        qa.set_recovery("gbn")
    # the default window is the path's BDP in packets plus 1/8 (A-bit spacing): one 1106-byte
    # data frame takes 88.48 ns; its round trip with the ACK is 2 us + 88.48 + 6.88 ns = 24 frames
    from rdmasim.verbs.qp import irn_bdp_window

    assert irn_bdp_window(t.link, 1024) == 24 + 3 + 1


def test_inspect_shows_irn_state(tmp_path: Path) -> None:
    pair = Pair(tmp_path, size=64 * 1024)
    pair.t.link.ab.drop(psn=5)
    pair.post(64 * 1024)
    pair.sim.run("3000ns")  # NAKs for 6, 7, ... are back (from 2.6 us); 5 is resent, not yet ACKed
    a, b = pair.qa.inspect(), pair.qb.inspect()
    assert a["recovery"] == b["recovery"] == "irn"
    assert a["irn_in_recovery"] == 1 and a["comp_psn"] == 5 and a["irn_sacked"] > 0
    assert b["resp_psn"] == 5 and b["irn_ooo_held"] > 0
    assert "IRN" in pair.qa.explain() and "in recovery" in pair.qa.explain()
    pair.finish()
    a, b = pair.qa.inspect(), pair.qb.inspect()
    assert (a["irn_in_recovery"], a["irn_sacked"], b["irn_ooo_held"]) == (0, 0, 0)


def test_trace_and_ladder_mark_selective_repeat() -> None:
    from rdmasim import ladder
    from rdmasim import trace as tr

    t = ladder.example_write(size=5120, drop_psn=1, recovery="irn")
    recs = t.to_numpy()
    retry = recs[recs["kind"] == tr.RETRY]
    assert len(retry) == 1 and int(retry[0]["flags"]) & tr.FLAG_SELECTIVE
    text = ladder.render_text(t)
    assert "selective repeat (IRN) from psn=1 after NAK" in text
    assert text.count("(retx)") == 1
    gbn = ladder.render_text(ladder.example_write(size=5120, drop_psn=1))
    assert "Go-Back-N from psn=1" in gbn and gbn.count("(retx)") == 4


def test_irn_runs_are_deterministic(tmp_path: Path) -> None:
    caps = []
    for run in range(2):
        d = tmp_path / str(run)
        d.mkdir()
        pair = VerbsPair(mtu=1024, loss_ab=0.02, loss_ba=0.02, seed=9, pcap=d / "c.pcap", cqe=4,
                         cap=QPCap(), recovery="irn")
        t, qa = pair.t, pair.qa
        src = pair.mr_a(1 << 18, e.IBV_ACCESS_LOCAL_WRITE)
        dst = pair.mr_b(1 << 18, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
        qa.post_send(write_wr(1, src, dst, 1 << 18))
        assert t.sim.wait_for(pair.cq_a, 1)[0].ok
        t.sim.close_capture()
        caps.append((d / "c.pcap").read_bytes())
    assert caps[0] == caps[1]


# ---------------------------------------------------------------------------------------------
# lossy property test (the same scenarios and checks as tests/property/test_transfers.py)
# ---------------------------------------------------------------------------------------------

@settings(max_examples=250, **transfers.SETTINGS)
@given(transfers.scenarios())
def test_irn_transfers_are_reliable(sc: dict[str, Any]) -> None:
    transfers.check_transfer(sc, transfers.run_transfer(**sc, recovery="irn"))


@settings(max_examples=200, **transfers.SETTINGS)
@given(transfers.scenarios(max_msgs=8, max_size=20_000))
def test_irn_many_small_messages_near_wrap(sc: dict[str, Any]) -> None:
    transfers.check_transfer(sc, transfers.run_transfer(**sc, recovery="irn"))


@settings(max_examples=100, **transfers.SETTINGS)
@given(transfers.scenarios(max_msgs=6, max_size=200_000), st.sampled_from((1, 2, 3, 5, 8, 9, 100, 4000)),
       st.sampled_from(("5us", "100us")), st.sampled_from((0, 1, 3, 50)))
def test_irn_any_window_and_timers(sc: dict[str, Any], window: int, rto_low: str, n: int) -> None:
    """Windows from stop-and-wait to far beyond the BDP; RTO_low of a few round trips; any N.

    RTO_low = 5 us can expire with no loss: the responder acknowledges a message at its end (or
    every 64 packets), and a 34-packet WRITE plus the round trip takes longer (hypothesis found
    window 4000, N 50). The retransmission is then a duplicate the responder drops; data,
    completions and final states are still checked."""
    transfers.check_transfer(sc, transfers.run_transfer(**sc, recovery="irn", irn_window=window,
                                                        rto_low=rto_low, rto_low_packets=n),
                             spurious_retx_ok=rto_low == "5us")


OP_KINDS = ("write", "send", "read", "fadd", "cswap")


@settings(max_examples=120, **transfers.SETTINGS)
@given(st.lists(st.tuples(st.sampled_from(OP_KINDS), st.integers(0, 9000)), min_size=1, max_size=10),
       st.sampled_from((256, 1024, 4096)), st.sampled_from((0.0, 0.01, 0.05)), transfers.psns(),
       st.integers(0, 2**32 - 1), st.integers(1, 4))
def test_irn_mixed_verbs_with_loss(ops: list[tuple[str, int]], mtu: int, loss: float, psn: int,
                                   seed: int, max_rd: int) -> None:
    """WRITE, SEND, READ and atomics mixed on one IRN QP under loss both ways (READ/atomics use
    the Go-Back-N fallback): every WR completes once, in order; memory and atomic results exact."""
    mixed_verbs_with_loss(ops, mtu, loss, psn, seed, max_rd, "irn")


@settings(max_examples=120, **transfers.SETTINGS)
@given(st.lists(st.tuples(st.sampled_from(OP_KINDS), st.integers(0, 9000)), min_size=1, max_size=10),
       st.sampled_from((256, 1024, 4096)), st.sampled_from((0.0, 0.01, 0.05)), transfers.psns(),
       st.integers(0, 2**32 - 1), st.integers(1, 4))
def test_ooo_mixed_verbs_with_loss(ops: list[tuple[str, int]], mtu: int, loss: float, psn: int,
                                   seed: int, max_rd: int) -> None:
    """The same on two cx7-ar hosts with out-of-order placement (recovery "ooo": losses found by
    the responder's reorder time and the requester's timer, not by NAKs of every arrival)."""
    mixed_verbs_with_loss(ops, mtu, loss, psn, seed, max_rd, "ooo")


def mixed_verbs_with_loss(ops: list[tuple[str, int]], mtu: int, loss: float, psn: int, seed: int, max_rd: int,
                          recovery: str) -> None:
    """``ops`` on one QP a -> b with ``recovery`` under loss both ways; checks completions (each
    once, in order), memory and atomic results."""
    topo = rdmasim.back_to_back(mtu=4096, loss_ab=loss, loss_ba=loss, seed=seed)
    if recovery == "ooo":
        for h in (topo.a, topo.b):
            h.set_nic_profile("cx7-ar")
    pair = VerbsPair(topology=topo, cqe=64, cap=(QPCap(max_send_wr=16), QPCap(max_recv_wr=16)), path_mtu=mtu,
                     psn_a=psn, recovery=recovery, max_rd_atomic=max_rd, timeout=8)
    t, cqa, cqb, qa, qb = pair.t, pair.cq_a, pair.cq_b, pair.qa, pair.qb
    region = 9216
    a_mem, b_mem = pair.mr_a(region * len(ops), ALL_REMOTE), pair.mr_b(region * len(ops), ALL_REMOTE)
    rng = np.random.default_rng(seed)
    a_mem.array[:] = rng.integers(0, 256, a_mem.length, dtype=np.uint8)
    b_mem.array[:] = rng.integers(0, 256, b_mem.length, dtype=np.uint8)
    a0, b0 = a_mem.array.copy(), b_mem.array.copy()
    want_a, want_b = a0.copy(), b0.copy()
    n_recv = 0
    for i, (kind, size) in enumerate(ops):
        o = i * region
        if kind in ("fadd", "cswap"):
            word = int.from_bytes(b0[o:o + 8].tobytes(), "little")
            add = (i + 1) * 0x01010101
            wr = SendWR(wr_id=i, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD if kind == "fadd"
                        else e.IBV_WR_ATOMIC_CMP_AND_SWP, sg=[SGE(a_mem.buf + o, 8, a_mem.lkey)])
            wr.set_wr_atomic(b_mem.rkey, b_mem.buf + o, compare_add=add if kind == "fadd" else word,
                             swap=add)
            new = (word + add) % 2**64 if kind == "fadd" else add
            want_b[o:o + 8] = np.frombuffer(new.to_bytes(8, "little"), dtype=np.uint8)
            want_a[o:o + 8] = b0[o:o + 8]
        elif kind == "read":
            wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_READ, sg=[SGE(a_mem.buf + o, size, a_mem.lkey)])
            wr.set_wr_rdma(b_mem.rkey, b_mem.buf + o)
            want_a[o:o + size] = b0[o:o + size]
        else:
            op = e.IBV_WR_RDMA_WRITE if kind == "write" else e.IBV_WR_SEND
            wr = SendWR(wr_id=i, opcode=op, sg=[SGE(a_mem.buf + o, size, a_mem.lkey)])
            if kind == "write":
                wr.set_wr_rdma(b_mem.rkey, b_mem.buf + o)
            else:
                qb.post_recv(RecvWR(wr_id=i, sg=[SGE(b_mem.buf + o, region, b_mem.lkey)]))
                n_recv += 1
            want_b[o:o + size] = a0[o:o + size]
        qa.post_send(wr)
    wcs = t.sim.wait_for(cqa, len(ops), timeout="1s")
    assert [(w.wr_id, w.status) for w in wcs] == [(i, e.IBV_WC_SUCCESS) for i in range(len(ops))]
    if n_recv:
        rwcs = t.sim.wait_for(cqb, n_recv, timeout="1s")
        assert [w.wr_id for w in rwcs] == [i for i, (k, _) in enumerate(ops) if k == "send"]
    t.sim.run_until_idle()
    assert cqa.poll(10)[0] == 0 and cqb.poll(10)[0] == 0
    assert np.array_equal(b_mem.array, want_b)
    assert np.array_equal(a_mem.array, want_a)
    assert qa.qp_state == e.IBV_QPS_RTS and qb.qp_state == e.IBV_QPS_RTS


# ---------------------------------------------------------------------------------------------
# goodput vs loss without PFC: IRN against Go-Back-N
# ---------------------------------------------------------------------------------------------

COMPARE_SIZE = 64 * 1024 * 1024  # one WRITE of 65,536 packets
GBN_TIMEOUT = 6  # 4.096 us * 2^6 = 262 us, close to IRN's RTO_high (320 us)


def long_write(recovery: str, p: float, seed: int = 11) -> dict[str, float]:
    """One long WRITE a -> b with i.i.d. loss p on the data direction, no PFC.

    Returns efficiency (new packets / packets sent), goodput (payload bits per second over the
    completion time, as a fraction of the 100 Gb/s line rate; the header overhead caps it at
    1024/1106 = 0.926), and the requester's counters."""
    size, mtu = COMPARE_SIZE, gbn_eff.MTU
    pair = VerbsPair(mtu=mtu, loss_ab=p, seed=seed, cqe=1, cap=QPCap(), timeout=GBN_TIMEOUT,
                     recovery=recovery)
    topo, qa = pair.t, pair.qa
    src = pair.mr_a(size, e.IBV_ACCESS_LOCAL_WRITE)
    dst = pair.mr_b(size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    qa.post_send(write_wr(1, src, dst, size))
    assert topo.sim.wait_for(pair.cq_a, 1, timeout=None)[0].ok
    st = qa.stats()
    t_s = topo.sim.now * 1e-12
    return {"efficiency": (size // mtu) / st["pkts_sent"], "goodput": size * 8 / t_s / gbn_eff.RATE,
            "time_us": t_s * 1e6, "retx": st["pkts_retx"], "timeouts": st["timeouts"]}


def gbn_expected(p: float) -> float:
    m = gbn_eff.pipe_packets()
    return gbn_eff.efficiency(p, m + p * (gbn_eff.WINDOW - m))


@pytest.mark.parametrize("p", [1e-4, 1e-3, 1e-2])
def test_irn_beats_gbn_without_pfc(p: float) -> None:
    gbn, irn = long_write("gbn", p), long_write("irn", p)
    assert gbn["efficiency"] == pytest.approx(gbn_expected(p), rel=0.05), gbn
    # IRN resends (about) only what was lost: efficiency ~ 1 - p
    assert irn["efficiency"] == pytest.approx(1 - p, abs=0.002), irn
    assert irn["efficiency"] >= gbn["efficiency"]
    assert irn["goodput"] >= 0.99 * gbn["goodput"], (irn, gbn)
    if p >= 1e-2:
        assert irn["efficiency"] > gbn["efficiency"] + 0.15, (irn, gbn)
        assert irn["goodput"] > 1.15 * gbn["goodput"], (irn, gbn)


# ---------------------------------------------------------------------------------------------
# "RoCE needs PFC, IRN does not": an 8:1 incast through one switch, with and without PFC
# ---------------------------------------------------------------------------------------------

INCAST_SIZE = 2 << 20  # one 2 MiB WRITE per sender
INCAST_GBN_TIMEOUT = 8  # 1.05 ms


def incast(recovery: str, pfc: bool, buffer: str = "1MB", n: int = 8) -> dict[str, float]:
    """n senders each WRITE INCAST_SIZE to one receiver through one 100 Gb/s switch (1 us links,
    shared buffer ``buffer``, dynamic threshold); PFC on priority 3 (all RoCE traffic) or no
    lossless class at all (the switch drops). Returns the time until every WRITE completed, it
    relative to the bottleneck's line rate, and the counters."""
    from rdmasim import topology

    cfg = {"buffer": buffer, "lossless": (3,) if pfc else ()}
    topo = topology.incast(n, rate="100Gbps", delay="1us", mtu=1024, seed=1, switch_config=cfg)
    sim = topo.sim
    _, pd_r, cq_r = open_host(topo.receiver, n)
    dst = mr(pd_r, INCAST_SIZE * n, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    cqs, qps = [], []
    for i, h in enumerate(topo.senders):
        _, pd, cq = open_host(h, 1)
        src = mr(pd, INCAST_SIZE, e.IBV_ACCESS_LOCAL_WRITE,
                 fill=np.arange(INCAST_SIZE, dtype=np.uint32).astype(np.uint8) ^ (i + 1))
        qp, _ = qp_pair(pd, cq, pd_r, cq_r, cap=QPCap(), path_mtu=1024, timeout=INCAST_GBN_TIMEOUT,
                        recovery=recovery)
        qp.post_send(write_wr(i, src, dst, INCAST_SIZE, roff=i * INCAST_SIZE))
        cqs.append(cq)
        qps.append(qp)
    for cq in cqs:
        assert sim.wait_for(cq, 1, timeout="1s")[0].ok
    pattern = np.arange(INCAST_SIZE, dtype=np.uint32).astype(np.uint8)
    for i in range(n):
        assert np.array_equal(dst.array[i * INCAST_SIZE:(i + 1) * INCAST_SIZE], pattern ^ (i + 1))
    stats = [q.stats() for q in qps]
    tot = topo.switch.totals()
    ideal_ps = n * INCAST_SIZE * 8 / gbn_eff.RATE * 1e12 * (1106 / 1024)  # payload + headers at line rate
    return {"time_us": sim.now / 1e6, "vs_line_rate": ideal_ps / sim.now,
            "retx": sum(st["pkts_retx"] for st in stats), "timeouts": sum(st["timeouts"] for st in stats),
            "drops": tot["drops"], "pause_frames": tot["pfc_xoff_sent"]}


def test_irn_without_pfc_close_to_roce_with_pfc() -> None:
    gbn_pfc, gbn_lossy = incast("gbn", True), incast("gbn", False)
    irn_lossy, irn_pfc = incast("irn", False), incast("irn", True)
    assert gbn_pfc["drops"] == irn_pfc["drops"] == 0 and gbn_pfc["pause_frames"] > 0
    assert gbn_pfc["vs_line_rate"] > 0.99
    assert gbn_lossy["drops"] > 0 and gbn_lossy["time_us"] > 2 * gbn_pfc["time_us"], gbn_lossy
    assert irn_lossy["drops"] > 0 and irn_lossy["retx"] == irn_lossy["drops"], irn_lossy  # only the lost
    assert irn_lossy["time_us"] < 1.15 * gbn_pfc["time_us"], (irn_lossy, gbn_pfc)


def main() -> None:
    m = gbn_eff.pipe_packets()
    print(f"one {COMPARE_SIZE >> 20} MiB WRITE, 100 Gb/s, 1 us, MTU {gbn_eff.MTU}, no PFC; pipe m = {m}, "
          f"GBN timeout {GBN_TIMEOUT} ({4.096 * 2**GBN_TIMEOUT:.0f} us), IRN RTO 100/320 us")
    print(f"{'loss':>7} | {'GBN eff':>7} {'eta':>6} {'GBN gput':>8} {'GBN TO':>6} | "
          f"{'IRN eff':>7} {'IRN gput':>8} {'IRN TO':>6} {'IRN retx':>8}")
    for p in (1e-4, 1e-3, 1e-2):
        g, i = long_write("gbn", p), long_write("irn", p)
        print(f"{p:>7g} | {g['efficiency']:7.4f} {gbn_expected(p):6.4f} {g['goodput']:8.4f} "
              f"{g['timeouts']:6d} | {i['efficiency']:7.4f} {i['goodput']:8.4f} {i['timeouts']:6d} "
              f"{i['retx']:8d}")
    print(f"\n8:1 incast, one {INCAST_SIZE >> 20} MiB WRITE per sender, 100 Gb/s, 1 us links, one switch "
          f"(dynamic threshold), GBN timeout {INCAST_GBN_TIMEOUT}")
    print(f"{'buffer':>6} {'recovery':>8} {'PFC':>4} | {'time us':>8} {'vs line':>7} {'drops':>6} "
          f"{'resent':>6} {'TOs':>4} {'pauses':>6}")
    for buffer in ("1MB", "4MB"):
        for rec, pfc in (("gbn", True), ("gbn", False), ("irn", False), ("irn", True)):
            r = incast(rec, pfc, buffer)
            print(f"{buffer:>6} {rec:>8} {'on' if pfc else 'off':>4} | {r['time_us']:8.1f} "
                  f"{r['vs_line_rate']:7.3f} {r['drops']:6d} {r['retx']:6d} {r['timeouts']:4d} "
                  f"{r['pause_frames']:6d}")


if __name__ == "__main__":
    main()
