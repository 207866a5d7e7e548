"""Collectives: flow counts, exact bytes, dependency structure, and a data-flow oracle for the ring."""

from __future__ import annotations

import numpy as np
import pytest

from rdmasim.traffic import (
    FlowTable,
    halving_doubling_allreduce,
    ideal_ring_allreduce_ps,
    moe_all_to_all,
    ring_allreduce,
)


def _deps(t: FlowTable, i: int) -> set[int]:
    return set(t.deps_of(i).tolist())


def _ancestors(t: FlowTable) -> list[set[int]]:
    anc: list[set[int]] = [set() for _ in range(len(t))]
    for f in t.topological_order().tolist():
        for d in t.deps_of(f).tolist():
            anc[f] |= anc[d] | {d}
    return anc


@pytest.mark.parametrize(("n", "size"), [(2, 10), (3, 3), (5, 1003), (8, 2**20 + 7)])
def test_ring_counts_and_exact_bytes(n: int, size: int) -> None:
    t = ring_allreduce(n, size)
    t.validate(n)
    assert len(t) == 2 * n * (n - 1)
    assert t.total_bytes == 2 * (n - 1) * size
    sizes = t.flows["size"].reshape(2 * (n - 1), n)
    assert (sizes.sum(axis=1) == size).all()  # every step moves each chunk once
    assert set(sizes.reshape(-1).tolist()) <= {size // n, -(-size // n)}
    assert t.groups == ["ring-allreduce"]


def test_ring_neighbours_and_host_list() -> None:
    hosts = [7, 3, 9, 1]
    t = ring_allreduce(hosts, 4000, start=123, priority=2)
    t.validate(10)
    f = t.flows
    nxt = dict(zip(hosts, hosts[1:] + hosts[:1], strict=True))
    assert all(nxt[s] == d for s, d in zip(f["src"].tolist(), f["dst"].tolist(), strict=True))
    assert set(f["start_ps"].tolist()) == {123} and set(f["priority"].tolist()) == {2}


def test_ring_dependency_structure() -> None:
    n = 6
    t = ring_allreduce(n, 6000)
    order = t.topological_order()
    assert sorted(order.tolist()) == list(range(len(t)))
    for s in range(2 * (n - 1)):
        for i in range(n):
            f = s * n + i
            if s == 0:
                assert _deps(t, f) == set()
            else:  # chained to this host's previous send, and fed by the previous host's previous send
                assert _deps(t, f) == {(s - 1) * n + i, (s - 1) * n + (i - 1) % n}
                assert t.flows["dst"][(s - 1) * n + (i - 1) % n] == t.flows["src"][f]


@pytest.mark.parametrize("n", [2, 3, 5, 6])
def test_ring_oracle_every_host_ends_with_the_full_reduction(n: int) -> None:
    """Follow the data: a flow carries what its sender knew about that chunk through its ancestors only."""
    t = ring_allreduce(n, 100 * n)
    src, dst = t.flows["src"].tolist(), t.flows["dst"].tolist()
    chunk = [(i - s) % n for s in range(2 * (n - 1)) for i in range(n)]
    anc = _ancestors(t)
    payload: list[set[int]] = []
    for f in range(len(t)):  # flow indices are step-major, so every ancestor's payload is known
        known = {src[f]}
        for g in anc[f]:
            if dst[g] == src[f] and chunk[g] == chunk[f]:
                known |= payload[g]
        payload.append(known)
    for host in range(n):
        for c in range(n):
            known = {host}.union(*(payload[g] for g in range(len(t)) if dst[g] == host and chunk[g] == c))
            assert known == set(range(n)), f"host {host} chunk {c} only has {sorted(known)}"


def test_ring_needs_a_chunk_per_host() -> None:
    with pytest.raises(ValueError, match="size = 3 bytes cannot be split into 4 non-empty chunks"):
        ring_allreduce(4, 3)
    with pytest.raises(ValueError, match="need at least 2 hosts"):
        ring_allreduce(1, 100)


def _finish_times(t: FlowTable, rate_bps: float, delay_ps: int) -> np.ndarray:
    """Contention-free schedule: each flow takes size*8/rate + delay from max(start, its deps' finish)."""
    finish = np.zeros(len(t))
    for f in t.topological_order().tolist():
        ready = max([float(t.flows["start_ps"][f])] + [finish[d] for d in t.deps_of(f).tolist()])
        finish[f] = ready + float(t.flows["size"][f]) * 8e12 / rate_bps + delay_ps
    return finish


@pytest.mark.parametrize("n", [2, 4, 7])
def test_ideal_ring_time_matches_the_dependency_critical_path(n: int) -> None:
    size, rate, delay = n * 125_000, 100e9, 1_500_000
    t = ring_allreduce(n, size)
    ideal = ideal_ring_allreduce_ps(n, size, rate, delay)
    assert ideal == 2 * (n - 1) * (size // n * 8 * 10**12 // 10**11 + delay)
    assert _finish_times(t, rate, delay).max() == pytest.approx(ideal)


def test_ideal_ring_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="n = 1 must be at least 2"):
        ideal_ring_allreduce_ps(1, 10, 1e9, 0)


def test_halving_doubling_counts_and_bytes_n8() -> None:
    n, size = 8, 1003  # 1003 = 8 * 125 + 3: uneven chunks
    t = halving_doubling_allreduce(n, size)
    t.validate(n)
    assert len(t) == 2 * 3 * n
    assert t.total_bytes == 2 * (n - 1) * size
    assert t.groups == ["halving-doubling-allreduce"]
    chunks = [size // n + (1 if c < size % n else 0) for c in range(n)]
    f = t.flows
    steps = f.reshape(6, n)
    rs, ag = steps[:3], steps[3:]
    for i in range(n):
        # reduce-scatter: a host sends everything but the chunk it ends up owning ...
        assert int(rs["size"][rs["src"] == i].sum()) == size - chunks[i]
        # ... and the all-gather brings it everything else
        assert int(ag["size"][ag["dst"] == i].sum()) == size - chunks[i]
    # pairwise exchanges at distance 4, 2, 1 then 1, 2, 4
    for s, dist in enumerate([4, 2, 1, 1, 2, 4]):
        assert (steps[s]["dst"] == (np.arange(n) ^ dist)).all()
        assert (steps[s]["src"] == np.arange(n)).all()
    # first step: ranks 0-3 send chunks 4-7 (4 * 125 B), ranks 4-7 send chunks 0-3 (3 * 126 + 125 B)
    assert rs["size"][0].tolist() == [500] * 4 + [503] * 4


def test_halving_doubling_dependencies() -> None:
    n = 8
    t = halving_doubling_allreduce(list(range(10, 18)), 8000)
    t.validate(18)
    order = t.topological_order()
    assert sorted(order.tolist()) == list(range(len(t)))
    dist = [4, 2, 1, 1, 2, 4]
    for s in range(1, 6):
        for i in range(n):
            # its own and its partner's step s-1 send and receive (rendezvous: the receiver is in step s)
            peer = i ^ dist[s]
            ends = (i, i ^ dist[s - 1], peer, peer ^ dist[s - 1])
            assert _deps(t, s * n + i) == {(s - 1) * n + r for r in ends}
    # the all-gather step pairing the ranks of reduce-scatter step j again follows it on their connection
    after = t.flows["after"].reshape(6, n)
    assert (after[:3] == 0).all() and (after[3] == n).all() and (after[4] == 3 * n).all()
    assert (after[5] == 5 * n).all()
    assert all(_deps(t, i) == set() for i in range(n))


@pytest.mark.parametrize("n", [3, 6, 12])
def test_halving_doubling_needs_power_of_two(n: int) -> None:
    with pytest.raises(ValueError, match=f"power-of-two number of hosts, got {n}"):
        halving_doubling_allreduce(n, 1 << 20)


def test_moe_rounds_counts_and_dependencies() -> None:
    n, rounds = 5, 3
    t = moe_all_to_all(n, "2KiB", rounds=rounds)
    t.validate(n)
    per = n * (n - 1)
    assert len(t) == rounds * per and t.total_bytes == rounds * per * 2048
    assert t.groups == ["moe-all-to-all"]
    f = t.flows
    for r in range(rounds):
        pairs = set(zip(f["src"][r * per:(r + 1) * per].tolist(), f["dst"][r * per:(r + 1) * per].tolist(),
                        strict=True))
        assert len(pairs) == per
    for x in range(per, len(t)):
        r = x // per
        prev = range((r - 1) * per, r * per)
        a = int(f["src"][x])
        assert _deps(t, x) == {g for g in prev if f["src"][g] == a or f["dst"][g] == a}
    assert all(_deps(t, x) == set() for x in range(per))
    assert len(t.topological_order()) == len(t)


def test_moe_single_round_has_no_deps_and_rejects_bad_rounds() -> None:
    t = moe_all_to_all(4, 100)
    assert len(t) == 12 and t.deps.size == 0
    with pytest.raises(ValueError, match="rounds = 0 must be an int >= 1"):
        moe_all_to_all(4, 100, rounds=0)


def test_collectives_concat_keep_their_labels() -> None:
    t = FlowTable.concat(ring_allreduce(4, 400), halving_doubling_allreduce(4, 400).shifted(10**6))
    t.validate(4)
    assert t.groups == ["ring-allreduce", "halving-doubling-allreduce"]
    assert set(t.flows["group"][:24].tolist()) == {0} and set(t.flows["group"][24:].tolist()) == {1}
    assert t.deps.min() >= 0 and t.deps[len(ring_allreduce(4, 400).deps):].min() >= 24


def test_halving_doubling_rejects_a_first_step_over_the_largest_flow() -> None:
    with pytest.raises(ValueError, match="first halving step sends 2147483648 bytes"):
        halving_doubling_allreduce(4, 2**32)
