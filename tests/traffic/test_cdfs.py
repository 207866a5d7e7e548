"""Size CDFs: inverse-CDF sampling, analytical mean, the built-in workloads, CSV loading and its errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rdmasim.traffic import DATA_MINING, MAX_FLOW_SIZE, WEB_SEARCH, SizeCDF


def test_mean_of_piecewise_linear_cdf() -> None:
    assert SizeCDF((0, 100), (0.0, 1.0)).mean() == pytest.approx(50.0)
    # point mass 0.5 at 10, then uniform on [10, 20]
    assert SizeCDF((10, 20), (0.5, 1.0)).mean() == pytest.approx(12.5)
    # a jump: uniform on [0, 10] w.p. 0.5, uniform on [100, 200] w.p. 0.5
    assert SizeCDF((0, 10, 100, 200), (0.0, 0.5, 0.5, 1.0)).mean() == pytest.approx(0.5 * 5 + 0.5 * 150)


def test_quantile_interpolates_linearly() -> None:
    c = SizeCDF((10, 20, 40), (0.5, 0.75, 1.0))
    q = c.quantile(np.array([0.0, 0.25, 0.5, 0.625, 0.75, 0.875]))
    assert q.tolist() == pytest.approx([10, 10, 10, 15, 20, 30])


def test_samples_are_whole_bytes_at_least_one() -> None:
    s = SizeCDF((0, 4), (0.0, 1.0)).sample(np.random.default_rng(0), 10_000)
    assert s.dtype == np.uint64
    assert s.min() == 1 and s.max() == 4


@pytest.mark.parametrize("cdf", [WEB_SEARCH, DATA_MINING], ids=lambda c: c.name)
def test_sample_mean_matches_analytical_mean(cdf: SizeCDF) -> None:
    s = cdf.sample(np.random.default_rng(2024), 1_000_000)
    assert s.mean() == pytest.approx(cdf.mean(), rel=0.02)
    assert s.min() >= 1 and s.max() <= max(cdf.sizes)


def test_builtin_workloads_have_the_published_shape() -> None:
    # means stated in the docstrings, computed from the piecewise-linear form
    assert WEB_SEARCH.mean() == pytest.approx(1_711_250)
    assert DATA_MINING.mean() == pytest.approx(7_470_236, rel=1e-9)
    assert max(WEB_SEARCH.sizes) == 30e6 and max(DATA_MINING.sizes) <= MAX_FLOW_SIZE
    # DCTCP web search: ~half the flows under 100 KB; VL2 data mining: half the flows are one packet
    web = WEB_SEARCH.sample(np.random.default_rng(1), 200_000)
    assert 0.5 < np.mean(web < 100_000) < 0.6
    mining = DATA_MINING.sample(np.random.default_rng(1), 200_000)
    assert np.mean(mining == 1460) == pytest.approx(0.5, abs=0.01)


def test_deterministic_for_a_seed() -> None:
    a = WEB_SEARCH.sample(np.random.default_rng(7), 1000)
    b = WEB_SEARCH.sample(np.random.default_rng(7), 1000)
    assert (a == b).all()


@pytest.mark.parametrize(
    ("sizes", "cdf", "message"),
    [
        ((10, 5), (0.5, 1.0), "point 1: size 5 is below the previous size 10"),
        ((1, 2), (0.6, 0.5), "point 1: cdf 0.5 is below the previous cdf 0.6"),
        ((1, 2), (0.5, 0.9), "point 1: the last cdf value must be 1.0"),
        ((-1, 2), (0.0, 1.0), "point 0: size -1 is outside"),
        ((1, 2**31), (0.0, 1.0), "point 1: size 2.14748e\\+09 is outside"),
        ((1, 2), (-0.1, 1.0), "point 0: cdf -0.1 is outside"),
    ],
)
def test_constructor_errors(sizes: tuple[float, ...], cdf: tuple[float, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SizeCDF(sizes, cdf)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sizes.csv"
    path.write_text(text)
    return path


def test_from_csv_with_header_comments_and_whitespace(tmp_path: Path) -> None:
    c = SizeCDF.from_csv(_write(tmp_path, "# my workload\nsize,cdf\n100,0\n\n200, 0.5\n400,1.0\n"))
    assert c.sizes == (100, 200, 400) and c.cdf == (0, 0.5, 1.0) and c.name == "sizes.csv"
    d = SizeCDF.from_csv(_write(tmp_path, "0 0\n10000 15\n30000000 100\n"), name="ws")
    assert d.cdf == (0.0, 0.15, 1.0) and d.name == "ws"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("size,cdf\n100,0\n200,abc\n", r"sizes\.csv:3: 'abc' is not a number"),
        ("100,0\nsize,cdf\n", r"sizes\.csv:2: 'size' is not a number"),
        ("100,0,7\n", r"sizes\.csv:1: expected two columns size,cdf, got 3"),
        ("100,0\n50,0.5\n200,1\n", r"sizes\.csv:2: size 50 is below the previous size 100"),
        ("100,0\n150,0.7\n200,0.6\n300,1\n", r"sizes\.csv:3: cdf 0.6 is below the previous cdf 0.7"),
        ("100,0\n200,0.9\n", r"sizes\.csv:2: the last cdf value must be 1.0"),
        ("# nothing\n\n", r"sizes\.csv: no size,cdf rows found"),
    ],
)
def test_from_csv_errors_name_file_line_and_value(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SizeCDF.from_csv(_write(tmp_path, text))


def test_from_csv_names_a_byte_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "sizes.csv"
    path.write_bytes(b"size,cdf\n100,0\n\xff200,1\n")
    with pytest.raises(ValueError, match=r"sizes\.csv: not UTF-8 text: byte 0xff at offset 15$"):
        SizeCDF.from_csv(path)
