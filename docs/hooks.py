"""mkdocs hook: regenerate the outputs the pages include (docs/gen_ladders.py) before building."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_ladders  # noqa: E402


def on_pre_build(config: Any, **kwargs: Any) -> None:
    gen_ladders.generate(verbose=True)
