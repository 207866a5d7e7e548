"""mkdocs hook: regenerate the outputs the pages include (docs/gen_ladders.py) before building.

Set ``RDMASIM_DOCS_NO_GEN=1`` to skip that (e.g. for quick ``mkdocs serve`` edits of prose).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_ladders  # noqa: E402


def on_pre_build(config: Any, **kwargs: Any) -> None:
    if os.environ.get("RDMASIM_DOCS_NO_GEN"):
        return
    gen_ladders.generate(verbose=True)
