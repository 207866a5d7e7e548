"""Property-based protocol testing for rdmasim: hypothesis strategies, a scenario runner and
invariant checkers that work on any finished run.

* :mod:`rdmasim.testing.strategies`: hypothesis strategies of small fabrics, impairments, verbs
  workloads and parameter sets, all shrinking to small readable counterexamples;
* :mod:`rdmasim.testing.runner`: :func:`run_scenario` builds and runs one :class:`Scenario` and
  returns a :class:`RunResult` (simulator, trace records, QPs, memory reference, counters);
* :mod:`rdmasim.testing.invariants`: checkers returning lists of :class:`Violation`;
* :mod:`rdmasim.testing.mutants`: deliberately wrong core behaviours (mutant builds only);
* :mod:`rdmasim.testing.plugin`: the pytest plugin (fixtures ``rdmasim_run``, ``assert_invariants``).
"""

from rdmasim.testing.invariants import ALL_INVARIANTS, Violation, check_all
from rdmasim.testing.runner import Impairment, Op, Params, RunResult, Scenario, run_scenario

__all__ = [
    "ALL_INVARIANTS",
    "Impairment",
    "Op",
    "Params",
    "RunResult",
    "Scenario",
    "Violation",
    "check_all",
    "run_scenario",
]
