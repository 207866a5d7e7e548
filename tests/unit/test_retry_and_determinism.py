"""Retry exhaustion on a dead link, run-to-run determinism (pcap bytes, stats) and the
consistency of the per-QP recovery counters with the link's drops."""

from __future__ import annotations

import gc
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.verbs_pair import VerbsPair, random_bytes

import rdmasim
from rdmasim.verbs import MR, PD, SGE, Context, QPCap, RecvWR, SendWR
from rdmasim.verbs import enums as e

PS_PER_US = 1_000_000


def timeout_ps(timeout: int) -> int:
    """IBA local ACK timeout: 4.096 us * 2^timeout, in picoseconds."""
    return 4_096_000 * 2**timeout


class Pair(VerbsPair):
    """Two connected RC QPs a->b over a back_to_back link with MRs of ``size`` bytes."""

    def __init__(self, *, size=4096, n=8, mtu=1024, loss_ab=0.0, loss_ba=0.0, seed=1,
                 timeout=10, retry_cnt=7, psn_a=0, sq_sig_all=1, sim=None, names=("a", "b"),
                 pcap=None):
        super().__init__(mtu=mtu, loss_ab=loss_ab, loss_ba=loss_ba, seed=seed, sim=sim, names=names,
                         pcap=pcap, cqe=4 * n + 8,
                         cap=(QPCap(max_send_wr=n), QPCap(max_send_wr=n, max_recv_wr=n)),
                         sq_sig_all=(sq_sig_all, 1), path_mtu=mtu, psn_a=psn_a, timeout=timeout,
                         retry_cnt=retry_cnt)
        self.src = self.mr_a(size, e.IBV_ACCESS_LOCAL_WRITE, fill=random_bytes(size, 12345))
        self.dst = self.mr_b(size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)

    def write(self, wr_id, off, length, flags=e.IBV_SEND_SIGNALED, op=e.IBV_WR_RDMA_WRITE):
        wr = SendWR(wr_id=wr_id, opcode=op, sg=[SGE(self.src.buf + off, length, self.src.lkey)],
                    send_flags=flags)
        wr.set_wr_rdma(self.dst.rkey, self.dst.buf + off)
        self.qa.post_send(wr)

    def send(self, wr_id, off, length):
        self.qb.post_recv(RecvWR(wr_id=wr_id, sg=[SGE(self.dst.buf + off, length, self.dst.lkey)]))
        wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_SEND,
                    sg=[SGE(self.src.buf + off, length, self.src.lkey)])
        self.qa.post_send(wr)


# ---------------------------------------------------------------------------------------------
# (a) retry exhaustion


@pytest.mark.parametrize("retry_cnt,timeout", [(0, 1), (1, 5), (2, 8), (3, 12), (5, 4), (6, 10),
                                               (7, 3), (7, 14), (4, 18)])
def test_retry_exhaustion_on_dead_link(retry_cnt, timeout):
    p = Pair(loss_ab=1.0, timeout=timeout, retry_cnt=retry_cnt, size=8192)
    p.sim.run(f"{3}us")
    t_post = p.sim.now
    # three WRs: 3000 bytes (3 packets at MTU 1024), 1 byte, 2048 bytes (2 packets)
    p.write(0, 0, 3000)
    p.write(1, 3000, 1)
    p.write(2, 4000, 2048)
    wcs = p.sim.wait_for(p.cq_a, 1, timeout="100s")
    elapsed = p.sim.now - t_post
    expect = (retry_cnt + 1) * timeout_ps(timeout)
    assert abs(elapsed - expect) <= 0.03 * expect, (elapsed, expect)

    assert [(w.wr_id, w.status) for w in wcs] == [(0, e.IBV_WC_RETRY_EXC_ERR)]
    assert e.IBV_WC_RETRY_EXC_ERR == 12 and e.IBV_WC_WR_FLUSH_ERR == 5 and e.IBV_QPS_ERR == 6
    p.sim.run_until_idle()
    _, rest = p.cq_a.poll(100)
    assert [(w.wr_id, w.status) for w in rest] == [(1, e.IBV_WC_WR_FLUSH_ERR),
                                                   (2, e.IBV_WC_WR_FLUSH_ERR)]
    assert all(w.qp_num == p.qa.qp_num for w in wcs + rest)
    assert p.qa.qp_state == e.IBV_QPS_ERR
    assert p.qb.qp_state == e.IBV_QPS_RTS
    assert len(p.cq_b) == 0 and not p.dst.array.any()

    s = p.qa.stats()
    n_pkts = 3 + 1 + 2
    assert s["timeouts"] == retry_cnt + 1, s
    assert s["pkts_retx"] == retry_cnt * n_pkts, s
    assert s["pkts_sent"] == (retry_cnt + 1) * n_pkts, s
    assert s["msgs_completed"] == 0 and s["acks_rcvd"] == 0
    ab = p.t.link.ab.stats()
    assert ab["frames"] == ab["dropped"] == s["pkts_sent"] and ab["delivered"] == 0


