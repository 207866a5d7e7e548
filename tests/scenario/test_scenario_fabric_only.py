"""A scenario for ``rdmasim exec`` describes a fabric only: no traffic needed (docs/c-programs.md)."""

from __future__ import annotations

import pytest

from rdmasim.scenario.load import loads
from rdmasim.scenario.model import ScenarioError
from rdmasim.scenario.run import build

TEXT = '[topology]\nkind = "star"\nn = 3\n\n[link]\nrate = "25Gbps"\nloss = 0.01\n'


def test_a_run_needs_traffic() -> None:
    with pytest.raises(ScenarioError, match="no traffic"):
        loads(TEXT)


def test_a_fabric_for_programs_does_not() -> None:
    sim = build(loads(TEXT, fabric_only=True))
    assert list(sim.hosts) == ["h0", "h1", "h2"]
    assert all(link.rate_bps == 25_000_000_000 for link in sim.links)


def test_other_problems_are_still_reported() -> None:
    with pytest.raises(ScenarioError, match="link.rate"):
        loads(TEXT.replace('"25Gbps"', '"fast"'), fabric_only=True)
