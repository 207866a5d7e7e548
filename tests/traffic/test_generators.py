"""Generators: incast, permutation (derangement), all-to-all, Poisson (load, arrivals, destinations)."""

from __future__ import annotations

import numpy as np
import pytest

from rdmasim.traffic import (
    DATA_MINING,
    VERB_CODES,
    WEB_SEARCH,
    FlowTable,
    SizeCDF,
    all_to_all,
    incast,
    permutation,
    poisson,
)

RATE = 100 * 10**9


def test_incast_flows_stagger_and_fields() -> None:
    t = incast([2, 5, 7], 0, "4KiB", start="1us", stagger_ps=500, verb="READ", priority=6)
    t.validate(8)
    f = t.flows
    assert f["src"].tolist() == [2, 5, 7] and f["dst"].tolist() == [0, 0, 0]
    assert f["size"].tolist() == [4096] * 3
    assert f["start_ps"].tolist() == [1_000_000, 1_000_500, 1_001_000]
    assert set(f["verb"].tolist()) == {VERB_CODES["READ"]} and set(f["priority"].tolist()) == {6}
    assert t.groups == ["incast"] and set(f["group"].tolist()) == {0}
    assert len(incast(16, 16, 100)) == 16


def test_incast_rejects_receiver_among_senders() -> None:
    with pytest.raises(ValueError, match="receiver 3 is also one of the senders"):
        incast(4, 3, 100)


@pytest.mark.parametrize("seed", range(10))
def test_permutation_is_a_derangement(seed: int) -> None:
    hosts = [3, 9, 4, 11, 20, 1, 6]
    t = permutation(hosts, 1000, seed=seed)
    t.validate(21)
    src, dst = t.flows["src"], t.flows["dst"]
    assert sorted(src.tolist()) == sorted(hosts)  # each host sends exactly once
    assert sorted(dst.tolist()) == sorted(hosts)  # and receives exactly once
    assert (src != dst).all()


def test_permutation_deterministic_per_seed_and_random_across_seeds() -> None:
    a = permutation(64, 10, seed=5).flows["dst"]
    assert (a == permutation(64, 10, seed=5).flows["dst"]).all()
    assert (a == permutation(64, 10, rng=np.random.default_rng(5)).flows["dst"]).all()
    assert len({tuple(permutation(64, 10, seed=s).flows["dst"].tolist()) for s in range(5)}) == 5
    two = permutation(2, 10, seed=0).flows
    assert two["dst"].tolist() == [1, 0]


def test_permutation_needs_two_hosts() -> None:
    with pytest.raises(ValueError, match="need at least 2 hosts, got 1"):
        permutation(1, 10, seed=0)
    with pytest.raises(ValueError, match="host 4 is listed more than once"):
        permutation([1, 4, 4], 10, seed=0)


@pytest.mark.parametrize("n", [2, 3, 8, 17])
def test_all_to_all_covers_every_ordered_pair(n: int) -> None:
    t = all_to_all(n, 512)
    t.validate(n)
    assert len(t) == n * (n - 1)
    pairs = set(zip(t.flows["src"].tolist(), t.flows["dst"].tolist(), strict=True))
    assert pairs == {(a, b) for a in range(n) for b in range(n) if a != b}


def test_all_to_all_stagger_gives_one_peer_per_round() -> None:
    n = 6
    t = all_to_all([10, 11, 12, 13, 14, 15], 100, start=1000, stagger_ps=50)
    f = t.flows
    assert sorted(set(f["start_ps"].tolist())) == [1000 + 50 * k for k in range(n - 1)]
    for start in set(f["start_ps"].tolist()):
        rnd = f[f["start_ps"] == start]
        assert sorted(rnd["src"].tolist()) == list(range(10, 16))
        assert sorted(rnd["dst"].tolist()) == list(range(10, 16))


@pytest.mark.parametrize(("cdf", "duration_ps"), [(WEB_SEARCH, 3 * 10**12), (DATA_MINING, 4 * 10**13)],
                         ids=["web-search", "data-mining"])
