"""Hostile scenario files through ``rdmasim validate``: every file is either valid or refused with
one line per problem naming the file (and the key, value and what is allowed); never a traceback.

Files are the bundled scenarios and the examples, mutated: keys set to hostile values (huge and
negative integers, NaN and infinities, odd strings and units, wrong types, nested tables), keys
removed, unknown keys added, and the bytes of the file flipped, cut and spliced. The default run
is a few seconds; the ``slow`` variants try many more files.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
import tomllib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rdmasim.cli import main
from rdmasim.scenario.schema import SCHEMA

ROOT = Path(__file__).resolve().parents[2]
SEEDS = sorted((ROOT / "rdmasim" / "data" / "scenarios").glob("*.toml")) + sorted(
    (ROOT / "examples").glob("*.toml")
)
BASES = {p.name: tomllib.loads(p.read_text()) for p in SEEDS}
#: every key path of the schema, rows as their first row: "flows[0].size"
KEY_PATHS = sorted(k.replace("[]", "[0]") for k in SCHEMA)
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")

# -- a TOML writer for any value the strategies make (inline tables throughout) -------------------


def _str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")


def _key(k: str) -> str:
    return k if _BARE.match(k) else _str(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v:
            return "nan"
        if v in (float("inf"), float("-inf")):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return _str(v)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def dumps(doc: dict[str, Any]) -> str:
    """TOML text of ``doc`` (every top-level key on a line, tables inline)."""
    return "".join(f"{_key(k)} = {_value(v)}\n" for k, v in doc.items())


# -- hostile values and mutations ---------------------------------------------------------------

_SCALARS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, -1, 2, 7, 8, 64, 126, 4096, 2**31, 2**32 + 2, 2**63 - 1, 2**63, 2**64]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e-300, 0.5, 1.0, 1.0000001, float("nan")]),
    st.booleans(),
    st.text(max_size=12),
    st.sampled_from(
        [
            "",
            "1ps",
            "0",
            "-1us",
            "1e400s",
            "100Gbps",
            "0bps",
            "never",
            "dynamic",
            "h0",
            "h1",
            "a",
            "b",
            "s0",
            "1MiB",
            "0B",
            "nan",
            "inf",
            "99999999999999999999s",
            "12 parsecs",
            "web_search",
            "/dev/null",
            "explicit",
            "fat_tree",
            "star",
            "WRITE",
            "parquet",
            "csv",
            "irn",
        ]
    ),
)
VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def _set(doc: dict[str, Any], path: str, value: Any) -> None:
    node: Any = doc
    parts = path.split(".")
    for part in parts[:-1]:
        m = re.match(r"^(\w+)\[(\d+)\]$", part)
        if m:
            rows = node.setdefault(m.group(1), [{}])
            if not isinstance(rows, list) or not rows or not isinstance(rows[0], dict):
                node[m.group(1)] = rows = [{}]
            node = rows[0]
        else:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                node[part] = child = {}
            node = child
    node[parts[-1]] = value


def _delete(doc: dict[str, Any], path: str) -> None:
    node: Any = doc
    parts = re.sub(r"\[\d+\]", "", path).split(".")
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, list):
            node = node[0] if node else None
    if isinstance(node, dict):
        node.pop(parts[-1], None)


MUTATION = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(KEY_PATHS), VALUES),
    st.tuples(st.just("delete"), st.sampled_from(KEY_PATHS), st.none()),
    st.tuples(st.just("unknown"), st.text(min_size=1, max_size=8), VALUES),
)


def _check_validate(path: Path) -> None:
    """``rdmasim validate path``: ok, or one line per problem naming the file; no exception."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(["validate", str(path), "--max-memory", "2GB"])
        except SystemExit as exc:  # argparse
            rc = int(exc.code or 0)
    lines = err.getvalue().splitlines()
    assert "Traceback" not in err.getvalue()
    if rc == 0:
        assert out.getvalue().startswith(f"{path}: ok; estimated memory ")
        assert all(ln.startswith(f"warning: {path}: ") for ln in lines), lines
        return
    assert rc == 2, (rc, err.getvalue())
    assert lines and lines[-1].endswith("problem(s)") or len(lines) == 1, lines
    for ln in lines:
        assert ln.startswith((f"{path}: ", f"{path} (override): ", "rdmasim validate: error: ")), ln


def _mutated_file(tmp: Path, base: str, mutations: list[tuple[str, str, Any]]) -> Path:
    doc = json.loads(json.dumps(BASES[base]))  # a deep copy (the bases are plain TOML values)
    for op, key, value in mutations:
        if op == "set":
            _set(doc, key, value)
        elif op == "delete":
            _delete(doc, key)
        else:
            doc[key] = value
    p = tmp / "fuzzed.toml"
    p.write_text(dumps(doc), encoding="utf-8")
    return p


def _spliced_file(tmp: Path, base: str, edits: list[tuple[int, int, bytes]]) -> Path:
    data = bytearray((ROOT / next(p for p in SEEDS if p.name == base)).read_bytes())
    for pos, cut, insert in edits:
        at = pos % (len(data) + 1)
        data[at : at + cut] = insert
    p = tmp / "spliced.toml"
    p.write_bytes(bytes(data))
    return p


def _settings(n: int, derandomize: bool = True) -> settings:
    return settings(
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        derandomize=derandomize,
        max_examples=n,
        database=None,
    )


_BYTES = st.lists(
    st.tuples(
        st.integers(0, 10_000), st.integers(0, 8), st.binary(max_size=6) | st.sampled_from([b"\xff", b"["])
    ),
    min_size=1,
    max_size=4,
)


@_settings(40)
@given(base=st.sampled_from(sorted(BASES)), mutations=st.lists(MUTATION, min_size=1, max_size=4))
def test_mutated_scenarios_validate_or_name_the_problem(base: str, mutations: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _check_validate(_mutated_file(Path(tmp), base, mutations))


@_settings(25)
@given(base=st.sampled_from(sorted(BASES)), edits=_BYTES)
def test_spliced_bytes_validate_or_name_the_problem(base: str, edits: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _check_validate(_spliced_file(Path(tmp), base, edits))


@pytest.mark.slow
@_settings(1500, derandomize=False)
@given(base=st.sampled_from(sorted(BASES)), mutations=st.lists(MUTATION, min_size=1, max_size=8))
def test_mutated_scenarios_long(base: str, mutations: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _check_validate(_mutated_file(Path(tmp), base, mutations))


@pytest.mark.slow
@_settings(1000, derandomize=False)
@given(base=st.sampled_from(sorted(BASES)), edits=_BYTES)
def test_spliced_bytes_long(base: str, edits: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _check_validate(_spliced_file(Path(tmp), base, edits))
