"""The ``rdmasim import hpcc`` and ``rdmasim export-fct`` commands (registered by rdmasim.cli).

Errors are raised as ValueError / OSError, which rdmasim.cli's error boundary prints as one line
and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def _import(args: argparse.Namespace) -> int:
    """Translate HPCC ns-3 inputs into a scenario TOML; print the notes and every unsupported key."""
    from rdmasim.htsim.cli import refuse_htsim_options, run

    if args.format == "htsim":
        return run(args)
    refuse_htsim_options(args)
    from rdmasim.hpcc.inputs import read_inputs
    from rdmasim.hpcc.translate import translate

    inp = read_inputs(args.source)
    out = Path(args.output)
    tr = translate(inp, args.results_dir or f"results-{out.stem}")
    if args.strict and tr.unsupported:
        raise ValueError(
            f"{args.source}: {len(tr.unsupported)} key(s) not supported (--strict): "
            + "; ".join(tr.unsupported)
        )
    out.write_text(tr.toml, encoding="utf-8")
    print(
        f"{out}: {tr.hosts} hosts, {tr.switches} switches, {tr.links} links, {tr.flows} flows "
        f"from {args.source}"
    )
    for n in tr.notes if args.verbose else tr.loud:
        print(f"note: {n}")
    for n in tr.unsupported:
        print(f"not supported: {n}")
    for n in tr.unused:
        print(f"not used: {n}")
    print(
        f"{len(tr.unsupported)} key(s) not supported, {len(tr.unused)} not used by this CC_MODE "
        f"(listed in {out}); next: rdmasim validate {out}"
    )
    return 0


def _export_fct(args: argparse.Namespace) -> int:
    """Write a results folder's finished flows as an HPCC fct.txt."""
    from rdmasim.hpcc.fct import export_fct

    text, notes = export_fct(args.results)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"{args.output}: {text.count(chr(10))} flow(s)")
    for n in notes:
        print(f"note: {n}", file=sys.stderr)
    return 0


def add_commands(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """Add ``import`` (``hpcc``; ``htsim`` from rdmasim.htsim.cli) and ``export-fct`` through
    rdmasim.cli's ``cmd(name, help)``."""
    imp = cmd("import", "translate another simulator's inputs into a scenario file")
    imp.add_argument(
        "format",
        choices=["hpcc", "htsim"],
        help="hpcc: the HPCC authors' ns-3 simulator (simulation/mix: config.txt, topology.txt, "
        "flow.txt, trace.txt); htsim: an htsim connection matrix (.cm)",
    )
    imp.add_argument(
        "source",
        help="hpcc: a folder holding config.txt (or topology.txt and flow.txt), or the "
        "config file, which names the others; htsim: the .cm file",
    )
    imp.add_argument("-o", "--output", required=True, help="the scenario file to write (.toml)")
    imp.add_argument(
        "--results-dir", default=None, help="[outputs] dir of the scenario (default: results-<output stem>)"
    )
    imp.add_argument(
        "--strict", action="store_true", help="exit 2 (writing nothing) when any key is not supported"
    )
    from rdmasim.htsim.cli import add_arguments

    add_arguments(imp)  # the htsim options
    imp.set_defaults(func=_import)
    ex = cmd("export-fct", "write a results folder's flows as an HPCC fct.txt")
    ex.add_argument("results", help="a results folder of `rdmasim run`")
    ex.add_argument(
        "--format",
        choices=["hpcc"],
        default="hpcc",
        help="hpcc: sip dip sport dport size start_time fct standalone_fct (ns)",
    )
    ex.add_argument("-o", "--output", default="-", help="file to write (default: stdout)")
    ex.set_defaults(func=_export_fct)
