"""``rdmasim import htsim``: its options (added to the ``import`` command of rdmasim.hpcc.cli) and
the command. Errors are raised as ValueError / OSError, which rdmasim.cli's error boundary prints
as one line and exit status 2."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(imp: argparse.ArgumentParser) -> None:
    """The htsim options of ``rdmasim import`` (htsim's own option names, as flags)."""
    g = imp.add_argument_group("htsim (format htsim; htsim's command-line options)")
    g.add_argument(
        "--topology",
        choices=["fat_tree", "star"],
        default="fat_tree",
        help="fat_tree (htsim's FatTreeTopology, 3 tiers) or star (one switch)",
    )
    g.add_argument(
        "--k",
        type=int,
        default=None,
        help="fat_tree arity (default: the smallest even k with k^3/4 >= Nodes)",
    )
    g.add_argument("--hosts", type=int, default=None, help="star: host count (default: Nodes)")
    g.add_argument(
        "--linkspeed",
        type=float,
        default=None,
        metavar="MBPS",
        help="htsim -linkspeed: link rate in Mb/s (default 100000)",
    )
    g.add_argument(
        "--hop-latency",
        type=float,
        default=None,
        metavar="US",
        help="htsim -hop_latency: per-link delay in us (default 1)",
    )
    g.add_argument(
        "--switch-latency",
        type=float,
        default=None,
        metavar="US",
        help="htsim -switch_latency: switching latency in us (default 0)",
    )
    g.add_argument("--mtu", type=int, default=None, help="htsim -mtu: packet size in bytes")
    g.add_argument(
        "--q",
        type=int,
        default=None,
        metavar="PKTS",
        help="htsim -q: queue size in packets (named as not supported)",
    )
    g.add_argument("--end", type=float, default=None, metavar="US", help="htsim -end: end time in us")
    g.add_argument("--seed", type=int, default=None, help="htsim -seed")
    g.add_argument(
        "--ignore-triggers",
        action="store_true",
        help="start flows that wait for a trigger at 0 and name them (default: after = the flows that fire "
        "the trigger; a trigger that does not map is refused)",
    )


#: the options add_arguments adds, by destination, with their defaults
_OPTIONS = {
    "topology": "fat_tree",
    "k": None,
    "hosts": None,
    "linkspeed": None,
    "hop_latency": None,
    "switch_latency": None,
    "mtu": None,
    "q": None,
    "end": None,
    "seed": None,
    "ignore_triggers": False,
}


def refuse_htsim_options(args: argparse.Namespace) -> None:
    """ValueError naming the htsim options given to another format (they would do nothing)."""
    given = [f"--{k.replace('_', '-')}" for k, v in _OPTIONS.items() if getattr(args, k) != v]
    if given:
        raise ValueError(
            f"rdmasim import {args.format}: {', '.join(given)}: htsim options "
            "(allowed with format htsim only)"
        )


def run(args: argparse.Namespace) -> int:
    """Translate a connection matrix into a scenario TOML; print the notes and what is not supported."""
    from rdmasim.htsim.cm import read_cm
    from rdmasim.htsim.translate import Options, translate

    cm = read_cm(args.source)
    out = Path(args.output)
    o = Options(
        topology=args.topology,
        k=args.k,
        hosts=args.hosts,
        linkspeed_mbps=args.linkspeed,
        hop_latency_us=args.hop_latency,
        switch_latency_us=args.switch_latency,
        mtu=args.mtu,
        queue_pkts=args.q,
        end_us=args.end,
        seed=args.seed,
        ignore_triggers=args.ignore_triggers,
    )
    tr = translate(cm, o, args.results_dir or f"results-{out.stem}")
    if args.strict and tr.unsupported:
        raise ValueError(
            f"{args.source}: {len(tr.unsupported)} field(s) not supported (--strict): "
            + "; ".join(tr.unsupported)
        )
    out.write_text(tr.toml, encoding="utf-8")
    print(f"{out}: {tr.topology} of {tr.hosts} hosts, {tr.flows} flows from {args.source}")
    for n in tr.notes if args.verbose else []:
        print(f"note: {n}")
    for n in tr.unsupported:
        print(f"not supported: {n}")
    print(f"{len(tr.unsupported)} field(s) not supported (listed in {out}); next: rdmasim validate {out}")
    return 0
