"""HPCC's rules in isolation (csrc/cc/hpcc.c through rdmasim._core.HpccForTest) against values
computed by hand from Algorithm 1 (Li et al., SIGCOMM 2019), and its parameter validation
(rdmasim.cc_hpcc.HpccParams)."""

from __future__ import annotations

import pytest

import rdmasim
from rdmasim import _core
from rdmasim.cc import ALGORITHM_NAMES, default_params, params_class
from rdmasim.cc_hpcc import HpccParams

LINE = 100e9
US = 1_000_000
T = 10 * US
BT = LINE * 10e-6 / 8      # B x T = 125000 bytes: the window at line rate
W_AI = 40e6 * 10e-6 / 8    # ai = line / 2500 = 40 Mb/s: 50 bytes per update
ETA = 0.95


def params(**overrides) -> HpccParams:
    kw = dict(base_rtt=T)
    kw.update(overrides)
    return HpccParams(**kw)


def harness(**overrides):
    return _core.HpccForTest(params(**overrides).to_c(), LINE)


def hop(ts_us: float, tx: int, q: int, rate: float = LINE):
    return (round(ts_us * US), tx, q, int(rate))


def started(**overrides):
    """A harness after the first ACK (records stored, reference update due once the ACKs pass
    51000 bytes)."""
    h = harness(**overrides)
    h.ack(1000, 50_000, [hop(0, 0, 20_000)])
    return h


def test_starts_at_line_rate_with_one_bdp_window():
    h = harness()
    s = h.state
    assert s["w_bytes"] == s["w_ref_bytes"] == pytest.approx(BT) and s["u"] == 1.0
    assert h.window == 125_000 and h.rate_bps == pytest.approx(LINE)
    assert s["w_ai_bytes"] == pytest.approx(W_AI) and s["w_min_bytes"] == pytest.approx(1e9 * 10e-6 / 8)


def test_first_ack_only_stores_the_records():
    h = started()
    s = h.state
    assert s["started"] == 1 and s["w_bytes"] == pytest.approx(BT) and s["updates"] == 0
    assert s["hop"] == [dict(ts_ps=0, tx_bytes=0, qlen_bytes=20_000)]
    assert s["last_update_pos"] == 51_000


def test_fast_reaction_sets_w_from_w_ref_and_keeps_w_ref():
    h = started()
    # 2 us later the hop sent 25000 B (line rate) and holds 30000 B: u_j = min(30000, 20000) / BT + 1
    h.ack(1000, 50_000, [hop(2, 25_000, 30_000)])
    u_j = 20_000 / BT + 1.0
    u = (1.0 * (T - 2 * US) + u_j * 2 * US) / T   # EWMA over T with tau = 2 us
    w = BT / (u / ETA) + W_AI
    s = h.state
    assert s["u_last"] == pytest.approx(u_j) and s["u"] == pytest.approx(u)
    assert s["w_bytes"] == pytest.approx(w) and h.window == round(w)
    assert s["w_ref_bytes"] == pytest.approx(BT) and s["inc_stage"] == 0
    assert s["fast_reacts"] == 1 and s["updates"] == 0
    assert h.rate_bps == pytest.approx(w * 8 / 10e-6)  # paced at W / T


def test_reference_update_once_the_acks_pass_what_was_sent():
    h = started()
    h.ack(1000, 50_000, [hop(2, 25_000, 30_000)])
    u1 = (8 + 2 * (20_000 / BT + 1.0)) / 10
    # this ACK passes 51000: a full update; the window becomes the new W_ref
    h.ack(50_000, 40_000, [hop(4, 50_000, 30_000)])
    u2 = (u1 * 8 + 2 * (30_000 / BT + 1.0)) / 10
    w = BT / (u2 / ETA) + W_AI
    s = h.state
    assert s["u"] == pytest.approx(u2)
    assert s["w_bytes"] == pytest.approx(w) and s["w_ref_bytes"] == pytest.approx(w)
    assert s["updates"] == 1 and s["mi_updates"] == 1 and s["inc_stage"] == 0
    assert s["last_update_pos"] == 52_000 + 40_000  # what had been sent at this ACK


