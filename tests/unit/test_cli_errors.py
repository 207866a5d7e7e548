"""Every error of the ``rdmasim`` command is one line per problem naming the file, key or argument,
the value and what is allowed, with exit status 2; never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rdmasim.cli import main

ROOT = Path(__file__).resolve().parents[2]

EXPLICIT = """
[topology]
kind = "explicit"
hosts = ["a", "b", "c"]
switches = ["s"]
{links}
[[flows]]
src = "a"
dst = "c"
size = "4KiB"
"""


def _links(*pairs: tuple[str, str]) -> str:
    return "".join(f'[[topology.links]]\na = "{a}"\nb = "{b}"\n' for a, b in pairs)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    """Exit status and stderr lines of ``rdmasim argv`` run in this process (an exception other
    than the exit of argparse fails the test: that is the traceback a user would see)."""
    try:
        rc = main(list(argv))
    except SystemExit as exc:  # argparse
        rc = int(exc.code or 0)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, [ln for ln in err.splitlines() if ln.strip()]


def _write(tmp_path: Path, text: str, name: str = "s.toml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_self_loop_and_a_host_with_two_links(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _write(
        tmp_path, EXPLICIT.format(links=_links(("s", "s"), ("a", "s"), ("a", "s"), ("b", "s"), ("c", "s")))
    )
    rc, lines = _cli(capsys, "validate", f)
    assert rc == 2
    assert any(ln.startswith(f"{f}: topology.links[0] = 's': a link from a node to itself") for ln in lines)
    assert any(ln.startswith(f"{f}: topology.links[2].a = 'a': host already has a link") for ln in lines)
    assert lines[-1] == f"{f}: 2 problem(s)"


def test_a_flow_from_a_host_with_no_link(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path, EXPLICIT.format(links=_links(("a", "s"), ("b", "s"))))
    rc, lines = _cli(capsys, "validate", f)
    assert rc == 2
    assert lines[0] == (
        f"{f}: topology.hosts: host(s) with no link: ['c'] "
        "(allowed: every host has exactly one [[topology.links]] row)"
    )


def test_hosts_in_two_islands_cannot_reach_each_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = EXPLICIT.format(links=_links(("a", "s"), ("b", "s"), ("c", "t"))).replace(
        'switches = ["s"]', 'switches = ["s", "t"]'
    )
    rc, lines = _cli(capsys, "validate", _write(tmp_path, text))
    assert rc == 2
    assert "flows[0] = ['a', 'c']: no path from 'a' to 'c'" in lines[0]


def test_deeply_nested_toml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path, "x = " + "[" * 5000 + "]" * 5000 + "\n")
    rc, lines = _cli(capsys, "validate", f)
    assert rc == 2
    assert lines[0].startswith(f"{f}: (syntax): arrays or tables nested too deeply")


def test_a_size_cdf_of_zero_sizes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "z.csv").write_text("size,cdf\n0,0.5\n0,1\n")
    f = _write(tmp_path, '[topology]\nkind = "star"\nn = 3\n[traffic.poisson]\ncdf = "z.csv"\n')
    rc, lines = _cli(capsys, "validate", f)
    assert rc == 2
    assert (
        lines[0].startswith(f"{f}: traffic.poisson.cdf = 'z.csv': ")
        and "mean flow size is 0 bytes" in lines[0]
    )


def test_a_file_that_is_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "bin.toml"
    p.write_bytes(b'[simulation]\nname = "\xff\xfe"\n')
    for cmd in ("validate", "run"):
        rc, lines = _cli(capsys, cmd, str(p))
        assert rc == 2
        assert (
            lines[0]
            == f"{p}: (file): not UTF-8 text: byte 0xff at offset 21 (line 2) (allowed: a UTF-8 TOML file)"
        )


def test_every_problem_of_a_file_in_one_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a bad value, two relations between keys and an unknown host: four problems, one round
    text = (
        '[link]\nloss = "lots"\n[switch.ecn]\nkmin = "300KB"\nkmax = "200KB"\n'
        '[[flows]]\nsrc = "a"\ndst = "b"\n[[flows]]\nsrc = "a"\ndst = "zz"\n'
        '[[impairments.failures]]\nlink = ["a", "b"]\nat = "10us"\nrecover = "5us"\n'
    )
    f = _write(tmp_path, text)
    rc, lines = _cli(capsys, "validate", f)
    assert rc == 2
    assert [ln.split(" = ")[0] for ln in lines[:-1]] == [
        f"{f}: link.loss",
        f"{f}: switch.ecn.kmax",
        f"{f}: impairments.failures[0].recover",
        f"{f}: flows[1].dst",
    ]
    assert lines[-1] == f"{f}: 4 problem(s)"


@pytest.mark.parametrize(
    "key,table",
    [
        ("loss", "[link]"),
        ("pmax", "[switch.ecn]"),
        ("p_good_to_bad", '[[impairments.gilbert]]\nlink = ["a", "b"]'),
        ("probability", '[[impairments.loss]]\nlink = ["a", "b"]'),
    ],
)
def test_nan_never_passes_a_range_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, table: str
) -> None:
    f = _write(tmp_path, f'[[flows]]\nsrc = "a"\ndst = "b"\n{table}\n{key} = nan\n')
    rc, lines = _cli(capsys, "validate", f)
    assert rc == 2
    assert f".{key} = nan: not a finite number (allowed: float in 0" in lines[0]


def test_recover_before_at_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _write(
        tmp_path,
        '[[flows]]\nsrc = "a"\ndst = "b"\n[[impairments.failures]]\nlink = ["a", "b"]\n'
        'at = "10us"\nrecover = "10us"\n',
    )
    rc, lines = _cli(capsys, "validate", f)
    assert rc == 2
    assert lines[0].startswith(f"{f}: impairments.failures[0].recover = 10000000: not after `at`")


def test_parquet_without_pyarrow(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from rdmasim import results

    monkeypatch.setattr(results, "pyarrow_available", lambda: False)  # as on a machine without it
    f = _write(tmp_path, '[[flows]]\nsrc = "a"\ndst = "b"\n[outputs]\nformats = ["parquet"]\n')
    rc, lines = _cli(capsys, "validate", f)
    assert rc == 2
    assert lines[0].startswith(f"{f}: outputs.formats = ['parquet']: 'parquet' needs pyarrow")
    # asked together with csv: a warning, and the run writes the csv
    f = _write(
        tmp_path,
        '[[flows]]\nsrc = "a"\ndst = "b"\nsize = "4KiB"\n[outputs]\nformats = ["csv", "parquet"]\n'
        "plots = false\n",
        "w.toml",
    )
    rc, lines = _cli(capsys, "run", f, "--out", str(tmp_path / "o"), "--quiet")
    assert rc == 0
    assert lines[0].startswith(f"warning: {f}: outputs.formats = ['csv', 'parquet']: 'parquet' needs pyarrow")
    assert (tmp_path / "o" / "flows.csv").is_file()


def test_out_that_is_a_file_or_under_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path, '[[flows]]\nsrc = "a"\ndst = "b"\nsize = "4KiB"\n')
    afile = tmp_path / "afile"
    afile.write_text("mine")
    rc, lines = _cli(capsys, "run", f, "--out", str(afile), "--quiet")
    assert rc == 2 and len(lines) == 1
    assert lines[0] == (
        f"rdmasim run: error: results folder '{afile}': exists and is not a folder "
        "(allowed: a new, empty or previous results folder)"
    )
    rc, lines = _cli(capsys, "run", f, "--out", str(afile / "sub"), "--quiet")
    assert rc == 2 and len(lines) == 1 and f"results folder '{afile / 'sub'}': cannot write in" in lines[0]
    assert afile.read_text() == "mine"


def test_an_unusable_sweep_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path, '[[flows]]\nsrc = "a"\ndst = "b"\nsize = "4KiB"\n')
    (tmp_path / "sw").mkdir()
    (tmp_path / "sw" / "sweep.sqlite").write_text("not a database, but mine\n" * 100)
    rc, lines = _cli(
        capsys, "sweep", f, "--seeds", "1", "--out", str(tmp_path / "sw"), "--quiet", "--workers", "1"
    )
    assert rc == 2 and len(lines) == 1
    assert lines[0].startswith(
        f"rdmasim sweep: error: sweep store '{tmp_path / 'sw' / 'sweep.sqlite'}': not a "
        "usable rdmasim sweep store"
    )


@pytest.mark.parametrize(
    "argv,shown",
    [
        (
            ["run", "X", "--seed", str(2**64)],
            f"argument --seed: {2**64} is out of range (allowed: 0..{2**63 - 1})",
        ),
        (["run", "X", "--seed", "-1"], f"argument --seed: -1 is out of range (allowed: 0..{2**63 - 1})"),
        (
            ["sweep", "X", "--seeds", str(10**8)],
            f"argument --seeds: {10**8} is out of range (allowed: 1..100000)",
        ),
        (["sweep", "X", "--workers", "0"], "argument --workers: 0 is out of range (allowed: 1..1024)"),
        (["demo", "--loss", "nan"], "argument --loss: 'nan' is not a probability (allowed: 0..1)"),
        (["trace", "--timeout", "99"], "argument --timeout: 99 is out of range (allowed: 0..31)"),
    ],
)
def test_numeric_arguments_are_range_checked(
    capsys: pytest.CaptureFixture[str], argv: list[str], shown: str
) -> None:
    rc, lines = _cli(capsys, *argv)
    assert rc == 2
    assert lines == [f"rdmasim {argv[0]}: error: {shown} (see rdmasim {argv[0]} --help)"]


def test_a_grid_too_large_for_one_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path, '[[flows]]\nsrc = "a"\ndst = "b"\n')
    values = ",".join(str(i) for i in range(1, 1001))
    rc, lines = _cli(
        capsys,
        "sweep",
        f,
        "--seeds",
        "1000",
        "--param",
        f"simulation.duration={values}",
        "--out",
        str(tmp_path / "sw"),
    )
    assert rc == 2 and len(lines) == 1
    assert "the grid has 1,000,000 runs" in lines[0] and "at most 100,000 runs per sweep" in lines[0]
    assert not (tmp_path / "sw").exists()


def test_trace_of_a_file_that_is_no_trace(capsys: pytest.CaptureFixture[str]) -> None:
    rc, lines = _cli(capsys, "trace", "/dev/null")
    assert rc == 2 and len(lines) == 1
    assert lines[0].startswith("rdmasim trace: error: trace file '/dev/null': not a trace saved by rdmasim")


def test_star_of_many_hosts_runs_with_the_default_switch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        '[topology]\nkind = "star"\nn = 300\n[[flows]]\nsrc = "h0"\ndst = "h299"\nsize = "8KiB"\n'
        "[outputs]\nplots = false\n"
    )
    f = _write(tmp_path, text)
    assert _cli(capsys, "run", f, "--out", str(tmp_path / "o"), "--quiet")[0] == 0
    # a buffer given too small is named, with the smallest that works
    f = _write(tmp_path, text + '[switch]\nbuffer = "12MB"\n', "small.toml")
    rc, lines = _cli(capsys, "validate", f)
    assert rc == 2
    assert lines[0].startswith(
        f"{f}: switch.buffer = 12000000: smaller than what the largest switch (300 ports)"
    )
    assert lines[0].endswith(
        f"(allowed: >= {300 * (8 * 4000 + 64000)} bytes (or lower switch.reserve / switch.headroom))"
    )


def test_a_fabric_that_cannot_fit_in_memory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _write(tmp_path, '[topology]\nkind = "fat_tree"\nk = 64\n[[flows]]\nsrc = "h0_0_0"\ndst = "h1_0_0"\n')
    rc, lines = _cli(capsys, "validate", f, "--max-memory", "2GB")
    assert rc == 2
    assert lines[0].startswith(f"{f}: topology = 'fat_tree': the run would need about 4")
    assert "of it for the routing tables (allowed: runs that fit in 2.0 GB (--max-memory))" in lines[0]
    rc, lines = _cli(capsys, "run", f, "--max-memory", "2GB", "--out", str(tmp_path / "o"))
    assert rc == 2 and not (tmp_path / "o").exists()
    f = _write(
        tmp_path,
        '[topology]\nkind = "fat_tree"\nk = 8\n[[flows]]\nsrc = "h0_0_0"\ndst = "h1_0_0"\n',
        "k8.toml",
    )
    assert _cli(capsys, "validate", f, "--max-memory", "16GB")[0] == 0


def test_sampling_every_picosecond_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path,
               '[[flows]]\nsrc = "a"\ndst = "b"\nsize = "1GiB"\n[outputs]\nsample_interval = "1ps"\n')
    rc, lines = _cli(capsys, "validate", f, "--max-memory", "16GB")
    assert rc == 2
    assert lines[0].startswith(f"{f}: outputs.sample_interval = 1: the run would need about ")
    assert "of it for the time series" in lines[0]


def test_a_deadlock_check_every_picosecond_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _write(
        tmp_path,
        '[topology]\nkind = "star"\nn = 64\n[traffic.all_to_all]\nsize = "1MiB"\n'
        "[switch]\ndeadlock_check = '1ps'\n",
    )
    rc, lines = _cli(capsys, "validate", f)
    assert rc == 0
    assert lines[0].startswith(f"warning: {f}: switch.deadlock_check: the run may take ")


def test_validate_prints_its_estimate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = str(ROOT / "rdmasim" / "data" / "scenarios" / "incast_dcqcn.toml")
    assert main(["validate", f]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{f}: ok; estimated memory ") and " events, ~" in out


def test_a_genuine_bug_still_shows_its_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rdmasim.cli as cli

    def boom(args: object) -> int:
        raise KeyError("a bug")

    monkeypatch.setattr(cli, "_validate", boom)
    with pytest.raises(KeyError):
        cli.main(["validate", "x.toml"])


def test_cli_subprocess_error_is_one_line(tmp_path: Path) -> None:
    p = tmp_path / "bin.toml"
    p.write_bytes(b"\xff")
    proc = subprocess.run(
        [sys.executable, "-m", "rdmasim.cli", "run", str(p)], capture_output=True, text=True, cwd=tmp_path
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"{p}: (file): not UTF-8 text: byte 0xff at offset 0 (line 1) (allowed: a UTF-8 TOML file)",
        f"{p}: 1 problem(s)",
    ]


def test_topologies_and_generators_too_large_are_refused_before_they_are_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _write(
        tmp_path,
        '[topology]\nkind = "leaf_spine"\nleaves = 2048\nspines = 2048\nhosts_per_leaf = 2048\n'
        '[[flows]]\nsrc = "h0"\ndst = "h1"\n',
    )
    rc, lines = _cli(capsys, "validate", f)
    assert rc == 2
    assert lines[0] == (
        f"{f}: topology = 'leaf_spine': leaf_spine with leaves = 2048, spines = 2048, hosts_per_leaf = 2048 "
        "has 4,194,304 hosts (allowed: at most 65,536 hosts)"
    )
    f = _write(tmp_path, '[topology]\nkind = "star"\nn = 4096\n[traffic.all_to_all]\n', "a2a.toml")
    rc, lines = _cli(capsys, "validate", f)
    assert rc == 2
    assert lines[0].startswith(f"{f}: traffic.all_to_all: would make about 16,773,120 flows (allowed:")


def test_an_explicit_topology_of_many_hosts_is_checked_by_name_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 70,000 names: over the host limit, and two duplicates among them found (a linear check)
    hosts = [f"h{i}" for i in range(70_000)] + ["h5", "h6"]
    text = f'[topology]\nkind = "explicit"\nhosts = {hosts!r}\nswitches = ["s"]\n'
    text += '[[flows]]\nsrc = "h0"\ndst = "h1"\n'
    rc, lines = _cli(capsys, "validate", _write(tmp_path, text.replace("'", '"')))
    assert rc == 2
    assert (
        "topology = 'explicit': the explicit topology has 70,002 hosts (allowed: at most 65,536 hosts)"
        in lines[0]
    )
    assert lines[1].endswith(
        "topology.hosts: duplicate node names ['h5', 'h6'] (allowed: unique names across hosts and switches)"
    )
