"""The ``rdmasim exec`` command (added to the CLI by rdmasim/cli.py)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def add_commands(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """Register ``exec``."""
    e = cmd("exec", "run a program (C verbs binaries: perftest, ibverbs-utils, your own) on an emulated "
                    "fabric served by a daemon; docs/c-programs.md")
    e.add_argument("--host", help="the host whose NIC is the program's first device (default: h0's order)")
    e.add_argument("--scenario", help="scenario file of the fabric (default: hosts h0, h1 on one switch, "
                                      "100 Gb/s); "
                                      "used when this command starts the fabric's daemon")
    e.add_argument("--pcap", help="capture every frame of the fabric to this file (when the daemon starts)")
    e.add_argument("--fabric", default="default", help="the fabric's name: programs on one name share it "
                                                       "(default: default)")
    e.add_argument("--sim-clock", action="store_true",
                   help="gettimeofday and clock_gettime read simulated time (docs/c-programs.md, Time)")
    e.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS...")
    e.set_defaults(func=_exec)


def _exec(args: Any) -> int:
    from rdmasim.fabricd.launch import exec_program

    argv = list(args.program)
    if argv and argv[0] == "--":
        argv = argv[1:]
    exec_program(argv, fabric=args.fabric, host=args.host, scenario=args.scenario, pcap=args.pcap,
                 sim_clock=args.sim_clock)
    return 0  # not reached: the program replaced this process