@pytest.mark.parametrize("flags", [(0, 0, 0), (0, e.IBV_SEND_SIGNALED, 0),
                                   (e.IBV_SEND_SIGNALED, 0, 0)])
def test_unsignaled_wrs_still_get_error_completions(flags):
    p = Pair(loss_ab=1.0, timeout=4, retry_cnt=2, sq_sig_all=0)
    t_post = p.sim.now
    for i, f in enumerate(flags):
        p.write(i, 100 * i, 100, flags=f)
    wcs = p.sim.wait_for(p.cq_a, 3, timeout="10s")
    assert [(w.wr_id, w.status) for w in wcs] == [(0, e.IBV_WC_RETRY_EXC_ERR),
                                                  (1, e.IBV_WC_WR_FLUSH_ERR),
                                                  (2, e.IBV_WC_WR_FLUSH_ERR)]
    assert p.sim.now - t_post == pytest.approx(3 * timeout_ps(4), rel=0.03)
    assert p.qa.qp_state == e.IBV_QPS_ERR
    p.sim.run_until_idle()
    assert len(p.cq_a) == 0


def test_retry_exhaustion_when_only_acks_are_lost():
    """Data arrives (responder memory is written) but every ACK is lost: still RETRY_EXC_ERR,
    and the responder counts the retransmissions as duplicates without re-delivering them."""
    p = Pair(loss_ba=1.0, timeout=5, retry_cnt=2)
    t_post = p.sim.now
    p.write(0, 0, 3000)
    p.write(1, 3000, 1000)
    wcs = p.sim.wait_for(p.cq_a, 2, timeout="10s")
    assert [(w.wr_id, w.status) for w in wcs] == [(0, e.IBV_WC_RETRY_EXC_ERR),
                                                  (1, e.IBV_WC_WR_FLUSH_ERR)]
    assert p.sim.now - t_post == pytest.approx(3 * timeout_ps(5), rel=0.03)
    assert p.qa.qp_state == e.IBV_QPS_ERR
    assert np.array_equal(p.dst.array[:4000], p.src.array[:4000])
    sb = p.qb.stats()
    assert sb["bytes_rcvd"] == 4000
    assert sb["dup_rcvd"] == p.qa.stats()["pkts_retx"] == 2 * 4


def test_forward_progress_resets_retry_counter():
    """retry_cnt=1 survives many isolated losses: the counter is reset by every valid ACK."""
    p = Pair(timeout=6, retry_cnt=1, size=64 * 1024, mtu=1024)
    for k in range(8):  # drop one packet of each of 8 messages (tail packets -> timeouts)
        p.t.link.ab.drop(psn=(k * 8 + 7) % 2**24)
    for k in range(8):
        p.write(k, k * 8192, 8192)
    wcs = p.sim.wait_for(p.cq_a, 8, timeout="10s")
    assert [(w.wr_id, w.status) for w in wcs] == [(k, e.IBV_WC_SUCCESS) for k in range(8)]
    assert np.array_equal(p.dst.array, p.src.array)
    assert p.t.link.ab.stats()["dropped"] == 8
    assert p.qa.qp_state == e.IBV_QPS_RTS


def test_wait_for_reports_idle_network_with_finite_timeout():
    """timeout=0 disables the retransmit timer: on a dead link nothing more can happen, so
    wait_for should say the network went idle (RuntimeError), not wait out its timeout."""
    p = Pair(loss_ab=1.0, timeout=0, retry_cnt=2)
    p.write(0, 0, 100)
    with pytest.raises(RuntimeError, match="idle"):
        p.sim.wait_for(p.cq_a, 1, timeout="1s")


