"""Shared bits of the incast-8 models: the scenario constants, CLI and the JSON result line.

Every model is a script that runs one scenario and prints exactly one JSON object on its last
stdout line; ``bench/compare.py`` runs each in its own subprocess (one process tree) and collects them.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
from typing import Any

N_SENDERS = 8
RATE_BPS = 100_000_000_000  # every link: 100 Gb/s
DELAY_S = 1e-6  # every link: 1 us propagation
PAYLOAD = 1000  # bytes of application payload per data packet
RESULT_PREFIX = "RESULT "

#: keys every model's result has (compare.py relies on them; ``finish`` checks and derives)
REQUIRED = ("simulator", "label", "simulates", "scenario", "mode", "packets", "packets_expected",
            "packets_retx", "payload_bytes", "events", "frames", "ecn_marks", "cnps", "import_s", "setup_s",
            "run_s", "counted", "timed_run", "timed_whole", "sim_time_s")


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--senders", type=int, default=N_SENDERS, help="senders (default 8)")
    p.add_argument("--packets-per-sender", type=int, default=10_000,
                   help="data packets each sender sends (default 10000 = 10 MB of 1000-byte payloads)")
    p.add_argument("--repeat", type=int, default=1,
                   help="runs in this process, one RESULT line each (start-up costs are paid once)")
    return p


def finish(result: dict[str, Any]) -> dict[str, Any]:
    """Check a model's result for the common keys and add the derived ones: ``whole_s`` (import +
    setup + run), packets per second of each, events and frames per data packet.

    ``packets``: data packets delivered once (first transmissions), counted by the simulation;
    ``packets_retx``: retransmissions, apart; ``frames``: frames put on links, every hop counted;
    ``run_s``: the event loop only; ``import_s``: what this run paid to import (a process's first run
    pays it all, later runs ~0), so ``whole_s`` of a process's first run is the whole job.
    """
    missing = [k for k in REQUIRED if k not in result]
    if missing:
        raise KeyError(f"model result lacks {missing}")
    result.setdefault("placeholder", False)
    n = result["packets"]
    result["whole_s"] = result["import_s"] + result["setup_s"] + result["run_s"]
    result["packets_per_s_run"] = n / result["run_s"] if result["run_s"] > 0 else None
    result["packets_per_s_whole"] = n / result["whole_s"] if result["whole_s"] > 0 else None
    result["events_per_packet"] = result["events"] / n if n and result["events"] is not None else None
    result["frames_per_packet"] = result["frames"] / n if n else None
    return result


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def emit(result: dict[str, Any]) -> None:
    """Print the result line compare.py looks for (prefixed, one line of JSON)."""
    result.setdefault("peak_rss_mb", round(peak_rss_mb(), 1))
    sys.stdout.write(RESULT_PREFIX + json.dumps(result) + "\n")
    sys.stdout.flush()
