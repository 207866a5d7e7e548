"""Results are pandas-native: every table (flows, ports, time series) is written as Parquet when
pyarrow is importable and as CSV otherwise, with the unit in every column name."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rdmasim import results
from rdmasim.results import COLUMN_UNITS, FLOW_COLUMNS, PORT_COLUMNS, TABLES, read_table, table_formats
from rdmasim.scenario import loads, run_scenario

SC = '''
[simulation]
name = "outputs"
seed = 1
[topology]
kind = "star"
n = 3
[[flows]]
src = "h0"
dst = "h2"
size = "64KiB"
[[flows]]
src = "h1"
dst = "h2"
size = "16KiB"
[outputs]
sample_interval = "2us"
plots = false
'''

#: columns that are counts, labels or ratios (no unit to name)
UNITLESS = {"flow_id", "src", "dst", "verb", "priority", "slowdown", "cnps", "status", "group", "node",
            "kind", "port", "drops", "ecn_marked", "pfc_xoff_sent", "probe", "paused"}


def _run(tmp: Path, formats: str | None = None) -> results.RunResult:
    text = SC + (f"formats = {formats}\n" if formats else "")
    return run_scenario(loads(text, "o.toml"), out_dir=str(tmp), progress=False)


def test_every_column_names_its_unit(tmp_path: Path) -> None:
    res = _run(tmp_path / "r")
    frames = res.frames()
    assert set(frames) == set(TABLES)
    for name, df in frames.items():
        for c in df.columns:
            assert c in UNITLESS or any(c.endswith(u) or c.startswith(u[1:] + "_") for u in COLUMN_UNITS), \
                (name, c)
    assert "size_bytes" in FLOW_COLUMNS and "size" not in FLOW_COLUMNS
    assert list(frames["flows"].columns) == FLOW_COLUMNS and list(frames["ports"].columns) == PORT_COLUMNS
    assert frames["flows"]["fct_ps"].dtype == "Int64"  # nullable: NA for an unfinished flow
    assert (frames["flows"]["size_bytes"] == [65536, 16384]).all()


def test_without_pyarrow_every_table_is_csv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(results, "pyarrow_available", lambda: False)
    assert table_formats(None) == table_formats(["auto"]) == ["csv"]
    assert table_formats(["parquet", "csv"]) == ["csv"]
    res = _run(tmp_path / "r")
    out = tmp_path / "r"
    for name in TABLES:
        assert (out / f"{name}.csv").is_file() and not (out / f"{name}.parquet").exists(), name
        assert res.files[f"{name}_csv"] == str(out / f"{name}.csv")
    # read back: the same table as in memory
    frames = res.frames()
    for name in TABLES:
        back = read_table(out, name)
        assert list(back.columns) == list(frames[name].columns), name
        assert len(back) == len(frames[name]), name
    pd.testing.assert_frame_equal(read_table(out, "flows"), frames["flows"], check_dtype=False)
    q = read_table(out, "queue_samples")
    assert q["egress_bytes"].max() > 0 and q["probe"].str.contains("->").all()


def test_with_pyarrow_every_table_is_parquet(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    assert table_formats(None) == ["parquet"]
    res = _run(tmp_path / "r")
    for name in TABLES:
        out = tmp_path / "r"
        assert (out / f"{name}.parquet").is_file() and not (out / f"{name}.csv").exists()
    pd.testing.assert_frame_equal(read_table(tmp_path / "r", "flows"), res.frames()["flows"])


def test_both_formats_on_request_and_clear_errors(tmp_path: Path) -> None:
    res = _run(tmp_path / "r", '["csv"]')
    assert {"flows_csv", "ports_csv", "flow_samples_csv", "queue_samples_csv"} <= set(res.files)
    with pytest.raises(ValueError, match=r"table 'flow': unknown \(allowed: flows, ports"):
        read_table(tmp_path / "r", "flow")
    with pytest.raises(FileNotFoundError, match="no flows.parquet or flows.csv"):
        read_table(tmp_path, "flows")


def test_sweep_tables_are_dataframes(tmp_path: Path) -> None:
    from rdmasim.sweep import run_sweep

    res = run_sweep(SC, {"flows[].size": ["8KiB", "16KiB"]}, tmp_path / "sw", executor="thread",
                    progress=False)
    flows = res.flows()
    assert isinstance(flows, pd.DataFrame) and isinstance(res.runs(), pd.DataFrame)
    assert sorted(set(flows["size_bytes"])) == [8192, 16384]


def test_summary_table_has_one_fct_unit_and_aligned_decimals(tmp_path: Path) -> None:
    """``rdmasim run``'s table: the FCT column names its unit once and every value has three
    decimals in it (not ``345.953 us`` next to ``342.61 us``)."""
    res = _run(tmp_path / "r")
    lines = res.summary().splitlines()
    head = lines[0]
    unit = head.split("FCT (")[1].split(")")[0]
    scale = {"ns": 1e3, "µs": 1e6, "ms": 1e9, "s": 1e12}[unit]
    assert scale <= max(f.fct_ps for f in res.flows) < scale * 1000
    rows = lines[1:1 + len(res.flows)]
    for f, row in zip(res.flows, rows, strict=True):
        fct = row.split()[5]
        assert fct.split(".")[1].isdigit() and len(fct.split(".")[1]) == 3
        assert float(fct.replace(",", "")) == pytest.approx(f.fct_ps / scale, abs=5e-4)
    assert "µs" in lines[len(res.flows) + 1] or " ms" in lines[len(res.flows) + 1]  # simulated time