def test_timeout_zero_disables_retransmission():
    p = Pair(loss_ab=1.0, timeout=0, retry_cnt=2)
    p.write(0, 0, 100)
    p.sim.run_until_idle()  # must terminate: no timer is armed
    assert len(p.cq_a) == 0
    assert p.qa.qp_state == e.IBV_QPS_RTS
    s = p.qa.stats()
    assert s["timeouts"] == 0 and s["pkts_retx"] == 0 and s["pkts_sent"] == 1


# ---------------------------------------------------------------------------------------------
# (b) determinism


def lossy_run(tmp_path, seed, name, loss=0.02):
    pcap = tmp_path / f"{name}.pcap"
    p = Pair(size=256 * 1024, n=8, mtu=1024, loss_ab=loss, loss_ba=loss, seed=seed, timeout=8,
             psn_a=2**24 - 40, pcap=str(pcap))
    for k in range(4):
        p.write(k, k * 32768, 32768)
    for k in range(4, 8):
        p.send(k, k * 32768, 32768)
    p.sim.wait_for(p.cq_a, 8, timeout="10s")
    p.sim.wait_for(p.cq_b, 4, timeout="10s")
    p.sim.run_until_idle()
    p.sim.close_capture()
    assert np.array_equal(p.dst.array, p.src.array)
    data = pcap.read_bytes()
    summary = {
        "now": p.sim.now,
        "events": p.sim.events,
        "qa": p.qa.stats(),
        "qb": p.qb.stats(),
        "ab": p.t.link.ab.stats(),
        "ba": p.t.link.ba.stats(),
    }
    return hashlib.sha256(data).hexdigest(), len(data), summary


_RUN_IN_CHILD = """
import json, pathlib, sys
sys.path[:0] = [{testdir!r}, {tests!r}]  # this file's folder, and tests/ for support/
from test_retry_and_determinism import lossy_run
h, n, s = lossy_run(pathlib.Path({tmp!r}), {seed}, {name!r})
print(json.dumps([h, n, s], sort_keys=True))
"""


def lossy_run_in_fresh_process(tmp_path, seed, name):
    """The same lossy run in a new interpreter (a user re-running a script)."""
    here = Path(__file__).parent
    code = _RUN_IN_CHILD.format(testdir=str(here), tests=str(here.parent), tmp=str(tmp_path), seed=seed,
                                name=name)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         cwd=str(Path(__file__).parents[2]), timeout=120)
    h, n, s = json.loads(out.stdout.strip().splitlines()[-1])
    return h, n, s


@pytest.mark.parametrize("seed", [1, 7, 2**40 + 3])
def test_same_seed_same_pcap_and_stats(tmp_path, seed):
    """Two fresh runs of the same lossy scenario (SEND and WRITE, PSN wrap, loss both ways)
    write byte-identical captures and report identical counters."""
    h1, n1, s1 = lossy_run_in_fresh_process(tmp_path, seed, "one")
    h2, n2, s2 = lossy_run_in_fresh_process(tmp_path, seed, "two")
    assert s1["ab"]["dropped"] > 0  # the run really was lossy
    assert (h1, n1) == (h2, n2)
    assert s1 == s2


def test_mr_keys_depend_only_on_seed():
    def keys():
        t = rdmasim.back_to_back(seed=1)
        pd = PD(Context(t.b))
        mrs = [MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
               for _ in range(3)]
        return [(m.lkey, m.rkey) for m in mrs]

    runs = []
    for _ in range(4):
        runs.append(keys())
        gc.collect()
    assert all(r == runs[0] for r in runs), runs


def test_different_seed_different_pcap(tmp_path):
    runs = [lossy_run(tmp_path, seed, f"s{seed}") for seed in (1, 2, 3)]
    hashes = {h for h, _, _ in runs}
    assert len(hashes) == 3
    # the loss patterns themselves differ
    drops = [(s["ab"]["dropped"], s["ba"]["dropped"], s["qa"]["pkts_retx"]) for _, _, s in runs]
    assert len(set(drops)) > 1


def test_lossless_runs_do_not_depend_on_seed(tmp_path):
    """Without loss the timing and counters are the same for every seed (the capture is not:
    MR keys are drawn from the host's RNG stream)."""
    _, n1, s1 = lossy_run(tmp_path, 1, "a", loss=0.0)
    _, n2, s2 = lossy_run(tmp_path, 99, "b", loss=0.0)
    assert n1 == n2 and s1 == s2


