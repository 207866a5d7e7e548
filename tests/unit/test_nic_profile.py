"""NIC profiles: per-host window and ACK coalescing (rdmasim.nic, csrc/transport/nic_params.h)."""
from __future__ import annotations

import numpy as np
import pytest

from rdmasim import nic
from rdmasim.topology import back_to_back
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR, connect_qps
from rdmasim.verbs import enums as e


def _writes(n: int, size: int, *, profile: str = "rxe", loss_ba: float = 0.0, delay: str = "1us",
            rate: str = "100Gbps", **over: object) -> dict:
    topo = back_to_back(rate=rate, delay=delay, mtu=1024, loss_ba=loss_ba, seed=3)
    for h in (topo.a, topo.b):
        h.set_nic_profile(profile, **over)
    ca, cb = Context(topo.a), Context(topo.b)
    pa, pb = PD(ca), PD(cb)
    qa, qb = CQ(ca, n), CQ(cb, 4)
    src = MR(pa, n * size, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pb, n * size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    src.array[:] = np.arange(n * size, dtype=np.uint32).astype(np.uint8)
    cap = QPCap(max_send_wr=n, max_recv_wr=1)
    a = QP(pa, QPInitAttr(scq=qa, rcq=qa, cap=cap))
    b = QP(pb, QPInitAttr(scq=qb, rcq=qb, cap=cap))
    connect_qps(a, b, path_mtu=1024, timeout=8, retry_cnt=7)
    for i in range(n):
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf + i * size, size, src.lkey)])
        wr.set_wr_rdma(dst.rkey, dst.buf + i * size)
        a.post_send(wr)
    wcs = topo.sim.wait_for(qa, n, timeout=None)
    t = topo.sim.now
    topo.sim.run_until_idle()
    return {"ok": all(w.status == 0 for w in wcs) and len(wcs) == n,
            "intact": bool(np.array_equal(src.array, dst.array)), "t_ps": t,
            "acks": b.stats()["acks_sent"], "timeouts": a.stats()["timeouts"]}


def test_profiles_and_errors() -> None:
    assert nic.get_profile("rxe").max_unacked_psns == 128
    assert nic.get_profile("connectx") == nic.get_profile("cx6")
    assert nic.get_profile("cx6").dcqcn_params().cnp_interval == "4us"
    with pytest.raises(ValueError, match="nic.profile"):
        nic.get_profile("bogus")
    with pytest.raises(ValueError, match="max_unacked_psns"):
        nic.get_profile("rxe", max_unacked_psns=0)
    with pytest.raises(ValueError, match="ack_timeout"):
        nic.get_profile("rxe", ack_coalesce_pkts=4)
    with pytest.raises(ValueError, match="unknown key"):
        nic.get_profile("rxe", acks=2)


def test_coalescing_cuts_acks_by_the_factor_and_completes() -> None:
    base = _writes(64, 256)
    co = _writes(64, 256, ack_coalesce_pkts=4, ack_timeout="2us")
    assert base["ok"] and co["ok"] and co["intact"]
    assert base["acks"] == 64
    assert co["acks"] <= 64 // 4 + 2 and co["acks"] >= 64 // 4
    assert co["timeouts"] == 0


def test_lost_coalesced_ack_is_recovered() -> None:
    r = _writes(64, 256, loss_ba=0.2, ack_coalesce_pkts=8, ack_timeout="2us")
    assert r["ok"] and r["intact"]


def test_rxe_window_binds_single_qp_cx6_does_not() -> None:
    # 10 us one-way delay, MTU 1024, 100 Gb/s: 129 PSNs x wire bytes per RTT vs the line rate
    size, n = 1024 * 4096, 1
    rxe = _writes(n, size, delay="10us", rate="100Gbps")
    cx = _writes(n, size, delay="10us", rate="100Gbps", profile="cx6")
    # rxe asks for an ACK every 65 packets (RXE_MAX_PKT_PER_ACK) and may run 129 PSNs ahead: each
    # ACK, one RTT after its packet, opens the window by 65 packets, so 65 packets go per RTT
    rtt_s = 20e-6
    rxe_bps = size * 8 / (rxe["t_ps"] / 1e12)
    cx_bps = size * 8 / (cx["t_ps"] / 1e12)
    assert rxe_bps == pytest.approx(65 * 1024 * 8 / rtt_s, rel=0.1)
    assert rxe_bps < 0.8 * cx_bps
    assert cx_bps > 0.85 * 100e9


