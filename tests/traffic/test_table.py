"""FlowTable: construction, concat offsets, shifting, and one test per validation error kind."""

from __future__ import annotations

import numpy as np
import pytest

from rdmasim.traffic import FLOW_DTYPE, VERB_CODES, FlowTable


def _table(n: int = 4, **cols: object) -> FlowTable:
    base: dict[str, object] = {"src": np.arange(n) % 3, "dst": (np.arange(n) + 1) % 3, "size": 1000,
                               "start_ps": 0}
    base.update(cols)
    return FlowTable.from_columns(**base)  # type: ignore[arg-type]


def _with(table: FlowTable, field: str, index: int, value: int) -> FlowTable:
    flows = table.flows.copy()
    flows[field][index] = value
    return FlowTable(flows, table.dep_ptr, table.deps, table.groups)


def _with_deps(n: int, per_flow: list[list[int]]) -> FlowTable:
    ptr = np.concatenate([[0], np.cumsum([len(d) for d in per_flow])])
    deps = np.array([x for d in per_flow for x in d], dtype=np.int32)
    return _table(n, dep_ptr=ptr, deps=deps)


def test_dtype_and_codes_match_the_contract() -> None:
    assert FLOW_DTYPE.names == ("src", "dst", "size", "start_ps", "verb", "priority", "group", "hold_ps",
                                "after")
    assert FLOW_DTYPE.itemsize == 4 + 4 + 8 + 8 + 1 + 1 + 4 + 8 + 4
    assert VERB_CODES == {"WRITE": 0, "READ": 1, "SEND": 2, "LOCAL": 3}


def test_empty() -> None:
    t = FlowTable.empty()
    assert len(t) == 0 and t.flows.dtype == FLOW_DTYPE
    assert t.dep_ptr.tolist() == [0] and t.deps.size == 0 and t.groups == []
    t.validate(1)


def test_from_columns_broadcasts_scalars_and_verb_names() -> None:
    t = FlowTable.from_columns([0, 1, 2], 3, 100, start_ps=[0, 5, 10], verb=["READ", "send", "WRITE"],
                               priority=5)
    assert len(t) == 3
    assert t.flows["dst"].tolist() == [3, 3, 3]
    assert t.flows["verb"].tolist() == [1, 2, 0]
    assert t.flows["priority"].tolist() == [5, 5, 5]
    assert t.flows["group"].tolist() == [-1, -1, -1]
    assert t.dep_ptr.tolist() == [0, 0, 0, 0]
    t.validate(4)
    one = FlowTable.from_columns(0, 1, 10)
    assert len(one) == 1 and one.flows["verb"][0] == 0 and one.flows["priority"][0] == 3


def test_from_columns_rejects_mismatched_lengths_and_unknown_verbs() -> None:
    with pytest.raises(ValueError, match="different lengths"):
        FlowTable.from_columns([0, 1], [1, 2, 3], 10)
    with pytest.raises(ValueError, match="unknown verb 'PUT'"):
        FlowTable.from_columns(0, 1, 10, verb="PUT")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("src", 3, r"flow 2: src = 3 is outside \[0, 2\] \(n_hosts = 3\)"),
        ("src", -1, r"flow 2: src = -1 is outside \[0, 2\]"),
        ("dst", 7, r"flow 2: dst = 7 is outside \[0, 2\]"),
        ("size", 0, r"flow 2: size = 0 is outside \[1, 2147483647\]"),
        ("size", 2**31, r"flow 2: size = 2147483648 is outside \[1, 2147483647\]"),
        ("start_ps", -5, r"flow 2: start_ps = -5 is outside \[0, 4611686018427387904\]"),
        ("verb", 4, r"flow 2: verb = 4 is outside \[0, 3\]"),
        ("priority", 8, r"flow 2: priority = 8 is outside \[0, 7\]"),
        ("group", 0, r"flow 2: group = 0 is outside \[-1, -1\]"),
    ],
)
def test_validate_names_flow_field_value_and_range(field: str, value: int, message: str) -> None:
    t = _table()
    t.validate(3)
    with pytest.raises(ValueError, match=message):
        _with(t, field, 2, value).validate(3)


def test_validate_counts_further_bad_flows() -> None:
    flows = _table(6).flows.copy()
    flows["size"][[1, 4, 5]] = 0
    with pytest.raises(ValueError, match=r"flow 1 \(and 2 more\): size = 0"):
        FlowTable(flows).validate(3)