def drive_down(h, t0_us: float, tx0: int):
    """One full update on a hop at line rate with a 62500-byte queue (U = 1.5): W_ref drops."""
    h.ack(10_000_000, 0, [hop(t0_us + 20, tx0 + 250_000, 62_500)])
    return h.state


def test_additive_steps_below_eta_then_a_multiplicative_one_after_max_stage():
    h = harness(max_stage=3)
    h.ack(1000, 0, [hop(0, 0, 62_500)])
    s = drive_down(h, 0, 0)  # tau 20 us > T: clipped, u = U = 0.5 + 1 = 1.5
    assert s["u"] == pytest.approx(1.5)
    w_ref = BT / (1.5 / ETA) + W_AI
    assert s["w_ref_bytes"] == pytest.approx(w_ref)
    # now half the line rate and no queue: U = 0.5 every T; each ACK is a full update
    t, tx, u = 20.0, 250_000, 1.5
    for stage in (1, 2, 3):
        t, tx = t + 10, tx + 62_500
        h.ack(10_000_000, 0, [hop(t, tx, 0)])
        u = 0.5  # tau = T: the EWMA takes U whole
        if u / ETA < 1:
            w_ref += W_AI
        s = h.state
        assert s["u"] == pytest.approx(u) and s["inc_stage"] == stage
        assert s["w_ref_bytes"] == pytest.approx(w_ref)
    # the stage reached max_stage: multiplicative although U < eta (the window grows by eta / U)
    h.ack(10_000_000, 0, [hop(t + 10, tx + 62_500, 0)])
    s = h.state
    assert w_ref / (0.5 / ETA) + W_AI > BT  # clamped at line rate x T
    assert s["inc_stage"] == 0 and s["w_ref_bytes"] == pytest.approx(BT) and s["mi_updates"] == 2
    # and with U = 0.9 (below eta): W_ref x eta / U + W_AI after the stage count
    h2 = harness(max_stage=0)
    h2.ack(1000, 0, [hop(0, 0, 62_500)])
    drive_down(h2, 0, 0)
    w2 = h2.state["w_ref_bytes"]
    h2.ack(10_000_000, 0, [hop(30, 250_000 + 112_500, 0)])  # 90 % of the line for T
    assert h2.state["w_ref_bytes"] == pytest.approx(w2 / (0.9 / ETA) + W_AI)


def test_the_most_loaded_hop_sets_u_and_its_interval_the_ewma_weight():
    h = harness()
    h.ack(1000, 50_000, [hop(0, 0, 0), hop(0, 0, 10_000)])
    # hop 0: 1 us, half rate, no queue (u 0.5); hop 1: 3 us, line rate, queue 10000 -> 12000
    h.ack(1000, 50_000, [hop(1, 6_250, 0), hop(3, 37_500, 12_000)])
    u1 = 10_000 / BT + 1.0
    s = h.state
    assert s["u_last"] == pytest.approx(u1)
    assert s["u"] == pytest.approx((7 + 3 * u1) / 10)  # tau of hop 1 (3 us), not hop 0's
    assert [x["qlen_bytes"] for x in s["hop"]] == [0, 12_000]


def test_hop_rates_normalise_each_hop():
    h = harness()
    h.ack(1000, 50_000, [hop(0, 0, 0, rate=25e9)])
    h.ack(1000, 50_000, [hop(2, 6_250, 0, rate=25e9)])  # 25 Gb/s for 2 us on a 25 Gb/s port: u 1
    assert h.state["u_last"] == pytest.approx(1.0)


def test_clamped_to_min_rate_and_line_rate():
    h = harness(min_rate="10Gbps")
    h.ack(1000, 0, [hop(0, 0, 10_000_000)])
    h.ack(10_000_000, 0, [hop(20, 250_000, 10_000_000)])  # U = 80 + 1
    assert h.state["w_bytes"] == pytest.approx(10e9 * 10e-6 / 8)
    idle = harness()
    idle.ack(1000, 0, [hop(0, 0, 0)])
    idle.ack(10_000_000, 0, [hop(20, 0, 0)])  # U = 0: the window cannot exceed line rate x T
    assert idle.state["w_bytes"] == pytest.approx(BT)


