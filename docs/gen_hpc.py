"""Generate the tables of docs/hpc-patterns.md (stragglers, faults, halo exchange, hierarchical all-reduce).

Usage (from the repository root)::

    python docs/gen_hpc.py            # every table (Markdown)
    python docs/gen_hpc.py halo       # one of: stragglers, faults, halo, hierarchical

The runs are those tests/traffic/test_stragglers.py, test_hpc_patterns.py and test_hierarchical.py assert
on (tests/traffic/hpc_util.py): each pattern alone on an idle 100 Gb/s star (1 us links, 4096-byte MTU,
PFC, no loss) unless a fault is the point.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "traffic"))

from collective_util import alpha_beta  # noqa: E402
from hpc_util import run, span, star  # noqa: E402

from rdmasim import traffic as tr  # noqa: E402

US = 1_000_000


def _us(ps: float) -> str:
    return f"{ps / US:,.3f}"


def stragglers() -> None:
    print("| all-reduce (8 ranks, 8 MiB) | no straggler (us) | delay D (us) | with it (us) | cost - D (ns) |")
    print("|---|---|---|---|---|")
    builds = [("ring, one flow per step", lambda: tr.ring_allreduce(8, 8 << 20)),
              ("ring, 64 KiB chunks, inflight 4", lambda: tr.collective("allreduce", 8, 8 << 20,
                                                                        chunk_size=64 << 10)),
              ("ring, one chunk per block, inflight 4", lambda: tr.collective("allreduce", 8, 8 << 20))]
    for name, build in builds:
        table = build()
        t0 = span(run(table, 8)[0])
        for d in ((1, 10, 50, 200, 1000) if name.startswith("ring, one flow") else (50,)):
            t = span(run(tr.with_straggler(table, 3, d * US), 8)[0])
            print(f"| {name} | {_us(t0)} | {d} | {_us(t)} | {(t - t0 - d * US) / 1e3:,.0f} |")


def faults() -> None:
    table = tr.ring_allreduce(8, 8 << 20)
    base = span(run(table, 8)[0])
    cases = []
    cases.append(("none", star(8), {}))
    cases.append(("rank h3 enters 50 us late", star(8), {"straggler": 50 * US}))
    cases.append(("h3's NIC at 50 Gb/s", star(8, {3: "50Gbps"}), {}))
    lossy = star(8)
    lossy.links[3].ab.set_loss(0.002)
    cases.append(("h3 -> s0 drops 0.2% of frames", lossy, {}))
    down = star(8)
    down.links[3].fail(at=300 * US)
    down.links[3].recover(at=350 * US)
    cases.append(("h3's link down 300-350 us (ACK timeout 65.5 us)", down, {"timeout": 4}))
    print("| fault | time (us) | vs none | bottleneck | longest wait | shortest wait | retransmitted |")
    print("|---|---|---|---|---|---|---|")
    for name, sim, kw in cases:
        t = tr.with_straggler(table, 3, kw["straggler"]) if "straggler" in kw else table
        res, sim = run(t, 8, sim, **({"timeout": kw["timeout"]} if "timeout" in kw else {}))
        a = tr.analyze(t, res, sim)
        wait = a.wait()
        hi, lo = max(wait, key=wait.__getitem__), min(wait, key=wait.__getitem__)
        print(f"| {name} | {_us(a.time_ps)} | {a.time_ps / base:.3f} | {a.bottleneck or '-'} | "
              f"{hi} {_us(wait[hi])} us | {lo} {_us(wait[lo])} us | {int(res['retx_pkts'].sum())} pkts |")


HALO_CASES = (
    ([4, 2], True, "dissemination", 64 << 10, 0, False),
    ([4, 4], True, "tree", 8 << 10, 5, False),
    ([4, 4], True, "tree", 8 << 10, 5, True),
    ([4, 4], False, "dissemination", 256 << 10, 20, False),
    ([4, 4], False, "tree", 256 << 10, 20, False),
    ([2, 2, 2], True, "dissemination", 128 << 10, 10, True),
    ([4, 2], True, "none", 1 << 20, 0, False),
)


def halo() -> None:
    ab = alpha_beta()
    msg = span(run(tr.FlowTable.from_columns([0], [1], [8]), 2)[0])
    print(f"alpha = {_us(ab.alpha_ps)} us, beta = {ab.beta_ps_per_byte:.2f} ps/byte, one 8-byte barrier "
          f"message = {_us(msg)} us\n")
    print("| grid | periodic | barrier | face | compute (us) | overlap | measured (us) | model (us) | "
          "measured / model |")
    print("|---|---|---|---|---|---|---|---|---|")
    for dims, per, bar, face, comp, ov in HALO_CASES:
        t = tr.halo_exchange(dims, face, timesteps=3, periodic=per, compute=comp * US, barrier_kind=bar,
                             overlap=ov)
        m = span(run(t, math.prod(dims))[0])
        mod = tr.halo_model_ps(dims, face, ab.alpha_ps, ab.beta_ps_per_byte, timesteps=3, periodic=per,
                               compute_ps=comp * US, barrier_kind=bar, overlap=ov, barrier_msg_ps=msg)
        print(f"| {'x'.join(map(str, dims))} | {'yes' if per else 'no'} | {bar} | {face >> 10} KiB | "
              f"{comp} | {'yes' if ov else 'no'} | {_us(m)} | {_us(mod)} | {m / mod:.4f} |")


def hierarchical() -> None:
    ab = alpha_beta()
    print("| nodes | GPUs per node | size | intra step (us) | measured (us) | model (us) | "
          "measured / model | flat ring over the nodes (us) |")
    print("|---|---|---|---|---|---|---|---|")
    for nodes, gpus, size in ((4, 8, 8 << 20), (8, 4, 2 << 20), (4, 2, 512 << 10), (8, 8, 32 << 20)):
        t = tr.hierarchical_allreduce(nodes, size, gpus_per_node=gpus, intra_rate="2400Gbps",
                                      intra_latency="2us")
        m = span(run(t, nodes)[0])
        mod = tr.hierarchical_allreduce_ps(ab, nodes, size, gpus_per_node=gpus, intra_rate="2400Gbps",
                                           intra_latency="2us")
        step = tr.collectives.hierarchical.intra_step_ps(size, gpus, "2400Gbps", "2us")
        flat = span(run(tr.ring_allreduce(nodes, size), nodes)[0])
        print(f"| {nodes} | {gpus} | {size >> 10:,} KiB | {_us(step)} | {_us(m)} | {_us(mod)} | "
              f"{m / mod:.4f} | {_us(flat)} |")


def main() -> None:
    parts = {"stragglers": stragglers, "faults": faults, "halo": halo, "hierarchical": hierarchical}
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", nargs="?", choices=sorted(parts))
    args = ap.parse_args()
    for name, fn in parts.items():
        if args.part in (None, name):
            print(f"\n### {name}\n")
            fn()


if __name__ == "__main__":
    main()
