"""The documentation runs as written.

Every ```python block of docs/**/*.md is executed — the blocks of one page in order, in one
namespace, in a temporary directory — except blocks fenced ``{ .python .no-run }``. Outputs the
pages include (``--8<-- "snippets/..."`` right after a block) must equal what the block prints now,
and every plot a page shows must be written by its code. docs/gen_ladders.py holds the runner;
after a deliberate change, regenerate with ``python docs/gen_ladders.py``.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from rdmasim.cc import plugin as cc_plugin

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

_spec = importlib.util.spec_from_file_location("gen_ladders", DOCS / "gen_ladders.py")
assert _spec is not None and _spec.loader is not None
gen = importlib.util.module_from_spec(_spec)
sys.modules["gen_ladders"] = gen
_spec.loader.exec_module(gen)

PAGES = gen.pages()
_INCLUDE = re.compile(r'--8<--\s+"([^"]+)"')
_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)]+\.(?:png|svg))\)")


def _id(page: Path) -> str:
    return str(page.relative_to(DOCS))


def test_the_pages_are_found() -> None:
    names = {_id(p) for p in PAGES}
    assert {"index.md", "pyverbs.md", "tutorial/01-connect.md", "tutorial/02-lossy-write.md",
            "tutorial/03-read.md", "tutorial/04-rnr.md", "tutorial/05-access-error.md",
            "mechanisms/go-back-n.md", "mechanisms/dcqcn.md", "mechanisms/pfc.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_page_runs_and_shows_what_it_prints(page: Path, tmp_path: Path) -> None:
    before = set(cc_plugin.plugin_names())
    try:
        result = gen.run_page(page, workdir=tmp_path)
    finally:  # a page's plug-ins are the page's: tests run after it see the registry it found
        for name in set(cc_plugin.plugin_names()) - before:
            cc_plugin.unregister_plugin(name)
    installed = gen.tshark_version()
    recorded = (gen.TSHARK_VERSION_FILE.read_text().strip() if gen.TSHARK_VERSION_FILE.exists()
                else None)
    stale = []
    for block, out in result.outputs:
        if block.output is None and block.inline is None:
            continue
        if block.uses_tshark and installed != recorded:
            continue  # another tshark version formats its summary differently
        shown = block.shown_output
        assert shown is not None, f"{block.name}: included output {block.output} is missing"
        if shown != out:
            stale.append(block.name if block.inline is not None
                         else str(block.output.relative_to(DOCS)))  # type: ignore[union-attr]
    assert not stale, (f"{_id(page)}: these outputs differ from what the code prints now: {stale}; "
                       "run `python docs/gen_ladders.py` and review the diff")
    text = page.read_text(encoding="utf-8")
    written = {p.name for p in result.images}
    for ref in _IMAGE.findall(text):
        name = Path(ref).name
        assert name in written, f"{_id(page)} shows {ref} but its code did not write {name}"
        assert (DOCS / "img" / name).exists(), f"docs/img/{name} missing: run docs/gen_ladders.py"
    for block, why in result.skipped:
        print(f"not run: {block.name} ({why})")


def test_every_include_is_a_block_output_and_every_snippet_is_used() -> None:
    included: set[Path] = set()
    produced: set[Path] = set()
    for page in sorted(DOCS.rglob("*.md")):
        included |= {DOCS / inc for inc in _INCLUDE.findall(page.read_text(encoding="utf-8"))}
        produced |= {b.output for b in gen.blocks(page) if b.output is not None}
    assert included == produced, (f"includes not right after a python block: {sorted(included - produced)}")
    files = {p for p in (DOCS / "snippets").rglob("*") if p.is_file()} - {gen.TSHARK_VERSION_FILE}
    assert files <= included, f"snippet files no page includes (delete them): {sorted(files - included)}"


def test_no_run_blocks_are_rare() -> None:
    """``{ .python .no-run }`` is for code that needs real hardware; everything else must run."""
    no_run = [b.name for p in sorted(DOCS.rglob("*.md")) for b in gen.blocks(p)
              if b.info.strip().startswith("{") and ".no-run" in b.info.split()]
    assert len(no_run) <= 3, no_run
