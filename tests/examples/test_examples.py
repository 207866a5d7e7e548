"""The examples in examples/: each ``--quick`` run writes its figure and shows the classic effect.

The examples are scripts, not a package: their folder is put on ``sys.path`` and each one's
``main(argv)`` is called in this process (it returns the numbers it prints). One test runs a script
and ``run_all.py`` as a user would, in a subprocess. The full-size runs are ``@slow``.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def example(name: str) -> ModuleType:
    """Import examples/<name>.py (and its sibling _common.py)."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    return importlib.import_module(name)


def run(name: str, out: Path, quick: bool = True) -> dict[str, Any]:
    """Run one example's main into ``out`` and check the figure files it reports."""
    res: dict[str, Any] = example(name).main(["--out", str(out), *(["--quick"] if quick else [])])
    files = sorted(Path(f) for f in res["files"])
    assert [f.name for f in files] == [f"{name}.png", f"{name}.svg"]
    png, svg = files
    assert png.read_bytes().startswith(PNG_MAGIC) and png.stat().st_size > 10_000
    assert png.stat().st_size < 200_000
    assert "<svg" in svg.read_text()[:1000]
    return res


def check_gbn_loss(r: dict[str, Any]) -> None:
    """Goodput falls with loss (within noise) and collapses at 5 %; IRN holds up better there."""
    g = np.array(r["goodput"])
    assert r["loss"][0] == 0 and r["loss"][-1] == pytest.approx(0.05)
    assert np.all(np.diff(g) <= 0.02), g          # monotone within 2 % of line rate
    assert g[0] > 0.9 and g[-1] < 0.1 * g[0], g      # header-limited at 0, collapsed at 5 %
    assert r["irn_goodput"][-1] > 3 * g[-1]
    # where timeouts are rare, the Leung formula is close
    low = [i for i, p in enumerate(r["loss"]) if 0 < p <= 1e-3]
    for i in low:
        assert g[i] == pytest.approx(r["leung"][i], rel=0.05)


def check_incast_dcqcn(r: dict[str, Any]) -> None:
    """DCQCN: far fewer pauses, a short queue after start-up, short flows close to ideal."""
    none, dcqcn = r["none"], r["dcqcn"]
    assert none["unfinished"] == 0 and dcqcn["unfinished"] == 0
    assert none["cnps"] == 0 and dcqcn["cnps"] > 0
    assert dcqcn["xoff_frames"] * 5 < none["xoff_frames"]
    assert dcqcn["queue_mean_kb"] * 5 < none["queue_mean_kb"]
    assert dcqcn["queue_max_after_startup_kb"] * 5 < none["queue_max_after_startup_kb"]
    assert dcqcn["queue_max_kb"] <= none["queue_max_kb"]
    assert dcqcn["short_slowdown_median"] * 2 < none["short_slowdown_median"]


def check_pfc_victim(r: dict[str, Any]) -> None:
    """The victim is paused and slowed with PFC, and runs at its own pace without PFC."""
    alone, pfc, no_pfc = r["alone"], r["pfc"], r["no_pfc"]
    assert alone["victim_paused_us"] == 0 and alone["victim_gbps"] > 80
    assert pfc["victim_paused_us"] > 20  # tens of us (46 at the quick size)
    assert pfc["victim_gbps"] < 0.7 * alone["victim_gbps"]
    assert pfc["xoff_left"] > 0 and pfc["drops"] == 0
    assert no_pfc["victim_gbps"] == pytest.approx(alone["victim_gbps"], rel=0.05)
    assert no_pfc["drops"] > 0 and no_pfc["incast_retx_pkts"] > 0


