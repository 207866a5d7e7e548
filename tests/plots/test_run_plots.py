"""The plots a run writes, checked for what a reader needs: the right flow counts, labels with units,
zoomed loss recovery, link capacity, no empty panel, and axes chosen from the data."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rdmasim import plots
from rdmasim.demo import DemoConfig, run_demo
from rdmasim.demo_scenarios import bundled_text
from rdmasim.scenario import loads, run_scenario


def _run(name: str, tmp: Path) -> Any:
    return run_scenario(loads(bundled_text(name), f"{name}.toml"), out_dir=str(tmp / name), progress=False)


def _no_empty_panel(fig: Any) -> None:
    for ax in fig.axes:
        assert ax.get_lines() or ax.patches or ax.collections or ax.texts, ax.get_title()


def _text_inside(fig: Any) -> None:
    """Every title, label, legend entry and note lies inside the figure (nothing cut off)."""
    fig.draw_without_rendering()
    box = fig.bbox
    texts = list(fig.texts)
    for ax in fig.axes:
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        leg = ax.get_legend()
        if leg is not None:
            texts += [*leg.get_texts(), leg.get_title()]
    for t in texts:
        if t.get_visible() and t.get_text():
            b = t.get_window_extent()
            assert b.x0 >= box.x0 - 1 and b.x1 <= box.x1 + 1 and b.y0 >= box.y0 - 1 and b.y1 <= box.y1 + 1, \
                (t.get_text()[:80], b, box)


@pytest.fixture(scope="module")
def ring(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return _run("ring_allreduce", tmp_path_factory.mktemp("ring"))


@pytest.fixture(scope="module")
def websearch(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return _run("websearch_leafspine", tmp_path_factory.mktemp("ws"))


def test_websearch_goodput_counts_every_flow_of_the_run(websearch: Any) -> None:
    res = websearch
    n = len(res.flows)
    sampled = len(np.unique(res.flow_samples.flow_id))
    assert sampled < n  # some flows ran between two samples: the series alone undercounts
    fig = plots.goodput_over_time(res.flow_samples.as_dict(), flow_table=res.rows(),
                                  line_rate_bps=100e9)
    title = fig.axes[0].get_title()
    assert f"8 of {n} flows" in title and f"the other {n - 8} are only in the aggregate" in title
    assert fig.rdmasim_data["total_flows"] == n  # type: ignore[attr-defined]
    # every byte of every flow is in the aggregate
    data = fig.rdmasim_data  # type: ignore[attr-defined]
    width_s = np.diff(data["edges_ps"]) * 1e-12
    total = float(np.sum(data["aggregate"] * 1e9 * width_s / 8))
    assert total == pytest.approx(sum(f.bytes_delivered for f in res.flows), rel=1e-6)
    # bins of tens of µs or more, not a solid band of 2 µs bins
    assert data["bin_ps"] >= 10 * 10**6 and len(data["t_ps"]) <= 200
    _no_empty_panel(fig)


def test_websearch_written_plots_carry_capacity_and_units(websearch: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    files = websearch.files
    assert {"plot_goodput", "plot_dcqcn_rates", "plot_queues", "plot_fct_slowdown"} <= set(files)
    for k in ("plot_goodput", "plot_queues", "plot_fct_slowdown", "plot_dcqcn_rates"):
        assert Path(files[k]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    res = websearch
    made: dict[str, Any] = {}

    def grab(fig: Any, stem: Any, formats: Any = ("png",)) -> list[Path]:
        made[Path(stem).name] = fig  # the figures RunResult.plot draws, kept to inspect
        return [Path(str(stem) + ".png")]

    monkeypatch.setattr(plots, "save", grab)
    res.plot(Path("/nonexistent-never-written"))
    good = made["goodput"]
    legend = [t.get_text() for t in good.axes[1].get_legend().get_texts()]
    assert "link rate (100 Gb/s)" in legend
    dsts = len({f.dst for f in res.flows})
    top_legend = [t.get_text() for t in good.axes[0].get_legend().get_texts()]
    assert any(f"{dsts} x 100 Gb/s" in t for t in top_legend)
    q = made["queues"]
    assert q.axes[0].get_ylabel().endswith("(KiB)") or q.axes[0].get_ylabel().endswith("(MiB)")
    assert q.axes[0].get_legend().get_title().get_text().startswith("switch:port->next hop")
    for fig in made.values():
        _no_empty_panel(fig)
        _text_inside(fig)
        for ax in fig.axes:
            assert "KB" not in ax.get_ylabel() + ax.get_title()
        assert any("(" in ax.get_xlabel() for ax in fig.axes)  # a unit on the time / value axis


def test_incast_rates_are_one_band_and_queues_one_note(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    res = _run("incast_dcqcn", tmp_path)
    fig = plots.dcqcn_rates(res.flow_samples.as_dict(), line_rate_bps=100e9)
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["min-max over 8 flows", "median flow", "line rate (100 Gb/s)"]
    # rate 0 (no limit) is drawn at line rate: the first samples are at 100 Gb/s, none are NaN
    t, lo, med, hi = fig.rdmasim_data["band"]  # type: ignore[attr-defined]
    assert med[0] == 100e9 and np.isfinite(med).all()
    assert "their rates coincide: one line" in ax.get_title()
    _text_inside(fig)  # the long caption is wrapped, not cut off at the figure's edges
    q = res.queue_samples
    fig = plots.queue_timeline(q, q["labels"])
    notes = [t.get_text() for t in fig.axes[1].texts]
    assert len(notes) <= 1 and not any(t == "never paused" for t in notes)
    # the run's queues.png draws the queues that held something and names the rest in one clause
    made: dict[str, Any] = {}

    def grab(fig: Any, stem: Any, formats: Any = ("png",)) -> list[Path]:
        made[Path(stem).name] = fig
        return [Path(str(stem) + ".png")]

    monkeypatch.setattr(plots, "save", grab)
    res.plot(tmp_path / "never-written")
    rates = made["dcqcn_rates"]  # the fair share of the receiver's link, and what the ceilings do
    legend = [t.get_text() for t in rates.axes[0].get_legend().get_texts()]
    assert "fair share: h8's link / 8 flows (12.5 Gb/s)" in legend
    assert any(ln.get_linestyle() == "--" and ln.get_ydata()[0] == 12.5 for ln in rates.axes[0].get_lines())
    late = rates.rdmasim_data["band"][2]  # type: ignore[attr-defined]
    below = float(np.median(late[len(late) // 2:])) < 0.9 * 12.5e9
    assert ("the flows under-use the bottleneck" in rates.axes[0].get_title()) == below
    _text_inside(rates)
    qf = made["queues"]
    legend = [t.get_text() for t in qf.axes[0].get_legend().get_texts()]
    peaks = np.asarray(q["egress_bytes"]).max(axis=0)
    deepest = q["labels"][int(np.argmax(peaks))]
    assert deepest in legend and len(legend) < len(q["labels"])
    flat = [lab for lab, p in zip(q["labels"], peaks, strict=True) if p < 0.05 * peaks.max()]
    assert not set(flat) & set(legend)  # no flat line at zero behind a long legend
    n_other = len(q["labels"]) - len(legend)
    assert re.search(rf"the other {n_other} (stayed empty|never held more than [\d.]+ (KiB|MiB|bytes))",
                     qf.axes[0].get_title())
    _text_inside(qf)


def test_ring_allreduce_goodput_draws_the_flows_running_in_each_bin(ring: Any) -> None:
    """Every flow of a collective has the same size: rather than the first stage's 8 flows (and an
    empty panel once they end), the per-flow panel is the band over the flows running in each bin."""
    res = ring
    n = len(res.flows)
    fig = plots.goodput_over_time(res.flow_samples.as_dict(), flow_table=res.rows(), line_rate_bps=100e9)
    d = fig.rdmasim_data  # type: ignore[attr-defined]
    legend = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert legend == ["min-max over the flows running", "median running flow", "link rate (100 Gb/s)"]
    assert d["shown"] == [] and d["band"]
    run = d["running"]
    # a flow runs in every bin of the collective: the panel is never empty
    assert (run["count"] > 0).mean() > 0.95 and np.isfinite(run["median"][run["count"] > 0]).all()
    hosts = len({f.src for f in res.flows})
    assert hosts <= run["count"].max() <= 2 * hosts  # one flow per host at a time (two at a stage change)
    # each running flow is near line rate most of the time, never above it
    assert np.nanmedian(run["median"]) > 90 and np.nanmax(run["max"]) <= 100.0 * 1.001
    assert f"all {n} flows moved 2 MiB" in fig.axes[0].get_title()
    _no_empty_panel(fig)
    _text_inside(fig)
    # with sizes that differ, the flows with the most bytes are drawn one by one, as before
    rows = res.rows()
    big = list(range(20, 28))
    for k in big:
        rows[k] = {**rows[k], "bytes_delivered": rows[k]["bytes_delivered"] * 2}
    fig = plots.goodput_over_time(res.flow_samples.as_dict(), flow_table=rows)
    ids = [rows[k]["flow_id"] for k in big]
    assert fig.rdmasim_data["shown"] == ids and "running" not in fig.rdmasim_data  # type: ignore[attr-defined]


def test_ring_allreduce_slowdown_is_a_cdf_with_readable_ticks(ring: Any) -> None:
    res = ring
    assert len({f.size_bytes for f in res.flows}) == 1  # a single-size workload
    fig = plots.fct_slowdown_by_size(res.rows())
    ax = fig.axes[0]
    assert ax.get_ylabel() == "fraction of flows (CDF)"
    assert ax.get_xscale() == "linear"
    fig.canvas.draw()
    ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert len(ticks) >= 3 and len(set(ticks)) == len(ticks)  # distinct labels, not "1" alone
    sds = [f.slowdown for f in res.flows]
    lo, hi = ax.get_xlim()
    assert lo < min(sds) and max(sds) < hi and hi - lo < 0.1  # around the data
    assert f"n={len(res.flows)}" in ax.get_legend().get_texts()[0].get_text()
    assert f"every flow is {res.flows[0].size_bytes:,} bytes" in ax.get_title()  # exact, with its unit
    _text_inside(fig)


def test_slowdown_by_size_picks_log_or_linear_from_the_data() -> None:
    wide = {"size_bytes": [1e3, 1e5, 1e7], "finish_ps": [1, 1, 1], "slowdown": [1.0, 30.0, 2.0]}
    assert plots.fct_slowdown_by_size(wide).axes[0].get_yscale() == "log"
    narrow = {"size": [1e3, 1e5, 1e7], "finish_ps": [1, 1, 1], "slowdown": [1.02, 1.05, 1.03]}
    ax = plots.fct_slowdown_by_size(narrow).axes[0]
    assert ax.get_yscale() == "linear" and 1.0 < ax.get_ylim()[0] < 1.02 and ax.get_ylim()[1] < 1.1


def test_psn_plot_zooms_into_the_first_rewinds(tmp_path: Path) -> None:
    run_demo(tmp_path, DemoConfig(size_bytes=1 << 20, messages=2, loss=0.005, seed=3), plot=False)
    fig = plots.psn_over_time(tmp_path / "demo.pcap")
    d = fig.rdmasim_data  # type: ignore[attr-defined]
    assert len(d["rewinds"]) >= 2 and d["retx"].sum() > 0
    main, *zooms = fig.axes
    assert len(zooms) == min(3, len(d["rewinds"]))
    assert f"{int(d['retx'].sum())} retransmissions in {len(d['rewinds'])} rewinds" in main.get_title()
    for k, (ax, (lo, hi)) in enumerate(zip(zooms, d["zooms"], strict=True)):
        i = int(d["rewinds"][k])
        # the rewind is inside its panel, and the panel is a small part of the run
        assert lo <= d["t_ps"][i] <= hi and (hi - lo) < 0.2 * d["t_ps"][-1]
        assert ax.get_title().startswith(f"rewind {k + 1}: back to PSN {int(d['psn'][i])}")
        assert "NAK" in ax.get_title() or "timeout" in ax.get_title()
    # legend markers at plot size, not scaled up
    sizes = [h.get_markersize() for h in main.get_legend().legend_handles]
    assert max(sizes) <= 10
    assert main.get_xlabel() in ("time (µs)", "time (ms)")
    _no_empty_panel(fig)
    _text_inside(fig)
