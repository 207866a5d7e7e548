"""Goodput from cumulative acknowledged bytes, and DCQCN rate plots."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from plot_data import LINE_RATE_BPS, as_dict, assert_png_svg, flow_series

from rdmasim.plots import dcqcn_rates, goodput, goodput_over_time, save


def test_goodput_per_sample_conserves_bytes_and_sums() -> None:
    series = flow_series()
    g = goodput(series)
    assert g["bin_ps"] == 10**6  # the sampling period
    assert len(g["t_ps"]) == 299 and g["t_ps"][0] == 0
    for fid in range(20):
        acked = series["bytes_acked"][series["flow_id"] == fid].astype(float)
        # Gb/s * bin -> bytes: every byte acknowledged after the first sample, once
        got_bytes = g["flows"][fid].sum() * 1e9 * g["bin_ps"] * 1e-12 / 8
        assert got_bytes == pytest.approx(acked[-1] - acked[0], rel=1e-9)
        # per-sample differences, exactly
        np.testing.assert_allclose(g["flows"][fid], np.diff(acked) * 8 / 1e-6 / 1e9)
    np.testing.assert_allclose(g["aggregate"], np.sum([g["flows"][f] for f in range(20)], axis=0))
    np.testing.assert_allclose(g["flows"][0], 10.0, rtol=1e-3)  # flow 0 runs at 10 Gb/s


def test_goodput_with_wider_bins() -> None:
    series = flow_series()
    g = goodput(as_dict(series), bin_ps=10 * 10**6)
    assert g["bin_ps"] == 10**7 and len(g["t_ps"]) == 30
    np.testing.assert_allclose(g["flows"][0], 10.0, rtol=1e-3)
    # a bin is the mean of the per-sample goodputs it covers
    fine = goodput(series)["aggregate"]
    np.testing.assert_allclose(g["aggregate"][:29], fine[:290].reshape(29, 10).mean(axis=1))
    with pytest.raises(ValueError, match="bin_ps"):
        goodput(series, bin_ps=0)


def test_irregular_samples_hold_the_last_value() -> None:
    series = {"t_ps": [0, 3, 10, 0, 10], "flow_id": [1, 1, 1, 2, 2], "bytes_acked": [0, 300, 1000, 0, 0]}
    g = goodput(series, bin_ps=5)
    # flow 1: 300 B acked by t=5 (last sample at 3), 700 more by t=10
    np.testing.assert_allclose(g["flows"][1], np.array([300, 700]) * 8 / 5e-12 / 1e9)
    np.testing.assert_allclose(g["flows"][2], 0.0)


def test_goodput_plot_limits_the_legend_to_16_flows(tmp_path: Path) -> None:
    fig = goodput_over_time(flow_series(nflows=20))
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [f"flow {i}" for i in range(16)] + ["aggregate (all flows)"]
    assert "16 of 20 flows shown" in ax.get_title()
    assert ax.get_xlabel() == "time (µs)" and ax.get_ylabel() == "goodput (Gb/s)"
    assert_png_svg(save(fig, tmp_path / "goodput"))


def test_goodput_plot_chosen_flows(tmp_path: Path) -> None:
    fig = goodput_over_time(flow_series(nflows=6), flows=[0, 5], bin_ps=5 * 10**6)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["flow 0", "flow 5", "aggregate (all flows)"]
    assert "5 µs bins" in fig.axes[0].get_title()
    with pytest.raises(ValueError, match=r"\[99\]"):
        goodput_over_time(flow_series(nflows=6), flows=[0, 99])
    assert_png_svg(save(fig, tmp_path / "goodput2", formats=("svg",)))


def test_dcqcn_rates_line_rate_substitution(tmp_path: Path) -> None:
    series = flow_series(nflows=4)
    fig = dcqcn_rates(series, line_rate_bps=LINE_RATE_BPS)
    drawn = fig.rdmasim_data  # type: ignore[attr-defined]
    for fid, (t, rate) in drawn.items():
        raw = series["rate_bps"][series["flow_id"] == fid]
        np.testing.assert_array_equal(t, series["t_ps"][series["flow_id"] == fid])
        np.testing.assert_array_equal(rate, np.where(raw == 0, LINE_RATE_BPS, raw))
    assert "line rate" in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert_png_svg(save(fig, tmp_path / "rates"))

    fig = dcqcn_rates(as_dict(series), flows=2)
    drawn = fig.rdmasim_data  # type: ignore[attr-defined]
    assert list(drawn) == [0, 1]
    raw = series["rate_bps"][series["flow_id"] == 1]
    assert np.isnan(drawn[1][1][raw == 0]).all() and (drawn[1][1][raw > 0] == raw[raw > 0]).all()
    assert "unlimited (0) samples not drawn" in fig.axes[0].get_title()


def test_missing_columns_are_named() -> None:
    with pytest.raises(ValueError, match="rate_bps"):
        dcqcn_rates({"t_ps": [0], "flow_id": [0], "bytes_acked": [0]})
