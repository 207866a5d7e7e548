"""pytest plugin for property-based protocol tests (registered as the ``rdmasim`` pytest11 entry point).

Fixtures:

* ``rdmasim_run``: a factory ``rdmasim_run(scenario, **run_kwargs) -> RunResult`` that runs a
  :class:`~rdmasim.testing.runner.Scenario` with :func:`~rdmasim.testing.runner.run_scenario`;
* ``assert_invariants``: ``assert_invariants(result, names=None)`` fails the test listing every
  :class:`~rdmasim.testing.invariants.Violation` (one per line), or returns None.

Both return stateless functions, so they are safe to use inside ``@given`` tests (tell hypothesis
so by suppressing its ``function_scoped_fixture`` health check)::

    from hypothesis import HealthCheck, given, settings
    from rdmasim.testing.strategies import scenarios

    @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(sc=scenarios(topologies=("back_to_back",)))
    def test_my_protocol(sc, rdmasim_run, assert_invariants):
        assert_invariants(rdmasim_run(sc))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rdmasim.testing.invariants import Violation, check_all
from rdmasim.testing.runner import RunResult, Scenario, run_scenario


def format_violations(violations: list[Violation], result: RunResult | None = None) -> str:
    """A readable multi-line report: the scenario (if given) and one violation per line."""
    lines = [f"{len(violations)} invariant violation(s):"]
    lines += [f"  {v}" for v in violations]
    if result is not None:
        lines.append(f"scenario: {result.scenario!r}")
    return "\n".join(lines)


def check_invariants(result: RunResult, names: list[str] | None = None) -> None:
    """Fail the current test (``pytest.fail``) when ``result`` breaks any of the invariants ``names``
    (None: all of them)."""
    violations = check_all(result, names)
    if violations:
        pytest.fail(format_violations(violations, result), pytrace=False)


def _run(scenario: Scenario, **kwargs: Any) -> RunResult:
    return run_scenario(scenario, **kwargs)


@pytest.fixture
def rdmasim_run() -> Callable[..., RunResult]:
    """A factory: ``rdmasim_run(scenario, deadline=..., chunk=..., max_records=...) -> RunResult``."""
    return _run


@pytest.fixture
def assert_invariants() -> Callable[..., None]:
    """``assert_invariants(result, names=None)``: fail listing the violations, one per line."""
    return check_invariants
