"""FCT slowdown by size: the numbers per bucket, the comparison forms, and the CLI summary table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from plot_data import as_dict, assert_png_svg, flow_table

from rdmasim.plots import (
    CLASSIC_BUCKETS,
    bucket_edges,
    fct_slowdown_by_size,
    finished_mask,
    save,
    slowdown_buckets,
    summary_table,
)


def _kinds() -> list[Any]:
    return ["struct", "dict", pytest.param("pandas", marks=pytest.mark.skipif(
        not _has_pandas(), reason="pandas not installed"))]


def _has_pandas() -> bool:
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


def _as(kind: str, table: np.ndarray) -> Any:
    if kind == "struct":
        return table
    if kind == "dict":
        return as_dict(table)
    import pandas as pd

    df = pd.DataFrame(table)
    df.loc[df["status"] != "ok", "finish_ps"] = None
    return df


def _expected(table: np.ndarray, edges: np.ndarray) -> tuple[list[int], list[float], list[float]]:
    ok = table["status"] == "ok"
    counts, med, p99 = [], [], []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        sd = table["slowdown"][ok & (table["size_bytes"] >= lo) & (table["size_bytes"] < hi)]
        counts.append(len(sd))
        med.append(float(np.median(sd)) if len(sd) else np.nan)
        p99.append(float(np.percentile(sd, 99)) if len(sd) else np.nan)
    return counts, med, p99


@pytest.mark.parametrize("kind", _kinds())
@pytest.mark.parametrize("buckets", [None, "classic", 7])
def test_bucket_statistics_match_numpy(kind: str, buckets: Any) -> None:
    table = flow_table()
    got = slowdown_buckets(_as(kind, table), buckets)
    edges = got["edges"]
    if buckets == "classic":
        np.testing.assert_array_equal(edges, CLASSIC_BUCKETS)
    elif buckets is None:  # decades covering 100 B .. 30 MB
        np.testing.assert_allclose(edges, [1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8])
    else:
        assert len(edges) == 8 and edges[0] == table["size_bytes"].min()
    counts, med, p99 = _expected(table, edges)
    assert got["count"].tolist() == counts
    np.testing.assert_allclose(got["median"], med)
    np.testing.assert_allclose(got["p99"], p99)
    assert got["unfinished_total"] == 17
    assert got["unfinished"].sum() == 17  # every flow falls in some bucket
    assert got["count"].sum() + 17 == len(table)


def test_buckets_named_and_explicit() -> None:
    table = flow_table(n=100)
    got = slowdown_buckets(table, "classic")
    assert got["labels"] == ["<10kB", "10kB–100kB", "100kB–1MB", "1MB–10MB", ">10MB"]
    got = slowdown_buckets(table, [0, 1e5, np.inf])
    assert got["labels"] == ["<100kB", ">100kB"]
    with pytest.raises(ValueError, match="increasing"):
        bucket_edges(np.ones(3), [10, 5])
    with pytest.raises(ValueError, match="classic"):
        bucket_edges(np.ones(3), "decades")


def test_unfinished_spelled_nan_none_or_minus_one() -> None:
    cols = {"size": np.array([1e3, 1e3, 1e3, 1e3]),
            "finish_ps": np.array([5.0, np.nan, None, -1], dtype=object),
            "fct_ps": np.array([5.0, None, None, None], dtype=object), "ideal_fct_ps": np.array([2, 2, 2, 2])}
    assert finished_mask(cols).tolist() == [True, False, False, False]
    got = slowdown_buckets(cols)  # slowdown computed from fct / ideal
    assert got["count"].tolist() == [1] and got["median"][0] == 2.5 and got["unfinished_total"] == 3


@pytest.mark.parametrize("kind", _kinds())
def test_slowdown_plot_writes_png_and_svg(kind: str, tmp_path: Path) -> None:
    table = flow_table()
    fig = fct_slowdown_by_size(_as(kind, table), buckets="classic")
    data = fig.rdmasim_data["all flows"]  # type: ignore[attr-defined]
    np.testing.assert_allclose(data["p99"], _expected(table, np.array(CLASSIC_BUCKETS))[2])
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    assert "unfinished flows excluded: 17" in ax.get_title()
    assert [t.get_text().split("\n")[1] for t in ax.get_xticklabels()] == \
        [f"n={c}" for c in data["count"]]
    paths = save(fig, tmp_path / "fct")
    assert [p.name for p in paths] == ["fct.png", "fct.svg"]
    assert_png_svg(paths)


def test_comparison_as_dict_of_tables_and_by_group(tmp_path: Path) -> None:
    on, off = flow_table(seed=3, unfinished=2), flow_table(seed=4, unfinished=9)
    fig = fct_slowdown_by_size({"DCQCN on": on, "DCQCN off": as_dict(off)})
    data = fig.rdmasim_data  # type: ignore[attr-defined]
    assert list(data) == ["DCQCN on", "DCQCN off"]
    np.testing.assert_array_equal(data["DCQCN on"]["edges"], data["DCQCN off"]["edges"])
    assert data["DCQCN off"]["unfinished_total"] == 9
    assert "DCQCN on 2, DCQCN off 9" in fig.axes[0].get_title()
    assert len(fig.axes[0].get_legend().get_texts()) == 4  # median and p99 per table
    assert_png_svg(save(fig, tmp_path / "compare"))

    table = flow_table()
    fig = fct_slowdown_by_size(table, by="group")
    data = fig.rdmasim_data  # type: ignore[attr-defined]
    assert list(data) == ["dcqcn", "nocc"]
    dcqcn = table[table["group"] == "dcqcn"]
    counts, med, _ = _expected(dcqcn, data["dcqcn"]["edges"])
    assert data["dcqcn"]["count"].tolist() == counts
    np.testing.assert_allclose(data["dcqcn"]["median"], med)
    assert_png_svg(save(fig, tmp_path / "by_group", formats=("png",)))


@pytest.mark.parametrize("kind", _kinds())
def test_summary_table(kind: str) -> None:
    table = flow_table()
    text = summary_table(_as(kind, table))
    lines = text.splitlines()
    assert lines[0].split() == ["flows", "completed", "mean", "FCT", "median", "FCT", "p99", "FCT", "p99",
                                "slowdown", "retx", "CNPs"]
    row = lines[2]
    ok = table["status"] == "ok"
    assert " 400 " in row and " 383 " in row
    assert f"{np.percentile(table['slowdown'][ok], 99):.2f}" in row
    assert f"{int(table['retx_pkts'].sum()):,}" in row and f"{int(table['cnps'].sum()):,}" in row
    med_us = np.median(table["fct_ps"][ok]) / 1e6  # the synthetic median FCT is tens of µs
    p99_ms = np.percentile(table["fct_ps"][ok], 99) / 1e9  # and the p99 a few ms
    assert 10 < med_us < 1000 and 1 < p99_ms < 1000
    assert f"{med_us:.3g} µs" in row and f"{p99_ms:.3g} ms" in row
    assert len({len(line) for line in lines[:2]}) == 1  # header and rule line up


def test_summary_table_one_row_per_group() -> None:
    text = summary_table(flow_table(), by="group")
    rows = text.splitlines()[2:]
    assert [r.split()[0] for r in rows] == ["dcqcn", "nocc"]
    assert sum(int(r.split()[1]) for r in rows) == 400
