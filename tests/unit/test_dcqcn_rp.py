"""The C DCQCN reaction point against a direct transcription of the published equations
(DCQCN paper §3 / protocol.md §8.2), replayed step by step on scripted event sequences."""

from __future__ import annotations

import dataclasses
import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rdmasim import _core
from rdmasim.cc import DcqcnParams

LINE = 100e9
US = 1_000_000


class PaperRP:
    """The paper's reaction point, written from the equations (not from the C code).

    alpha is updated on every CNP and decays by (1-g) every K without a CNP; rate increases
    come from a timer (period T) and a byte counter (every B bytes), staged by F. With B = 0 (no
    byte counter) the stages follow the timer alone, as in HPCC's ns-3 model of the firmware.
    """

    def __init__(self, p: DcqcnParams, line: float) -> None:
        c = p.to_c()
        self.g, self.K, self.T, self.B, self.F = c["g"], c["alpha_timer_ps"], c["rate_timer_ps"], \
            c["byte_counter_bytes"], c["fast_recovery_steps"]
        self.rai, self.rhai, self.rmin, self.line = c["ai_bps"], c["hai_bps"], c["min_rate_bps"], line
        self.rc = self.rt = line
        self.alpha = c["initial_alpha"]
        self.i = self.j = 0
        self.bytes = 0
        self.k_ref = None      # start of the current alpha period (last CNP or last decay)
        self.t_next = None     # next rate-timer expiry (None = not running)

    def _increase(self) -> None:
        if not self.B:
            # byte counter off: the timer's stage alone, as in HPCC's model of the NVIDIA firmware
            # (rdma-hw.cc RateIncEventMlx): F fast-recovery events, one additive, then hyper
            # by a constant R_HAI
            self.rt += 0 if self.i <= self.F else self.rai if self.i == self.F + 1 else self.rhai
            self.rt = min(self.rt, self.line)
            self.rc = min((self.rt + self.rc) / 2, self.line)
            if self.rc >= self.line and self.rt >= self.line:
                self.rc = self.rt = self.line
                self.t_next = None
            return
        lo, hi = min(self.i, self.j), max(self.i, self.j)
        if hi < self.F:
            pass                                   # fast recovery: Rt unchanged
        elif lo < self.F:
            self.rt += self.rai                    # additive increase
        else:
            self.rt += (lo - self.F + 1) * self.rhai  # hyper increase
        self.rt = min(self.rt, self.line)
        self.rc = min((self.rt + self.rc) / 2, self.line)
        if self.rc >= self.line and self.rt >= self.line:
            self.rc = self.rt = self.line
            self.t_next = None                     # recovered: the rate timer stops

    def _decay_alpha_until(self, t: int) -> None:
        if self.k_ref is None:
            return
        n = (t - self.k_ref) // self.K
        self.alpha *= (1 - self.g) ** n
        self.k_ref += n * self.K

    def advance(self, t: int) -> None:
        """Fire rate-timer expiries at or before t (alpha decays are computed lazily)."""
        while self.t_next is not None and self.t_next <= t:
            now = self.t_next
            self._decay_alpha_until(now)
            self.i += 1
            self.t_next = now + self.T
            self._increase()
        self._decay_alpha_until(t)

    def cnp(self, t: int) -> None:
        self.advance(t)
        self.rt = self.rc
        self.rc = max(self.rmin, self.rc * (1 - self.alpha / 2))
        self.alpha = (1 - self.g) * self.alpha + self.g
        self.i = self.j = 0
        self.bytes = 0
        self.t_next = t + self.T
        self.k_ref = t

    def sent(self, n: int) -> None:
        if self.t_next is None or not self.B:
            return
        self.bytes += n
        while self.t_next is not None and self.bytes >= self.B:
            self.bytes -= self.B
            self.j += 1
            self._increase()


def check_same(c: _core.DcqcnRpForTest, ref: PaperRP, where: str) -> None:
    s = c.state
    assert s["rc_bps"] == pytest.approx(ref.rc, rel=1e-9), where
    assert s["rt_bps"] == pytest.approx(ref.rt, rel=1e-9), where
    assert s["alpha"] == pytest.approx(ref.alpha, rel=1e-9, abs=1e-15), where


def replay(events: list[tuple[str, int]], params: DcqcnParams) -> None:
    c = _core.DcqcnRpForTest(params.to_c(), LINE)
    ref = PaperRP(params, LINE)
    now = 0
    for step, (kind, value) in enumerate(events):
        if kind == "wait":
            now += value
            c.advance(now)
            ref.advance(now)
        elif kind == "cnp":
            c.advance(now)
            c.cnp(now)
            ref.cnp(now)
        else:
            c.sent(value)
            ref.sent(value)
        check_same(c, ref, f"step {step}: {kind} {value} at t={now} ps")


