"""Dependency-graph helpers for flow tables: topological order (Kahn, level by level, in numpy)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

_NARROW = 32  # below this many ready flows in a level, finish the sort in plain Python


def gather_ranges(ptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Indices ``ptr[r]:ptr[r+1]`` for every ``r`` in ``rows``, concatenated (no Python loop)."""
    starts = ptr[rows]
    lens = ptr[rows + 1] - starts
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    # position k of the output belongs to the row whose range it falls in: start + (k - first output of row)
    first_out = np.cumsum(lens) - lens
    return np.repeat(starts - first_out, lens) + np.arange(total, dtype=np.int64)


def topological_order(n: int, dep_ptr: npt.ArrayLike, deps: npt.ArrayLike) -> np.ndarray:
    """Flow indices so that each flow follows all of its dependencies; ValueError naming a cycle if none.

    Kahn's algorithm one level at a time: each level removes every flow whose dependencies are all done.
    Each edge and node is touched once, plus a sort to build the reverse adjacency. Wide levels run as a
    few numpy operations each; once a level is narrow (long chains), the rest runs as a plain queue loop,
    which costs less than numpy's per-call overhead there.
    """
    ptr = np.asarray(dep_ptr, dtype=np.int64)
    dd = np.asarray(deps, dtype=np.int64)
    counts = np.diff(ptr)
    owner = np.repeat(np.arange(n, dtype=np.int64), counts)
    # reverse CSR: for each flow, the flows that wait for it
    by_dep = np.argsort(dd, kind="stable")
    rev_child = owner[by_dep]
    rev_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dd, minlength=n), out=rev_ptr[1:])

    waiting = counts.copy()
    frontier = np.flatnonzero(waiting == 0)
    levels = []
    while frontier.size:
        if frontier.size < _NARROW:
            levels.append(_finish_in_python(frontier, waiting, rev_ptr, rev_child))
            break
        levels.append(frontier)
        children = rev_child[gather_ranges(rev_ptr, frontier)]
        if children.size == 0:
            break
        np.subtract.at(waiting, children, 1)
        ready = children[waiting[children] == 0]
        frontier = np.unique(ready)
    order = np.concatenate(levels) if levels else np.zeros(0, dtype=np.int64)
    if order.size < n:
        raise ValueError(_describe_cycle(n, ptr, dd, order))
    return order


def _finish_in_python(
    frontier: np.ndarray, waiting: np.ndarray, rev_ptr: np.ndarray, rev_child: np.ndarray
) -> np.ndarray:
    """Kahn with a stack from ``frontier`` on: every flow it can order, in order (updates ``waiting``)."""
    wait = waiting.tolist()
    ptr = rev_ptr.tolist()
    child = rev_child.tolist()
    stack = frontier.tolist()
    out: list[int] = []
    while stack:
        v = stack.pop()
        out.append(v)
        for c in child[ptr[v]:ptr[v + 1]]:
            wait[c] -= 1
            if wait[c] == 0:
                stack.append(c)
    waiting[:] = wait
    return np.asarray(out, dtype=np.int64)


def _describe_cycle(n: int, ptr: np.ndarray, deps: np.ndarray, done_flows: np.ndarray) -> str:
    """Find one cycle among the flows Kahn could not order and describe it."""
    done = np.zeros(n, dtype=bool)
    done[done_flows] = True
    stuck = int(np.count_nonzero(~done))
    v = int(np.flatnonzero(~done)[0])
    seen: dict[int, int] = {}
    path: list[int] = []
    while v not in seen:
        seen[v] = len(path)
        path.append(v)
        mine = deps[ptr[v]:ptr[v + 1]]
        v = int(mine[~done[mine]][0])  # a flow that cannot start waits for one that cannot start either
    cycle = path[seen[v]:] + [v]
    chain = " -> ".join(str(c) for c in cycle)
    return (f"dependency cycle: flow {chain} (each waits for the next to finish); "
            f"{stuck} flows can never start")
