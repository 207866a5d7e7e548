"""Compare what ``rdmasim validate`` estimates with what runs do: events, simulated time, wall time
and the files written (capture, trace), on small scenarios of every kind of cost the estimate
models (packets per hop, fabric size, timer polls, capture bytes, trace records).

Usage::

    python bench/estimate_calibration.py            # every case
    python bench/estimate_calibration.py ft16 wd    # the cases whose name contains one of these

Prints one line per case with each estimate, the measured value and their ratio; the constants of
rdmasim/scenario/check.py are set from these ratios (each within 3x on the machine they were
measured on; wall times vary with the machine and its load).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from rdmasim.scenario import loads, run_scenario
from rdmasim.scenario.check import estimate

HEAD = "[simulation]\nprogress = false\n[outputs]\nplots = false\n"
CASES = {
    "b2b-4MiB": '[[flows]]\nsrc = "a"\ndst = "b"\nsize = "4MiB"\n',
    "incast-8": '[topology]\nkind = "incast"\nn_senders = 8\n[traffic.incast]\nsize = "1MiB"\n',
    "star-a2a": '[topology]\nkind = "star"\nn = 8\n[traffic.all_to_all]\nsize = "64KiB"\n',
    "leafspine-a2a": '[topology]\nkind = "leaf_spine"\nleaves = 4\nspines = 2\nhosts_per_leaf = 4\n'
                     '[traffic.all_to_all]\nsize = "32KiB"\n',
    "ft4-perm": '[topology]\nkind = "fat_tree"\nk = 4\n[traffic.permutation]\nsize = "1MiB"\n',
    "ft8-perm": '[topology]\nkind = "fat_tree"\nk = 8\n[traffic.permutation]\nsize = "256KiB"\n',
    "ft16-perm": '[topology]\nkind = "fat_tree"\nk = 16\n[traffic.permutation]\nsize = "64KiB"\n',
    "df72-perm": '[topology]\nkind = "dragonfly"\nrouters_per_group = 4\nhosts_per_router = 2\n'
                 'global_per_router = 2\n[traffic.permutation]\nsize = "1MiB"\n',
    "df1056-perm": '[topology]\nkind = "dragonfly"\nrouters_per_group = 8\nhosts_per_router = 4\n'
                   'global_per_router = 4\n[traffic.permutation]\nsize = "32KiB"\n',
    "dumbbell": '[topology]\nkind = "dumbbell"\nn_left = 3\nn_right = 3\nbottleneck_rate = "25Gbps"\n'
                '[traffic.all_to_all]\nsize = "64KiB"\n',
    "wd-1ns-star": '[topology]\nkind = "star"\nn = 4\n[switch.watchdog]\nenabled = true\npoll = "1ns"\n'
                   'detect = "1ns"\n[[flows]]\nsrc = "h0"\ndst = "h1"\nsize = "256KiB"\n',
    "wd-1ns-ft4": '[topology]\nkind = "fat_tree"\nk = 4\n[switch.watchdog]\nenabled = true\npoll = "1ns"\n'
                  'detect = "1ns"\n[traffic.permutation]\nsize = "64KiB"\n',
    "deadlock-1ns": '[topology]\nkind = "star"\nn = 4\n[switch]\ndeadlock_check = "1ns"\n'
                    '[[flows]]\nsrc = "h0"\ndst = "h1"\nsize = "256KiB"\n',
    "pcap-leafspine": '[outputs]\npcap = true\n[topology]\nkind = "leaf_spine"\n[traffic.all_to_all]\n'
                      'size = "4MiB"\n',
    "pcap-snaplen": '[outputs]\npcap = true\npcap_snaplen = 128\n[topology]\nkind = "star"\nn = 4\n'
                    '[traffic.all_to_all]\nsize = "4MiB"\n',
    "trace-capped": '[outputs]\ntrace = true\n[topology]\nkind = "star"\nn = 4\n[[flows]]\nsrc = "h0"\n'
                    'dst = "h1"\nsize = "400MiB"\n',
}


def _merge(text: str) -> str:
    """HEAD with the case's [outputs] keys folded into HEAD's table."""
    if "[outputs]\n" not in text:
        return HEAD + text
    body, _, rest = text.partition("[outputs]\n")
    keys, sep, tail = rest.partition("[")
    return HEAD.replace("[outputs]\n", "[outputs]\n" + keys) + body + sep + tail


def _ratio(est: float, real: float) -> str:
    return f"{est / real:5.2f}x" if real else "  -  "


def main(names: list[str]) -> None:
    import warnings

    warnings.simplefilter("ignore")
    for name, text in CASES.items():
        if names and not any(n in name for n in names):
            continue
        sc = loads(_merge(text), f"{name}.toml")
        est = estimate(sc)
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            t0 = time.perf_counter()
            res = run_scenario(sc, out, progress=False)
            wall = time.perf_counter() - t0
            paths = {"capture": os.path.join(out, "capture.pcap"), "trace": os.path.join(out, "trace.npz")}
            files = {k: os.path.getsize(p) for k, p in paths.items() if os.path.exists(p)}
        disk = "  ".join(f"{k} {est.disk_parts.get(k, 0) / 1e6:.1f}/{v / 1e6:.1f} MB "
                         f"({_ratio(est.disk_parts.get(k, 0), v)})" for k, v in files.items())
        print(f"{name:15s} events {est.events:>11,}/{res.events:<11,} ({_ratio(est.events, res.events)})  "
              f"sim {est.sim_time_ps / 1e6:8.1f}/{res.sim_time_ps / 1e6:<8.1f} us "
              f"({_ratio(est.sim_time_ps, res.sim_time_ps)})  "
              f"wall {est.wall_s:6.2f}/{wall:<6.2f} s ({_ratio(est.wall_s, wall)})  {disk}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
