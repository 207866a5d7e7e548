"""bench/models/rdmasim_incast.py counts what compare.py says it counts: data packets delivered once
(first transmissions) from the simulation's own counters, retransmissions apart, the payload bytes
each data packet carries, and the QP pairs each mode uses. Checked under loss against a pcap of the
senders' links read by scapy (an independent reader): every data frame a sender put on the wire is
either a first transmission (a PSN of its QP not sent before) or a retransmission."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


sys.path.insert(0, str(ROOT / "bench" / "models"))  # bench/models: names of its own
import rdmasim_incast as m  # noqa: E402

scapy_all = pytest.importorskip("scapy.all")

# RC RDMA WRITE opcodes (IBA table 38): FIRST, MIDDLE, LAST, LAST w/ imm, ONLY, ONLY w/ imm
WRITE_OPS = {0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B}
RETH_OPS = {0x06, 0x0A, 0x0B}  # opcodes carrying a 16-byte RETH
SENDERS, PER_SENDER = 8, 600


def data_frames(pcap: Path) -> list[tuple[str, int, int, int]]:
    """(source IP, destination QPN, PSN, payload bytes) of every RDMA WRITE frame in ``pcap``, from
    the IPv4 total length and the BTH (pad count, destination QP, PSN), as scapy decodes them."""
    out = []
    for pkt in scapy_all.rdpcap(str(pcap)):
        if not pkt.haslayer(scapy_all.UDP) or pkt[scapy_all.UDP].dport != 4791:
            continue
        bth = bytes(pkt[scapy_all.UDP].payload)[:12]
        op = bth[0]
        if op not in WRITE_OPS:
            continue
        pad = (bth[1] >> 4) & 3
        payload = pkt[scapy_all.IP].len - 20 - 8 - 12 - 4 - pad - (16 if op in RETH_OPS else 0)
        out.append((pkt[scapy_all.IP].src, int.from_bytes(bth[5:8], "big"), int.from_bytes(bth[9:12], "big"),
                    payload))
    return out


def first_and_retx(frames: list[tuple[str, int, int, int]]) -> tuple[int, int, float]:
    """Data frames whose (sender, QP, PSN) was not seen before, the rest, and the first ones' mean payload."""
    seen: set[tuple[str, int, int]] = set()
    payload = 0
    for src, qpn, psn, n in frames:
        if (src, qpn, psn) not in seen:
            seen.add((src, qpn, psn))
            payload += n
    return len(seen), len(frames) - len(seen), payload / len(seen)


def run(mode: str, tmp_path: Path, **kw: Any) -> tuple[dict[str, Any], dict[str, Any], list]:
    keep: dict[str, Any] = {}
    pcap = tmp_path / f"{mode}.pcap"
    r = m.run(SENDERS, PER_SENDER, mode, "incast", "dcqcn", seed=3, loss=0.01, keep=keep, capture=str(pcap),
              **kw)
    keep["sim"].close_capture()
    return r, keep, data_frames(pcap)


@pytest.mark.parametrize("mode", ["write1MiB", "write1000", "flows1qp"])
def test_packets_are_first_transmissions_under_loss(mode: str, tmp_path: Path) -> None:
    r, keep, frames = run(mode, tmp_path)
    first, retx, payload = first_and_retx(frames)
    assert r["packets_retx"] > 0 and retx == r["packets_retx"]
    assert first == r["packets"] == r["packets_expected"] == SENDERS * PER_SENDER
    assert len(frames) == r["packets"] + r["packets_retx"]
    assert payload == r["payload_bytes"] == (1000 if mode == "write1000" else 1024)
    # one QP pair per sender for the whole run, in every mode but "flows"
    assert len({(src, qpn) for src, qpn, _psn, _n in frames}) == SENDERS
    assert r["qps_per_sender"] == 1 and r["qp_pairs"] == SENDERS
    if mode == "flows1qp":
        res = keep["state"].results()
        assert len(res) == SENDERS and int(res["retx_pkts"].sum()) == r["packets_retx"]
    else:  # the QPs' own counters, read here
        stats = [qp.stats() for _cq, _src, qps in keep["state"]["senders"] for qp in qps]
        assert r["packets"] == sum(s["pkts_sent"] - s["pkts_retx"] for s in stats)
        assert r["packets_retx"] == sum(s["pkts_retx"] for s in stats)
    assert r["run_s"] > 0 and r["whole_s"] >= r["setup_s"] + r["run_s"]
    assert r["events_per_packet"] == r["events"] / r["packets"] and r["frames_per_packet"] > 2


def test_chunked_flows_count_from_the_simulation_and_use_a_qp_per_chunk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(m, "FLOW_CHUNK", 64 * 1024)  # 64 packets a flow: 10 flows per sender (the last short)
    r, keep, frames = run("flows", tmp_path)
    res = keep["state"].results()
    assert len(res) == SENDERS * 10 and r["qps_per_sender"] == 10
    assert r["packets_retx"] > 0 and int(res["retx_pkts"].sum()) == r["packets_retx"]
    assert len(frames) == r["packets"] + r["packets_retx"]
    assert r["packets"] == SENDERS * PER_SENDER
    # flows on one sender run one after another, each on a new QP pair with its own PSNs
    streams = {(src, qpn) for src, qpn, _psn, _n in frames}
    assert len(streams) >= SENDERS * 2


def test_one_flow_per_sender_is_refused_above_the_flow_size_limit() -> None:
    with pytest.raises(ValueError, match="flows1qp: .* at most 2147483647 bytes"):
        m.flow_table([], None, 2**31, None)
