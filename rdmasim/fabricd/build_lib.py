"""Compile librdmasim_ibverbs.so (no rdmasim import: setup.py runs this before rdmasim is built)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERBS_H = Path("/usr/include/infiniband/verbs.h")
#: the library's C files, compiled together (rsd.h is their shared internal header)
SOURCES = ("preload.c", "ext_verbs.c", "mw.c", "async.c", "memwatch.c")
#: every file the library is built from (a change to one rebuilds it)
INPUTS = (*SOURCES, "rsd.h", "proto.h")
HINT = "apt-get install libibverbs-dev gcc"


def build(out: str | os.PathLike[str], cc: str | None = None, verbs_h: Path = VERBS_H) -> Path:
    """Compile ``SOURCES`` to ``out``; RuntimeError naming what is missing or the compiler's message."""
    cc = cc or os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not verbs_h.is_file() or cc is None:
        missing = "infiniband/verbs.h" if not verbs_h.is_file() else "a C compiler"
        raise RuntimeError(f"{missing} is missing: install the libibverbs headers and a C compiler "
                           f"(Debian/Ubuntu: {HINT})")
    dest = Path(out)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(f".{os.getpid()}.tmp")
    cmd = [cc, "-std=gnu11", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall", "-Wextra",
           "-Wno-unused-parameter", "-o", str(tmp), *(str(HERE / f) for f in SOURCES), "-lpthread", "-ldl"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"building librdmasim_ibverbs.so failed ({' '.join(cmd)}):\n{r.stderr.strip()}")
    os.replace(tmp, dest)
    return dest