def test_acks_without_int_and_repeated_records_change_nothing():
    h = started()
    h.ack(1000, 50_000, None)
    h.ack(1000, 50_000, [])
    h.ack(1000, 50_000, [hop(0, 0, 20_000)])  # same time as the stored record: no interval
    s = h.state
    assert s["no_int"] == 2 and s["w_bytes"] == pytest.approx(BT) and s["u"] == 1.0


def test_without_fast_react_only_reference_updates_act():
    h = started(fast_react=False)
    h.ack(1000, 50_000, [hop(2, 25_000, 30_000)])
    s = h.state
    assert s["w_bytes"] == pytest.approx(BT) and s["fast_reacts"] == 0
    assert s["hop"][0]["ts_ps"] == 0  # not even the records move (ns-3 FastReact off)
    h.ack(50_000, 0, [hop(4, 50_000, 30_000)])  # a full update against the first record
    u = (6 + 4 * (20_000 / BT + 1.0)) / 10
    assert h.state["u"] == pytest.approx(u) and h.state["updates"] == 1


def test_python_window_formula_is_the_c_one():
    p = params()
    assert p.window(BT, 1.2, 0, "100Gbps") == pytest.approx(BT / (1.2 / ETA) + W_AI)
    assert p.window(BT / 2, 0.5, 2, "100Gbps") == pytest.approx(BT / 2 + W_AI)
    assert p.window(BT / 2, 0.5, 5, "100Gbps") == pytest.approx(BT / 2 / (0.5 / ETA) + W_AI)


@pytest.mark.parametrize("kw, field", [
    (dict(eta=0), "eta"), (dict(eta=1.5), "eta"), (dict(eta="x"), "eta"),
    (dict(max_stage=-1), "max_stage"), (dict(max_stage=True), "max_stage"),
    (dict(fast_react=1), "fast_react"), (dict(base_rtt=0), "base_rtt"), (dict(base_rtt="soon"), "base_rtt"),
    (dict(ai_rate="-1Mbps"), "ai_rate"), (dict(min_rate="fast"), "min_rate"),
    (dict(max_rate="1Gbps", min_rate="2Gbps"), "min_rate"),
])
def test_bad_parameters_name_the_field_and_range(kw, field):
    with pytest.raises(ValueError, match=rf"HPCC parameter {field}=.*allowed"):
        HpccParams(**kw)


def test_for_path_takes_t_and_derives_the_steps_from_the_line_rate():
    p = HpccParams.for_path("100Gbps", "5us").to_c()
    assert p["base_rtt_ps"] == 5 * US and p["ai_bps"] == 40e6 and p["min_rate_bps"] == 1e9
    assert p["eta"] == 0.95 and p["max_stage"] == 5 and p["fast_react"] == 1
    assert HpccParams.for_path("25Gbps", "5us", eta=0.9).to_c()["ai_bps"] == 10e6  # ns-3: 10 Mb/s at 25G
    with pytest.raises(ValueError, match="positive"):
        HpccParams.for_path("100Gbps", 0)


def test_registry_and_host_api():
    assert "hpcc" in ALGORITHM_NAMES and params_class("hpcc") is HpccParams
    assert _core.cc_kinds()["hpcc"][1]
    t = rdmasim.back_to_back()
    t.a.set_congestion_control("hpcc")
    t.a.set_congestion_control("hpcc", HpccParams.for_path("100Gbps", "3us"))
    with pytest.raises(TypeError, match="HpccParams"):
        t.a.set_congestion_control("hpcc", default_params("timely"))


# ---- ACK coalescing (ack_every) ----

def test_ack_every_1_asks_on_every_packet_and_keeps_no_ask_state():
    h = started()
    assert all(h.ack_request(1024, 1024 * i) for i in range(1, 200))
    s = h.state
    assert s["unasked"] == 0 and s["ask_pos"] == 0 and s["probe"] == 0
    h.ack(1024, 0, [hop(1, 1_000, 0)])
    assert h.state["probe"] == 0 and h.window == round(h.state["w_bytes"])


