"""RCCC on UET flows (csrc/uet/rccc_pds.c over rccc.c): data packets carry the sender's credit
request (RUD_CC_REQ), the target's pacer grants credit at its link rate (CTRL CREDIT, ACK_CC
credit), so an incast's queue at the receiver's switch port stays short and the senders share the
link evenly."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rdmasim import codec, topology
from rdmasim.capture import read_records

SIZE = 1 << 20
STEP_PS = 5_000_000  # queue samples every 5 us


def jain(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=float)
    return float(x.sum() ** 2 / (len(x) * (x * x).sum()))


def incast(cc: str, n: int = 8, size: int = SIZE, **uet: Any) -> dict[str, Any]:
    """An n-to-1 incast of `size` bytes each (100 Gb/s, 1 us links, PFC): the receiver's egress
    queue sampled every 5 us, the bytes each flow delivered when the first finished."""
    inc = topology.incast(n, rate="100Gbps", delay="1us", mtu=4096)
    fs = inc.sim.add_flows({"src": np.arange(n), "dst": np.full(n, n), "size": np.full(n, size)},
                           transport="uet", uet={"cc": cc, **uet})
    port = n  # the switch's port towards the receiver (hosts are linked in order)
    queue: list[int] = []
    shares = None
    t = 0
    while True:
        t += STEP_PS
        inc.sim.run_flows(until=t)
        queue.append(inc.switch.queue_bytes(port)[0])
        r = fs.results()
        if shares is None and (r["finish_ps"] >= 0).any():
            shares = r["bytes_delivered"].astype(float)
        if (r["finish_ps"] >= 0).all():
            break
    assert (r["status"] == 0).all() and (r["bytes_delivered"] == size).all()
    q = np.array(queue)
    return {"r": r, "queue": q, "jain": jain(shares), "stats": inc.switch.stats()[port]}


def test_rccc_incast_keeps_the_receivers_queue_short_and_shares_fairly() -> None:
    fixed, rccc = incast("none"), incast("rccc")
    # after the first RTTs' speculation, credit paced at the receiver's link rate keeps its queue
    # near empty; a fixed window keeps it full
    steady = slice(len(rccc["queue"]) // 4, None)
    assert np.median(rccc["queue"][steady]) <= 2 * 4096 + 200
    assert np.median(fixed["queue"][len(fixed["queue"]) // 4:]) > 100_000
    assert rccc["jain"] > 0.99
    # no PFC pause at the senders, few resends (only while the first RTTs' speculation is queued,
    # against a fixed window's hundreds per flow); the link stays busy (8 MiB at 100 Gb/s: 671 us,
    # 0.971 of it payload)
    pkts = 8 * SIZE // 4096
    assert int(rccc["r"]["pause_ps"].sum()) == 0 and int(fixed["r"]["pause_ps"].sum()) > 0
    assert int(rccc["r"]["retx_pkts"].sum()) < pkts // 100 < int(fixed["r"]["retx_pkts"].sum())
    assert int(rccc["r"]["fct_ps"].max()) < 1.15 * 8 * SIZE * 8 * 10**12 // 100_000_000_000 / 0.971


def test_rccc_frames_carry_requests_grants_and_credit_packets(tmp_path) -> None:
    inc = topology.incast(2, rate="100Gbps", delay="1us", mtu=4096)
    pcap = tmp_path / "rccc.pcap"
    inc.sim.capture(str(pcap))
    fs = inc.sim.add_flows({"src": [0, 1], "dst": [2, 2], "size": [256 * 4096] * 2}, transport="uet",
                           uet={"cc": "rccc"})
    inc.sim.run_flows()
    inc.sim.close_capture()
    assert (fs.results()["status"] == 0).all()
    frames = [codec.decode(r.data) for r in read_records(pcap)[1]]
    uet = [f["uet"] for f in frames if "uet" in f]
    data = [u for u in uet if u["type"] == 13]  # RUD_CC_REQ
    grants = [u for u in uet if u["type"] == 11 and u["next_hdr"] == 7]  # CTRL CREDIT
    acks = [u for u in uet if u["type"] == 8]
    assert data and grants and acks
    assert all(u["type"] != 2 for u in uet)  # no plain RUD request
    assert max(u["credit_target"] for u in data) > 0
    assert all(a["cc_type"] == 1 for a in acks)  # credit
    assert max(a["cc_state"] >> 40 for a in acks) > 0
    assert max(g["nack_payload"] for g in grants) > 0


@pytest.mark.parametrize("bad", ["credit", "rcc"])
def test_unknown_cc_is_refused_naming_the_key(bad: str) -> None:
    inc = topology.incast(2)
    with pytest.raises(ValueError, match="uet.cc"):
        inc.sim.add_flows({"src": [0], "dst": [2], "size": [4096]}, transport="uet", uet={"cc": bad})


@pytest.mark.parametrize("mode", ["rudi", "uud"])
def test_rccc_needs_a_mode_with_cc_requests(mode: str) -> None:
    inc = topology.incast(2)
    with pytest.raises(ValueError, match="uet.cc = 'rccc' with mode"):
        inc.sim.add_flows({"src": [0], "dst": [2], "size": [4096]}, transport="uet",
                          uet={"cc": "rccc", "mode": mode})


def test_rccc_runs_on_rod() -> None:
    r = incast("rccc", n=2, size=64 * 4096, mode="rod")["r"]
    assert (r["status"] == 0).all()
