"""A bulk flow's size-only region changed mid-message: the packets after the change resolve its key
again (the requester skips the per-packet resolution only while no region of the host changed)."""

from __future__ import annotations

from rdmasim import topology

LOC_PROT_ERR = 4  # ibv_wc_status IBV_WC_LOC_PROT_ERR
FLOW_ACCESS = 1 | 2 | 4  # LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ (csrc/workload/flows.c)
FLOW_PD = 0x80000000  # the flow table's PD (csrc/workload/flows.c)
SIZE = 1 << 20


def _flow_rereg_midway(pd: int) -> tuple[int, int]:
    """(status, bytes delivered) of a 1 MiB WRITE flow whose sender's region (the host's first)
    is re-registered into ``pd`` 20 us into the flow."""
    sim = topology.back_to_back(rate="100Gbps", delay="1us", mtu=1024, seed=3).sim
    fs = sim.add_flows({"src": [0], "dst": [1], "size": [SIZE], "verb": ["WRITE"]})
    sim.run(until="20us")
    sim._core.mr_rereg(0, 0, pd, FLOW_ACCESS)
    sim.run_flows()
    r = fs.results()
    return int(r["status"][0]), int(r["bytes_delivered"][0])


def test_region_moved_to_another_pd_fails_the_next_packet() -> None:
    status, delivered = _flow_rereg_midway(0x1234)
    assert status == LOC_PROT_ERR
    assert 0 < delivered < SIZE


def test_region_reregistered_unchanged_lets_the_flow_finish() -> None:
    status, delivered = _flow_rereg_midway(FLOW_PD)
    assert status == 0
    assert delivered == SIZE
