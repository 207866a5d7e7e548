"""sim.capture(path, snaplen=N): the first N bytes of every frame, the frame's real length kept.

The truncated capture of a run must hold, record for record, the prefix of what a whole-frame
capture of the same run holds: data, ACK, CNP and PFC frames alike."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from rdmasim import topology
from rdmasim.capture import read_pcap as decode_pcap
from rdmasim.cc import DcqcnParams
from rdmasim.scenario import loads, run_scenario

ECN = {"kmin": "5KB", "kmax": "50KB", "pmax": 0.2}


def read_pcap(path: Path) -> tuple[int, list[tuple[int, int, int, int, bytes]]]:
    """The header's snaplen and the records (ts_sec, ts_ns, incl_len, orig_len, bytes)."""
    data = path.read_bytes()
    snaplen = struct.unpack("<I", data[16:20])[0]
    recs, off = [], 24
    while off < len(data):
        sec, ns, incl, orig = struct.unpack("<IIII", data[off:off + 16])
        recs.append((sec, ns, incl, orig, data[off + 16:off + 16 + incl]))
        off += 16 + incl
    return snaplen, recs


def incast_run(path: Path, snaplen: int | None) -> None:
    """4 senders into one receiver with ECN marking, DCQCN and PFC: data, ACK, CNP, PFC frames."""
    sim = topology.incast(4, rate="100Gbps", delay="1us", mtu=1024, seed=3,
                          switch_config={"ecn": ECN, "buffer": "600KB"}).sim
    for h in sim.hosts.values():
        h.set_congestion_control("dcqcn", DcqcnParams.paper())
    sim.capture(str(path), snaplen=snaplen)
    sim.add_flows({"src": np.arange(4), "dst": np.full(4, 4), "size": np.full(4, 300_000)})
    sim.run_flows()
    sim.close_capture()


def test_snaplen_capture_is_the_prefix_of_the_whole_capture(tmp_path: Path) -> None:
    incast_run(tmp_path / "full.pcap", None)
    incast_run(tmp_path / "snap.pcap", 100)
    snap_full, full = read_pcap(tmp_path / "full.pcap")
    snap_hdr, snap = read_pcap(tmp_path / "snap.pcap")
    assert (snap_full, snap_hdr) == (65535, 100)
    assert len(full) == len(snap) > 1000
    ethertypes = set()
    for f, s in zip(full, snap, strict=True):
        assert s[:2] == f[:2] and s[3] == f[3] == f[2]  # same time, same real length
        assert s[2] == min(100, f[3]) and s[4] == f[4][:s[2]]
        ethertypes.add(f[4][12:14])
    assert ethertypes == {b"\x08\x00", b"\x88\x08"}  # RoCEv2 over IPv4 and PFC (MAC control)
    assert (tmp_path / "snap.pcap").stat().st_size < (tmp_path / "full.pcap").stat().st_size / 5
    # rdmasim's own reader decodes the headers of the cut records like the whole ones
    skip = ("payload", "icrc_ok", "truncated")
    for fw, fs in zip(decode_pcap(tmp_path / "full.pcap"), decode_pcap(tmp_path / "snap.pcap"), strict=True):
        assert fw.t_ns == fs.t_ns and fs.fields["truncated"] == (fw.fields.get("payload_len", 0) > 0)
        assert {k: v for k, v in fw.fields.items() if k not in skip} == \
            {k: v for k, v in fs.fields.items() if k not in skip}


@pytest.mark.parametrize("bad", [0, -1, 65536, True, 1.5, "128"])
def test_snaplen_out_of_range_is_refused(tmp_path: Path, bad: object) -> None:
    sim = topology.back_to_back().sim
    with pytest.raises(ValueError, match=r"snaplen=.*allowed 1\.\.65535 bytes, or None"):
        sim.capture(str(tmp_path / "x.pcap"), snaplen=bad)  # type: ignore[arg-type]


def test_scenario_outputs_pcap_snaplen(tmp_path: Path) -> None:
    text = f"""
[[flows]]
src = "a"
dst = "b"
size = "64KiB"
[outputs]
dir = "{tmp_path / 'o'}"
pcap = true
pcap_snaplen = 64
plots = false
"""
    run_scenario(loads(text), progress=False)
    snaplen, recs = read_pcap(tmp_path / "o" / "capture.pcap")
    assert snaplen == 64 and recs and all(r[2] == min(64, r[3]) for r in recs)
