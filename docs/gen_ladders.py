"""Run the Python blocks of the documentation and write the outputs the pages include.

Usage: ``python docs/gen_ladders.py`` (from anywhere). The docs build runs it too (``docs/hooks.py``),
and ``tests/unit/test_docs.py`` runs the same pages and checks that the files below match.

Conventions, for page authors:

* Every ```` ```python ```` block of a page under ``docs/`` runs, in order, in one namespace per page,
  in a fresh temporary directory (so a tutorial can build up state from block to block).
  A block fenced as ```` ``` { .python .no-run } ```` is shown but not run (for pyverbs code that needs
  real hardware). mkdocs' SuperFences cannot parse a bare ```` ```python no-run ````.
* A block's *output* is what it prints. To show it, put right after the block (blank lines allowed)
  a block fenced ```` ```text title="Output" ````. This script writes the block's output into it,
  in the page itself, so the page reads the same on a code host (GitHub shows the text) and on the
  built site (with an "Output" title), and always shows what the code printed; nothing is pasted
  by hand, and ``tests/unit/test_docs.py`` fails when a page's output is stale.
* The older form, a fenced block whose only line is a snippet include
  (``--8<-- "snippets/....txt"``), still works: the output then goes to that file.
* PNG and SVG files a page's code saves in its working directory are copied to ``docs/img/``.

Outputs of blocks that call ``tshark`` depend on the tshark version: they are regenerated only
when tshark is installed, and ``snippets/tshark-version.txt`` records the version that made them.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
TSHARK_VERSION_FILE = DOCS / "snippets" / "tshark-version.txt"

_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})\s*(?P<info>.*)$")
_INCLUDE = re.compile(r'^--8<--\s+"(?P<path>[^"]+)"\s*$')
#: the info string of a block that holds the output of the python block before it
OUTPUT_INFO = 'text title="Output"'


@dataclass
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int            # 1-based line of the opening fence
    info: str            # text after the fence: "python", "{ .python .no-run }", "text", ...
    code: str
    output: Path | None = None   # where this block's output is included from (python blocks)
    inline: Block | None = None  # the ```text title="Output" block right after it, if any
    end: int = 0                 # 0-based index of the closing fence line

    @property
    def shown_output(self) -> str | None:
        """The output the page shows for this block now (inline or from its snippet file)."""
        if self.inline is not None:
            return self.inline.code if self.inline.code.strip() else ""
        if self.output is not None and self.output.exists():
            return self.output.read_text(encoding="utf-8")
        return None

    @property
    def runnable(self) -> bool:
        info = self.info.strip()
        if info == "python" or info.startswith("python "):
            return True
        if info.startswith("{") and ".python" in info.split():
            return ".no-run" not in info.split()
        return False

    @property
    def uses_tshark(self) -> bool:
        return "tshark" in self.code

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(DOCS)}:{self.line}"


@dataclass
class PageRun:
    """The result of running one page: each runnable block with what it printed."""

    page: Path
    outputs: list[tuple[Block, str]] = field(default_factory=list)
    skipped: list[tuple[Block, str]] = field(default_factory=list)
    images: list[Path] = field(default_factory=list)


def _closes(line: str, fence: str) -> bool:
    s = line.strip()
    return bool(s) and set(s) == {fence[0]} and len(s) >= len(fence)


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a Markdown page (top-level fences only), with each python
    block's output include attached."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[tuple[Block, int]] = []  # (block, index of its closing line)
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m["fence"]
        j = i + 1
        while j < len(lines) and not _closes(lines[j], fence):
            j += 1
        if j >= len(lines):
            raise ValueError(f"{page}:{i + 1}: code fence never closed")
        body_text = "\n".join(lines[i + 1:j]) + "\n" if j > i + 1 else ""
        found.append((Block(page, i + 1, m["info"], body_text, end=j), j))
        i = j + 1
    for k, (b, end) in enumerate(found):
        if not b.runnable or k + 1 >= len(found):
            continue
        nxt, _ = found[k + 1]
        between = lines[end + 1:nxt.line - 1]
        body = nxt.code.strip().splitlines()
        if all(not s.strip() for s in between) and nxt.info.strip() == OUTPUT_INFO:
            b.inline = nxt
            continue
        if all(not s.strip() for s in between) and len(body) == 1 and not nxt.runnable:
            inc = _INCLUDE.match(body[0].strip())
            if inc:
                b.output = DOCS / inc["path"]
    return [b for b, _ in found]


def pages() -> list[Path]:
    """Every Markdown page under docs/ with at least one runnable python block."""
    out = []
    for p in sorted(DOCS.rglob("*.md")):
        if any(b.runnable for b in blocks(p)):
            out.append(p)
    return out


def normalise(text: str) -> str:
    """Output as the page shows it: no trailing spaces, one final newline."""
    lines = [line.rstrip() for line in text.rstrip().splitlines()]
    return "\n".join(lines) + "\n"


def tshark_version() -> str | None:
    """First line of ``tshark --version``, or None when tshark is not installed."""
    if shutil.which("tshark") is None:
        return None
    out = subprocess.run(["tshark", "--version"], capture_output=True, text=True, check=False).stdout
    return out.splitlines()[0].strip() if out else None


def run_page(page: Path, workdir: Path | None = None) -> PageRun:
    """Run a page's python blocks in order in one namespace, in ``workdir`` (default: a new temp dir).

    Blocks that call tshark are skipped (and reported) when tshark is missing. An exception in a
    block is re-raised with the page and line of the block.
    """
    result = PageRun(page)
    have_tshark = shutil.which("tshark") is not None
    own_tmp = workdir is None
    work = Path(tempfile.mkdtemp(prefix="rdmasim-docs-")) if workdir is None else workdir
    namespace: dict[str, object] = {"__name__": "__docs__"}
    old_cwd = os.getcwd()
    os.chdir(work)
    try:
        for b in blocks(page):
            if not b.runnable:
                continue
            if b.uses_tshark and not have_tshark:
                result.skipped.append((b, "tshark is not installed"))
                continue
            buf = io.StringIO()
            try:
                with contextlib.redirect_stdout(buf):
                    exec(compile(b.code, b.name, "exec"), namespace)
            except Exception as exc:
                raise RuntimeError(f"{b.name}: the python block failed: {exc!r}\n"
                                   f"--- its output so far ---\n{buf.getvalue()}") from exc
            result.outputs.append((b, normalise(buf.getvalue())))
        result.images = sorted([*work.glob("*.png"), *work.glob("*.svg")])
        if not own_tmp:
            return result
        # keep the images until they are copied
        keep = Path(tempfile.mkdtemp(prefix="rdmasim-docs-img-"))
        result.images = [Path(shutil.copy(p, keep / p.name)) for p in result.images]
        return result
    finally:
        os.chdir(old_cwd)
        if own_tmp:
            shutil.rmtree(work, ignore_errors=True)


def _write_if_changed(path: Path, data: bytes) -> bool:
    if path.exists() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return True


def with_outputs(page: Path, outputs: list[tuple[Block, str]]) -> str:
    """The page's text with each inline output block holding its python block's output."""
    lines = page.read_text(encoding="utf-8").splitlines()
    for b, out in sorted(outputs, key=lambda bo: -bo[0].line):  # bottom up: indices stay valid
        if b.inline is not None:
            lines[b.inline.line:b.inline.end] = out.rstrip("\n").splitlines()
    return "\n".join(lines) + "\n"


def generate(selected: list[Path] | None = None, verbose: bool = True) -> list[Path]:
    """Run the pages and write every output (inline in the page, or its snippet file) and image;
    returns the files that changed. Files are rewritten only when their content changes (so
    ``mkdocs serve`` does not loop)."""
    changed: list[Path] = []
    version = tshark_version()
    for page in selected or pages():
        res = run_page(page)
        for b, out in res.outputs:
            if b.output is not None and _write_if_changed(b.output, out.encode()):
                changed.append(b.output)
        if any(b.inline is not None for b, _ in res.outputs):
            if _write_if_changed(page, with_outputs(page, res.outputs).encode()):
                changed.append(page)
        for img in res.images:
            if _write_if_changed(DOCS / "img" / img.name, img.read_bytes()):
                changed.append(DOCS / "img" / img.name)
        for folder in {img.parent for img in res.images}:
            shutil.rmtree(folder, ignore_errors=True)
        for b, why in res.skipped:
            if verbose:
                print(f"gen_ladders: skipped {b.name}: {why}", file=sys.stderr)
    if version is not None and _write_if_changed(TSHARK_VERSION_FILE, (version + "\n").encode()):
        changed.append(TSHARK_VERSION_FILE)
    if verbose:
        for p in changed:
            print(f"gen_ladders: wrote {p.relative_to(ROOT)}", file=sys.stderr)
    return changed


if __name__ == "__main__":
    args = [Path(a).resolve() for a in sys.argv[1:]]
    generate(args or None)
