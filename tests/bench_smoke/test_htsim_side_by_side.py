"""bench/htsim_side_by_side.py: both sides get the same workload (hosts, flows, sizes, link rate,
delay, MTU, PFC thresholds, congestion control), the rdmasim side runs it and counts every data
packet once, and htsim's own output lines are read as htsim prints them. With an htsim build
(``RDMASIM_HTSIM_DIR``: a directory of htsim_roce and htsim_hpcc, or a csg-htsim checkout) the
quick incast runs on both sides and both count the same data packets; without it that test skips."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import htsim_side_by_side as sbs  # noqa: E402

from rdmasim.htsim.cm import read_cm  # noqa: E402
from rdmasim.scenario import load  # noqa: E402
from rdmasim.units import parse_size  # noqa: E402


def _opt(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_incast_inputs_match(tmp_path: Path) -> None:
    w = sbs.WORKLOADS["incast8-hpcc"]
    plan = sbs.generate(w, 64 * sbs.MTU, tmp_path)
    h = read_cm(tmp_path / "htsim.cm")
    r = read_cm(tmp_path / "rdmasim.cm")
    # the same connections; htsim's tree holds nine hosts on its first ToR, rdmasim's star nine hosts
    key = [(c.src, c.dst, c.size, c.start_ps) for c in h.conns]
    assert key == [(c.src, c.dst, c.size, c.start_ps) for c in r.conns]
    assert key == [(s, 0, 64 * 1024, 0) for s in range(1, 9)]
    argv = plan["htsim_argv"]
    assert argv[0] == "htsim_hpcc" and int(_opt(argv, "-nodes")) == h.nodes == 18**3 // 4
    assert _opt(argv, "-mtu") == "1024" and _opt(argv, "-linkspeed") == "100000"
    assert _opt(argv, "-hop_latency") == "1"
    xon, xoff = int(argv[argv.index("-pfc_thresholds") + 1]), int(argv[argv.index("-pfc_thresholds") + 2])
    sc = load(plan["rdmasim_toml"]).values
    assert (sc["topology.kind"], sc["topology.n"]) == ("star", 9)
    assert sc["link.rate"] == 100 * 10**9 and sc["link.delay"] == 10**6  # 100 Gb/s, 1 us in ps
    assert sc["link.mtu"] == sc["qp.mtu"] == 1024
    assert parse_size(sc["switch.threshold"]) == xoff * 1024  # a static XOFF ("dynamic" otherwise)
    assert parse_size(sc["switch.resume_offset"]) == (xoff - xon) * 1024
    assert sc["congestion_control.algorithm"] == "hpcc"
    assert sc["congestion_control.hpcc.base_rtt"] == 12 * 10**6
    assert plan["expect_data_pkts"] == 8 * 64


def test_fattree_permutation_inputs(tmp_path: Path) -> None:
    w = sbs.WORKLOADS["fattree16-dcqcn"]
    plan = sbs.generate(w, 4 * sbs.MTU, tmp_path / "a")
    cm = read_cm(tmp_path / "a" / "htsim.cm")
    pairs = [(c.src, c.dst) for c in cm.conns]
    assert sorted(s for s, _ in pairs) == list(range(16)) == sorted(d for _, d in pairs)
    assert all(s != d for s, d in pairs)
    assert int(_opt(plan["htsim_argv"], "-nodes")) == 16 and "-tiers" not in plan["htsim_argv"]
    sc = load(plan["rdmasim_toml"]).values
    assert (sc["topology.kind"], sc["topology.k"]) == ("fat_tree", 4)
    assert sc["congestion_control.algorithm"] == "dcqcn"
    # deterministic: the same inputs every time
    sbs.generate(w, 4 * sbs.MTU, tmp_path / "b")
    for f in ("htsim.cm", "rdmasim.toml"):
        text_a = (tmp_path / "a" / f).read_text()
        assert text_a == re.sub(str(tmp_path / "b"), str(tmp_path / "a"), (tmp_path / "b" / f).read_text())


def test_size_not_a_multiple_of_the_mtu_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"size 1000: not a multiple of the MTU 1024"):
        sbs.generate(sbs.WORKLOADS["incast8-nocc"], 1000, tmp_path)


@pytest.mark.parametrize("name", ["incast8-nocc", "incast8-write1", "fattree16-dcqcn"])
def test_rdmasim_side_counts_every_data_packet(tmp_path: Path, name: str) -> None:
    plan = sbs.generate(sbs.WORKLOADS[name], 256 * sbs.MTU, tmp_path)
    res = sbs.worker(plan)
    assert res["flows_done"] == plan["flows"]
    assert res["data_pkts"] == plan["expect_data_pkts"] and res["retx_pkts"] == 0
    assert len(res["fct_us"]) >= 1 and min(res["fct_us"]) > 0
    # a data packet crosses two links (incast) or more: at least that many frames
    assert res["frames"] >= plan["expect_data_pkts"]


def test_htsim_output_read_as_printed() -> None:
    # htsim_roce's line names the flow and its id, htsim_hpcc's the flow only; totals in bytes;
    # htsim's clock prints dots with no newline, so a line may start with them
    text = (
        "..Flow Roce_1_0 2326 finished at 5706.87 total bytes 8192\n"
        "Flow HPCC_2_0 finished at 12.5 total bytes 4096\n"
        "New: 0 Rtx: 2048\n"
    )
    got = sbs.parse_htsim(text, 1024)
    assert got == {"flows_done": 2, "data_pkts": 12, "retx_pkts": 2, "fct_us": [12.5, 5706.87]}


HTSIM_DIR = os.environ.get("RDMASIM_HTSIM_DIR")


@pytest.mark.skipif(not HTSIM_DIR, reason="RDMASIM_HTSIM_DIR (a built csg-htsim) not set")
def test_both_sides_do_the_same_work(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert sbs.main(["--htsim", str(HTSIM_DIR), "--quick", "--workloads", "incast8-nocc,fattree16-dcqcn",
                     "--no-setup", "--out", str(out)]) == 0
    import json

    for row in json.loads(out.read_text())["summary"]:
        assert row["same_pkts"], row
        assert row["htsim"]["flows_done"] == row["rdmasim"]["flows_done"] == row["flows"]


def test_ratios_are_packets_per_cpu_second_over_htsims() -> None:
    # the same 1000 packets: rdmasim's median run takes 2.5 s of CPU against htsim's 4 (whole), and
    # 1 s against 4 once its setup runs' median (1.5 s) is taken off (net)
    def run(cpu: float) -> dict:
        return {"cpu_s": cpu, "sys_s": 0.0, "data_pkts": 1000, "retx_pkts": 0, "flows_done": 1,
                "fct_us": [5.0]}

    pt = sbs.Point("x", 1024, 1)
    pt.runs = {"htsim": [run(4.0), run(4.0)], "rdmasim": [run(2.0), run(3.0)]}
    pt.setup = {"htsim": [0.0, 0.0], "rdmasim": [1.0, 2.0]}
    s = pt.summary()
    assert s["ratio_whole"] == pytest.approx(4.0 / 2.5)  # medians: 4.0 and 2.5 s
    assert s["ratio_net"] == pytest.approx(4.0 / 1.0)  # 2.5 - 1.5 s of setup
    assert s["ratio_net_rounds"] == pytest.approx([4.0, 4.0])  # each round: 1 s of traffic
    assert s["same_pkts"] and s["fct_max_ratio"] == 1.0
