"""Collective algorithms as flow tables: structure, bytes, and a data-flow oracle that follows what each
flow carries (a flow knows its sender's contribution plus what the flows that fed its sender knew)."""

from __future__ import annotations

import numpy as np
import pytest

from rdmasim import traffic as tr
from rdmasim.traffic.collectives import double_btree_parents, in_network_allreduce
from rdmasim.traffic.collectives.tree import btree_parents, tree_depth


def _knowledge(t: tr.FlowTable) -> list[set[int]]:
    """Per flow, the hosts whose data it carries: its sender's, plus that of every dependency that
    delivered data to the sender (dependencies on the same connection are ordering, not data)."""
    src, dst = t.flows["src"].tolist(), t.flows["dst"].tolist()
    know: list[set[int]] = [set() for _ in range(len(t))]
    for f in t.topological_order().tolist():
        k = {src[f]}
        for g in t.deps_of(f).tolist():
            if dst[g] == src[f]:
                k |= know[g]
        know[f] = k
    return know


def _complete_bytes_into(t: tr.FlowTable, rank_hosts: list[int]) -> dict[int, int]:
    """Bytes each host receives that, with its own data, hold every rank's contribution."""
    know = _knowledge(t)
    everyone = set(rank_hosts)
    out = dict.fromkeys(rank_hosts, 0)
    for f in range(len(t)):
        d = int(t.flows["dst"][f])
        if d in out and know[f] | {d} >= everyone:
            out[d] += int(t.flows["size"][f])
    return out


def test_btree_is_ncclS() -> None:
    # NCCL trees.cc draws the 14-rank tree: 0 - 8; 8 - 4, 12; 4 - 2, 6; 12 - 10, 13; 2 - 1, 3; ...
    parent = btree_parents(14)
    assert parent[8] == 0 and parent[4] == 8 and parent[12] == 8 and parent[13] == 12
    assert parent[10] == 12 and parent[2] == 4 and parent[6] == 4 and parent[1] == 2 and parent[11] == 10
    one, two = double_btree_parents(12)  # even: mirrored, root 11
    assert two.index(-1) == 11 and two[3] == 11 and two[7] == 3 and two[0] == 1
    one, two = double_btree_parents(13)  # odd: shifted by one, root 1
    assert two.index(-1) == 1 and two[9] == 1 and two[5] == 9 and two[0] == 9


@pytest.mark.parametrize("p", [2, 3, 4, 5, 8, 16])
def test_double_tree_leaves_are_inner_nodes_of_the_other(p: int) -> None:
    one, two = double_btree_parents(p)
    inner_one = {q for q in one if q >= 0}
    inner_two = {q for q in two if q >= 0}
    assert len(inner_one & inner_two) <= 1  # NCCL: at most one rank is inner in both
    assert tree_depth(one) == tree_depth(two) <= max(1, (p - 1).bit_length())


@pytest.mark.parametrize(("p", "size", "chunk", "channels"), [(2, 1000, None, 2), (5, 10007, 777, 2),
                                                             (8, 1 << 16, 4096, 4), (3, 999, 100, 3)])
def test_tree_allreduce_every_rank_gets_the_full_reduction(p: int, size: int, chunk: int | None,
                                                           channels: int) -> None:
    t = tr.tree_allreduce(p, size, chunk_size=chunk, channels=channels)
    t.validate(p)
    assert _complete_bytes_into(t, list(range(p))) == dict.fromkeys(range(p), size)
    sent = np.bincount(t.flows["src"], weights=t.flows["size"], minlength=p)
    assert sent.max() <= 2 * size + channels  # about 2n per rank, as the cost model assumes
    if chunk is not None:
        assert int(t.flows["size"].max()) <= chunk


@pytest.mark.parametrize(("p", "size", "chunk", "channels"), [(2, 10, None, 1), (5, 1003, 50, 1),
                                                             (4, 1 << 14, 1000, 3)])
