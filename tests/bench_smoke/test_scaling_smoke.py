"""bench/scaling.py --quick runs end to end and writes every section (a smoke test, no timing asserts),
and bench/scaling_models.py counts data packets from the simulation's counters, each packet once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MTU = 1024
SECTIONS = ("packets", "qps", "qps_long", "qps_one_sender", "hosts", "setup", "tracing")


def test_scaling_quick_writes_every_section(tmp_path: Path) -> None:
    cmd = [sys.executable, str(ROOT / "bench" / "scaling.py"), "--quick", "--out", str(tmp_path)]
    proc = subprocess.run(cmd,
                          capture_output=True, text=True, timeout=120, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    files = list(tmp_path.glob("scaling-*-quick.json"))
    assert len(files) == 1, files
    res = json.loads(files[0].read_text())
    assert set(SECTIONS) <= set(res["sections"])
    assert res["machine"]["cpus"] >= 1
    for name in ("packets", "qps", "qps_long", "qps_one_sender", "hosts", "setup"):
        rows = res["sections"][name]
        assert rows and all("error" not in r for r in rows), rows
    for r in res["sections"]["qps_long"]:  # the total is raised to 64 packets per QP pair
        assert r["expected_pkts"] == max(r["spec"]["total_pkts"], 64 * r["qp_pairs"])
    assert max(r["data_pkts"] for r in res["sections"]["qps_long"]) > res["plan"]["qps_long"]["total_pkts"]
    one = res["sections"]["qps_one_sender"]  # every flow from the first sender
    assert all(r["senders"] == 1 for r in one) and {r["qp_pairs"] for r in one} == {1, 10}
    assert all(r["expected_pkts"] == max(r["spec"]["total_pkts"], 64 * r["qp_pairs"]) for r in one)
    timed = ("packets", "qps", "qps_long", "qps_one_sender", "hosts")
    rows = [r for name in timed for r in res["sections"][name]]
    for r in rows:
        assert r["complete"] and r["flows"]["finished"] == r["flows"]["total"] and r["flows_failed"] == 0
        assert r["data_pkts"] == r["expected_pkts"] and r["events"] > r["data_pkts"]
        assert r["data_pkts"] == r["delivered_pkts"]  # the senders' and the responders' counters agree
        assert r["peak_rss_mb"] > 0 and r["run_s"] > 0 and r["setup_s"] > 0
    assert all(r["n_flows"] > 1000 for r in res["sections"]["setup"])
    tr = res["sections"]["tracing"]
    assert {x["mode"] for x in tr["runs"]} == {"off", "trace", "pcap", "pcap128"}
    assert all(x["trace_records"] > 0 for x in tr["runs"] if x["mode"] == "trace")
    assert all(x["pcap_bytes"] > 0 for x in tr["runs"] if x["mode"] in ("pcap", "pcap128"))
    whole = max(x["pcap_bytes"] for x in tr["runs"] if x["mode"] == "pcap")
    assert all(x["pcap_bytes"] < whole / 4 for x in tr["runs"] if x["mode"] == "pcap128")
    assert set(tr["ratio_vs_off"]) == {"trace", "pcap", "pcap128"}
    # the QP tables compare each point with the section's fewest QP pairs (itself: 100 %)
    assert "### Concurrent QPs (one sender" in proc.stdout and "vs first: best" in proc.stdout
    for title, rows in _qp_tables(proc.stdout).items():
        firsts = {}
        for row in rows:
            firsts.setdefault(row["CC"], row)
        for row in firsts.values():
            assert row["vs first: best"] == "100 %", (title, row)
            # user CPU time of a tiny run can read 0 where the kernel accounts it per tick: then n/a
            expected = "n/a" if float(row["user s"]) == 0 else "100 %"
            assert row["vs first: per user s"] == expected, (title, row)
    assert len(res["plots"]) == 5 and all(Path(p).is_file() for p in res["plots"])


def _qp_tables(stdout: str) -> dict[str, list[dict[str, str]]]:
    """The rows of each "Concurrent QPs" table in scaling.py's output, as {column header: cell}."""
    tables: dict[str, list[dict[str, str]]] = {}
    title, header = "", None
    for line in stdout.splitlines():
        if line.startswith("### "):
            title, header = line, None
        elif title.startswith("### Concurrent QPs") and line.startswith("| ") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if header is None:
                header = cells
            else:
                tables.setdefault(title, []).append(dict(zip(header, cells, strict=True)))
    assert len(tables) == 3, list(tables)
    return tables


def _point(spec: dict[str, object]) -> dict[str, object]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path}
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "scaling_models.py"), json.dumps(spec)],
                          capture_output=True, text=True, timeout=120, cwd=str(ROOT), env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1]
    out: dict[str, object] = json.loads(line[len("RESULT "):])
    return out


@pytest.mark.parametrize("spec", [
    {"kind": "qps", "flows": 8, "total_pkts": 4_000, "loss": 0.02},
    {"kind": "packets", "pkts_per_sender": 500, "max_flow_pkts": 200, "loss": 0.02},
])
def test_data_packets_are_first_transmissions_under_loss(spec: dict[str, object]) -> None:
    """With frames lost on the receiver's link, the count is each packet once: the first
    transmissions (sum of ceil(size / MTU) over the finished flows, and the responders' delivered
    bytes in packets), not first transmissions + retransmissions as sizes + retx_pkts would give."""
    r = _point(spec)
    assert r["complete"] and r["flows_failed"] == 0
    assert r["retx_pkts"] > 0  # the loss made the senders retransmit
    assert r["data_pkts"] == r["expected_pkts"] == r["delivered_pkts"]
    # what the senders put on their links: every first transmission and every retransmission
    assert r["data_pkts"] + r["retx_pkts"] <= r["frames"]
    assert r["data_pkts"] != r["expected_pkts"] + r["retx_pkts"]  # the old formula's figure


def test_hosts_count_delivered_packets() -> None:
    """In the fat tree every host also returns ACKs and CNPs: the count is the delivered packets."""
    r = _point({"kind": "hosts", "k": 4, "size": 10 * MTU + 1})
    assert r["complete"] and r["counted"].startswith("responders'")
    assert r["data_pkts"] == r["expected_pkts"] == 16 * 11
    assert r["frames"] > r["data_pkts"]  # the hosts' links carry ACKs too
