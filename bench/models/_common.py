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


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--senders", type=int, default=N_SENDERS, help="senders (default 8)")
    p.add_argument("--packets-per-sender", type=int, default=10_000,
                   help="data packets each sender sends (default 10000 = 10 MB of 1000-byte payloads)")
    p.add_argument("--repeat", type=int, default=1,
                   help="runs in this process, one RESULT line each (start-up costs are paid once)")
    return p


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def emit(result: dict[str, Any]) -> None:
    """Print the result line compare.py looks for (prefixed, one line of JSON)."""
    result.setdefault("peak_rss_mb", round(peak_rss_mb(), 1))
    sys.stdout.write(RESULT_PREFIX + json.dumps(result) + "\n")
    sys.stdout.flush()
