"""Fuzzing add_flows with random flow tables: valid tables run to completion, a table with one bad
cell is refused with a ValueError/TypeError naming its column and row, random dependency arrays are
either accepted (and honoured) or refused, and nothing crashes or leaves the simulation unusable.

The default run is bounded to a few seconds; the ``slow`` variants run many more examples.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rdmasim import topology
from rdmasim.checks import MAX_TIME_PS

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LONG = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])

N_HOSTS = 3  # incast(2): hosts 0 and 1 send to host 2; any pair of hosts is connected

# column -> (lo, hi) of valid values
RANGES = {"src": (0, N_HOSTS - 1), "dst": (0, N_HOSTS - 1), "size": (1, 2**31 - 1),
          "start_ps": (0, MAX_TIME_PS), "verb": (0, 2), "priority": (0, 7)}


def _sim() -> Any:
    return topology.incast(2, rate="100Gbps", delay="1us", mtu=1024).sim


@st.composite
def valid_tables(draw: Any, max_flows: int = 6) -> dict[str, list[int]]:
    n = draw(st.integers(0, max_flows))
    pairs = [(a, b) for a in range(N_HOSTS) for b in range(N_HOSTS) if a != b]
    chosen = draw(st.lists(st.sampled_from(pairs), min_size=n, max_size=n))
    late = st.integers(MAX_TIME_PS - 10**9, MAX_TIME_PS)  # near the time limit: the clock must not wrap
    return {
        "src": [a for a, _ in chosen], "dst": [b for _, b in chosen],
        "size": draw(st.lists(st.integers(1, 5000), min_size=n, max_size=n)),
        "start_ps": draw(st.lists(st.one_of(st.integers(0, 10**7), late), min_size=n, max_size=n)),
        "verb": draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)),
        "priority": draw(st.lists(st.integers(0, 7), min_size=n, max_size=n)),
    }


class _Table:
    def __init__(self, cols: dict[str, Any], dep_ptr: Any = None, deps: Any = None) -> None:
        self.flows = cols
        if dep_ptr is not None:
            self.dep_ptr, self.deps = dep_ptr, deps


def _run_all_ok(sim: Any, fs: Any, cols: dict[str, list[int]]) -> np.ndarray:
    sim.run_flows()
    r = fs.results()
    assert r["status"].tolist() == [0] * len(cols["src"])
    assert (r["started_ps"] >= np.asarray(cols["start_ps"], dtype=np.int64)).all()
    assert (r["finish_ps"] > r["started_ps"]).all()
    assert sim.now >= 0
    return r


# ---- valid tables run ----


def _valid(cols: dict[str, list[int]]) -> None:
    sim = _sim()
    fs = sim.add_flows(cols)
    _run_all_ok(sim, fs, cols)


@FAST
@given(valid_tables())
def test_valid_tables_run_to_completion(cols: dict[str, list[int]]) -> None:
    _valid(cols)


@pytest.mark.slow
@LONG
@given(valid_tables())
def test_valid_tables_run_to_completion_long(cols: dict[str, list[int]]) -> None:
    _valid(cols)


# ---- one bad cell: refused, naming its column and row ----

HOSTILE = st.one_of(
    st.integers(-(1 << 66), 1 << 66), st.sampled_from([2**32 + 2, 259, 256, -1, 2**63, 2**64 + 2, 2**31]),
    st.floats(allow_nan=True, allow_infinity=True), st.just(1000.9), st.just(float("nan")),
)


def _bad_cell(data: Any) -> None:
    cols = data.draw(valid_tables().filter(lambda c: len(c["src"]) > 0))
    name = data.draw(st.sampled_from(sorted(RANGES)))
    row = data.draw(st.integers(0, len(cols["src"]) - 1))
    value = data.draw(HOSTILE)
    lo, hi = RANGES[name]
    if isinstance(value, int) and lo <= value <= hi:
        return  # not hostile for this column
    cols[name][row] = value
    sim = _sim()
    with pytest.raises((ValueError, TypeError)) as info:
        sim.add_flows(cols)
    msg = str(info.value)
    assert f"'{name}'" in msg and f"row {row}" in msg, msg
    assert sim._flows_core().counts()["total"] == 0
    fs = sim.add_flows(data.draw(valid_tables()))  # the sim is still usable
    sim.run_flows()
    assert (fs.results()["status"] == 0).all()


@FAST
@given(st.data())
def test_a_bad_cell_is_refused_naming_column_and_row(data: Any) -> None:
    _bad_cell(data)


@pytest.mark.slow
@LONG
@given(st.data())
def test_a_bad_cell_is_refused_naming_column_and_row_long(data: Any) -> None:
    _bad_cell(data)


# ---- random dependency arrays: accepted and honoured, or refused ----


def _reference_deps_ok(n: int, ptr: list[int], deps: list[int]) -> bool:
    """Independent check of a CSR dependency list: well-formed, in range, no self-loops, acyclic."""
    if len(ptr) != n + 1 or ptr[0] != 0 or ptr[-1] != len(deps):
        return False
    if any(b < a for a, b in zip(ptr, ptr[1:], strict=False)):
        return False
    if any(not 0 <= d < n for d in deps):
        return False
    waits = {i: set(deps[ptr[i]:ptr[i + 1]]) for i in range(n)}
    if any(i in w for i, w in waits.items()):
        return False
    done: set[int] = set()
    while len(done) < n:
        ready = [i for i in range(n) if i not in done and waits[i] <= done]
        if not ready:
            return False
        done.update(ready)
    return True


def _random_deps(data: Any) -> None:
    cols = data.draw(valid_tables(max_flows=5))
    n = len(cols["src"])
    cols["start_ps"] = [min(t, 10**7) for t in cols["start_ps"]]
    small = st.integers(-3, n + 2)
    if data.draw(st.booleans()):  # a well-formed CSR shape with random targets
        counts = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
        ptr = [0]
        for c in counts:
            ptr.append(ptr[-1] + c)
        deps = data.draw(st.lists(small, min_size=ptr[-1], max_size=ptr[-1]))
    else:  # anything at all
        ptr = data.draw(st.lists(st.integers(-(2**40), 2**40) | small, min_size=0, max_size=n + 3))
        deps = data.draw(st.lists(st.integers(-(2**33), 2**33) | small, max_size=8))
    sim = _sim()
    expect_ok = _reference_deps_ok(n, ptr, deps)
    try:
        fs = sim.add_flows(_Table(cols, np.array(ptr, dtype=np.int64), np.array(deps, dtype=np.int64)))
    except (ValueError, TypeError) as exc:
        assert not expect_ok, f"refused a valid dependency list {ptr} {deps}: {exc}"
        assert "dep_ptr" in str(exc) or "deps" in str(exc) or "cycle" in str(exc), str(exc)
        assert sim._flows_core().counts()["total"] == 0
        return
    assert expect_ok, f"accepted an invalid dependency list {ptr} {deps}"
    r = _run_all_ok(sim, fs, cols)
    for i in range(n):  # every flow started after each of its dependencies finished
        for d in deps[ptr[i]:ptr[i + 1]]:
            assert r["started_ps"][i] >= r["finish_ps"][d]


@FAST
@given(st.data())
def test_random_dependencies_are_honoured_or_refused(data: Any) -> None:
    _random_deps(data)


@pytest.mark.slow
@LONG
@given(st.data())
def test_random_dependencies_are_honoured_or_refused_long(data: Any) -> None:
    _random_deps(data)


# ---- the C core on its own: whatever arrays it is handed, a ValueError or a run, never a crash ----

CFG = {"path_mtu": 3, "timeout": 14, "retry_cnt": 7, "rnr_retry": 7, "min_rnr_timer": 12, "max_rd_atomic": 1,
       "recovery_mode": 0}
C_TYPES = {"src": np.int32, "dst": np.int32, "size": np.uint64, "start_ps": np.int64, "verb": np.uint8,
           "priority": np.uint8}


def _core_direct(data: Any) -> None:
    n = data.draw(st.integers(0, 5))

    def col(name: str) -> np.ndarray:
        info = np.iinfo(C_TYPES[name])
        lo, hi = RANGES[name]
        vals = st.one_of(st.integers(lo, min(hi, lo + 8)), st.integers(int(info.min), int(info.max)))
        return np.array(data.draw(st.lists(vals, min_size=n, max_size=n)), dtype=C_TYPES[name])

    cols = {name: col(name) for name in C_TYPES}
    ptr = np.array(data.draw(st.lists(st.integers(-(2**62), 2**62) | st.integers(-2, 8),
                                      min_size=n + 1, max_size=n + 1)), dtype=np.int64)
    deps = np.array(data.draw(st.lists(st.integers(-(2**31), 2**31 - 1) | st.integers(-2, 6), max_size=8)),
                    dtype=np.int32)
    cfg = dict(CFG)
    for knob, (lo, hi) in {"timeout": (0, 40), "retry_cnt": (0, 9), "max_rd_atomic": (0, 200),
                           "path_mtu": (0, 7), "recovery_mode": (0, 3)}.items():
        if data.draw(st.booleans()):
            cfg[knob] = data.draw(st.integers(lo, hi))
    cfg.update(window=data.draw(st.integers(0, 70000)), rto_low_ps=data.draw(st.integers(-5, 10**9)),
               rto_high_ps=data.draw(st.integers(-5, 10**9)))
    sim = _sim()
    fc = sim._flows_core()
    with_deps = data.draw(st.booleans())
    try:
        fc.add(cols["src"], cols["dst"], cols["size"], cols["start_ps"], cols["verb"], cols["priority"],
               ptr if with_deps else None, deps if with_deps else None, cfg)
    except ValueError:
        assert fc.counts()["total"] == 0
        return
    sim.run_flows(until=MAX_TIME_PS)  # accepted: it runs (statuses may be errors, the process lives)
    assert sim.now >= 0


@FAST
@given(st.data())
def test_the_core_survives_any_arrays(data: Any) -> None:
    _core_direct(data)


@pytest.mark.slow
@LONG
@given(st.data())
def test_the_core_survives_any_arrays_long(data: Any) -> None:
    _core_direct(data)
