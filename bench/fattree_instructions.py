"""Instructions per data packet of a fat-tree permutation, the event queue's share, events per
packet, and the instructions of route computation, counted by callgrind.

Each point is ``bench/scaling_models.py``'s ``hosts`` kind (a k-ary fat tree of k^3/4 hosts,
100 Gb/s, 1 us links, MTU 1024, PFC, DCQCN with RED ECN unless ``--no-cc``, a random permutation
of ``--size`` bytes per host).  It runs once natively (events, data packets, events per wall
second) and once under ``valgrind --tool=callgrind`` with collection only inside ``SimCore.run``
(the event loop), where every instruction is attributed to the source file of its line, inlined
code included: the event queue's share is that of ``eventq.h`` and ``eventq.c``.  A third run
collects only inside ``rs_routes_compute`` (the routing tables, computed once when the run starts,
so inside ``SimCore.run``): the instructions per data packet leave them out.

    python bench/fattree_instructions.py --k 8,16 --size 64KiB
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "scaling_models.py")
EVENTQ_FILES = ("eventq.h", "eventq.c")


def _python() -> str:
    """The interpreter binary itself (valgrind must not trace a pyenv shell shim)."""
    return os.path.realpath(sys.executable)


def _size(text: str) -> int:
    m = re.fullmatch(r"(\d+)\s*(KiB|MiB|B)?", text.strip())
    if not m:
        raise ValueError(f"--size {text!r}: allowed a byte count such as 65536, 64KiB or 1MiB")
    return int(m.group(1)) * {"KiB": 1024, "MiB": 1024 * 1024, None: 1, "B": 1}[m.group(2)]


def self_cost_by_file(path: str) -> dict[str, int]:
    """Self instructions per source file of a callgrind output file, inlined lines attributed to
    the file they come from (the ``fi=``/``fe=`` records), calls' inclusive costs left out."""
    names: dict[str, str] = {}
    cost: dict[str, int] = defaultdict(int)
    cur_fl = cur = ""
    skip_next = False

    def name_of(rest: str) -> str:
        m = re.match(r"\((\d+)\)(?:\s+(.*))?", rest)
        if not m:
            return rest
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), m.group(1))

    with open(path) as f:
        for line in f:
            if not line or line[0] == "#":
                continue
            if line.startswith("fl="):
                cur_fl = cur = name_of(line[3:].strip())
            elif line.startswith(("fi=", "fe=")):
                cur = name_of(line[3:].strip())
            elif line.startswith("fn="):
                cur = cur_fl
            elif line.startswith("calls="):
                skip_next = True
            elif line[0] in "0123456789+-*":
                if skip_next:
                    skip_next = False
                    continue
                parts = line.split()
                if len(parts) >= 2:
                    cost[cur] += int(parts[1])
            elif line.startswith(("cfi=", "cfl=", "cfn=", "ob=", "cob=")):
                if line.startswith(("cfi=", "cfl=")):
                    name_of(line[4:].strip())
    return dict(cost)


def callgrind(args: list[str], toggle: str) -> dict[str, int]:
    """Self instructions per source file inside functions matching ``toggle``."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--toggle-collect={toggle}",
               f"--callgrind-out-file={out}", _python(), *args]
        subprocess.run(cmd, check=True, capture_output=True)
        return self_cost_by_file(out)


def native(spec: dict) -> dict:
    out = subprocess.run([_python(), MODEL, json.dumps(spec)], check=True, capture_output=True,
                         text=True).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def point(k: int, size: int, cc: bool) -> dict:
    spec = {"kind": "hosts", "k": k, "size": size, "cc": cc}
    res = native(spec)
    run = callgrind([MODEL, json.dumps(spec)], "*SimCore*run*")
    total = sum(run.values())
    evq = sum(v for f, v in run.items() if os.path.basename(f) in EVENTQ_FILES)
    routes = sum(callgrind([MODEL, json.dumps(spec)], "rs_routes_compute*").values())
    total -= routes  # computed once as the run starts: not a per-packet cost
    pkts = res["data_pkts"]
    return {"k": k, "hosts": res["hosts"], "data_pkts": pkts, "complete": res["complete"],
            "events": res["events"], "events_per_pkt": res["events"] / pkts,
            "events_per_s": res["events_per_s"], "instr_per_pkt": total / pkts,
            "eventq_instr_per_pkt": evq / pkts, "eventq_share": evq / total if total else 0.0,
            "route_instr": routes}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--k", default="8,16", help="comma-separated fat-tree radixes (k^3/4 hosts each)")
    p.add_argument("--size", default="64KiB", help="bytes per flow of the permutation")
    p.add_argument("--no-cc", action="store_true", help="no DCQCN and no ECN marking")
    p.add_argument("--json", default="", help="also write the rows to this JSON file")
    a = p.parse_args()
    rows = [point(int(k), _size(a.size), not a.no_cc) for k in a.k.split(",")]
    print("| hosts | data packets | events/packet | instructions/packet | event queue instr/packet "
          "| event queue share | events/s (native) | route computation instr |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['hosts']:,} | {r['data_pkts']:,} | {r['events_per_pkt']:.2f} "
              f"| {r['instr_per_pkt']:,.0f} "
              f"| {r['eventq_instr_per_pkt']:,.0f} | {100 * r['eventq_share']:.1f} % "
              f"| {r['events_per_s'] / 1e6:.2f} M | {r['route_instr']:,} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
