"""[traffic.collective] with every kind and algorithm: runs, the results' algbw/busbw, and errors naming
the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rdmasim import traffic as tr
from rdmasim.scenario import ScenarioError, loads, run_scenario

STAR = """
[simulation]
progress = false
[topology]
kind = "star"
n = 8
[link]
rate = "100Gbps"
delay = "1us"
[qp]
mtu = 4096
"""


def _cases() -> list[tuple[str, str]]:
    return [(k, a) for k, algos in tr.ALGORITHMS.items() for a in algos]


@pytest.mark.parametrize(("kind", "algorithm"), _cases())
def test_every_collective_runs_and_reports_busbw(kind: str, algorithm: str) -> None:
    pipelined = algorithm in ("ring", "tree", "chain")
    text = (f'[traffic.collective]\nkind = "{kind}"\nalgorithm = "{algorithm}"\nsize = "512KiB"\n'
            + ('chunk_size = "16KiB"\n' if pipelined else ""))
    res = run_scenario(loads(STAR + text, "c.toml"), out_dir="", progress=False)
    assert all(f.status == "ok" for f in res.flows)
    assert all(f.group == f"{kind}/{algorithm}" for f in res.flows)
    (row,) = res.collectives
    first = min(f.start_ps for f in res.flows)
    last = max(f.start_ps + f.fct_ps for f in res.flows)
    assert row["time_ps"] == last - first
    assert row["algbw_Bps"] == pytest.approx(512 * 1024 / (row["time_ps"] * 1e-12))
    assert row["busbw_Bps"] == pytest.approx(row["algbw_Bps"] * tr.bus_factor(kind, 8))
    assert 0 < row["busbw_over_link_rate"] < 1
    if pipelined:
        assert max(f.size_bytes for f in res.flows) <= 16 * 1024


def test_collectives_in_metadata_and_summary(tmp_path: Path) -> None:
    text = STAR + '[traffic.collective]\nkind = "allreduce"\nalgorithm = "tree"\nsize = "1MiB"\n'
    res = run_scenario(loads(text, "c.toml"), out_dir=str(tmp_path / "out"), progress=False)
    meta = json.loads((tmp_path / "out" / "metadata.json").read_text())
    assert meta["collectives"][0]["collective"] == "allreduce/tree"
    assert "collective allreduce/tree on 8 ranks" in res.summary()


@pytest.mark.parametrize(
    ("text", "where", "says"),
    [
        ('kind = "allreduce"\nalgorithm = "star"\n', "traffic.collective.algorithm",
         "ring, tree, halving_doubling, recursive_doubling"),
        ('kind = "alltoall"\nchunk_size = "4KiB"\n', "traffic.collective",
         "chunk_size and channels apply only"),
        ('kind = "allreduce"\nchannels = 65\n', "traffic.collective.channels", "64"),
        ('kind = "allgatherr"\n', "traffic.collective.kind", "allgather"),
        ('kind = "broadcast"\nroot = 8\n', "traffic.collective", "root = 8 must be a rank in [0, 7]"),
    ],
)
def test_collective_problems_name_the_key(text: str, where: str, says: str) -> None:
    with pytest.raises(ScenarioError) as info:
        loads(STAR + "[traffic.collective]\n" + text, "bad.toml")
    msgs = [str(p) for p in info.value.problems]
    assert any(m.startswith(f"bad.toml: {where}") and says in m for m in msgs), msgs
