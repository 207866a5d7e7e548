"""Command line: ``rdmasim demo``."""

from __future__ import annotations

import argparse
import sys

from rdmasim import __version__
from rdmasim.units import parse_size


def _demo(args: argparse.Namespace) -> int:
    from rdmasim.demo import DemoConfig, format_summary, run_demo

    cfg = DemoConfig(size_bytes=parse_size(args.size), messages=args.messages, mtu=args.mtu,
                     rate=args.rate, delay=args.delay, loss=args.loss, timeout=args.timeout,
                     seed=args.seed)
    print(f"rdmasim {__version__} demo: RDMA WRITE of {cfg.size_bytes:,} bytes in {cfg.messages} "
          f"message(s), back to back at {cfg.rate}, {cfg.delay}, MTU {cfg.mtu}, "
          f"i.i.d. loss {cfg.loss:g} each way, seed {cfg.seed}")
    summary = run_demo(args.out, cfg, plot=not args.no_plot)
    print(format_summary(summary))
    print(f"  open the capture with: wireshark {summary['pcap']}   (or tshark -r ...)")
    return 0 if summary["data_intact"] and list(summary["completions"]) == ["IBV_WC_SUCCESS"] else 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rdmasim", description="Packet-level RDMA (RoCEv2) emulator")
    p.add_argument("--version", action="version", version=f"rdmasim {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="run a lossy back-to-back RDMA WRITE: summary, plot, pcap")
    d.add_argument("--out", default="rdmasim-demo", help="output folder (default: rdmasim-demo)")
    d.add_argument("--size", default="4MiB", help="total bytes to write (default 4MiB)")
    d.add_argument("--messages", type=int, default=4, help="number of WRITE work requests (default 4)")
    d.add_argument("--mtu", type=int, default=1024, choices=[256, 512, 1024, 2048, 4096])
    d.add_argument("--rate", default="100Gbps", help="link rate (default 100Gbps)")
    d.add_argument("--delay", default="1us", help="propagation delay (default 1us)")
    d.add_argument("--loss", type=float, default=0.001, help="i.i.d. loss per direction (default 0.001)")
    d.add_argument("--timeout", type=int, default=10,
                   help="QP local ACK timeout exponent: 4.096us * 2^t (default 10 = 4.2 ms)")
    d.add_argument("--seed", type=int, default=1)
    d.add_argument("--no-plot", action="store_true", help="skip the PNG plot")
    d.set_defaults(func=_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rdmasim`` command."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (ValueError, TypeError) as exc:
        print(f"rdmasim: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
