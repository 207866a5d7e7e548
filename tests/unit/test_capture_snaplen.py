"""sim.capture(path, snaplen=N): the first N bytes of every frame, the frame's real length kept.

The truncated capture of a run must hold, record for record, the prefix of what a whole-frame
capture of the same run holds: data, ACK, CNP and PFC frames alike."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rdmasim import topology
from rdmasim.capture import read_pcap, read_records
from rdmasim.cc import DcqcnParams
from rdmasim.scenario import loads, run_scenario

ECN = {"kmin": "5KB", "kmax": "50KB", "pmax": 0.2}


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
    snap_full, full = read_records(tmp_path / "full.pcap")
    snap_cut, cut = read_records(tmp_path / "snap.pcap")
    assert (snap_full, snap_cut) == (65535, 100)
    assert len(full) == len(cut) > 1000
    for f, c in zip(full, cut, strict=True):
        assert c.t_ns == f.t_ns and c.orig_len == f.orig_len == len(f.data)  # same time, real length
        assert c.data == f.data[:100]
    ethertypes = {f.data[12:14] for f in full}
    assert ethertypes == {b"\x08\x00", b"\x88\x08"}  # RoCEv2 over IPv4 and PFC (MAC control)
    assert (tmp_path / "snap.pcap").stat().st_size < (tmp_path / "full.pcap").stat().st_size / 5
    # rdmasim's own reader decodes the headers of the cut records like the whole ones
    skip = ("payload", "icrc_ok", "truncated")
    for fw, fs in zip(read_pcap(tmp_path / "full.pcap"), read_pcap(tmp_path / "snap.pcap"), strict=True):
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
    snaplen, recs = read_records(tmp_path / "o" / "capture.pcap")
    assert snaplen == 64 and recs and all(len(r.data) == min(64, r.orig_len) for r in recs)