def test_validate_src_equals_dst() -> None:
    with pytest.raises(ValueError, match=r"flow 1: src = dst = 1"):
        _with(_table(), "dst", 1, 1).validate(3)


def test_validate_dependency_out_of_range_and_self() -> None:
    with pytest.raises(ValueError, match=r"'deps', row 1 = 4: flow 2 depends on a flow outside \[0, 3\]"):
        _with_deps(4, [[], [0], [4], []]).validate(3)
    with pytest.raises(ValueError, match=r"row 0 = -1: flow 1 depends on a flow outside"):
        _with_deps(4, [[], [-1], [], []]).validate(3)
    with pytest.raises(ValueError, match=r"row 3 = 3: flow 3 depends on itself"):
        _with_deps(4, [[], [0], [1], [0, 3]]).validate(3)


def test_validate_finds_and_names_a_cycle() -> None:
    t = _with_deps(5, [[], [0, 3], [1], [2], [3]])
    with pytest.raises(ValueError, match=r"cycle: flow 1 -> 3 -> 2 -> 1 .*4 flows can never start"):
        t.validate(3)


def test_validate_checks_csr_shape() -> None:
    t = _table(3)
    with pytest.raises(ValueError, match="'dep_ptr' has 3 entries, it needs len\\(flows\\) \\+ 1 = 4"):
        FlowTable(t.flows, np.zeros(3, dtype=np.int64), t.deps).validate(3)
    with pytest.raises(ValueError, match="row 3 = 0: must be 1 .*ends at len\\(deps\\) = 1"):
        FlowTable(t.flows, np.zeros(4, dtype=np.int64), np.zeros(1, dtype=np.int32)).validate(3)
    with pytest.raises(ValueError, match="row 2 = 1 is below row 1 = 2: dep_ptr must not decrease"):
        FlowTable(t.flows, np.array([0, 2, 1, 2]), np.array([1, 2], dtype=np.int32)).validate(3)
    with pytest.raises(ValueError, match="FLOW_DTYPE"):
        FlowTable(np.zeros(2, dtype=[("src", "<i4")])).validate(3)


def test_topological_order_respects_dependencies() -> None:
    t = _with_deps(5, [[3], [0, 3], [1], [], [2, 0]])
    order = t.topological_order().tolist()
    pos = {f: k for k, f in enumerate(order)}
    assert sorted(order) == [0, 1, 2, 3, 4]
    for i in range(5):
        assert all(pos[d] < pos[i] for d in t.deps_of(i).tolist())


def test_long_chain_validates() -> None:
    n = 100_000
    t = _table(n, dep_ptr=np.concatenate([[0], np.arange(n)]), deps=np.arange(n - 1))
    t.validate(3)
    assert t.topological_order().tolist() == list(range(n))


def test_concat_offsets_deps_and_groups() -> None:
    a = _with_deps(3, [[], [0], [0, 1]])
    a.flows["group"] = [0, 0, -1]
    a.groups = ["ring"]
    b = _with_deps(2, [[], [0]])
    b.flows["group"] = [1, 0]
    b.groups = ["x", "y"]
    c = FlowTable.concat(a, FlowTable.empty(), b)
    assert len(c) == 5
    assert c.groups == ["ring", "x", "y"]
    assert c.flows["group"].tolist() == [0, 0, -1, 2, 1]
    assert c.dep_ptr.tolist() == [0, 0, 1, 3, 3, 4]
    assert c.deps.tolist() == [0, 0, 1, 3]
    assert c.deps.dtype == np.int32 and c.dep_ptr.dtype == np.int64
    c.validate(3)
    assert len(FlowTable.concat()) == 0


def test_shifted_moves_start_only() -> None:
    t = _with_deps(3, [[], [0], []])
    s = t.shifted(1_000)
    assert s.flows["start_ps"].tolist() == [1000, 1000, 1000]
    assert t.flows["start_ps"].tolist() == [0, 0, 0]
    assert s.deps.tolist() == t.deps.tolist() and s.dep_ptr.tolist() == t.dep_ptr.tolist()


def test_flows_alone_get_no_dependencies() -> None:
    t = FlowTable(_table(3).flows)
    assert t.dep_ptr.tolist() == [0, 0, 0, 0]
    t.validate(3)
