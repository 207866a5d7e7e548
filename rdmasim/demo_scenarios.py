"""The scenarios ``rdmasim demo`` runs after its lossy WRITE: bundled with the package (rdmasim/data/
scenarios/*.toml), each run into its own folder with its per-flow table, time series and plots."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from rdmasim.scenario import loads, run_scenario

#: bundled scenario -> what it shows (printed by the demo)
BUNDLED: dict[str, str] = {
    "incast_dcqcn": "8:1 incast, PFC + ECN + DCQCN: queue, pause and rate timelines",
    "ring_allreduce": "ring all-reduce of 16 MiB across 8 hosts (collective from flow dependencies)",
    "websearch_leafspine": "web-search Poisson traffic at 40 % load on a leaf-spine, 1 % loss on one uplink",
}


def bundled_text(name: str) -> str:
    """The TOML text of bundled scenario ``name``."""
    return (resources.files("rdmasim") / "data" / "scenarios" / f"{name}.toml").read_text()


def run_bundled(out_dir: str | Path, names: list[str] | None = None,
                progress: bool | None = False) -> list[dict[str, Any]]:
    """Run the bundled scenarios into ``out_dir/<name>/``; one summary dict per scenario.
    ``progress``: a progress bar per scenario (True; None: when stderr is a terminal)."""
    out = []
    for name in names or list(BUNDLED):
        sc = loads(bundled_text(name), f"{name}.toml")
        res = run_scenario(sc, out_dir=str(Path(out_dir) / name), progress=progress, label=name)
        ok = sum(f.status == "ok" for f in res.flows)
        sds = sorted(f.slowdown for f in res.flows if f.slowdown is not None)
        out.append({
            "name": name, "what": BUNDLED.get(name, ""), "flows": len(res.flows), "completed": ok,
            "sim_time_ps": res.sim_time_ps, "events": res.events, "wall_s": res.wall_s,
            "median_slowdown": sds[len(sds) // 2] if sds else None,
            "p99_slowdown": sds[min(len(sds) - 1, int(0.99 * len(sds)))] if sds else None,
            "files": dict(res.files),
        })
    return out