def test_single_cnp_halves_rate_then_fast_recovery_halves_the_gap() -> None:
    """protocol.md §9.2: after one CNP with alpha=1, Rc halves; each T halves the gap to Rt."""
    p = DcqcnParams.paper(byte_counter=0)
    c = _core.DcqcnRpForTest(p.to_c(), LINE)
    c.cnp(0)
    assert c.state["rc_bps"] == pytest.approx(LINE / 2)
    assert c.state["rt_bps"] == pytest.approx(LINE)
    for k in range(1, 6):  # F = 5 fast-recovery steps
        c.advance(k * 55 * US)
        gap = LINE - c.state["rc_bps"]
        assert gap == pytest.approx((LINE / 2) / 2**k)
    assert c.state["rt_bps"] == pytest.approx(LINE)


def test_alpha_decays_by_one_minus_g_per_period_without_cnp() -> None:
    p = DcqcnParams.paper(byte_counter=0, rate_timer="1s")  # keep the rate cut, watch alpha
    c = _core.DcqcnRpForTest(p.to_c(), LINE)
    c.cnp(0)
    a0 = c.state["alpha"]
    for k in (1, 2, 10):
        c.advance(k * 55 * US)
        assert c.state["alpha"] == pytest.approx(a0 * (1 - 1 / 256) ** k)


def test_scripted_sequence_matches_the_equations() -> None:
    p = DcqcnParams.paper(byte_counter=200_000)
    events = [("cnp", 0), ("sent", 150_000), ("wait", 30 * US), ("sent", 300_000), ("wait", 40 * US),
              ("cnp", 0), ("wait", 10 * US), ("cnp", 0), ("sent", 1_000_000), ("wait", 300 * US),
              ("sent", 2_000_000), ("wait", 2000 * US), ("cnp", 0), ("wait", 10_000 * US)]
    replay(events, p)


def rp_events(max_wait_ps: int, max_size: int) -> st.SearchStrategy:
    """Scripts for a reaction point: ("cnp", 0), ("wait", ps) and ("sent", bytes) steps."""
    return st.lists(st.one_of(
        st.tuples(st.just("cnp"), st.just(0)),
        st.tuples(st.just("wait"), st.integers(1, max_wait_ps)),
        st.tuples(st.just("sent"), st.integers(1, 3_000_000)),
    ), min_size=1, max_size=max_size)


@settings(max_examples=150, deadline=None)
@given(rp_events(400 * US, 40), st.sampled_from([0, 100_000, 1_000_000]), st.integers(1, 6))
def test_random_sequences_match_the_equations(events, byte_counter: int, f: int) -> None:
    replay(events, DcqcnParams.paper(byte_counter=byte_counter, fast_recovery_steps=f))


def test_rates_stay_within_min_and_line() -> None:
    p = DcqcnParams.paper(min_rate="10Gbps")
    c = _core.DcqcnRpForTest(p.to_c(), LINE)
    for k in range(200):
        c.advance(k * US)
        c.cnp(k * US)
        assert 10e9 <= c.state["rc_bps"] <= LINE
    assert c.state["rc_bps"] == pytest.approx(10e9)