def test_chunked_ring_allreduce_bytes_and_oracle(p: int, size: int, chunk: int | None, channels: int) -> None:
    t = tr.chunked_ring_allreduce(p, size, chunk_size=chunk, channels=channels)
    t.validate(p)
    assert t.total_bytes == 2 * (p - 1) * size
    assert _complete_bytes_into(t, list(range(p))) == dict.fromkeys(range(p), size)


def test_unchunked_ring_with_one_slot_is_the_classic_schedule() -> None:
    a = tr.ring_allreduce(6, 6000)
    b = tr.chunked_ring_allreduce(6, 6000, inflight=1)
    assert (a.flows == b.flows).all()
    assert all(set(a.deps_of(i).tolist()) == set(b.deps_of(i).tolist()) for i in range(len(a)))


def test_inflight_bounds_chunks_per_connection() -> None:
    t = tr.chunked_ring_allreduce(4, 4 * 8000, chunk_size=1000, inflight=3)
    # rank 0's chunks of step 0 (flows to rank 1): the 4th waits for the 1st
    mine = [i for i in range(len(t)) if t.flows["src"][i] == 0][:8]
    assert mine[0] in t.deps_of(mine[3]).tolist() and mine[0] not in t.deps_of(mine[2]).tolist()


@pytest.mark.parametrize("p", [2, 3, 6])
def test_allgather_and_reduce_scatter(p: int) -> None:
    size = 600 * p
    ag = tr.ring_allgather(p, size, chunk_size=250)
    rs = tr.ring_reduce_scatter(p, size, channels=2)
    assert ag.total_bytes == rs.total_bytes == (p - 1) * size
    know = _knowledge(ag)
    for r in range(p):  # all-gather: every other rank's block arrives at r
        got = set().union(*(know[f] for f in range(len(ag)) if ag.flows["dst"][f] == r))
        assert got == set(range(p)) - {r}
    know = _knowledge(rs)
    full = [f for f in range(len(rs)) if know[f] | {int(rs.flows["dst"][f])} == set(range(p))]
    # one reduced block per rank and channel
    assert sorted(int(rs.flows["dst"][f]) for f in full) == sorted(list(range(p)) * 2)


@pytest.mark.parametrize("root", [0, 3])
def test_broadcast_and_reduce_chains(root: int) -> None:
    p, size = 5, 5000
    b = tr.broadcast(p, size, root=root, chunk_size=600)
    assert b.total_bytes == (p - 1) * size
    know = _knowledge(b)
    for r in set(range(p)) - {root}:
        assert sum(int(b.flows["size"][f]) for f in range(len(b))
                   if b.flows["dst"][f] == r and root in know[f]) == size
    red = tr.reduce(p, size, root=root, channels=2)
    into_root = [f for f in range(len(red)) if red.flows["dst"][f] == root]
    assert sum(int(red.flows["size"][f]) for f in into_root) == size
    assert all(_knowledge(red)[f] == set(range(p)) - {root} for f in into_root)
    with pytest.raises(ValueError, match="root = 5 must be a rank in"):
        tr.broadcast(p, size, root=5)


def test_alltoall_direct_and_pairwise() -> None:
    p, size = 4, 4000
    d = tr.alltoall(p, size)
    w = tr.alltoall(p, size, algorithm="pairwise")
    for t in (d, w):
        assert len(t) == p * (p - 1) and t.total_bytes == (p - 1) * size
        assert {(int(s), int(x)) for s, x in zip(t.flows["src"], t.flows["dst"], strict=True)} == {
            (a, b) for a in range(p) for b in range(p) if a != b}
    assert len(d.deps) == 0
    for f in range(p, len(w)):  # round k waits for both ends' round k-1 send and receive (rendezvous)
        s, r = int(w.flows["src"][f]), int(w.flows["dst"][f])
        ends = [(int(w.flows["src"][g]), int(w.flows["dst"][g])) for g in w.deps_of(f).tolist()]
        assert len(ends) == 4
        for x in (s, r):
            assert [e[0] for e in ends].count(x) == 1 and [e[1] for e in ends].count(x) == 1
    with pytest.raises(ValueError, match="algorithm = 'ring': allowed 'direct' or 'pairwise'"):
        tr.alltoall(p, size, algorithm="ring")


