"""The pytest plugin's fixtures (active through the ``pytest11`` entry point of the install)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from rdmasim.testing import Op, Scenario, Violation
from rdmasim.testing.plugin import format_violations
from rdmasim.testing.strategies import scenarios


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sc=scenarios(topologies=("back_to_back",), max_ops=2, lossy=False))
def test_given_with_fixtures(sc: Scenario, rdmasim_run, assert_invariants) -> None:
    r = rdmasim_run(sc)
    assert r.finished
    assert_invariants(r)


def test_assert_invariants_fails_readably(rdmasim_run, assert_invariants, monkeypatch) -> None:
    r = rdmasim_run(Scenario(ops=(Op("WRITE", 100),)))
    assert_invariants(r)  # clean run passes
    v = Violation("memory", "byte 3 differs", "h0/qp1", 42)
    monkeypatch.setattr("rdmasim.testing.plugin.check_all", lambda res, names=None: [v])
    with pytest.raises(pytest.fail.Exception) as ei:
        assert_invariants(r)
    msg = str(ei.value)
    assert "1 invariant violation(s):" in msg
    assert "[memory] byte 3 differs at h0/qp1, t=42 ps" in msg
    assert "scenario: Scenario(" in msg
    assert format_violations([v]).splitlines()[1].strip() == str(v)


def test_entry_point_registered(pytestconfig) -> None:
    assert pytestconfig.pluginmanager.has_plugin("rdmasim")
