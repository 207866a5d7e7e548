"""Render the scenario reference (docs/scenarios.md) from the schema.

Regenerate with ``python -m rdmasim.scenario.docs > docs/scenarios.md``; a test checks it is in sync.
"""

from __future__ import annotations

import sys

from rdmasim.scenario.schema import SCHEMA, SECTIONS, Opt

INTRO = """# Scenario files

A scenario is a TOML file: a fabric, traffic and impairments in; results out.

```console
$ rdmasim validate examples/incast.toml   # exit 0 and "ok", or every problem and exit 2
$ rdmasim run examples/incast.toml        # progress on stderr, summary table, results folder
```

`rdmasim run` writes into `[outputs] dir`: `flows.csv` (one row per flow: id, src, dst, verb,
size, priority, start, finish, FCT, ideal FCT, slowdown, bytes delivered, retransmitted packets,
CNPs, status, PFC pause time seen, generator group; `flows.parquet` too when `formats` has
`"parquet"` and pyarrow is installed), `ports.csv` (counters of every switch port and host NIC),
`switch_counters.json`, `timeseries.npz` (with
`sample_interval`: per-flow bytes and paced rate, switch queues and pause state), `plots/` (PNG
and SVG), `scenario.toml` (the file as run) and `metadata.json` (seed and rdmasim version) so a
result can be reproduced. Times are picoseconds in the tables. In Python, `RunResult.frames()`
gives every table as a pandas DataFrame.

Flows go to the C core as arrays (`rdmasim.flows`): each runs as one RC work request on its own
QP pair, created at its start time and freed when it completes; packets carry lengths, not
payload bytes. Collectives are flows with dependencies (a flow starts when the flows it waits for
have finished).

The ideal FCT is a lower bound: `size` at the slower NIC's line rate plus a round trip of
propagation delay on the lowest-delay path. Slowdown = FCT / ideal FCT.

Values with units: times `"1us"` (or an integer of ps), rates `"100Gbps"` (or b/s), sizes `"1MiB"`
(or bytes). Every option below has the default shown; `[]` marks an array of tables (`[[flows]]`).

This page is generated from `rdmasim/scenario/schema.py` by `python -m rdmasim.scenario.docs`.
"""


def _default(opt: Opt) -> str:
    d = opt.default
    if isinstance(d, bool):
        return "true" if d else "false"
    if isinstance(d, str):
        return f'`"{d}"`'
    return f"`{d}`".replace("'", '"')


def render() -> str:
    """The Markdown reference of every option."""
    out = [INTRO]
    for section, about in SECTIONS.items():
        title = section.replace("[]", "")
        header = f"[[{title}]]" if section.endswith("[]") else f"[{title}]"
        out.append(
            f"\n## `{header}`\n\n{about}\n\n| key | type | default | allowed | description |\n"
            "|---|---|---|---|---|"
        )
        prefix = section + "."
        for path, opt in SCHEMA.items():
            if not path.startswith(prefix) or "." in path[len(prefix) :]:
                continue
            key = path[len(prefix) :]
            allowed = opt.allowed().replace("|", "\\|")
            out.append(f"| `{key}` | {opt.kind} | {_default(opt)} | {allowed} | {opt.doc} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
