"""Queue/pause timeline and collective completion time plots."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from plot_data import assert_png_svg, queue_samples

from rdmasim.plots import collective_stats, collective_time, pause_spans, queue_timeline, save


def test_pause_spans_match_the_sampled_pauses() -> None:
    samples, _, spans = queue_samples()
    assert all(spans), "every probe pauses at least once"
    assert pause_spans(samples["t_ps"], samples["paused"]) == spans
    assert pause_spans(np.array([0, 1, 2, 3]), np.array([True, False, True, True])) == [[(0, 1), (2, 4)]]
    assert pause_spans(np.zeros(0), np.zeros((0, 2), dtype=bool)) == [[], []]


def test_queue_timeline(tmp_path: Path) -> None:
    samples, labels, spans = queue_samples()
    fig = queue_timeline(samples, labels, ingress=True)
    data = fig.rdmasim_data  # type: ignore[attr-defined]
    assert data["pause_spans"] == spans
    assert data["paused_ps"] == [sum(e - s for s, e in sp) for sp in spans]
    np.testing.assert_array_equal(data["peak_egress_bytes"], samples["egress_bytes"].max(axis=0))
    top, bottom = fig.axes
    assert top.get_ylabel().startswith("egress queue (KiB)")
    assert bottom.get_xlabel() == "time (µs)"
    assert [t.get_text() for t in bottom.get_yticklabels()] == labels
    assert len(bottom.collections) == len(labels)  # one bar row per probe
    assert_png_svg(save(fig, tmp_path / "queues"))


def test_queue_timeline_checks_shapes_and_notes_missed_samples() -> None:
    samples, labels, _ = queue_samples(probes=2)
    with pytest.raises(ValueError, match="3 labels for 2 probes"):
        queue_timeline(samples, [*labels, "extra"])
    bad = dict(samples, egress_bytes=samples["egress_bytes"][:-1])
    with pytest.raises(ValueError, match="shape"):
        queue_timeline(bad, labels)
    fig = queue_timeline(dict(samples, missed=12), labels)
    assert "12 samples missed" in fig.axes[0].get_title()
    calm = dict(samples, paused=np.zeros_like(samples["paused"]))
    fig = queue_timeline(calm, labels)
    # one note for all, not a "never paused" row per probe
    assert [t.get_text() for t in fig.axes[1].texts] == ["none of these queues was paused by PFC"]
    assert fig.axes[1].get_yticklabels() == []
    assert fig.rdmasim_data["paused_ps"] == [0, 0]  # type: ignore[attr-defined]
    # some paused, some not: rows only for the paused ones, the others named in one note
    mixed = dict(samples, paused=np.c_[samples["paused"][:, 0], np.zeros(len(samples["t_ps"]), bool)])
    fig = queue_timeline(mixed, labels)
    assert [t.get_text() for t in fig.axes[1].get_yticklabels()] == [labels[0]]
    assert [t.get_text() for t in fig.axes[1].texts] == [f"never paused: {labels[1]}"]


def test_queue_timeline_explains_port_labels_and_never_writes_kb() -> None:
    samples, _, _ = queue_samples(probes=2)
    fig = queue_timeline(samples, ["s0:8->h8 p3", "s0:1->h1 p3"])
    legend = fig.axes[0].get_legend()
    assert legend.get_title().get_text() == "switch:port->next hop, pN = priority N"
    texts = [fig.axes[0].get_ylabel(), fig.axes[0].get_title(), fig.axes[1].get_ylabel()]
    assert not any("KB" in t for t in texts)


def _times() -> tuple[list[float], list[np.ndarray]]:
    rng = np.random.default_rng(5)
    rates = [25e9, 50e9, 100e9, 200e9, 400e9]
    # an all-reduce of 64 MB: 2(n-1)/n * size * 8 / rate, plus jitter
    times = [2 * 7 / 8 * 64e6 * 8 / r * 1e12 * (1 + rng.exponential(0.05, 10)) for r in rates]
    return rates, times


def test_collective_stats_and_plot(tmp_path: Path) -> None:
    rates, times = _times()
    st = collective_stats(rates, times)
    np.testing.assert_allclose(st["mean_ps"], [t.mean() for t in times])
    np.testing.assert_allclose(st["min_ps"], [t.min() for t in times])
    np.testing.assert_allclose(st["max_ps"], [t.max() for t in times])
    assert st["n"].tolist() == [10] * 5

    def ideal(r: float) -> float:
        return 2 * 7 / 8 * 64e6 * 8 / r * 1e12

    gbps = [r / 1e9 for r in rates]
    for analytic in (ideal, (rates, [ideal(r) for r in rates]), [ideal(r) for r in rates]):
        fig = collective_time(rates, times, "link rate (b/s)", analytic=analytic, points=True)
        ax = fig.axes[0]
        assert ax.get_ylabel() == "completion time (ms)" and ax.get_xscale() == "linear"
        assert "10 runs per point" in ax.get_title()
        assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == \
            ["analytic", "simulated: mean, min–max"]
        curve = ax.get_lines()[-1]  # the analytic curve, in ms like the axis
        np.testing.assert_allclose(np.interp(rates, *curve.get_data()), [ideal(r) / 1e9 for r in rates],
                                   rtol=1e-2 if callable(analytic) else 1e-12)
    assert_png_svg(save(fig, tmp_path / "collective"))
    fig = collective_time(gbps, times, "link rate (Gb/s)")
    assert fig.axes[0].get_xscale() == "linear"


def test_collective_loss_sweep_with_an_empty_point(tmp_path: Path) -> None:
    loss = [1e-5, 1e-4, 1e-3, 1e-2]
    times = [[1e9, 1.1e9], [1.2e9], [], [5e9, np.nan, 7e9]]  # no run finished at 1e-3
    fig = collective_time(loss, times, "loss rate")
    st = fig.rdmasim_data  # type: ignore[attr-defined]
    assert st["n"].tolist() == [2, 1, 0, 2]
    assert np.isnan(st["mean_ps"][2]) and st["mean_ps"][3] == 6e9
    assert fig.axes[0].get_xscale() == "log"
    assert "0–2 runs per point" in fig.axes[0].get_title()
    assert_png_svg(save(fig, tmp_path / "loss"))
    with pytest.raises(ValueError, match="4 x values but 3"):
        collective_time(loss, times[:3], "loss rate")
    with pytest.raises(ValueError, match="match x"):
        collective_time(loss, times, "loss rate", analytic=[1.0, 2.0])