def test_ack_req_interval_sets_the_requesters_ackreq_cadence() -> None:
    # rxe asks on the 66th packet since the last AckReq and on a message's last packet, and the
    # responder (no coalescing) ACKs each: 66 packets draw one ACK, 67 two, 132 two, 133 three;
    # interval 1 asks on every packet (ns-3 HPCC's L2_ACK_INTERVAL 1), interval 8 on every 8th
    assert nic.get_profile("rxe").ack_req_interval == 66
    assert [_writes(1, n * 1024)["acks"] for n in (66, 67, 132, 133)] == [1, 2, 2, 3]
    every = _writes(1, 64 * 1024, ack_req_interval=1)
    assert every["ok"] and every["intact"] and every["acks"] == 64
    assert _writes(1, 64 * 1024, ack_req_interval=8)["acks"] == 8
    for bad in (0, 2**32, 1.5, True, "4"):
        with pytest.raises(ValueError, match=r"nic.ack_req_interval = .*: allowed >= 1"):
            nic.get_profile("rxe", ack_req_interval=bad)


def test_window_must_hold_the_packets_up_to_the_next_ackreq() -> None:
    # The requester may run max_unacked_psns PSNs ahead of the oldest unacknowledged one, so
    # max_unacked_psns + 1 packets fly before it waits; it asks for an ACK only on every
    # ack_req_interval-th packet (and a message's last), as rxe, whose 128 and 66 always fit. A
    # window that ends before the next AckReq waits for the retransmit timeout instead:
    # interval 8 with a window of 6 took 7 timeouts (7.4 ms for 64 KiB), so it is refused, and
    # the smallest window allowed (7) runs without one
    ok = _writes(1, 64 * 1024, ack_req_interval=8, max_unacked_psns=7)
    assert ok["ok"] and ok["intact"] and ok["timeouts"] == 0 and ok["acks"] == 8
    assert nic.get_profile("rxe", max_unacked_psns=65).max_unacked_psns == 65  # rxe's 66 fits
    for over in ({"ack_req_interval": 8, "max_unacked_psns": 6}, {"max_unacked_psns": 1},
                 {"max_unacked_psns": 64}, {"ack_req_interval": 130}):
        with pytest.raises(nic.NicProfileError) as info:
            nic.get_profile("rxe", **over)
        msg = str(info.value)
        assert "nic.max_unacked_psns" in msg and "nic.ack_req_interval" in msg, msg
        assert "max_unacked_psns + 1 >= ack_req_interval" in msg, msg
        assert info.value.keys == ("max_unacked_psns", "ack_req_interval")
    # cx6's window (2^22) holds any interval a message of that many packets can reach
    assert nic.get_profile("cx6", ack_req_interval=1 << 22).ack_req_interval == 1 << 22


def test_the_core_refuses_a_window_shorter_than_the_ackreq_interval() -> None:
    # the C entry point checks the same rule (a caller that bypasses NicProfile)
    topo = back_to_back()
    with pytest.raises(Exception, match="max_unacked_psns 6 .*ack_req_interval 8"):
        topo.sim._core.host_set_nic(0, 6, 1, 0, 8)
    topo.sim._core.host_set_nic(0, 7, 1, 0, 8)


@pytest.mark.parametrize("field", ["max_unacked_psns", "ack_coalesce_pkts", "ack_req_interval"])
@pytest.mark.parametrize("bad", [True, False, 7.0, "7", None])
def test_integer_constants_refuse_bools_floats_and_strings(field: str, bad: object) -> None:
    with pytest.raises(nic.NicProfileError, match=rf"nic\.{field} = {bad!r}: allowed .*integer") as info:
        nic.get_profile("cx6", ack_timeout="2us", **{field: bad})
    assert info.value.keys[0] == field


@pytest.mark.parametrize("field", ["ack_timeout", "cnp_interval", "pfc_response"])
@pytest.mark.parametrize("bad", [True, 7.0, None, "-1us", "1 parsec"])
def test_time_constants_name_the_field(field: str, bad: object) -> None:
    with pytest.raises(nic.NicProfileError, match=rf"nic\.{field} = ") as info:
        nic.get_profile("rxe", **{field: bad})
    assert info.value.keys[0] == field


def test_out_of_range_integers_are_refused_before_the_core() -> None:
    for field, bad in (("ack_coalesce_pkts", 1 << 32), ("max_unacked_psns", (1 << 22) + 1),
                       ("ack_coalesce_pkts", 0)):
        with pytest.raises(nic.NicProfileError, match=rf"nic\.{field} = {bad}: allowed"):
            nic.get_profile("cx6", ack_timeout="2us", **{field: bad})
