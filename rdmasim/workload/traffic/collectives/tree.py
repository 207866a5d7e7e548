"""NCCL's double binary tree all-reduce (Sanders, Speck and Traeff 2009, as NCCL 2.4 builds it).

Tree one is the binary tree NCCL derives from the ranks' bits: rank 0 is the root, and rank ``r > 0``
with lowest set bit ``b`` has parent ``(r ^ b) | (b << 1)``, or ``r ^ b`` if that is past the last rank.
Tree two is tree one mirrored (rank ``r`` -> ``p - 1 - r``) when p is even and shifted by one rank
when p is odd, so the leaves of one tree are the inner nodes of the other. Each tree carries half of
the buffer (channel ``c`` uses tree ``c % 2``): chunks go up the tree, reduced at each inner node once
all its children's copies have arrived, and then back down from the root, pipelined chunk by chunk.
"""

from __future__ import annotations

from rdmasim.workload.traffic._common import Hosts, host_array, size_bytes
from rdmasim.workload.traffic.collectives._plan import Plan
from rdmasim.workload.traffic.collectives.chunking import check_chunking, chunks, need_pieces, split
from rdmasim.workload.traffic.table import FlowTable


def btree_parents(p: int) -> list[int]:
    """Parent of each rank in NCCL's first binary tree (-1 for the root, rank 0)."""
    parent = [-1] * p
    for r in range(1, p):
        bit = r & -r
        up = (r ^ bit) | (bit << 1)
        parent[r] = up if up < p else r ^ bit
    return parent


def double_btree_parents(p: int) -> tuple[list[int], list[int]]:
    """Parents in NCCL's two complementary trees (tree two mirrored for even p, shifted for odd p)."""
    one = btree_parents(p)
    if p % 2 == 0:
        two = [-1 if one[p - 1 - r] < 0 else p - 1 - one[p - 1 - r] for r in range(p)]
    else:
        two = [-1 if one[(r - 1) % p] < 0 else (one[(r - 1) % p] + 1) % p for r in range(p)]
    return one, two


def tree_depth(parent: list[int]) -> int:
    """Edges on the longest leaf-to-root path."""
    def depth(r: int) -> int:
        d = 0
        while parent[r] >= 0:
            r, d = parent[r], d + 1
        return d
    return max(depth(r) for r in range(len(parent)))


def tree_steps(plan: Plan, parent: list[int], pieces: list[int], channel: int) -> None:
    """Reduce ``pieces`` (chunk sizes) up a tree and broadcast them back down, chunk by chunk."""
    p = len(parent)
    children: list[list[int]] = [[] for _ in range(p)]
    for r, up in enumerate(parent):
        if up >= 0:
            children[up].append(r)
    depth = [0] * p
    for r in range(p):
        q = r
        while parent[q] >= 0:
            q, depth[r] = parent[q], depth[r] + 1
    bottom_up = sorted(range(p), key=lambda r: -depth[r])
    for sz in pieces:
        up_flow: dict[int, int] = {}
        for r in bottom_up:  # children before parents
            if parent[r] >= 0:
                up_flow[r] = plan.add(r, parent[r], sz, [up_flow[c] for c in children[r]], channel)
        down_flow: dict[int, int] = {}
        for r in reversed(bottom_up):  # parents before children
            got = [up_flow[c] for c in children[r]] if parent[r] < 0 else [down_flow[r]]
            for c in children[r]:
                down_flow[c] = plan.add(r, c, sz, got, channel)


def tree_allreduce(hosts: Hosts, size: int | str, *, chunk_size: int | str | None = None, channels: int = 2,
                   inflight: int = 4, start: int | str = 0, verb: str | int = "WRITE", priority: int = 3,
                   group: str | None = "tree-allreduce") -> FlowTable:
    """Double binary tree all-reduce of a ``size``-byte buffer (``channels`` even: half on each tree).

    Each channel's share is cut into chunks of at most ``chunk_size`` bytes (default: one chunk per
    channel) that are reduced up and broadcast down their tree in a pipeline; ``inflight`` bounds the
    chunks in flight per connection. A rank sends and receives about 2 x size bytes in all.
    """
    h = host_array(hosts)
    c = check_chunking(chunk_size, channels, inflight)
    n = size_bytes(size)
    need_pieces(n, channels, f"{channels} channels")
    trees = double_btree_parents(h.size)
    plan = Plan(inflight)
    for ch, share in enumerate(split(n, channels)):
        tree_steps(plan, trees[ch % 2], chunks(share, c), ch)
    return plan.table(h, start, verb, priority, group)
