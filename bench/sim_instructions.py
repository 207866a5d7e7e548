"""Instructions the event loop executes per data packet, per posting mode, counted by callgrind.

Wall-clock ratios on a shared machine are noisy; instruction counts are not.  This runs
``bench/models/rdmasim_incast.py``'s verbs modes under ``valgrind --tool=callgrind`` with
collection only inside ``SimCore.run`` (the event loop: posting, setup and the interpreter are
left out) and prints each mode's instructions per data packet and its ratio to ``write1MiB``.
The inverse of that ratio bounds what any posting mode can reach in ``bench/posting_ratio.py``:
even a free ``post_send`` cannot make the simulation of one-packet WRITEs cheaper.

    python bench/sim_instructions.py --packets-per-sender 4000 [--nic-profile cx6] [--cc none]

``--modes flows1qp`` counts bulk flows (one size-only WRITE flow per sender), the traffic of
``bench/htsim_side_by_side.py``'s incast rows; ``--cc none`` runs them without congestion control.

``--base TREE`` counts the same modes a second time with another build (a source tree built in
place, e.g. a ``git worktree`` of an earlier commit, put first on ``PYTHONPATH``) and prints both
builds side by side: instructions per data packet, and each mode's packet rate relative to
``write1MiB`` of the same build (the inverse instruction ratio), before and after.

``--multipath CASES`` counts instead the runs of ``bench/multipath.py`` (a 2 x 2 x 4 leaf-spine
permutation), each case ``path_select:recovery:profile[:verb]``, e.g. out-of-order placement
against in-order RoCE on the same NIC profile and workload:
``ecmp:gbn:cx7-ar,ecmp:ooo:cx7-ar,spray:ooo:cx7-ar`` or, for READs,
``ecmp:gbn:cx7-ar:read,ecmp:ooo:cx7-ar:read`` (docs/multipath.md), or the Ultra
Ethernet transport beside RoCE: ``ecmp:gbn,ecmp:uet:oblivious,ecmp:uet:reps`` (docs/uet.md).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "models", "rdmasim_incast.py")


def _python() -> str:
    """The interpreter binary itself (valgrind must not trace a pyenv shell shim)."""
    return os.path.realpath(sys.executable)


def _tree_env(tree: str | None) -> dict[str, str] | None:
    """The environment that makes ``python`` import rdmasim from ``tree`` (None: this one's)."""
    if tree is None:
        return None
    if not any(Path(tree, "rdmasim").glob("_core*.so")):
        raise SystemExit(f"--base {tree}: no built rdmasim/_core*.so there "
                         "(build it: python setup.py build_ext --inplace)")
    return {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}


def loop_instructions(script_and_args: list[str], tree: str | None = None) -> int:
    """Instructions executed inside SimCore.run (the event loop) by ``python script args...``
    (``tree``: with that source tree's rdmasim)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=*SimCore*run*",
               f"--callgrind-out-file={out}", _python(), *script_and_args]
        subprocess.run(cmd, check=True, capture_output=True, env=_tree_env(tree))
        text = subprocess.run(["callgrind_annotate", out], check=True, capture_output=True, text=True).stdout
    m = re.search(r"^\s*([\d,]+)\s.*PROGRAM TOTALS", text, re.M)
    if not m:
        raise RuntimeError(f"no PROGRAM TOTALS in callgrind_annotate output for {script_and_args}")
    return int(m.group(1).replace(",", ""))


def instructions(mode: str, senders: int, packets_per_sender: int, nic_profile: str,
                 tree: str | None = None, cc: str = "auto") -> int:
    """Instructions executed inside SimCore.run for one run of the model ("write1MiB-ack1": write1MiB
    with every packet asking for an ACK, the frames of one-packet WRITEs); ``tree``: another build;
    ``cc``: the model's ``--cc`` (auto: DCQCN)."""
    model_mode, _, ack = mode.partition("-ack")
    extra = ["--ack-req-interval", ack] if ack else []
    if cc != "auto":
        extra += ["--cc", cc]
    return loop_instructions([MODEL, "--mode", model_mode, "--senders", str(senders),
                              "--packets-per-sender", str(packets_per_sender), "--nic-profile", nic_profile,
                              *extra], tree)


def multipath_instructions(case: str, size: str) -> tuple[int, int]:
    """(instructions inside SimCore.run, data packets sent) of one bench/multipath.py case."""
    script = os.path.join(HERE, "multipath.py")
    args = ["--leaves", "2", "--spines", "2", "--hosts-per-leaf", "4", "--size", size, "--cases", case]
    out = subprocess.run([_python(), script, *args], check=True, capture_output=True, text=True).stdout
    m = re.search(r"data_pkts (\d+) ok True", out)
    if not m:
        raise RuntimeError(f"bench/multipath.py {case}: {out!r}")
    return loop_instructions([script, *args]), int(m.group(1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--senders", type=int, default=8)
    p.add_argument("--packets-per-sender", type=int, default=4000)
    p.add_argument("--nic-profile", default="rxe")
    p.add_argument("--modes", default="write1MiB,write1MiB-ack1,write1024-batch",
                   help="comma-separated model modes; NAME-ackN: NAME with every N-th packet asking "
                   "for an ACK")
    p.add_argument("--cc", choices=["auto", "none", "dcqcn"], default="auto",
                   help="congestion control of the incast (auto: DCQCN with ECN marking at the switch)")
    p.add_argument("--base", default=None, help="another source tree built in place: count its build too "
                   "and print both side by side (before/after)")
    p.add_argument("--multipath", default="", help="comma-separated bench/multipath.py cases "
                   "path_select:recovery:profile[:verb] (the first is the reference)")
    p.add_argument("--multipath-size", default="1MiB", help="bytes per flow of --multipath")
    a = p.parse_args()
    if a.multipath:
        got = {c: multipath_instructions(c, a.multipath_size) for c in a.multipath.split(",")}
        ref_n, ref_p = next(iter(got.values()))
        print(f"leaf-spine 2 x 2 x 4 permutation, {a.multipath_size} per flow")
        print(f"{'case':24s} {'instructions':>14s} {'data pkts':>9s} {'per packet':>11s} {'ratio':>6s}")
        for c, (n, pk) in got.items():
            print(f"{c:24s} {n:14,d} {pk:9d} {n / pk:11.0f} {(n / pk) / (ref_n / ref_p):6.3f}")
        return
    modes = a.modes.split(",")
    packets = a.senders * a.packets_per_sender
    counts = {m: instructions(m, a.senders, a.packets_per_sender, a.nic_profile, cc=a.cc) for m in modes}
    ref = counts[modes[0]]
    cc = {"auto": "DCQCN", "dcqcn": "DCQCN", "none": "no CC"}[a.cc]
    print(f"incast-{a.senders}, {a.packets_per_sender} data packets per sender, NIC profile {a.nic_profile}, "
          f"{cc}")
    if a.base:
        base = {m: instructions(m, a.senders, a.packets_per_sender, a.nic_profile, a.base, a.cc)
                for m in modes}
        print(f"per data packet; rate: packets per instruction relative to {modes[0]} of the same build")
        print(f"{'mode':17s} {'base':>8s} {'this':>8s} {'this/base':>9s} {'rate base':>9s} {'rate this':>9s}")
        for m in modes:
            b, n = base[m] / packets, counts[m] / packets
            rate_b, rate_n = base[modes[0]] / base[m], ref / counts[m]
            print(f"{m:17s} {b:8.0f} {n:8.0f} {n / b:9.3f} {rate_b:9.3f} {rate_n:9.3f}")
        return
    print(f"{'mode':17s} {'instructions':>14s} {'per packet':>11s} {'ratio':>6s} {'bound':>6s}")
    for m, n in counts.items():
        print(f"{m:17s} {n:14,d} {n / packets:11.0f} {n / ref:6.2f} {ref / n:6.2f}")


if __name__ == "__main__":
    main()
