"""Every ```python block of README.md runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


@pytest.mark.parametrize("index", range(len(python_blocks(ROOT / "README.md"))))
def test_readme_snippet_runs(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code = python_blocks(ROOT / "README.md")[index]
    exec(compile(code, f"README.md[python block {index}]", "exec"), {"__name__": "__readme__"})