def check_pfc_deadlock(r: dict[str, Any]) -> None:
    """Without the watchdog: a detected cycle, every ring queue paused for good, no progress, no
    drops. With it: the watchdog drops and every WRITE completes."""
    dead, wd = r["no watchdog"], r["watchdog"]
    assert dead["completed"] == 0 and dead["bytes_delivered"] < dead["bytes_total"]
    assert dead["bytes_after_100us"] == 0
    assert dead["deadlock_at_us"] is not None and len(dead["deadlock_cycle"]) == 5
    assert dead["all_paused_since_us"] is not None and dead["all_paused_since_us"] < 100
    assert dead["drops"] == 0
    assert wd["completed"] == wd["flows"] == 5 and wd["watchdog_drops"] > 0


def check_ring_allreduce(r: dict[str, Any]) -> None:
    """Never faster than the ideal bound; slower with loss; near the bound and faster with rate."""
    ideal = r["ideal_ps"]
    for times in r["loss_times_ps"]:
        assert min(times) >= ideal
    means = np.array(r["loss_mean_ps"])
    assert np.all(np.diff(means) >= 0), means
    assert means[-1] > 2 * means[0]
    rt, ri = np.array(r["rate_times_ps"]), np.array(r["ideal_rate_ps"])
    assert np.all(rt >= ri) and np.all(rt < 1.3 * ri)
    assert np.all(np.diff(rt) < 0)


def check_fabric_compare(r: dict[str, Any]) -> None:
    """RoCE pauses and never retransmits; spraying without PFC never pauses and, with IRN, beats
    RoCE's slowdown and goodput; adaptive per-packet selection reorders, and Go-Back-N pays."""
    roce, spray, apfc, airn = r["roce"], r["spray_irn"], r["adaptive_pfc"], r["adaptive_irn"]
    assert roce["retx_pkts"] == 0 and roce["drops"] == 0 and roce["nic_paused_us"] > 0
    assert spray["switch_paused_us"] == 0 == airn["switch_paused_us"]
    assert spray["slowdown_mean"] < roce["slowdown_mean"] and spray["goodput_gbps"] > roce["goodput_gbps"]
    assert apfc["retx_pkts"] > 10 * airn["retx_pkts"] and apfc["goodput_gbps"] < roce["goodput_gbps"]


def check_link_layers(r: dict[str, Any]) -> None:
    """On the incast RoCE pauses, InfiniBand stalls for credits instead (never a PFC frame, never a
    drop), Ethernet without PFC drops and IRN resends; IB CC stalls the links less than IB alone."""
    roce, ib, ib_cc, spray = (r["incast"][k] for k in ("roce", "ib", "ib_cc", "spray"))
    assert roce["paused_us"] > 0 and roce["drops"] == 0 == roce["retx_pkts"] and roce["credit_stall_us"] == 0
    for x in (ib, ib_cc):
        assert x["credit_stall_us"] > 0 and x["paused_us"] == 0 and x["drops"] == 0 == x["retx_pkts"]
    assert ib_cc["credit_stall_us"] < ib["credit_stall_us"]
    assert spray["paused_us"] == 0 == spray["credit_stall_us"]
    assert spray["drops"] > 0 and spray["retx_pkts"] > 0
    for w in ("permutation", "all_to_all"):
        assert r[w]["ib"]["drops"] == 0 == r[w]["roce"]["drops"]


