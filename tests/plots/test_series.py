"""Goodput from cumulative acknowledged bytes, and DCQCN rate plots."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from plot_data import LINE_RATE_BPS, as_dict, assert_png_svg, flow_series

from rdmasim.plots import dcqcn_rates, goodput, goodput_over_time, save
from rdmasim.plots.series import nice_bin_ps


def test_goodput_per_sample_conserves_bytes_and_sums() -> None:
    series = flow_series()
    g = goodput(series, bin_ps=10**6)  # one bin per sample
    assert len(g["t_ps"]) == 299 and g["t_ps"][0] == 0
    for fid in range(20):
        acked = series["bytes_acked"][series["flow_id"] == fid].astype(float)
        # Gb/s * bin -> bytes: every byte acknowledged after the first sample, once
        got_bytes = g["flows"][fid].sum() * 1e9 * g["bin_ps"] * 1e-12 / 8
        assert got_bytes == pytest.approx(acked[-1] - acked[0], rel=1e-9)
        assert g["bytes"][fid] == pytest.approx(acked[-1] - acked[0])
        # per-sample differences, exactly
        np.testing.assert_allclose(g["flows"][fid], np.diff(acked) * 8 / 1e-6 / 1e9)
    np.testing.assert_allclose(g["aggregate"], np.sum([g["flows"][f] for f in range(20)], axis=0))
    np.testing.assert_allclose(g["flows"][0], 10.0, rtol=1e-3)  # flow 0 runs at 10 Gb/s


def test_default_bin_is_chosen_from_the_run() -> None:
    # 299 µs sampled every 1 µs: about 150 bins of a round width (2 µs), not one per sample
    g = goodput(flow_series())
    assert g["bin_ps"] == 2 * 10**6 and len(g["t_ps"]) == 150
    # never narrower than the sampling period
    g = goodput(flow_series(period_ps=10**7, steps=30))
    assert g["bin_ps"] == 10**7
    # a given number of bins
    g = goodput(flow_series(), bins=10)
    assert len(g["t_ps"]) == 10 and g["bin_ps"] == -(-299 * 10**6 // 10)
    assert nice_bin_ps(2.3e7) == 2 * 10**5 and nice_bin_ps(7e8) == 5 * 10**6
    with pytest.raises(ValueError, match="bins"):
        goodput(flow_series(), bins=0)


def test_goodput_with_wider_bins() -> None:
    series = flow_series()
    g = goodput(as_dict(series), bin_ps=10 * 10**6)
    assert g["bin_ps"] == 10**7 and len(g["t_ps"]) == 30
    np.testing.assert_allclose(g["flows"][0], 10.0, rtol=1e-3)
    # a bin is the mean of the per-sample goodputs it covers
    fine = goodput(series, bin_ps=10**6)["aggregate"]
    np.testing.assert_allclose(g["aggregate"][:29], fine[:290].reshape(29, 10).mean(axis=1))
    with pytest.raises(ValueError, match="bin_ps"):
        goodput(series, bin_ps=0)


def test_irregular_samples_hold_the_last_value() -> None:
    series = {"t_ps": [0, 3, 10, 0, 10], "flow_id": [1, 1, 1, 2, 2], "bytes_acked": [0, 300, 1000, 0, 0]}
    g = goodput(series, bin_ps=5)
    # flow 1: 300 B acked by t=5 (last sample at 3), 700 more by t=10
    np.testing.assert_allclose(g["flows"][1], np.array([300, 700]) * 8 / 5e-12 / 1e9)
    np.testing.assert_allclose(g["flows"][2], 0.0)


def _legend(ax: object) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]  # type: ignore[attr-defined]


def test_goodput_plot_shows_the_top_flows_by_bytes_and_says_what_is_left_out(tmp_path: Path) -> None:
    series = flow_series(nflows=20)
    fig = goodput_over_time(series, line_rate_bps=LINE_RATE_BPS, capacity_bps=LINE_RATE_BPS)
    top, bottom = fig.axes
    data = fig.rdmasim_data  # type: ignore[attr-defined]
    by_bytes = sorted(data["bytes"], key=lambda f: -data["bytes"][f])[:8]
    assert data["shown"] == sorted(by_bytes)
    assert _legend(bottom) == [f"flow {f}" for f in sorted(by_bytes)] + ["link rate (100 Gb/s)"]
    assert _legend(top) == ["aggregate of all 20 flows", "capacity (100 Gb/s)"]
    assert "8 of 20 flows drawn one by one (those with the most bytes)" in top.get_title()
    assert "the other 12 are only in the aggregate" in top.get_title()
    assert "2 µs bins" in top.get_title()
    # the capacity line is drawn where it is
    assert [ln.get_ydata()[0] for ln in top.get_lines() if ln.get_linestyle() == ":"] == [100.0]
    assert bottom.get_xlabel() == "time (µs)" and bottom.get_ylabel() == "per flow (Gb/s)"
    assert top.get_ylabel() == "aggregate (Gb/s)"
    assert all(len(a.patches) or len(a.get_lines()) for a in fig.axes)  # no empty panel
    assert_png_svg(save(fig, tmp_path / "goodput"))


def test_goodput_plot_counts_every_flow_of_the_table() -> None:
    # 30 flows in the run; 10 finished between two samples, so the series has only 20
    series = flow_series(nflows=20)
    table = {"flow_id": np.arange(30), "start_ps": np.r_[np.zeros(20), np.full(10, 5 * 10**6)],
             "finish_ps": np.r_[np.full(20, 299 * 10**6), np.full(10, 5 * 10**6 + 500_000)],
             "bytes_delivered": np.r_[[series["bytes_acked"][series["flow_id"] == f].max()
                                       for f in range(20)], np.full(10, 1000)]}
    fig = goodput_over_time(series, flow_table=table, bin_ps=10**6)
    title = fig.axes[0].get_title()
    assert "8 of 30 flows" in title and "the other 22" in title
    assert _legend(fig.axes[0]) == ["aggregate of all 30 flows"]
    data = fig.rdmasim_data  # type: ignore[attr-defined]
    # the short flows' bytes are in the aggregate, in the bin where they finished
    plain = goodput(series, bin_ps=10**6)["aggregate"]
    extra = (data["aggregate"] - plain) * 1e9 * 1e-6 / 8  # bytes per bin
    assert extra[5] == pytest.approx(10 * 1000) and np.delete(extra, 5) == pytest.approx(0, abs=1e-6)


def test_goodput_plot_chosen_flows(tmp_path: Path) -> None:
    fig = goodput_over_time(flow_series(nflows=6), flows=[0, 5], bin_ps=5 * 10**6)
    assert _legend(fig.axes[1]) == ["flow 0", "flow 5"]
    assert "5 µs bins" in fig.axes[0].get_title()
    assert "2 of 6 flows drawn one by one (those chosen)" in fig.axes[0].get_title()
    with pytest.raises(ValueError, match=r"\[99\]"):
        goodput_over_time(flow_series(nflows=6), flows=[0, 99])
    assert_png_svg(save(fig, tmp_path / "goodput2", formats=("svg",)))


def test_goodput_capacity_far_above_the_data_is_named_not_drawn() -> None:
    fig = goodput_over_time(flow_series(nflows=4), capacity_bps=16 * LINE_RATE_BPS, capacity_label="16 links")
    top = fig.axes[0]
    assert "16 links:\nabove the plot" in _legend(top)
    assert top.get_ylim()[1] < 400  # not flattened by a line at 1600 Gb/s


def test_dcqcn_rates_line_rate_substitution(tmp_path: Path) -> None:
    series = flow_series(nflows=4)
    fig = dcqcn_rates(series, line_rate_bps=LINE_RATE_BPS)
    drawn = fig.rdmasim_data  # type: ignore[attr-defined]
    for fid, (t, rate) in drawn.items():
        raw = series["rate_bps"][series["flow_id"] == fid]
        np.testing.assert_array_equal(t, series["t_ps"][series["flow_id"] == fid])
        np.testing.assert_array_equal(rate, np.where(raw == 0, LINE_RATE_BPS, raw))
    assert "line rate (100 Gb/s)" in _legend(fig.axes[0])
    title = fig.axes[0].get_title()
    assert "not limited by DCQCN is drawn at line rate" in title and "CNP" in title
    assert_png_svg(save(fig, tmp_path / "rates"))

    fig = dcqcn_rates(as_dict(series), flows=2)
    drawn = fig.rdmasim_data  # type: ignore[attr-defined]
    assert list(drawn) == [0, 1]
    raw = series["rate_bps"][series["flow_id"] == 1]
    assert np.isnan(drawn[1][1][raw == 0]).all() and (drawn[1][1][raw > 0] == raw[raw > 0]).all()
    assert "samples without a DCQCN limit (line rate) are not drawn" in fig.axes[0].get_title()
    assert "2 of 4 flows" in fig.axes[0].get_title()


def test_dcqcn_many_flows_are_a_band_with_the_median() -> None:
    one = flow_series(nflows=1)
    # 8 identical flows: one band, not 8 lines behind an 8-entry legend
    same = np.concatenate([np.array(one) for _ in range(8)])
    same["flow_id"] = np.repeat(np.arange(8), len(one))
    fig = dcqcn_rates(same, line_rate_bps=LINE_RATE_BPS)
    ax = fig.axes[0]
    assert _legend(ax) == ["min-max over 8 flows", "median flow", "line rate (100 Gb/s)"]
    assert "coincide" in ax.get_title()
    t, lo, med, hi = fig.rdmasim_data["band"]  # type: ignore[attr-defined]
    np.testing.assert_array_equal(lo, hi)
    # different flows: the band spans them, the median is between
    fig = dcqcn_rates(flow_series(nflows=10), line_rate_bps=LINE_RATE_BPS)
    t, lo, med, hi = fig.rdmasim_data["band"]  # type: ignore[attr-defined]
    assert (lo <= med).all() and (med <= hi).all() and (hi > lo).any()
    assert "coincide" not in fig.axes[0].get_title()


def test_missing_columns_are_named() -> None:
    with pytest.raises(ValueError, match="rate_bps"):
        dcqcn_rates({"t_ps": [0], "flow_id": [0], "bytes_acked": [0]})


def test_goodput_of_coinciding_flows_is_one_band() -> None:
    one = flow_series(nflows=1)
    same = np.concatenate([np.array(one) for _ in range(8)])
    same["flow_id"] = np.repeat(np.arange(8), len(one))
    fig = goodput_over_time(same, line_rate_bps=LINE_RATE_BPS)
    assert fig.rdmasim_data["band"]  # type: ignore[attr-defined]
    assert _legend(fig.axes[1]) == ["min-max over 8 flows", "median flow", "link rate (100 Gb/s)"]
    assert "coincide" in fig.axes[0].get_title()
    # distinct flows stay lines
    fig = goodput_over_time(flow_series(nflows=8))
    assert not fig.rdmasim_data["band"]  # type: ignore[attr-defined]
    assert _legend(fig.axes[1]) == [f"flow {i}" for i in range(8)]
