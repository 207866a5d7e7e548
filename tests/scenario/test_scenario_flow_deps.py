"""``id`` and ``after`` on scenario ``[[flows]]``: a flow starts when the flows it names have completed
(then its ``hold``), and wrong ids or a cycle are refused with one line naming ``flows[i].after``/``.id``."""

from __future__ import annotations

from pathlib import Path

import pytest

from rdmasim.cli import main
from rdmasim.scenario import ScenarioError, loads, run_scenario
from rdmasim.scenario.traffic import traffic_table

STAR = """
[simulation]
progress = false
[topology]
kind = "star"
n = 4
"""
US = 1_000_000


def _flow(src: str, dst: str, extra: str = "") -> str:
    return f'[[flows]]\nsrc = "{src}"\ndst = "{dst}"\nsize = "64KiB"\n{extra}'


CHAIN = (_flow("h0", "h1", 'id = "a"\n') + _flow("h1", "h2", 'id = "b"\nafter = ["a"]\nhold = "1us"\n')
         + _flow("h2", "h3", 'id = 7\nafter = ["b"]\n')
         + _flow("h3", "h0", 'after = ["a", 7]\nstart = "50us"\n'))


def test_chain_runs_in_order() -> None:
    sc = loads(STAR + CHAIN, "c.toml")
    table, _ = traffic_table(sc)
    assert [table.deps_of(i).tolist() for i in range(4)] == [[], [0], [1], [0, 2]]
    a, b, c, d = run_scenario(sc, progress=False).flows
    assert all(f.status == "ok" for f in (a, b, c, d))
    assert b.start_ps == a.finish_ps + 1 * US  # after a's completion, then its hold
    assert c.start_ps == b.finish_ps
    assert d.start_ps == 50 * US  # start is the earliest time: max(start, completions)


@pytest.mark.parametrize(("extra", "where", "says"), [
    (_flow("h0", "h1", 'id = "a"\n') + _flow("h1", "h2", 'after = ["x"]\n'), "flows[1].after",
     "unknown flow id 'x'"),
    (_flow("h0", "h1", 'id = 1\n') + _flow("h1", "h2", 'after = ["1"]\n'), "flows[1].after",
     "unknown flow id '1'"),
    (_flow("h0", "h1", 'id = "a"\n') + _flow("h1", "h2", 'id = "a"\n'), "flows[1].id",
     "also the id of flows[0]"),
    (_flow("h0", "h1", 'id = "a"\nafter = ["b"]\n') + _flow("h1", "h2", 'id = "b"\nafter = ["a"]\n'),
     "flows[0].after", "a cycle: flows[0] -> flows[1] -> flows[0]"),
    (_flow("h0", "h1", 'id = "a"\nafter = ["a"]\n'), "flows[0].after", "a cycle: flows[0] -> flows[0]"),
    (_flow("h0", "h1", 'id = ""\n'), "flows[0].id", "expected a string or an integer"),
    (_flow("h0", "h1", 'id = true\n'), "flows[0].id", "expected a string or an integer"),
    (_flow("h0", "h1", 'after = [1.5]\n'), "flows[0].after", "expected a list of flow ids"),
])
def test_bad_ids_refused_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str,
                                       where: str, says: str) -> None:
    with pytest.raises(ScenarioError) as exc:
        loads(STAR + extra, "bad.toml")
    (p,) = exc.value.problems
    assert p.path == where and says in str(p), str(p)
    f = tmp_path / "bad.toml"
    f.write_text(STAR + extra)
    assert main(["validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{where}" in err and says in err
