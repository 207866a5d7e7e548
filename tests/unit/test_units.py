"""Units mean what they say: every accepted spelling gives its exact value; anything else is refused
with the allowed spellings listed. Case matters: b = bit, B = byte."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rdmasim.units import RATE_UNITS, SIZE_UNITS, TIME_UNITS, parse_rate, parse_size, parse_time

ROOT = Path(__file__).resolve().parents[2]

# Independent of the tables in units.py: what each spelling must mean.
_PREFIX = {"": 1, "k": 1000, "K": 1000, "M": 10**6, "G": 10**9, "T": 10**12}


def _expected_rate(unit: str) -> int:
    m = re.fullmatch(r"([kKMGT]?)(bps|b/s|bit/s|Bps|B/s|)", unit)
    assert m, f"unit table holds an unexpected rate spelling {unit!r}"
    prefix, base = m.groups()
    if base == "":
        assert prefix, "a bare number string is not a rate"
        return _PREFIX[prefix]  # "400G": bits/s, Ethernet's line-rate naming
    return _PREFIX[prefix] * (8 if base.startswith("B") else 1)


_SIZE_EXPECTED = {"": 1, "B": 1, "kB": 1000, "KB": 1000, "MB": 10**6, "GB": 10**9, "TB": 10**12,
                  "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}
_TIME_EXPECTED = {"ps": 1, "ns": 1000, "us": 10**6, "\u00b5s": 10**6, "\u03bcs": 10**6, "ms": 10**9,
                  "s": 10**12}


@pytest.mark.parametrize("unit", sorted(RATE_UNITS))
def test_every_rate_spelling_means_what_it_says(unit: str) -> None:
    want = _expected_rate(unit)
    assert parse_rate(f"3{unit}") == 3 * want
    if want % 2 == 0:
        assert parse_rate(f"2.5 {unit}") == 5 * want // 2
    else:
        with pytest.raises(ValueError, match="not a whole number of bits/s"):
            parse_rate(f"2.5 {unit}")


@pytest.mark.parametrize("unit", sorted(SIZE_UNITS))
def test_every_size_spelling_means_what_it_says(unit: str) -> None:
    assert parse_size(f"7{unit}") == 7 * _SIZE_EXPECTED[unit]


@pytest.mark.parametrize("unit", sorted(TIME_UNITS))
def test_every_time_spelling_means_what_it_says(unit: str) -> None:
    assert parse_time(f"7 {unit}") == 7 * _TIME_EXPECTED[unit]


def test_tables_hold_exactly_the_documented_spellings() -> None:
    assert set(SIZE_UNITS) == set(_SIZE_EXPECTED)
    assert set(TIME_UNITS) == set(_TIME_EXPECTED)


@pytest.mark.parametrize("text, bps", [
    ("100MBps", 800 * 10**6), ("1GB/s", 8 * 10**9), ("12.5 GB/s", 100 * 10**9),
    ("100Mbps", 100 * 10**6), ("1Gb/s", 10**9), ("25 Gbit/s", 25 * 10**9), ("400G", 400 * 10**9),
])
def test_bytes_per_second_are_eight_bits(text: str, bps: int) -> None:
    assert parse_rate(text) == bps


@pytest.mark.parametrize("text", ["1Mb", "1kb", "1500b", "4Kib", "1mb", "1gb"])
def test_sizes_in_bits_or_wrong_case_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"'KiB'.*") as e:
        parse_size(text)
    assert repr(text) in str(e.value)


@pytest.mark.parametrize("text", ["100mbps", "100MBPS", "1gbps", "10 mb/s", "5 GBPS"])
def test_rates_in_the_wrong_case_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="case-sensitive") as e:
        parse_rate(text)
    assert "'Gbps'" in str(e.value) and "'GB/s'" in str(e.value)


@pytest.mark.parametrize("text", ["1MS", "1Us", "2NS", "3 S", "1 min", "1h"])
def test_times_in_other_spellings_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="'ms'"):
        parse_time(text)


@pytest.mark.parametrize("text, what", [
    ("1.0000001ns", "picoseconds"), ("0.5 ps", "picoseconds"), ("1.5B", "bytes"), ("0.1bps", "bits/s"),
])
def test_fractions_are_refused_not_rounded(text: str, what: str) -> None:
    fn = {"picoseconds": parse_time, "bytes": parse_size, "bits/s": parse_rate}[what]
    with pytest.raises(ValueError, match=f"not a whole number of {what}"):
        fn(text)


def test_numbers_are_exact_and_bounded() -> None:
    assert parse_time("1e-3us") == 1000
    assert parse_size("1e12B") == 10**12
    assert parse_rate(100e9) == 100 * 10**9
    with pytest.raises(ValueError, match="exponent"):
        parse_time("1e100000000s")
    with pytest.raises(ValueError, match="whole number"):
        parse_rate(1.5)
    with pytest.raises(ValueError, match="whole number"):
        parse_rate(float("nan"))
    with pytest.raises(TypeError):
        parse_time(1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        parse_size(True)  # type: ignore[arg-type]


_QUOTED = re.compile(r"""["']([0-9][0-9.eE+-]* ?[A-Za-z\u00b5\u03bc/]+)["']""")


def _unit_strings() -> list[tuple[str, str]]:
    out = []
    for base in ("docs", "examples", "rdmasim/data/scenarios"):
        for f in sorted((ROOT / base).rglob("*")):
            # the units section of wire-tools.md shows refused spellings on purpose (tested above)
            if f.suffix in (".md", ".toml", ".py") and f.is_file() and f.name != "wire-tools.md":
                for s in _QUOTED.findall(f.read_text(encoding="utf-8")):
                    out.append((str(f.relative_to(ROOT)), s))
    return out


def test_unit_strings_in_docs_examples_and_scenarios_still_parse() -> None:
    found = _unit_strings()
    assert len(found) > 50
    bad = []
    for where, s in found:
        if s.endswith(("npz", "png", "svg", "toml", "csv", "json")):
            continue
        for fn in (parse_rate, parse_time, parse_size):
            try:
                fn(s)
                break
            except ValueError:
                pass
        else:
            bad.append((where, s))
    assert not bad


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.toml"))
                         + sorted((ROOT / "rdmasim/data/scenarios").glob("*.toml")), ids=lambda p: p.name)
def test_scenario_files_still_load(path: Path) -> None:
    from rdmasim.scenario import load

    sc = load(path)
    assert sc.values
