"""Regenerate ``rdmasim/pyverbs/_enum_values.py`` from the headers of rdma-core's pyverbs sdist.

pyverbs declares its enums in ``.pxd`` files by name only; the values come from the C headers
(``verbs.h``, ``tm_types.h``, ``rdma_cma.h``, ``mlx5dv.h``, ``efadv.h``). This script takes the
names from the sdist's ``.pxd`` files, compiles a small C program against the sdist's own headers
that prints each value, and writes the table as Python data. Run it when PYVERBS_VERSION changes::

    PYTHONPATH=$PWD python tests/pyverbs_suite/gen_enum_values.py

It needs a C compiler and the cached sdist (``run_rdma_core.fetch_sdist``).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

_spec = importlib.util.spec_from_file_location("run_rdma_core", Path(__file__).with_name("run_rdma_core.py"))
assert _spec is not None and _spec.loader is not None
rc = importlib.util.module_from_spec(_spec)
sys.modules["run_rdma_core"] = rc
_spec.loader.exec_module(rc)

OUT = Path(__file__).resolve().parents[2] / "rdmasim" / "pyverbs" / "_enum_values.py"

# (table name, .pxd inside pyverbs/, header to include); plus enums of verbs.h no .pxd declares
TABLES = [("VERBS", "libibverbs_enums.pxd", "infiniband/verbs.h"),
          ("RDMACM", "librdmacm_enums.pxd", "rdma/rdma_cma.h"),
          ("MLX5", "providers/mlx5/mlx5_enums.pxd", "infiniband/mlx5dv.h"),
          ("EFA", "providers/efa/efa_enums.pxd", "infiniband/efadv.h")]
EXTRA_FROM_HEADER = {"VERBS": ("libibverbs/verbs.h", ["ibv_rate"])}


def parse_pxd(text: str) -> list[tuple[str, bool, list[str]]]:
    """``[(enum name or '', cpdef?, [member, ...]), ...]`` of each ``cpdef enum`` / ``cdef enum``
    block (a ``cdef enum`` is not visible from Python; its members appear only through the
    ``.pyx`` module's aliases)."""
    enums: list[tuple[str, bool, list[str]]] = []
    cur: list[str] | None = None
    for line in text.splitlines():
        s = line.split("#")[0].rstrip()
        m = re.match(r"\s*c(p?)def enum\s*(\w*)\s*:", s)
        if m:
            cur = []
            enums.append((m.group(2), m.group(1) == "p", cur))
            continue
        if cur is None:
            continue
        m2 = re.match(r"\s{5,}([A-Za-z_]\w*)\s*(?:=.*)?$", s)
        if m2:
            cur.append(m2.group(1))
        elif s.strip():
            cur = None
    return enums


def parse_aliases(text: str) -> list[tuple[str, str, bool]]:
    """``NAME = OTHER`` lines of a ``.pyx`` (pyverbs' Python names for C-only enum members):
    ``(NAME, OTHER, cast to size_t?)``."""
    text = text.replace("\\\n", " ")
    return [(m.group(1), m.group(3), bool(m.group(2)))
            for m in re.finditer(r"^(\w+)\s*=\s*(<size_t>)?\s*(\w+)\s*$", text, re.M)]


def parse_header_enum(text: str, name: str) -> list[str]:
    """Members of ``enum name { ... };`` in a C header."""
    m = re.search(r"enum\s+" + name + r"\s*\{(.*?)\};", text, re.S)
    if m is None:
        raise SystemExit(f"enum {name} not found")
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    return [part.split("=")[0].strip() for part in body.split(",") if part.strip()]


def values(root: Path, header: str, names: list[str], work: Path) -> dict[str, int]:
    inc = work / "inc"
    # as rdma-core installs them: its uAPI headers also under infiniband/ (mlx5dv.h includes
    # <infiniband/mlx5_user_ioctl_verbs.h>), so that no older system header is picked up
    for sub, files in (("infiniband", [*root.glob("libibverbs/*.h"), *root.glob("kernel-headers/rdma/*.h"),
                                       root / "providers/mlx5/mlx5dv.h",
                                       root / "providers/mlx5/mlx5_api.h", root / "providers/efa/efadv.h"]),
                       ("rdma", [*root.glob("kernel-headers/rdma/*.h"), root / "librdmacm/rdma_cma.h",
                                 root / "librdmacm/rdma_verbs.h"])):
        (inc / sub).mkdir(parents=True, exist_ok=True)
        for f in files:
            dst = inc / sub / f.name
            if not dst.exists():
                dst.symlink_to(f)
    src = ["#include <stdio.h>", "#include <infiniband/verbs.h>", "#include <infiniband/tm_types.h>",
           f"#include <{header}>", "int main(void) {"]
    src += [f'printf("%s %lld\\n", "{n}", (long long)({n}));' for n in names]
    src += ["return 0; }"]
    (work / "e.c").write_text("\n".join(src) + "\n")
    subprocess.run(["cc", "-w", f"-I{inc}", f"-I{root}", f"-I{root / 'kernel-headers'}", "-o",
                    str(work / "e"), str(work / "e.c")], check=True, capture_output=True)
    out = subprocess.check_output([str(work / "e")], text=True)
    return {k: int(v) for k, v in (line.split() for line in out.splitlines())}


def main() -> int:
    sdist = rc.fetch_sdist()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with tarfile.open(sdist) as tar:
            tar.extractall(work / "src", filter="data")
        root = next((work / "src").glob("pyverbs-*/rdma-core"))
        lines = ["# ruff: noqa: E501 (generated data: one enum per line)",
                 f'"""Enum values of rdma-core {rc.PYVERBS_VERSION}\'s headers, by the names its pyverbs '
                 "declares.", "", "Generated by ``tests/pyverbs_suite/gen_enum_values.py`` (a C program "
                 "compiled against the", "sdist's own headers prints each value); do not edit by hand.",
                 "Each table: ``[(enum name or '' if anonymous, cpdef (visible from Python),",
                 "[(member, value), ...]), ...]``; ``<TABLE>_ALIASES``: the Python names pyverbs'",
                 "``.pyx`` gives C-only members.",
                 '"""', "", "from __future__ import annotations", ""]
        for table, pxd, header in TABLES:
            enums = parse_pxd((root / "pyverbs" / pxd).read_text())
            pyx = root / "pyverbs" / pxd.replace(".pxd", ".pyx")
            aliases = parse_aliases(pyx.read_text()) if pyx.is_file() else []
            if table in EXTRA_FROM_HEADER:
                hdr, extra = EXTRA_FROM_HEADER[table]
                text = (root / hdr).read_text()
                enums += [(e, True, parse_header_enum(text, e)) for e in extra]
            names = [m for _, _, ms in enums for m in ms]
            names += [t for _, t, _ in aliases if t not in names]
            bad: set[str] = set()
            while True:  # names pyverbs defines itself (not in the headers) are left out
                try:
                    vals = values(root, header, [n for n in names if n not in bad], work)
                    break
                except subprocess.CalledProcessError as exc:
                    new = set(re.findall(r"[‘'](\w+)[’'] undeclared", exc.stderr.decode())) - bad
                    if not new:
                        raise SystemExit(exc.stderr.decode()) from exc
                    bad |= new
            if bad:
                print(f"{table}: not in the headers (pyverbs defines them): {sorted(bad)}", file=sys.stderr)
            lines.append(f"{table}: list[tuple[str, bool, list[tuple[str, int]]]] = [")
            for ename, cpdef, members in enums:
                pairs = ", ".join(f"({m!r}, {vals[m]})" for m in members if m in vals)
                lines.append(f"    ({ename!r}, {cpdef}, [{pairs}]),")
            lines.append("]")
            lines.append(f"{table}_ALIASES: list[tuple[str, int]] = [")
            for alias, name, cast in aliases:
                if name in vals:
                    lines.append(f"    ({alias!r}, {vals[name] % (1 << 64) if cast else vals[name]}),")
            lines.append("]")
            lines.append("")
        OUT.write_text("\n".join(lines))
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
