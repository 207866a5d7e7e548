"""The rdma-core suite runner itself, offline: extraction, checksum, outcome recording, table.

A synthetic sdist stands in for pyverbs' and a throw-away ``rdmasim.pyverbs`` (a meta-path
finder from a ``sitecustomize`` in a temp dir) stands in for the namespace, so these run in
the default suite without network.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import sys
import tarfile
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("run_rdma_core", Path(__file__).with_name("run_rdma_core.py"))
assert _spec is not None and _spec.loader is not None
rc = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("run_rdma_core", rc)
_spec.loader.exec_module(rc)

# rdma-core's run_tests.py / args_parser.py shape, reduced: parse --dev, hand the rest to unittest.
_RUN_TESTS = """
import argparse, os, sys, unittest
p = argparse.ArgumentParser()
p.add_argument('--dev'); p.add_argument('--port', type=int); p.add_argument('--gid', type=int)
p.add_argument('-v', dest='v', action='store_true')
ns, rest = p.parse_known_args()
os.environ['SEEN_DEV'] = str(ns.dev)
sys.argv[1:] = rest
import tests
unittest.main(module=tests)
"""
_INIT = "from . import test_mix\n"
_TEST_MIX = """
import os, subprocess, unittest
import pyverbs.device as d

class Mix(unittest.TestCase):
    def test_pass(self):
        self.assertEqual(d.DEV, os.environ['SEEN_DEV'])
    def test_skip(self):
        raise unittest.SkipTest('no such feature on this device')
    def test_fail(self):
        self.assertEqual(1, 2)
    def test_error(self):
        raise RuntimeError('boom')
    def test_rdma_shim(self):
        self.assertEqual(subprocess.check_output(['rdma', 'link', 'show', '-j']).strip(), b'[]')
    def test_pkey_shim(self):
        out = subprocess.check_output(['cat', '/sys/class/infiniband/fake0/ports/1/pkeys/0'], text=True)
        self.assertEqual(int(out, 16), d.PKEY)
"""
_STANDIN = """
import importlib.abc, importlib.util, sys, types
class _L(importlib.abc.Loader):
    def create_module(self, spec):
        m = types.ModuleType(spec.name); m.__path__ = []
        if spec.name == 'pyverbs.device':
            class Context:
                def __init__(self, name): self.name = name
                def __enter__(self): return self
                def __exit__(self, *a): pass
                def query_pkey(self, port_num, index): return 0x8001 + index
            m.Context, m.DEV, m.PKEY = Context, 'fake0', 0x8001
        return m
    def exec_module(self, m): pass
class _F(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == 'pyverbs' or name.startswith('pyverbs.'):
            return importlib.util.spec_from_loader(name, _L(), is_package=True)
def install(): sys.meta_path.insert(0, _F())
"""
_SITECUSTOMIZE = """
import importlib.abc, importlib.util, sys
class _NS(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == 'rdmasim.pyverbs':
            return importlib.util.spec_from_file_location(name, {standin!r})
sys.meta_path.insert(0, _NS())
"""


def _sdist(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"pyverbs-59.0/rdma-core/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_extract_takes_only_the_tests_folder(tmp_path: Path) -> None:
    sdist = _sdist(tmp_path / "s.tar.gz", {"tests/run_tests.py": "x", "tests/test_a.py": "a",
                                          "tests/sub/deep.py": "d", "pyverbs/cq.pyx": "c"})
    out = rc.extract_tests(sdist, tmp_path / "out")
    assert sorted(p.name for p in out.iterdir()) == ["run_tests.py", "test_a.py"]


def test_extract_refuses_an_archive_without_run_tests(tmp_path: Path) -> None:
    sdist = _sdist(tmp_path / "s.tar.gz", {"tests/test_a.py": "a"})
    with pytest.raises(rc.SuiteUnavailable, match="run_tests.py"):
        rc.extract_tests(sdist, tmp_path / "out")


def test_local_sdist_is_checked_against_pypi_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sdist = _sdist(tmp_path / "pyverbs-59.0.tar.gz", {"tests/run_tests.py": "x"})
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    monkeypatch.setenv("RDMASIM_PYVERBS_SDIST", str(sdist))
    monkeypatch.setattr(rc, "_pypi_sdist", lambda v: ("pyverbs-59.0.tar.gz", "u", digest))
    assert rc.fetch_sdist() == sdist
    monkeypatch.setattr(rc, "_pypi_sdist", lambda v: ("pyverbs-59.0.tar.gz", "u", "0" * 64))
    with pytest.raises(rc.SuiteUnavailable, match="sha256"):
        rc.fetch_sdist()


def _suite_tree(tmp_path: Path) -> Path:
    sdist = _sdist(tmp_path / "s.tar.gz", {"tests/run_tests.py": _RUN_TESTS, "tests/__init__.py": _INIT,
                                          "tests/test_mix.py": _TEST_MIX})
    return rc.extract_tests(sdist, tmp_path / "all")


def test_run_file_records_each_outcome_and_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "standin_ns.py").write_text(_STANDIN)
    (site / "sitecustomize.py").write_text(_SITECUSTOMIZE.format(standin=str(site / "standin_ns.py")))
    monkeypatch.setenv("PYTHONPATH", str(site))
    res = rc.run_file(_suite_tree(tmp_path), "test_mix", tmp_path / "work", "fake0", 1, None, 120)
    outcomes = {t["id"].rsplit(".", 1)[1]: t["outcome"] for t in res.tests}
    assert outcomes == {"test_pass": "pass", "test_skip": "skip", "test_fail": "fail", "test_error": "error",
                        "test_rdma_shim": "pass", "test_pkey_shim": "pass"}, res.tests
    assert not res.ok and not res.crash
    table = rc.markdown_report([res], "header")
    assert "| test_mix | 3 | 1 | 1 | 1 |  |" in table
    assert "| test_mix.Mix.test_skip | no such feature on this device |" in table
    assert "RuntimeError: boom" in table


def test_run_file_without_namespace_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("rdmasim.pyverbs") is not None:
        pytest.skip("rdmasim.pyverbs exists in this tree")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    with pytest.raises(rc.SuiteUnavailable, match="rdmasim.pyverbs is not available"):
        rc.run_file(_suite_tree(tmp_path), "test_mix", tmp_path / "work", "fake0", 1, None, 120)