def asking(**overrides):
    """started() with ack_every > 1: its ACK left 50000 bytes out that never asked, so the next
    packet asks (and may pass the window), and so does the one after, the first past the reference
    point 51000; then the harness counts from zero, 52024 bytes sent."""
    h = started(**overrides)
    assert h.state["probe"] == 1 and h.window == 2**64 - 1
    assert h.ack_request(1024, 50_000)
    assert h.state["probe"] == 0 and h.state["ask_pos"] == 51_000
    assert h.ack_request(1024, 51_024)
    assert h.state["ask_pos"] == 52_024 and h.state["unasked"] == 0
    return h


def test_ack_every_asks_on_every_nth_packet():
    h = asking(ack_every=4)  # acked 1000, reference point 51000, window 125000
    asks = [h.ack_request(1024, 51_024 + 1024 * i) for i in range(1, 9)]
    assert asks == [False, False, False, True] * 2
    assert h.state["ask_pos"] == 52_024 + 8 * 1024  # where the last packet that asked ends


def test_the_packet_that_fills_the_window_asks():
    h = asking(ack_every=100)
    assert not h.ack_request(1024, 100_000)
    assert not h.ack_request(1024, 123_976)  # 123976 + 1024 = 125000: one more still fits
    assert h.ack_request(1024, 124_000)      # the next one of its size would wait for an ACK


def test_the_first_packet_after_a_reference_update_asks():
    h = asking(ack_every=100)
    h.ack(10_000, 41_024, [hop(2, 25_000, 0)])  # acked 11000, not past 51000: a fast reaction
    assert h.state["last_update_pos"] == 51_000 and h.state["probe"] == 0
    h.ack(41_024, 0, [hop(4, 50_000, 0)])       # acked 52024 > 51000: reference update, next at 52024
    assert h.state["last_update_pos"] == 52_024 and h.state["updates"] == 1
    assert h.ack_request(1024, 1024)             # covers 52024..53048: its ACK makes the next update
    assert not h.ack_request(1024, 2048)


def test_an_ack_covering_every_asking_packet_lets_one_more_go_which_asks():
    h = asking(ack_every=4)
    for i in range(1, 5):
        h.ack_request(1024, 51_024 + 1024 * i)  # the 4th asks: ask_pos 56120
    assert not h.ack_request(1024, 51_024 + 5 * 1024)  # two more that do not ask
    assert not h.ack_request(1024, 51_024 + 6 * 1024)
    assert h.state["ask_pos"] == 56_120 and h.state["probe"] == 0
    # the ACK of the 4th arrives (cumulative): no ACK is coming for the two still out, whatever the
    # window does now
    h.ack(55_120, 2048, [hop(2, 25_000, 30_000)])
    assert h.state["probe"] == 1 and h.window == 2**64 - 1
    assert h.ack_request(1024, 3072)            # the one packet past the window asks
    assert h.state["probe"] == 0 and h.window == round(h.state["w_bytes"])


def test_a_packet_sent_again_after_a_rewind_asks():
    h = asking(ack_every=100)                   # the last packet that asked ends at 52024
    for i in range(1, 11):
        assert not h.ack_request(1024, 51_024 + 1024 * i)
    assert h.ack_request(1024, 20_000)          # ends before 52024 again: sent again after a rewind


@pytest.mark.parametrize("acked, full", [(50_000, False), (50_001, True)])
def test_one_ack_covering_many_packets_updates_w_ref_when_it_passes_the_reference(acked, full):
    # ns-3: ack_seq > lastUpdateSeq, on the cumulative byte position (51000 after started())
    h = started(ack_every=8)
    h.ack(acked, 10_000, [hop(2, 25_000, 30_000)])
    s = h.state
    assert s["acked_pos"] == 1000 + acked
    assert (s["updates"], s["fast_reacts"]) == ((1, 0) if full else (0, 1))
    assert s["last_update_pos"] == (1000 + acked + 10_000 if full else 51_000)


@pytest.mark.parametrize("bad", [0, -1, 2**32, 2.0, True, "2"])
def test_ack_every_out_of_range_names_the_parameter(bad):
    with pytest.raises(ValueError, match=r"HPCC parameter ack_every=.*allowed an integer >= 1"):
        HpccParams(ack_every=bad)
