"""``python -m rdmasim.fabricd --fabric NAME [--scenario FILE] [--pcap FILE]``: the fabric daemon
(``rdmasim exec`` starts it)."""

from __future__ import annotations

import argparse
import sys

from rdmasim.fabricd.launch import serve


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m rdmasim.fabricd")
    p.add_argument("--fabric", default="default")
    p.add_argument("--scenario")
    p.add_argument("--pcap")
    p.add_argument("--lock-fd", type=int, help="the fabric's lock file, already locked by rdmasim exec")
    a = p.parse_args(argv)
    return serve(a.fabric, a.scenario, a.pcap, a.lock_fd)


if __name__ == "__main__":
    sys.exit(main())
