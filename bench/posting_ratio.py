"""Packet rate of one-WRITE-per-packet posting against 1 MiB WRITEs, in one process, on incast-8.

Runs ``bench/models/rdmasim_incast.py``'s modes ``write1MiB`` (the reference), ``write1000`` and
``write1024`` (one ``post_send`` per work request; ``write1024-pyverbs`` the same through
``rdmasim.pyverbs``), ``write1024-chain`` (``next_wr`` chains) and
``write1024-batch`` (``QP.post_send_batch``) in turn, ``--repeat`` rounds (round-robin, so load
changes on the machine hit every mode alike), each run in a process of its own, and prints each
mode's median data packets per wall second (setup, posting and the run to completion all timed;
not the interpreter's start-up and imports) and its ratio to ``write1MiB``.

A one-packet WRITE asks for an ACK (its message's last packet does), so under rxe the per-packet
modes simulate an ACK frame per data packet where ``write1MiB`` simulates one per 66: about twice
the frames.  ``write1MiB-ack1`` is the reference with the same frames: 1 MiB WRITEs whose every
packet asks for an ACK (NIC ``ack_req_interval = 1``).  The ratio to it is what posting one work
request per packet costs over posting 1 MiB WRITEs for the same simulated traffic; the ratio to
``write1MiB`` adds the cost of simulating those ACKs.  Under cx6 the responder coalesces 4 ACKs
into one in both.

Each run gets a fresh process because runs in one process are not independent: glibc's malloc
raises its mmap threshold after the first large blocks are freed, and from the third run on a
1 MiB-WRITE run in the same process took up to 1.6x longer (the per-packet runs much less), which
would flatter the ratios.

    python bench/posting_ratio.py --packets-per-sender 16000 --repeat 5  # 16,384: the device's max_qp_wr
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models", "rdmasim_incast.py")

MODES = ["write1MiB", "write1MiB-ack1", "write1000", "write1024", "write1024-pyverbs", "write1024-chain",
         "write1024-batch"]


def _run(senders: int, packets_per_sender: int, mode: str, nic_profile: str = "rxe") -> dict:
    """One run of the model in a process of its own: its result ("write1MiB-ack1": write1MiB with
    every packet asking for an ACK)."""
    model_mode, _, ack = mode.partition("-ack")
    extra = ["--ack-req-interval", ack] if ack else []
    out = subprocess.run([sys.executable, MODEL, "--mode", model_mode, "--senders", str(senders),
                          "--packets-per-sender", str(packets_per_sender), "--nic-profile", nic_profile,
                          *extra], capture_output=True, text=True, check=True).stdout
    lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    return json.loads(lines[-1][len("RESULT "):])


def measure(senders: int, packets_per_sender: int, repeat: int, modes: list[str],
            nic_profile: str = "rxe") -> dict[str, dict]:
    """Each mode's runs: wall seconds, data packets, events, frames on every link."""
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    for _ in range(repeat):
        for m in modes:
            runs[m].append(_run(senders, packets_per_sender, m, nic_profile))
    out = {}
    for m, rs in runs.items():
        rate = statistics.median(r["packets"] / (r["setup_s"] + r["run_s"]) for r in rs)  # posting + run
        out[m] = {"packets": rs[0]["packets"], "events": rs[0]["events"], "frames": rs[0]["frames"],
                  "pkts_per_s": rate,
                  "setup_s": statistics.median(r["setup_s"] for r in rs),
                  "run_s": statistics.median(r["run_s"] for r in rs)}
    for r in dict.fromkeys((modes[0], "write1MiB-ack1")):
        if r in out:
            ref = out[r]["pkts_per_s"]
            for m in out:
                out[m]["ratio_vs_" + r] = out[m]["pkts_per_s"] / ref
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--senders", type=int, default=8)
    p.add_argument("--packets-per-sender", type=int, default=16_000,
                   help="at most 16384: the pyverbs mode posts them all to one send queue (max_qp_wr)")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--nic-profile", default="rxe",
                   help="rdmasim.nic profile of every host: rxe (an ACK per one-packet WRITE) or cx6 "
                   "(coalesced ACKs)")
    a = p.parse_args()
    if not 1 <= a.packets_per_sender <= 16_384:
        p.error(f"--packets-per-sender {a.packets_per_sender}: allowed 1..16384 (the pyverbs mode's send "
                "queue holds them all; the device's max_qp_wr is 16384)")
    res = measure(a.senders, a.packets_per_sender, a.repeat, MODES, a.nic_profile)
    if a.json:
        print(json.dumps(res))
        return
    print(f"incast-{a.senders}, {a.packets_per_sender} data packets per sender, NIC profile {a.nic_profile}, "
          f"median of {a.repeat}")
    print(f"{'mode':17s} {'packets':>8s} {'events':>9s} {'setup s':>8s} {'run s':>7s} {'pkts/s':>10s} "
          f"{'vs write1MiB':>12s} {'vs write1MiB-ack1':>17s}")
    for m, r in res.items():
        print(f"{m:17s} {r['packets']:8d} {r['events']:9d} {r['setup_s']:8.3f} {r['run_s']:7.3f} "
              f"{r['pkts_per_s']:10.0f} {r['ratio_vs_write1MiB']:12.2f} {r['ratio_vs_write1MiB-ack1']:17.2f}")


if __name__ == "__main__":
    main()
