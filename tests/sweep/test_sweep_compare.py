"""A sweep over a categorical parameter (the congestion-control algorithm) gives a side-by-side
table with FCT slowdown percentiles and one slowdown-by-size plot with a line pair per value."""

from __future__ import annotations

from pathlib import Path

import pytest

from rdmasim.cli import main
from rdmasim.sweep import run_sweep

INCAST = """
[simulation]
seed = 1
progress = false
[topology]
kind = "incast"
n_senders = 4
[link]
rate = "100Gbps"
delay = "1us"
[switch.ecn]
kmin = "5KB"
kmax = "200KB"
[[flows]]
src = "h0"
dst = "h4"
size = "4KiB"
[[flows]]
src = "h1"
dst = "h4"
size = "64KiB"
[[flows]]
src = "h2"
dst = "h4"
size = "1MiB"
[[flows]]
src = "h3"
dst = "h4"
size = "1MiB"
"""


def test_algorithms_side_by_side(tmp_path: Path) -> None:
    res = run_sweep(INCAST, {"congestion_control.algorithm": ["none", "dcqcn"]}, tmp_path / "sw",
                    executor="thread", progress=False)
    rows = res.summary_rows()
    assert [r["congestion_control.algorithm"] for r in rows] == ["none", "dcqcn"]
    for r in rows:
        assert r["completed"] == 4
        assert 1.0 <= r["median_slowdown"] <= r["p95_slowdown"] <= r["p99_slowdown"]
    assert "slowdown p50/p95/p99" in res.summary_text()
    assert list(res.summary()["congestion_control.algorithm"]) == ["none", "dcqcn"]
    by = res.flows_by_combination()
    assert list(by) == ["none", "dcqcn"]
    assert all(len(df) == 4 for df in by.values())
    fig = res.slowdown_plot()
    assert list(fig.rdmasim_data) == list(by)
    # the plot's per-bucket medians are the flows' own slowdowns (one flow per small bucket)
    none = by["none"]
    small = float(none.loc[none["size_bytes"] == 4096, "slowdown"].iloc[0])
    assert fig.rdmasim_data["none"]["median"][0] == pytest.approx(small)


def test_cli_sweep_writes_the_comparison_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scen = tmp_path / "incast.toml"
    scen.write_text(INCAST)
    out = tmp_path / "s"
    assert main(["sweep", str(scen), "--param", "congestion_control.algorithm=none,dcqcn", "--workers", "2",
                 "--out", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "slowdown p50/p95/p99" in text and f"plot: {out / 'median_slowdown.png'}" in text
    assert (out / "median_slowdown.png").stat().st_size > 10_000
    assert main(["sweep", str(scen), "--param", "congestion_control.algorithm=none,dcqcn", "--out",
                 str(tmp_path / "t"), "--quiet", "--no-plot"]) == 0
    assert not list((tmp_path / "t").glob("*.png"))