def test_adding_a_pair_does_not_shift_the_first_pairs_randomness():
    """RNG streams are per component (rng.h): a second host pair with its own lossy link and
    traffic in the same simulation leaves the first pair's loss pattern and counters unchanged."""

    def first_pair_stats(with_second: bool):
        p1 = Pair(size=128 * 1024, loss_ab=0.03, loss_ba=0.03, seed=5, timeout=8)
        if with_second:
            p2 = Pair(size=128 * 1024, loss_ab=0.05, loss_ba=0.05, sim=p1.sim, names=("c", "d"),
                      timeout=8)
            for k in range(4):
                p2.write(k, k * 32768, 32768)
        for k in range(4):
            p1.write(k, k * 32768, 32768)
        p1.sim.wait_for(p1.cq_a, 4, timeout="10s")
        p1.sim.run_until_idle()
        if with_second:
            assert len(p2.cq_a) == 4
        return p1.qa.stats(), p1.qb.stats(), p1.t.link.ab.stats(), p1.t.link.ba.stats()

    alone = first_pair_stats(False)
    assert alone[2]["dropped"] > 0
    assert first_pair_stats(True) == alone


# ---------------------------------------------------------------------------------------------
# (c) recovery counters agree with the link's drops


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), loss_ab=st.sampled_from((0.0, 0.001, 0.01, 0.03)),
       loss_ba=st.sampled_from((0.0, 0.01, 0.05)), mtu=st.sampled_from((256, 1024, 4096)),
       size=st.sampled_from((8 * 1024, 100_000, 512 * 1024)))
def test_counters_consistent_with_drops(seed, loss_ab, loss_ba, mtu, size):
    n = 4
    p = Pair(size=size * n, n=n, mtu=mtu, loss_ab=loss_ab, loss_ba=loss_ba, seed=seed, timeout=8)
    for k in range(n):
        p.write(k, k * size, size)
    wcs = p.sim.wait_for(p.cq_a, n, timeout="10s")
    p.sim.run_until_idle()
    assert all(w.status == e.IBV_WC_SUCCESS for w in wcs)
    assert np.array_equal(p.dst.array, p.src.array)
    sa, sb = p.qa.stats(), p.qb.stats()
    ab, ba = p.t.link.ab.stats(), p.t.link.ba.stats()
    ctx = (sa, sb, ab, ba)
    first_pkts = n * -(-size // mtu)

    # frame accounting: a->b carries only a's data packets, b->a only b's ACKs/NAKs
    assert ab["frames"] == ab["dropped"] + ab["delivered"] == sa["pkts_sent"], ctx
    assert ba["frames"] == ba["dropped"] + ba["delivered"] == sb["acks_sent"] + sb["naks_sent"], ctx
    # (ACKs for PSNs at or beyond the rewound request PSN are ignored uncounted after a retry)
    assert sa["acks_rcvd"] + sa["naks_rcvd"] <= ba["delivered"], ctx
    assert sa["pkts_sent"] - sa["pkts_retx"] == first_pkts, ctx
    assert sa["bytes_sent"] - sa["bytes_retx"] == n * size, ctx
    assert sb["bytes_rcvd"] == n * size, ctx  # each byte delivered once
    assert sa["msgs_completed"] == n, ctx

    # recovery is caused by drops, and drops cause recovery
    if ab["dropped"] > 0:
        assert sa["pkts_retx"] > 0, ctx
        assert sa["naks_rcvd"] + sa["timeouts"] > 0, ctx
    if ab["dropped"] == 0 and ba["dropped"] == 0:
        assert sa["pkts_retx"] == sa["timeouts"] == sa["naks_rcvd"] == sb["naks_sent"] == 0, ctx
        assert sb["dup_rcvd"] == sb["ooo_dropped"] == 0, ctx
    assert sb["naks_sent"] <= ab["dropped"], ctx  # a NAK needs a missing packet
    assert sa["naks_rcvd"] <= sb["naks_sent"], ctx
    if ba["dropped"] == 0:
        assert sa["naks_rcvd"] == sb["naks_sent"], ctx
    assert sa["timeouts"] <= ab["dropped"] + ba["dropped"], ctx
    if ab["dropped"] == 0:
        # nothing was missing at the responder: no NAK, no out-of-order packet
        assert sb["naks_sent"] == 0 and sb["ooo_dropped"] == 0, ctx
    # every retransmitted packet that arrives is either a duplicate, fills the gap, or is
    # dropped out of order; received packets = first-time deliveries + duplicates + ooo
    assert ab["delivered"] == first_pkts + sb["dup_rcvd"] + sb["ooo_dropped"], ctx