def test_poisson_offered_load_matches_target(cdf: SizeCDF, duration_ps: int) -> None:
    n, load = 32, 0.5
    t = poisson(n, load, RATE, duration_ps, cdf, seed=11)
    t.validate(n)
    offered = float(t.flows["size"].sum()) * 8 / (n * RATE * duration_ps / 1e12)
    assert offered == pytest.approx(load, rel=0.03)
    # arrival rate per host as designed
    expected_flows = load * RATE / (8 * cdf.mean()) * duration_ps / 1e12
    per_host = np.bincount(t.flows["src"], minlength=n)
    assert per_host.mean() == pytest.approx(expected_flows, rel=0.01)
    assert (np.abs(per_host - expected_flows) < 5 * np.sqrt(expected_flows)).all()


def test_poisson_inter_arrivals_are_exponential() -> None:
    n, load, duration = 8, 0.3, 2 * 10**12
    t = poisson(n, load, RATE, duration, WEB_SEARCH, seed=3)
    f = t.flows
    assert (np.diff(f["start_ps"]) >= 0).all()  # sorted by start time
    mean_gap = 8 * WEB_SEARCH.mean() / (load * RATE) * 1e12
    for h in range(n):
        gaps = np.diff(f["start_ps"][f["src"] == h]).astype(float)
        assert gaps.size > 1000
        assert gaps.mean() == pytest.approx(mean_gap, rel=0.1)
        assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.1)  # CV of an exponential is 1
        # memoryless: P(gap > mean) = 1/e
        assert np.mean(gaps > mean_gap) == pytest.approx(np.exp(-1), abs=0.03)


def test_poisson_destinations_uniform_over_other_hosts() -> None:
    hosts = [0, 2, 4, 6, 8]
    t = poisson(hosts, 0.8, RATE, 10**12, WEB_SEARCH, seed=9, start=777)
    f = t.flows
    assert (f["src"] != f["dst"]).all()
    assert set(f["src"].tolist()) == set(hosts) and set(f["dst"].tolist()) == set(hosts)
    assert f["start_ps"].min() >= 777 and f["start_ps"].max() < 777 + 10**12
    for h in hosts:
        dsts = f["dst"][f["src"] == h]
        share = np.array([np.mean(dsts == d) for d in hosts if d != h])
        assert share == pytest.approx(np.full(4, 0.25), abs=0.03)


def test_poisson_deterministic_for_a_seed() -> None:
    a = poisson(16, 0.5, "100Gbps", "100us", WEB_SEARCH, seed=42)
    b = poisson(16, 0.5, "100Gbps", "100us", WEB_SEARCH, seed=42)
    c = poisson(16, 0.5, "100Gbps", "100us", WEB_SEARCH, seed=43)
    assert a.flows.tobytes() == b.flows.tobytes()
    assert a.flows.tobytes() != c.flows.tobytes()


def test_poisson_100k_flows() -> None:
    # sized for ~100k flows: 64 hosts at 80% of 100G with web-search sizes (~5.8k flows/s each) for 0.27 s
    t = poisson(64, 0.8, RATE, 27 * 10**10, WEB_SEARCH, seed=1)
    assert 90_000 < len(t) < 110_000
    t.validate(64)
    both = FlowTable.concat(t, t.shifted(27 * 10**10))
    assert len(both) == 2 * len(t)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"load": 0.0}, r"load = 0.0 must be in \(0, 1\]"),
        ({"load": 1.5}, r"load = 1.5 must be in \(0, 1\]"),
        ({"duration_ps": 0}, "duration_ps = 0 must be positive"),
        ({"link_rate_bps": "fast"}, "link_rate_bps: cannot read rate 'fast'"),
        ({"priority": 8}, r"priority = 8 must be an int in \[0, 7\]"),
        ({"verb": "PUT"}, "unknown verb 'PUT'"),
    ],
)
def test_poisson_argument_errors(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"hosts": 4, "load": 0.5, "link_rate_bps": RATE, "duration_ps": 10**9,
                               "size_cdf": WEB_SEARCH, "seed": 0}
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        poisson(**args)  # type: ignore[arg-type]
