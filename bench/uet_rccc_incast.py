"""An n-to-1 incast of UET flows under RCCC (receiver credit), NSCC and a fixed window: the
receiver's switch egress queue (sampled every 5 us), the fairness of the senders' shares (Jain's
index over the bytes each delivered when the first finished), completion times, resends and PFC
pause.  docs/uet.md quotes its table.

    python bench/uet_rccc_incast.py [--senders 8] [--size 1MiB]
"""

from __future__ import annotations

import argparse

import numpy as np

from rdmasim import topology
from rdmasim.units import parse_size

STEP_PS = 5_000_000


def run(cc: str, n: int, size: int) -> dict[str, float]:
    inc = topology.incast(n, rate="100Gbps", delay="1us", mtu=4096)
    fs = inc.sim.add_flows({"src": np.arange(n), "dst": np.full(n, n), "size": np.full(n, size)},
                           transport="uet", uet={"cc": cc})
    queue, shares, t = [], None, 0
    while True:
        t += STEP_PS
        inc.sim.run_flows(until=t)
        queue.append(inc.switch.queue_bytes(n)[0])
        r = fs.results()
        if shares is None and (r["finish_ps"] >= 0).any():
            shares = r["bytes_delivered"].astype(float)
        if (r["finish_ps"] >= 0).all():
            break
    assert (r["status"] == 0).all() and (r["bytes_delivered"] == size).all()
    q = np.array(queue) / 1e3
    half = q[len(q) // 2:]
    return {
        "queue_peak_kb": float(q.max()), "queue_median_kb": float(np.median(q)),
        "queue_median_2nd_half_kb": float(np.median(half)),
        "jain": float(shares.sum() ** 2 / (n * (shares * shares).sum())),
        "fct_max_us": float(r["fct_ps"].max() / 1e6), "fct_min_us": float(r["fct_ps"].min() / 1e6),
        "retx_pkts": int(r["retx_pkts"].sum()), "pause_us": float(r["pause_ps"].sum() / 1e6),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--senders", type=int, default=8)
    ap.add_argument("--size", default="1MiB")
    a = ap.parse_args()
    size = parse_size(a.size)
    rows = {cc: run(cc, a.senders, size) for cc in ("rccc", "nscc", "none")}
    keys = list(next(iter(rows.values())))
    print(f"{a.senders}-to-1 incast, {size} bytes each, 100 Gb/s, 1 us links, PFC")
    print(f"{'':28}" + "".join(f"{cc:>12}" for cc in rows))
    for k in keys:
        print(f"{k:28}" + "".join(f"{rows[cc][k]:12.4g}" for cc in rows))


if __name__ == "__main__":
    main()