def test_recursive_doubling() -> None:
    t = tr.recursive_doubling_allreduce(8, 1000)
    assert len(t) == 24 and t.total_bytes == 24 * 1000
    state = [{r} for r in range(8)]
    for k in range(3):  # step k: each rank adds what its partner held before the step
        before = [set(x) for x in state]
        for f in range(8 * k, 8 * k + 8):
            s, d = int(t.flows["src"][f]), int(t.flows["dst"][f])
            assert d == s ^ (1 << k)
            state[d] |= before[s]
            if k:
                prev = {s, s ^ (1 << (k - 1)), d, d ^ (1 << (k - 1))}  # both ends' step k-1 send and receive
                assert set(t.deps_of(f).tolist()) == {8 * (k - 1) + r for r in prev}
    assert all(x == set(range(8)) for x in state)
    with pytest.raises(ValueError, match="power-of-two"):
        tr.recursive_doubling_allreduce(6, 1000)


def test_in_network_allreduce_tree_and_errors() -> None:
    ranks = [0, 1, 2, 3]
    t = in_network_allreduce(ranks, 4000, {10: [0, 1], 11: [2, 3], 12: [10, 11]}, chunk_size=1000)
    t.validate(13)
    assert _complete_bytes_into(t, ranks) == dict.fromkeys(ranks, 4000)
    sent = np.bincount(t.flows["src"], weights=t.flows["size"], minlength=13)
    assert (sent[ranks] == 4000).all()  # each rank sends its buffer once
    with pytest.raises(ValueError, match="rank host 3 is under no aggregator"):
        in_network_allreduce(ranks, 4000, {10: [0, 1, 2]})
    with pytest.raises(ValueError, match="exactly one root"):
        in_network_allreduce(ranks, 4000, {10: [0, 1], 11: [2, 3]})
    with pytest.raises(ValueError, match=r"aggregators \[10, 11\] form a cycle"):
        in_network_allreduce(ranks, 4000, {12: [0, 1], 10: [2, 11], 11: [10, 3]})
    with pytest.raises(ValueError, match="is a rank and cannot"):
        in_network_allreduce(ranks, 4000, {3: [0, 1, 2]})


def test_collective_dispatch_errors() -> None:
    with pytest.raises(ValueError, match="collective kind = 'allsum': allowed allreduce"):
        tr.collective("allsum", 4, 1000)
    with pytest.raises(ValueError, match="allreduce: algorithm = 'star': allowed ring, tree"):
        tr.collective("allreduce", 4, 1000, algorithm="star")
    with pytest.raises(ValueError, match="chunk_size and channels apply only"):
        tr.collective("allreduce", 4, 1000, algorithm="halving_doubling", chunk_size=100)
    with pytest.raises(ValueError, match=r"channels = 0 must be an int in \[1, 64\]"):
        tr.collective("allreduce", 4, 1000, channels=0)
    with pytest.raises(ValueError, match="cannot be split into 8 non-empty pieces"):
        tr.collective("allgather", 4, 7, channels=2)


def test_bus_factors_are_nccl_tests() -> None:
    assert tr.bus_factor("allreduce", 8) == pytest.approx(14 / 8)
    assert tr.bus_factor("allgather", 8) == tr.bus_factor("reduce_scatter", 8) == pytest.approx(7 / 8)
    assert tr.bus_factor("alltoall", 4) == pytest.approx(3 / 4)
    assert tr.bus_factor("broadcast", 8) == tr.bus_factor("reduce", 3) == 1.0
    r = tr.collective_result("allreduce", 4, 10**6, 10**9)  # 1 MB in 1 ms
    assert r.algbw_Bps == pytest.approx(1e9) and r.busbw_Bps == pytest.approx(1.5e9)
