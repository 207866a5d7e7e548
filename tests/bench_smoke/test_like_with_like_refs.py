"""The like-with-like references of the speed benches carry what they claim to: ``none-ack1`` in
bench/cc_cost.py and ``write1MiB-ack1`` in bench/posting_ratio.py simulate the same data packets
as their plain references with an ACK for every one of them (the frames of DCTCP and HPCC, and of
one-packet WRITEs under rxe), and both scripts print the ratio to them.  No timing asserts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import cc_cost  # noqa: E402
import posting_ratio  # noqa: E402

sys.path.pop(0)

SIZE, MSG = 256 << 10, 64 << 10  # per sender: 256 data packets in 4 WRITEs


def test_none_ack1_carries_an_ack_per_packet_and_the_same_data() -> None:
    runs = {a: cc_cost.run_once(a, SIZE, MSG) for a in ("none", "none-ack1", "hpcc", "dctcp", "hpcc-ack2")}
    packets = 8 * SIZE // 1024
    assert {r["packets"] for r in runs.values()} == {packets}
    # rxe's cadence: a 64-packet WRITE asks once, at its last packet
    assert runs["none"]["acks"] == 8 * SIZE // MSG
    # the reference asks on every packet, as DCTCP and HPCC do (their ACK frames)
    assert runs["none-ack1"]["acks"] == runs["hpcc"]["acks"] == runs["dctcp"]["acks"] == packets
    assert runs["hpcc-ack2"]["acks"] < packets
    # the same simulated transfer: only the ACK frames differ
    assert runs["none-ack1"]["sim_end_us"] == runs["none"]["sim_end_us"]
    assert runs["none-ack1"]["events"] > runs["none"]["events"]


def test_cc_cost_prints_the_ratio_to_none_ack1() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "cc_cost.py"), "--size", "128KiB",
                          "--msg", "64KiB", "--rounds", "1", "--algos", "none,none-ack1,dctcp"],
                         capture_output=True, text=True, timeout=300, check=True, cwd=str(ROOT)).stdout
    assert "vs none-ack1" in out
    rows = {ln.split()[0]: ln.split() for ln in out.splitlines()[2:] if ln.strip()}
    assert rows["none-ack1"][3] == "1.00" and rows["none"][2] == "1.00"
    assert float(rows["none-ack1"][6]) == 1.0 and float(rows["dctcp"][6]) == 1.0  # ACKs per packet


def test_posting_reference_with_an_ack_per_packet() -> None:
    res = posting_ratio.measure(2, 200, 1, ["write1MiB", "write1MiB-ack1", "write1024"])
    assert {r["packets"] for r in res.values()} == {400}
    # one-packet WRITEs under rxe: an ACK each, as the ack1 reference (the same frames on the
    # wire; their events may differ where a frame ends as the next arrives); the plain one has
    # fewer ACKs
    assert res["write1024"]["frames"] == res["write1MiB-ack1"]["frames"]
    assert res["write1MiB"]["frames"] < res["write1MiB-ack1"]["frames"]
    assert res["write1MiB"]["events"] < res["write1MiB-ack1"]["events"]
    assert res["write1MiB-ack1"]["ratio_vs_write1MiB-ack1"] == 1.0
    assert res["write1MiB"]["ratio_vs_write1MiB"] == 1.0
