"""The files a scenario reads (the scenario itself, a size CDF): a device, a named pipe or a file
over the size limit is refused at once, naming the file, the key, the size found and the limit,
instead of being read until memory runs out (``/dev/zero``) or waiting for a writer (a FIFO)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rdmasim.errors import UserInputError
from rdmasim.scenario import MAX_SCENARIO_FILE_BYTES, ScenarioError, load, loads
from rdmasim.traffic import MAX_CDF_FILE_BYTES, SizeCDF

STAR = '[topology]\nkind = "star"\nn = 3\n[traffic.poisson]\nload = 0.3\nduration = "20us"\ncdf = "{cdf}"\n'


def _returns(call: Callable[[], Any]) -> BaseException | Any:
    """What ``call`` returns or raises, failing the test (not hanging it) if it blocks."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(call())
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(20)
    assert out, "blocked reading the file"
    return out[0]


def _fifo(tmp_path: Path) -> Path:
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    return fifo


def _unblock(fifo: Path) -> None:
    """Let a reader still blocked in open() go (a writer opens and closes the pipe)."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as fh:
        fh.truncate(size)  # no disk blocks: a file that size, read as zeros
    return path


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_size_cdf_of_dev_zero_is_refused_at_once() -> None:
    with pytest.raises(ScenarioError) as info:
        loads(STAR.format(cdf="/dev/zero"), "z.toml")
    (p,) = info.value.problems
    assert p.path == "traffic.poisson.cdf" and p.value == "/dev/zero"
    assert "/dev/zero: the size CDF file is a character device, not a regular file" in str(p)
    with pytest.raises(UserInputError, match="character device"):
        SizeCDF.from_csv("/dev/zero")


def test_a_size_cdf_that_is_a_named_pipe_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path)
    try:
        got = _returns(lambda: SizeCDF.from_csv(fifo))
        assert isinstance(got, UserInputError), got
        assert str(got) == f"{fifo}: the size CDF file is a named pipe (FIFO), not a regular file"
        (tmp_path / "s.toml").write_text(STAR.format(cdf="pipe.csv"))
        got = _returns(lambda: load(tmp_path / "s.toml"))
        assert isinstance(got, ScenarioError), got
        assert got.problems[0].path == "traffic.poisson.cdf" and "named pipe" in str(got)
    finally:
        _unblock(fifo)


def test_a_size_cdf_over_the_limit_names_its_size_and_the_limit(tmp_path: Path) -> None:
    big = _sparse(tmp_path / "big.csv", MAX_CDF_FILE_BYTES + 1)
    with pytest.raises(ScenarioError) as info:
        load(_write(tmp_path, STAR.format(cdf="big.csv")))
    (p,) = info.value.problems
    assert p.path == "traffic.poisson.cdf"
    assert (f"{big}: the size CDF file is {MAX_CDF_FILE_BYTES + 1:,} bytes (8 MiB); the limit is "
            f"{MAX_CDF_FILE_BYTES:,} bytes (8 MiB)") in str(p)
    # at the limit it is read (and judged on its rows)
    ok = tmp_path / "ok.csv"
    head = "size,cdf\n100,0\n200,1\n"
    ok.write_text(head + "#" * (MAX_CDF_FILE_BYTES - len(head) - 1) + "\n")
    assert ok.stat().st_size == MAX_CDF_FILE_BYTES
    assert SizeCDF.from_csv(ok).sizes == (100, 200)


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_scenario_file_that_is_no_regular_file_or_too_big(tmp_path: Path) -> None:
    got = _returns(lambda: load("/dev/zero"))
    assert isinstance(got, ScenarioError), got
    assert str(got) == ("/dev/zero: (file): the scenario file is a character device, not a regular file "
                        f"(allowed: a regular file of at most {MAX_SCENARIO_FILE_BYTES:,} bytes)")
    fifo = _fifo(tmp_path)
    try:
        got = _returns(lambda: load(fifo))
        assert isinstance(got, ScenarioError) and "named pipe" in str(got), got
    finally:
        _unblock(fifo)
    big = _sparse(tmp_path / "big.toml", MAX_SCENARIO_FILE_BYTES + 1)
    with pytest.raises(ScenarioError, match=rf"the scenario file is {MAX_SCENARIO_FILE_BYTES + 1:,} bytes"):
        load(big)
    with pytest.raises(ScenarioError, match=r"\(file\): .*is a directory"):
        load(tmp_path)
