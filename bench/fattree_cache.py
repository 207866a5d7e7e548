"""L1 data-cache misses per data packet of a fat-tree permutation, by callgrind's cache model.

Runs ``bench/scaling_models.py``'s ``hosts`` kind (a k-ary fat tree of k^3/4 hosts, a random
permutation of ``--size`` bytes per host, DCQCN unless ``--no-cc``) twice under
``valgrind --tool=callgrind --cache-sim=yes``: once collecting inside ``SimCore.run`` (the event
loop) and once inside ``rs_routes_compute`` (the routing tables, computed once as the run starts),
and prints the difference per data packet for each event callgrind counts (``Ir`` instructions,
``D1mr``/``D1mw`` L1 data read/write misses, ...).  Callgrind's L1 data cache is the host's
(here 32 KiB, 8-way, 64-byte lines).

    python bench/fattree_cache.py --k 16 --size 8KiB
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "scaling_models.py")


def _size(text: str) -> int:
    m = re.fullmatch(r"(\d+)\s*(KiB|MiB|B)?", text.strip())
    if not m:
        raise ValueError(f"--size {text!r}: allowed a byte count such as 8192, 8KiB or 1MiB")
    return int(m.group(1)) * {"KiB": 1024, "MiB": 1 << 20}.get(m.group(2) or "B", 1)


def totals(spec: dict, toggle: str) -> tuple[dict, dict[str, int]]:
    """The model's RESULT line and callgrind's program totals inside functions matching toggle."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", "--cache-sim=yes", "--collect-atstart=no",
               f"--toggle-collect={toggle}", f"--callgrind-out-file={out}",
               os.path.realpath(sys.executable), MODEL, json.dumps(spec)]
        run = subprocess.run(cmd, check=True, capture_output=True, text=True)
        line = next(ln for ln in run.stdout.splitlines() if ln.startswith("RESULT "))
        ann = subprocess.run(["callgrind_annotate", out], check=True, capture_output=True,
                             text=True).stdout.splitlines()
        events = next(ln for ln in ann if ln.startswith("Events shown:")).split(":", 1)[1].split()
        tot = next(ln for ln in ann if "PROGRAM TOTALS" in ln).split("PROGRAM")[0]
        nums = [int(x.replace(",", "")) for x in re.findall(r"[\d,]+", re.sub(r"\([^)]*\)", " ", tot))]
        return json.loads(line[len("RESULT "):]), dict(zip(events, nums, strict=True))


def point(k: int, size: int, cc: bool) -> dict:
    """Per data packet: each callgrind event inside the event loop, route computation subtracted."""
    spec = {"kind": "hosts", "k": k, "size": size, "cc": cc}
    res, run = totals(spec, "*SimCore*run*")
    _, routes = totals(spec, "rs_routes_compute*")
    pkts = res["data_pkts"]
    return {"k": k, "hosts": res["hosts"], "data_pkts": pkts, "complete": res["complete"],
            "per_pkt": {e: (run[e] - routes.get(e, 0)) / pkts for e in run}}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, default=16, help="fat-tree radix (even, >= 4)")
    ap.add_argument("--size", default="8KiB", help="bytes per flow")
    ap.add_argument("--no-cc", action="store_true", help="no congestion control")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    a = ap.parse_args(argv)
    res = point(a.k, _size(a.size), not a.no_cc)
    if a.json:
        print(json.dumps(res))
        return
    p = res["per_pkt"]
    print("| hosts | data packets | instructions | L1 data read misses | L1 data write misses |")
    print("|---:|---:|---:|---:|---:|")
    print(f"| {res['hosts']:,} | {res['data_pkts']:,} | {p['Ir']:,.0f} | {p['D1mr']:.1f} | {p['D1mw']:.1f} |")


if __name__ == "__main__":
    main()
