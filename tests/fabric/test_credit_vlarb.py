"""VL arbitration tables at a credit switch port (csrc/link/vlarb.c): two backlogged VLs share a
bottleneck in the ratio of their low-table weights; the high table goes first up to
LimitOfHighPriority; bad tables are refused naming the entry."""

from __future__ import annotations

import pytest
from fabric_util import flow

import rdmasim
from rdmasim import fabric
from rdmasim import ib_fabric as ib

#: DSCP 8 -> SL 1 (VL 1); the default class 0 -> SL 0 (VL 0)
DSCP1 = 8


def _share(vlarb: dict) -> list[int]:
    """Two senders, one per VL, into one 100 Gb/s egress for 150 us: bytes sent per VL there."""
    topo = rdmasim.dumbbell(2, 1, seed=6, switch_config={"dscp_map": {0: 0, DSCP1: 1}})
    for h in (*topo.left, *topo.right):
        fabric.host_dscp_map(h, {0: 0, DSCP1: 1})
    ib.enable_credits(topo.sim, vls=2, buffer="64KB", sl2vl={0: 0, 1: 1}, vlarb=vlarb)
    f0 = flow(topo.left[0], topo.right[0], 4 << 20, seed=1)
    f1 = flow(topo.left[1], topo.right[0], 4 << 20, seed=2, traffic_class=DSCP1 << 2)
    f0.post()
    f1.post()
    topo.sim.run("150us")
    q = topo.s_left.port_stats(topo.s_left.port_to(topo.s_right))["queue_tx_bytes"]
    assert f0.qp.stats()["msgs_completed"] == 0 and f1.qp.stats()["msgs_completed"] == 0  # both still busy
    return q[:2]


def test_low_table_weights_share_the_link():
    b0, b1 = _share({"low": {0: 64, 1: 192}})   # 4 KiB and 12 KiB turns
    assert b1 / b0 == pytest.approx(3.0, rel=0.05)
    b0, b1 = _share({"low": {0: 128, 1: 128}})
    assert b1 / b0 == pytest.approx(1.0, rel=0.05)


def test_high_table_first_up_to_its_limit():
    b0, b1 = _share({"high": {1: 255}, "low": {0: 255}, "high_limit": 255})  # unlimited: VL 0 waits
    assert b0 < 0.02 * b1
    b0, b1 = _share({"high": {1: 255}, "low": {0: 255}, "high_limit": 0})    # one packet each
    assert b1 / b0 == pytest.approx(1.0, rel=0.05)


def test_bad_tables_name_the_entry():
    t = rdmasim.dumbbell(1, 1)
    with pytest.raises(ValueError, match=r"vlarb low\[1\] \(weight, 64-byte units\) must be an int"):
        ib.enable_credits(t.sim, vls=2, vlarb={"low": {0: 1, 1: 0}})
    with pytest.raises(ValueError, match="VL 1 is in neither table"):
        ib.enable_credits(t.sim, vls=2, vlarb={"low": {0: 1}})
    with pytest.raises(ValueError, match="unknown keys"):
        ib.enable_credits(t.sim, vls=2, vlarb={"lo": {0: 1}})