def check_multipath_compare(r: dict[str, Any]) -> None:
    """Per-packet adaptive routing with out-of-order placement beats ECMP on a permutation without
    a retransmission; in the failing-link case ECMP flows stall until the routing converges, and
    the adaptive ones keep moving; no packet is trimmed (RoCE and InfiniBand never are)."""
    perm = r["permutation"]
    ecmp, ar, ib = perm["roce_ecmp"], perm["roce_ar_ooo"], perm["ib_ar"]
    assert ar["mean_rate"] > ecmp["mean_rate"] and ib["mean_rate"] > ecmp["mean_rate"]
    assert ar["slowdown_p99"] < ecmp["slowdown_p99"] and ib["slowdown_p99"] < ecmp["slowdown_p99"]
    assert ar["max_queue_kb"] < ecmp["max_queue_kb"]
    assert ar["retx_pkts"] == 0 == ib["retx_pkts"]
    fail = r["failure"]
    assert fail["roce_ecmp"]["stalled_flows"] >= 1
    assert fail["roce_ar_ooo"]["stalled_flows"] == 0 == fail["ib_ar"]["stalled_flows"]
    mp = example("multipath_compare")
    reroute_us = (mp.FAIL_AT_PS + mp.REROUTE_AFTER_PS) / 1e6
    assert fail["roce_ecmp"]["last_fct_us"] > reroute_us  # the stalled flow waits for the routing
    assert fail["ib_ar"]["last_fct_us"] < fail["roce_ecmp"]["last_fct_us"]
    assert fail["roce_ecmp"]["retx_pkts"] > 0
    assert all(r[w][k]["trims"] == 0 for w in mp.WORKLOADS for k in mp.CONFIGS)
    # the all-to-all is a collective on each configuration's transport: its time and bus bandwidth
    a2a = r["all_to_all"]
    for row in a2a.values():
        assert row["collective_us"] == pytest.approx(row["last_fct_us"], rel=1e-9)  # all start at 0
        assert 0 < row["busbw_gbps"] < 100
    assert a2a["roce_ar_ooo"]["busbw_gbps"] > a2a["roce_ecmp"]["busbw_gbps"]
    if "uet_spray" in perm:  # UET with oblivious spraying and trimming switches
        assert r["incast"]["uet_spray"]["trims"] > 0  # the incast queue passes the threshold
        assert perm["uet_spray"]["mean_rate"] > ecmp["mean_rate"]
        assert fail["uet_spray"]["stalled_flows"] == 0
        assert fail["uet_spray"]["last_fct_us"] < fail["roce_ecmp"]["last_fct_us"]
        assert a2a["uet_spray"]["busbw_gbps"] > a2a["roce_ecmp"]["busbw_gbps"]
    if "uet_reps" in perm:  # REPS stops using the entropies that lose packets: it routes around
        reps, spray = fail["uet_reps"], fail["uet_spray"]
        assert reps["stalled_flows"] == 0 and reps["lost_frames"] < spray["lost_frames"]
        assert reps["delivered_by_reroute"] > fail["roce_ecmp"]["delivered_by_reroute"]
        assert reps["delivered_by_reroute"] >= spray["delivered_by_reroute"]
        assert reps["last_fct_us"] < reroute_us  # done before the routing converged


CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "gbn_loss": check_gbn_loss,
    "incast_dcqcn": check_incast_dcqcn,
    "pfc_victim": check_pfc_victim,
    "pfc_deadlock": check_pfc_deadlock,
    "ring_allreduce": check_ring_allreduce,
    "fabric_compare": check_fabric_compare,
    "link_layers": check_link_layers,
    "multipath_compare": check_multipath_compare,
}


@pytest.mark.parametrize("name", list(CHECKS))
def test_quick(name: str, tmp_path: Path) -> None:
    CHECKS[name](run(name, tmp_path))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CHECKS))
def test_full(name: str, tmp_path: Path) -> None:
    CHECKS[name](run(name, tmp_path, quick=False))


def test_every_example_has_a_scenario_file_that_validates() -> None:
    from rdmasim.scenario import load

    for name in CHECKS:
        load(EXAMPLES / f"{name}.toml")  # raises ScenarioError on any problem


def test_scripts_run_from_the_command_line(tmp_path: Path) -> None:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}

    def script(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=tmp_path,
                              timeout=120)

    one = script(str(EXAMPLES / "pfc_victim.py"), "--quick", "--out", str(tmp_path / "a"))
    assert one.returncode == 0, one.stderr
    assert "victim l1->r1 throughput" in one.stdout
    assert (tmp_path / "a" / "pfc_victim.png").stat().st_size > 0
    every = script(str(EXAMPLES / "run_all.py"), "--quick", "--only", "pfc_deadlock",
                   "--out", str(tmp_path / "b"))
    assert every.returncode == 0, every.stderr
    assert "pfc_deadlock     ok" in every.stdout
    assert (tmp_path / "b" / "pfc_deadlock.svg").stat().st_size > 0
