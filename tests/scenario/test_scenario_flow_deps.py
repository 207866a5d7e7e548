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


# ---- after_received: the flow waits for the bytes to have arrived, not for the ACK back

SLOW = """
[simulation]
progress = false
[topology]
kind = "star"
n = 4
[link]
delay = "5us"
"""


def _recv_vs_done(key: str) -> tuple:
    text = SLOW + _flow("h0", "h1", 'id = "a"\n') + _flow("h2", "h3", f'{key} = ["a"]\n')
    a, b = run_scenario(loads(text, "r.toml"), progress=False).flows
    assert a.status == b.status == "ok"
    return a, b


def test_after_received_starts_half_a_round_trip_before_after() -> None:
    a, done = _recv_vs_done("after")
    a2, recv = _recv_vs_done("after_received")
    assert a2.finish_ps == a.finish_ps  # the waiting flow does not disturb the first
    assert done.start_ps == a.finish_ps
    # the ACK's way back h1 -> switch -> h0: two 5 us links, plus the ACK's serialization
    early = a.finish_ps - recv.start_ps
    assert 10 * US <= early < 11 * US, early
    # and the flow starts when the last byte is in: a's data needed at least its one-way time
    assert recv.start_ps - a.start_ps > 10 * US


def test_after_received_of_a_read_is_its_completion() -> None:
    text = (SLOW + _flow("h0", "h1", 'id = "a"\nverb = "READ"\n')
            + _flow("h2", "h3", 'after_received = ["a"]\n'))
    a, b = run_scenario(loads(text, "r.toml"), progress=False).flows
    assert a.status == b.status == "ok" and b.start_ps == a.finish_ps  # READ: dst posted it and has the bytes


def test_after_count_starts_at_the_kth_event() -> None:
    text = (STAR + _flow("h0", "h1", 'id = "small"\nsize = "4KiB"\n').replace('size = "64KiB"\n', "", 1)
            + _flow("h2", "h3", 'id = "big"\nsize = "1MiB"\n').replace('size = "64KiB"\n', "", 1)
            + _flow("h1", "h0", 'after = ["small", "big"]\nafter_count = 1\n')
            + _flow("h3", "h2", 'after = ["small", "big"]\nafter_count = 2\n')
            + _flow("h1", "h2", 'after = ["big"]\nafter_received = ["small"]\nafter_count = 1\n'))
    small, big, first, second, mixed = run_scenario(loads(text, "k.toml"), progress=False).flows
    assert all(f.status == "ok" for f in (small, big, first, second, mixed))
    assert small.finish_ps < big.finish_ps
    assert first.start_ps == small.finish_ps
    assert second.start_ps == big.finish_ps
    assert mixed.start_ps < small.finish_ps  # small's bytes are in before its ACK is back


@pytest.mark.parametrize(("extra", "where", "says"), [
    (_flow("h0", "h1", 'id = "a"\n') + _flow("h1", "h2", 'after_received = ["x"]\n'),
     "flows[1].after_received", "unknown flow id 'x'"),
    (_flow("h0", "h1", 'id = "a"\n') + _flow("h1", "h2", 'after = ["a"]\nafter_count = 2\n'),
     "flows[1].after_count", "more than the 1 flow(s) of after and after_received"),
    (_flow("h0", "h1", 'id = "a"\nafter_received = ["a"]\n'), "flows[0].after", "a cycle"),
])
def test_bad_after_received_and_count_refused(extra: str, where: str, says: str) -> None:
    with pytest.raises(ScenarioError) as exc:
        loads(STAR + extra, "bad.toml")
    (p,) = exc.value.problems
    assert p.path == where and says in str(p), str(p)
