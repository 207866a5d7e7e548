"""The invariant checkers are not vacuous: on a mutant build (RDMASIM_MUTANTS=1) every mutant is
caught by some invariant and every invariant catches some mutant; the clean core passes the same
scenarios. Skips on normal builds."""

from __future__ import annotations

import pytest

from rdmasim.cc import DcqcnParams
from rdmasim.testing import ALL_INVARIANTS, check_all, run_scenario
from rdmasim.testing.mutants import BUILD_HINT, MUTANTS, available, enable
from rdmasim.testing.runner import Impairment, Op, Params, Scenario

pytestmark = pytest.mark.skipif(not available(), reason=f"normal build; mutants need: {BUILD_HINT}")

_CC = Params(
    threshold="16KB",
    ecn={"kmin": "2KB", "kmax": "10KB", "pmax": 1.0},
    dcqcn=DcqcnParams.nvidia(rpg_min_rate=20000, min_time_between_cnps=4),
)
#: mutant -> (a small scenario that exercises it, the invariant expected to catch it)
CASES: dict[str, tuple[Scenario, str]] = {
    "nak_sticky": (
        Scenario(ops=(Op("WRITE", 8192),), impairment=Impairment(drop_psns=(1, 5, 5))),
        "responder_order",
    ),
    "rewind_psn": (Scenario(ops=(Op("WRITE", 4096),), impairment=Impairment(drop_psns=(1,))), "completions"),
    "ack_ahead": (
        Scenario(ops=(Op("WRITE", 4096),), impairment=Impairment(drop_psns=(3,)), params=Params(mtu=1024)),
        "memory",
    ),
    "pfc_early_xon": (
        Scenario("star", 4, (Op("WRITE", 300_000),), params=Params(threshold="16KB")),
        "pfc_hysteresis",
    ),
    "cnp_half_interval": (Scenario("star", 4, (Op("WRITE", 300_000),), params=_CC), "cnp_spacing"),
    "dcqcn_no_floor": (Scenario("star", 4, (Op("WRITE", 300_000),), params=_CC), "dcqcn_rate_bounds"),
    "drop_uncounted": (
        Scenario("star", 4, (Op("WRITE", 100_000),), params=Params(lossless=(), lossy_limit="16KB")),
        "switch_conservation",
    ),
    "lossless_drop": (
        Scenario("star", 4, (Op("WRITE", 100_000),), params=Params(threshold="16KB")),
        "lossless",
    ),
    "retry_to_reset": (
        Scenario(
            ops=(Op("WRITE", 1024),), impairment=Impairment(loss=1.0), params=Params(retry_cnt=1, timeout=1)
        ),
        "qp_states",
    ),
}


def _violations(sc: Scenario, mutant: str | None) -> dict[str, list[str]]:
    r = run_scenario(Scenario(**{**sc.__dict__, "mutant": mutant}), deadline="20ms")
    return {n: [str(v) for v in f(r)] for n, f in ALL_INVARIANTS.items()}


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_mutant_is_caught(mutant: str) -> None:
    sc, inv = CASES[mutant]
    clean = _violations(sc, None)
    assert not clean[inv], clean
    if sc.impairment.loss < 1.0:
        assert not any(clean.values()), clean
    bad = _violations(sc, mutant)
    assert bad[inv], f"{mutant} not caught by {inv}: {bad}"


def test_every_invariant_catches_a_mutant() -> None:
    assert {inv for _, inv in CASES.values()} | {"responder_order"} == set(ALL_INVARIANTS)
    assert set(CASES) == set(MUTANTS)


def test_enable_rejects_unknown() -> None:
    from rdmasim import Simulator

    with pytest.raises(ValueError, match="unknown mutant"):
        enable(Simulator(), "nope")


def test_check_all_clean_smoke() -> None:
    assert not check_all(run_scenario(Scenario()))
