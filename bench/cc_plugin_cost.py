"""What a congestion-control plug-in costs the event loop against the same algorithm built in.

``dctcp_plugin`` is csrc/cc/dctcp.c itself compiled at run time with cffi (rdmasim.cc_plugin, the
table renamed ``plugin``, parameters laid out as rs_dctcp_params) and registered as a plug-in;
``linerate_plugin`` is a plug-in that never limits (as no congestion control, but through the CC
calls).  Each runs bench/cc_cost.py's incast-8 (8 senders at 100 Gb/s, ECN marking, path MTU 1024)
and the table gives the event loop's instructions per data packet (callgrind, collection only inside
``SimCore.run``: registration and compilation are left out) and the ratio of each plug-in to its
built-in counterpart.  The runs are checked to be the same simulation: equal events, packets, ACKs
and end time.

    python bench/cc_plugin_cost.py                  # 8 x 1 MiB
    python bench/cc_plugin_cost.py --size 4MiB --cflags=-O3
    python bench/cc_plugin_cost.py --one dctcp_plugin  # one run, one JSON line
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

LINE_RATE = """
static void init(void *s, const void *p, double line, int64_t now) {}
static double rate(const void *s, const void *p) { return 0.0; }
const rs_cc_algo plugin = { .init = init, .rate_bps = rate };
"""

#: the plug-ins and the built-in each is compared with
PAIRS = {"dctcp_plugin": "dctcp", "linerate_plugin": "none"}


def register(cflags: str) -> None:
    """Register the bench's plug-ins in this process."""
    from rdmasim import cc
    from rdmasim.cc_dctcp import DctcpParams

    with open(os.path.join(ROOT, "csrc", "cc", "dctcp.c")) as f:
        dctcp_src = "#define rs_cc_dctcp plugin\n" + f.read()
    v = DctcpParams.for_path("100Gbps", "4190ns", mtu=1024).to_c()  # bench/cc_cost.py's DCTCP
    types = {"window_bytes": "uint64_t", "var_win": "int", "pace": "int", "ack_every": "uint32_t"}
    params = {k: (types.get(k, "double"), x) for k, x in v.items()}
    flags = tuple(cflags.split())
    cc.register_plugin("dctcp_plugin", dctcp_src, params=params, extra_compile_args=flags)
    cc.register_plugin("linerate_plugin", LINE_RATE, extra_compile_args=flags)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="1MiB", help="bytes per sender (default 1MiB)")
    p.add_argument("--msg", default="1MiB", help="bytes per WRITE (default 1MiB)")
    p.add_argument("--cflags", default="-O2", help="the plug-ins' compiler flags (default -O2)")
    p.add_argument("--one", help="run this algorithm once and print one JSON line")
    a = p.parse_args()
    from cc_cost import parse_size, run_once

    if a.one:
        register(a.cflags)
        print(json.dumps(run_once(a.one, parse_size(a.size), parse_size(a.msg))))
        return
    from sim_instructions import loop_instructions

    me = os.path.abspath(__file__)
    args = ["--size", a.size, "--msg", a.msg, "--cflags=" + a.cflags]
    names = [n for pair in PAIRS.items() for n in pair[::-1]]
    runs = {n: json.loads(subprocess.run([sys.executable, me, "--one", n, *args], check=True,
                                         capture_output=True, text=True).stdout.strip().splitlines()[-1])
            for n in names}
    for plug, built in PAIRS.items():
        same = [k for k in ("events", "packets", "acks", "sim_end_us") if runs[plug][k] != runs[built][k]]
        if same:
            raise SystemExit(f"{plug} and {built} ran different simulations: {same} differ")
    counts = {n: loop_instructions([me, "--one", n, *args]) for n in names}
    print(f"incast-8, {a.size} per sender in {a.msg} WRITEs, plug-ins compiled with {a.cflags}: "
          "event-loop instructions (callgrind)")
    print(f"{'algorithm':16} {'instructions':>14} {'per packet':>11} {'events':>9} {'plug-in/built-in':>17}")
    for n in names:
        c, pk = counts[n], runs[n]["packets"]
        ratio = f"{c / counts[PAIRS[n]]:.4f}" if n in PAIRS else ""
        print(f"{n:16} {c:14,d} {c / pk:11.1f} {runs[n]['events']:9d} {ratio:>17}")


if __name__ == "__main__":
    main()
