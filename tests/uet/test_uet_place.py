"""UET flows that carry bytes (``uet={"place_bytes": True}``, csrc/uet/ses.c): each data packet
carries its slice of the flow's source buffer and the target places it at its offset, whatever
order the packets arrive in and however often they were sent."""

from __future__ import annotations

import numpy as np
import pytest

import rdmasim
from rdmasim import fabric, topology
from rdmasim.flows import describe_status


def test_sprayed_writes_land_byte_for_byte_in_their_target_buffers() -> None:
    ls = rdmasim.leaf_spine(2, 2, 2, switch_config={"path_select": "ecmp"})
    sizes = [300_001, 1 << 20, 4096, 77]
    fs = ls.sim.add_flows({"src": [0, 1, 2, 3], "dst": [2, 3, 0, 1], "size": sizes,
                           "verb": ["WRITE", "SEND", "WRITE", "WRITE"]},
                          transport="uet", uet={"place_bytes": True})
    ls.sim.run_flows()
    r = fs.results()
    assert [describe_status(int(x)) for x in r["status"]] == ["ok"] * 4
    for i, size in enumerate(sizes):
        src, dst = fs.uet_bytes(i)
        assert len(src) == len(dst) == size
        assert size < 4096 or len(set(src[:4096])) > 200  # real data, not zeros
        assert dst == src
    assert fs.uet_bytes(0)[0] != fs.uet_bytes(1)[0][:sizes[0]]  # each flow its own bytes


def test_retransmitted_packets_place_the_same_bytes_and_the_rest_of_the_buffer_stays() -> None:
    t = topology.back_to_back(rate="100Gbps", delay="1us", mtu=4096)
    fabric.add_drop_rule(t.link.direction(t.a), psn=5)
    size = 100 * 4096
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [size]}, transport="uet",
                         uet={"place_bytes": True, "target_buffer": size + 1000, "reorder_packets": 8})
    t.sim.run_flows()
    r = fs.results()
    assert describe_status(int(r["status"][0])) == "ok" and int(r["retx_pkts"][0]) == 1
    src, dst = fs.uet_bytes(0)
    assert len(dst) == size + 1000
    assert dst[:size] == src and dst[size:] == bytes(1000)


def test_flows_without_bytes_have_no_buffers() -> None:
    t = topology.back_to_back()
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [4096]}, transport="uet")
    t.sim.run_flows()
    with pytest.raises(ValueError, match="no UET buffers"):
        fs.uet_bytes(0)
    with pytest.raises(TypeError, match="place_bytes"):
        t.sim.add_flows({"src": [0], "dst": [1], "size": [4096]}, transport="uet", uet={"place_bytes": 1})
    assert np.all(fs.results()["status"] == 0)