def test_nvidia_preset_cuts_at_most_once_per_reduce_period() -> None:
    p = DcqcnParams.nvidia()
    c = _core.DcqcnRpForTest(p.to_c(), LINE)
    for t in range(0, 4 * US, US // 2):  # 8 CNPs within one 4 us monitor period
        c.advance(t)
        c.cnp(t)
    assert c.state["decreases"] == 1
    c.advance(4 * US)  # the pending CNP is acted on when the period ends
    assert c.state["decreases"] == 2
    # the firmware floor: one cut keeps at least rpg_min_dec_fac = 50 % of the rate
    assert c.state["rc_bps"] >= LINE * 0.5 * 0.5 - 1


def test_nvidia_names_map_to_parameters() -> None:
    p = DcqcnParams.nvidia(rpg_ai_rate=10, dce_tcp_g=1020, rpg_time_reset=100)
    c = p.to_c()
    assert c["ai_bps"] == 10e6 and c["rate_timer_ps"] == 100 * US
    assert math.isclose(c["g"], 4 / 1024)
    with pytest.raises(ValueError, match="unknown mlxconfig"):
        DcqcnParams.nvidia(rpg_bogus=1)
    with pytest.raises(ValueError, match="g=0"):
        DcqcnParams(g=0)


def advance_deadline_by_deadline(c: _core.DcqcnRpForTest, now: int) -> None:
    """Visit the reaction point at each of its deadlines up to `now`, then at `now`."""
    while 0 < (t := c.next_timer_ps) <= now:
        c.advance(t)
    c.advance(now)


@settings(max_examples=150, deadline=None)
@given(rp_events(30_000 * US, 30), st.sampled_from(["paper", "paper-bytes", "nvidia", "nvidia-paper-alpha"]))
def test_one_late_visit_equals_a_visit_at_every_deadline(events, preset: str) -> None:
    """A QP the NIC visits after a long gap catches up every period that passed (rs_dcqcn_on_timer
    runs the rate periods in a loop of their own and counts the alpha periods at once): its state
    must be bit for bit the state of a QP visited at each deadline, across recoveries, deferred
    decreases and both alpha modes, alpha included (the decays are a count either way)."""
    p = {"paper": DcqcnParams.paper(byte_counter=0),
         "paper-bytes": DcqcnParams.paper(byte_counter=100_000),
         "nvidia": DcqcnParams.nvidia(),
         "nvidia-paper-alpha": dataclasses.replace(DcqcnParams.nvidia(), alpha_update_on_timer=False)}[preset]
    late = _core.DcqcnRpForTest(p.to_c(), LINE)
    each = _core.DcqcnRpForTest(p.to_c(), LINE)
    now = 0
    for kind, value in events:
        if kind == "wait":
            now += value
            late.advance(now)
            advance_deadline_by_deadline(each, now)
        elif kind == "cnp":
            for c in (late, each):
                c.cnp(now)
        else:
            for c in (late, each):
                c.sent(value)
        assert late.state == each.state, (kind, value, now)


@pytest.mark.parametrize("sent", [0, 40_000])
def test_long_gap_below_the_cap_equals_a_visit_at_every_deadline(sent: int) -> None:
    """The catch-up's run of equal increases (Rt below the cap, the same R_AI or (j - F + 1) R_HAI
    every period), which the random scripts above seldom reach: NVIDIA's preset clamps Rt to Rc at
    a cut after a timer increase; with no bytes sent the periods are additive (j = 0 < F = 1), with
    one byte event they are hyper at j = 1."""
    p = DcqcnParams.nvidia()
    late = _core.DcqcnRpForTest(p.to_c(), LINE)
    each = _core.DcqcnRpForTest(p.to_c(), LINE)
    for c in (late, each):
        c.cnp(0)
        advance_deadline_by_deadline(c, 1000 * US)
        c.cnp(1000 * US)
        if sent:
            c.sent(sent)
    end = 21_000 * US
    late.advance(end)
    advance_deadline_by_deadline(each, end)
    s = late.state
    assert s == each.state
    # the periods ran below the cap, in the stage the test is about
    assert s["rt_bps"] < LINE and s["timer_events"] == 66 and s["byte_events"] == (1 if sent else 0)
    assert s["rt_bps"] - s["rc_bps"] < 100e6


def _below(x: float, units: int) -> float:
    """x lowered by `units` units in its last place (within x's binade)."""
    return struct.unpack("<d", struct.pack("<Q", struct.unpack("<Q", struct.pack("<d", x))[0] - units))[0]


def _halvings_to(cap: float, rc: float, limit: int = 200) -> int | None:
    """Rate periods until Rc <- (cap + Rc)/2 reaches the cap, counted in Python's doubles."""
    for k in range(1, limit + 1):
        rc = (cap + rc) / 2.0
        if rc >= cap:
            return k
    return None


# the gaps (in units of the cap's last place) where the count of halvings steps up, and their
# neighbours: ceil(2^(n+1) / 3) for every bit length n, plus every gap up to 300
_GAPS = sorted({g for n in range(1, 52) for t in [((1 << (n + 1)) + 2) // 3] for g in (t - 1, t, t + 1)
                if g > 0} | set(range(1, 301)))


def _cut_then_visit(line: float, gap: int, end: int) -> tuple[dict, dict]:
    """Paper preset: a CNP at 0, Rc put `gap` units below the cap (Rt is at the cap), then the
    state at `end` of a reaction point visited once and of one visited at every deadline."""
    p = DcqcnParams.paper(byte_counter=0)
    late = _core.DcqcnRpForTest(p.to_c(), line)
    each = _core.DcqcnRpForTest(p.to_c(), line)
    for c in (late, each):
        c.cnp(0)
        c.set_current_rate(_below(line, gap))
    late.advance(end)
    advance_deadline_by_deadline(each, end)
    return late.state, each.state


@pytest.mark.parametrize("line", [100e9, 25e9, 400e9, 2**36 + 2**-16])
def test_recovery_from_any_gap_takes_the_periods_of_the_halving_loop(line: float) -> None:
    """A late visit finds how many periods Rc takes to reach the cap without doing them
    (dcqcn.c, halvings_to_cap); it must name the same period as a visit at every deadline and as
    the halving done in Python's doubles, at each gap where that count steps up. The last line rate
    has an odd significand: there Rc stops one unit below the cap and never recovers."""
    for gap in _GAPS:
        s, s_each = _cut_then_visit(line, gap, 300 * 55 * US)
        assert s == s_each, gap
        k = _halvings_to(line, _below(line, gap))
        if k is None:
            assert s["reacting"] == 1 and line - s["rc_bps"] > 0, gap
        else:
            assert s["reacting"] == 0 and s["increases"] == k, (gap, k, s["increases"])


@pytest.mark.parametrize("line", [100e9, 2**36 + 2**-16])
def test_a_late_visit_ending_near_the_recovery_equals_a_visit_at_every_deadline(line: float) -> None:
    """The same, visited at every period count around the recovery: the count of halvings may
    only be used when the recovering period is before the visit. With an odd significand the gap
    rounds the other way but reaches one unit within that count, so the state is the same."""
    for gap in [g for g in _GAPS if g <= 2**12]:
        for periods in range(1, 16):
            s, s_each = _cut_then_visit(line, gap, periods * 55 * US + 1)
            assert s == s_each, (gap, periods)


# ---- the target-rate clamp and the timer-only stages, as the reference implementations have them
# (docs/congestion-control.md, "DCQCN: clamp and stages"): HPCC's ns-3 rdma-hw.cc
# CheckRateDecreaseMlx clamps only when its timer stage is non-zero, i.e. a timer increase happened
# since the previous cut, and RateIncEventMlx stages by the timer alone (no byte counter); DCQCN's
# own ns-3 code (rpr_cnm_received) clamps after any increase since the previous cut with
# clamp_tgt_rate_after_time_inc, and after a byte-counter increase with neither flag.

T_PAPER = 55 * US


def _cut_at(c: _core.DcqcnRpForTest, t: int) -> None:
    c.advance(t)
    c.cnp(t)


def test_after_time_inc_clamps_only_after_an_increase_since_the_previous_cut() -> None:
    """clamp_tgt_rate_after_time_inc: a cut after a timer increase since the previous cut sets
    Rt <- Rc; a second cut with no increase between keeps Rt (the per-QP "last increase came from
    the timer" flag must not outlive the cut that used it)."""
    p = DcqcnParams.paper(byte_counter=0, clamp_tgt_rate=False, clamp_tgt_rate_after_time_inc=True)
    c = _core.DcqcnRpForTest(p.to_c(), LINE)
    _cut_at(c, 0)                                   # Rc = line/2, Rt = line
    c.advance(T_PAPER)                              # one timer increase (fast recovery)
    rc = c.state["rc_bps"]
    assert rc == pytest.approx(0.75 * LINE) and c.state["rt_bps"] == LINE
    _cut_at(c, T_PAPER + 1)                         # a timer increase since the last cut: clamp
    assert c.state["rt_bps"] == rc
    _cut_at(c, T_PAPER + 2)                         # none since the last cut: Rt kept
    assert c.state["rt_bps"] == rc
    assert c.state["rc_bps"] < rc / 2
    c.advance(2 * T_PAPER + 1)                      # the timer restarted at the cut: no event yet
    _cut_at(c, 2 * T_PAPER + 1)
    assert c.state["rt_bps"] == rc and c.state["decreases"] == 4


def test_after_time_inc_clamps_after_a_byte_counter_increase_too() -> None:
    """The flag adds timer increases to the byte-counter increases that clamp by default."""
    p = DcqcnParams.paper(byte_counter=100_000, clamp_tgt_rate=False, clamp_tgt_rate_after_time_inc=True)
    c = _core.DcqcnRpForTest(p.to_c(), LINE)
    _cut_at(c, 0)
    c.sent(100_000)                                 # one byte-counter increase
    rc = c.state["rc_bps"]
    _cut_at(c, 1)
    assert c.state["rt_bps"] == rc


def test_without_clamp_flags_only_a_byte_counter_increase_since_the_cut_clamps() -> None:
    p = DcqcnParams.paper(byte_counter=100_000, clamp_tgt_rate=False, clamp_tgt_rate_after_time_inc=False)
    c = _core.DcqcnRpForTest(p.to_c(), LINE)
    _cut_at(c, 0)
    c.advance(T_PAPER)                              # a timer increase: no clamp at the next cut
    _cut_at(c, T_PAPER + 1)
    assert c.state["rt_bps"] == LINE
    c.sent(100_000)                                 # a byte-counter increase: the next cut clamps
    rc = c.state["rc_bps"]
    assert rc < LINE
    _cut_at(c, T_PAPER + 2)
    assert c.state["rt_bps"] == rc


def _cut_below_the_cap(f: int) -> tuple[_core.DcqcnRpForTest, int]:
    """Paper preset with the byte counter off: two cuts with a timer increase between, so the
    second clamps Rt to 3/4 of the line rate (Rt below the cap: its increases show)."""
    p = DcqcnParams.paper(byte_counter=0, fast_recovery_steps=f)
    c = _core.DcqcnRpForTest(p.to_c(), LINE)
    _cut_at(c, 0)
    c.advance(T_PAPER)
    t0 = T_PAPER + 1
    _cut_at(c, t0)
    assert c.state["rt_bps"] == pytest.approx(0.75 * LINE)
    return c, t0


@pytest.mark.parametrize("f", [1, 5])
def test_byte_counter_off_stages_advance_by_the_timer(f: int) -> None:
    """No byte counter: F timer events of fast recovery (Rt kept), one additive step (+R_AI),
    then hyper increase by R_HAI every timer event, as HPCC's RateIncEventMlx stages them."""
    c, t0 = _cut_below_the_cap(f)
    ai, hai = 40e6, 400e6
    s = c.state
    for k in range(1, f + 6):
        c.advance(t0 + k * T_PAPER)
        prev, s = s, c.state
        step = 0.0 if k <= f else ai if k == f + 1 else hai
        assert s["timer_events"] == k
        assert s["rt_bps"] == pytest.approx(prev["rt_bps"] + step, rel=0, abs=1e-3), k
        assert s["rc_bps"] == pytest.approx((s["rt_bps"] + prev["rc_bps"]) / 2, rel=1e-12), k


def test_byte_counter_off_hyper_run_late_visit_equals_a_visit_at_every_deadline() -> None:
    """The catch-up's run of equal hyper steps with the byte counter off (Rt below the cap)."""
    late, t0 = _cut_below_the_cap(5)
    each, _ = _cut_below_the_cap(5)
    end = t0 + 60 * T_PAPER
    late.advance(end)
    advance_deadline_by_deadline(each, end)
    s = late.state
    assert s == each.state
    assert s["timer_events"] == 60 and s["rt_bps"] < LINE
    assert s["rt_bps"] == pytest.approx(0.75 * LINE + 40e6 + 54 * 400e6, rel=1e-12)


@pytest.mark.parametrize(("name", "value", "allowed"), [
    ("byte_counter", 0.5, "an integer >= 0"),
    ("byte_counter", 1e6, "an integer >= 0"),
    ("byte_counter", True, "an integer >= 0"),
    ("fast_recovery_steps", 2.0, "an integer >= 0"),
    ("fast_recovery_steps", False, "an integer >= 0"),
    ("clamp_tgt_rate", 0.5, "true or false"),
    ("clamp_tgt_rate_after_time_inc", 2, "true or false"),
    ("alpha_update_on_timer", 1.0, "true or false"),
])
def test_integer_and_flag_parameters_refuse_other_types(name: str, value: object, allowed: str) -> None:
    """The C struct takes these as integers: a float or a bool must not be truncated on the way
    (byte_counter = 0.5 used to reach the core as 0, the byte counter off)."""
    with pytest.raises(ValueError, match=rf"DCQCN parameter {name}={value!r}: allowed {allowed}"):
        DcqcnParams.paper(**{name: value})


def test_flag_parameters_take_zero_and_one() -> None:
    p = DcqcnParams.paper(clamp_tgt_rate=0, clamp_tgt_rate_after_time_inc=1)
    assert p.to_c()["clamp_tgt_rate"] == 0 and p.to_c()["clamp_tgt_rate_after_time_inc"] == 1


@pytest.mark.parametrize(("name", "value"), [("rpg_byte_reset", 0.5), ("rpg_threshold", 1.5),
                                             ("rpg_gd", 11.0), ("clamp_tgt_rate", 0.5),
                                             ("clamp_tgt_rate_after_time_inc", 3)])
def test_nvidia_integer_names_refuse_non_integers(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=rf"mlxconfig DCQCN name {name}={value!r}: allowed"):
        DcqcnParams.nvidia(**{name: value})
