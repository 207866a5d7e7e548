"""The default sweep plot: the metric against the swept (numeric) parameter, one line per value of
the other parameters, legend entries naming the parameter, every label inside the figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sweep_helpers import LOSSY

from rdmasim.cli import main
from rdmasim.sweep import run_sweep

GRID = {"flows[].size": ["8KiB", "32KiB"], "impairments.loss[0].probability": [0, 0.001, 0.01]}


def _inside(fig: Any) -> None:
    """Every text the figure draws (title, axis labels, ticks, legend) lies within the figure."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    box = fig.bbox
    (ax,) = fig.axes
    texts = [ax.title, ax.xaxis.label, ax.yaxis.label, ax]  # ax: its drawn ticks and labels
    leg = ax.get_legend()
    if leg is not None:
        texts.append(leg)
    for t in texts:
        if hasattr(t, "get_text") and not t.get_text():
            continue
        b = t.get_tightbbox(r) if t is ax else t.get_window_extent(r)
        inside = (b.x0 >= box.x0 - 0.5 and b.x1 <= box.x1 + 0.5
                  and b.y0 >= box.y0 - 0.5 and b.y1 <= box.y1 + 0.5)
        assert inside, (getattr(t, "get_text", lambda: "legend")(), b, box)


def test_metric_against_the_numeric_parameter_one_line_per_other_value(tmp_path: Path) -> None:
    res = run_sweep(LOSSY, GRID, tmp_path, seeds=2, executor="thread", progress=False)
    fig = res.plot()
    _inside(fig)
    (ax,) = fig.axes
    assert ax.get_xlabel() == "impairments.loss[0].probability"
    assert "slowdown" in ax.get_ylabel()
    lines = [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]
    labels = [ln.get_label() for ln in lines]
    assert labels == ["size=8KiB", "size=32KiB"]
    assert ax.get_legend().get_title().get_text() == "flows[].size"
    for ln in lines:
        assert list(ln.get_xdata()) == [0, 0.001, 0.01]
    data = fig.rdmasim_data
    assert data["x"] == "impairments.loss[0].probability" and data["metric"] == "median_slowdown"
    title = ax.get_title()
    assert "\n" not in title and len(title) < 80 and "unfinished" not in title

    # another metric; x chosen explicitly (a size parameter is numeric too: read with its unit)
    fig2 = res.plot(metric="p99_fct_ps", x="flows[].size")
    (ax2,) = fig2.axes
    assert ax2.get_xlabel() == "flows[].size"
    lines2 = [ln for ln in ax2.get_lines() if not ln.get_label().startswith("_")]
    assert [ln.get_label() for ln in lines2] == ["probability=0", "probability=0.001", "probability=0.01"]
    assert list(lines2[0].get_xdata()) == [8192, 32768]
    assert "FCT" in ax2.get_ylabel()
    _inside(fig2)
    with pytest.raises(ValueError, match="metric"):
        res.plot(metric="nope")
    with pytest.raises(ValueError, match="x"):
        res.plot(x="link.rate")


def test_a_categorical_parameter_goes_on_x_when_nothing_is_numeric(tmp_path: Path) -> None:
    res = run_sweep(LOSSY, {"qp.recovery": ["gbn", "irn"], "flows[].size": ["8KiB"]}, tmp_path,
                    executor="thread", progress=False)
    fig = res.plot()
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["gbn", "irn"]
    _inside(fig)


def test_cli_writes_the_readable_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s"
    assert main(["sweep", str(LOSSY), "--param", "flows[].size=8KiB,32KiB",
                 "--param", "impairments.loss[0].probability=0,0.001,0.01", "--out", str(out),
                 "--workers", "2", "--quiet", "--metric", "p99_slowdown"]) == 0
    text = capsys.readouterr().out
    png = out / "p99_slowdown.png"
    assert f"plot: {png}" in text and png.stat().st_size > 10_000
    with pytest.raises(SystemExit) as info:
        main(["sweep", str(LOSSY), "--param", "flows[].size=8KiB", "--out", str(out / "x"), "--quiet",
              "--metric", "nope"])
    assert info.value.code == 2 and "--metric" in capsys.readouterr().err
    assert main(["sweep", str(LOSSY), "--param", "flows[].size=8KiB", "--out", str(out / "y"), "--quiet",
                 "--x", "link.rate"]) == 2
    assert "--x 'link.rate': not a swept parameter (allowed: flows[].size)" in capsys.readouterr().err
    assert not (out / "y").exists()
