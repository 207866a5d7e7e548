"""Dragonfly over InfiniBand credits: hop classes are virtual lanes.

A small dragonfly (a = 2 routers per group, p = 1 host, h = 1 global link: 3 groups in a ring)
under the adversarial pattern (every host of group g sends to group g + 1, minimal routing: local,
global, local). With one VL for every hop the local links carry packets before and after their
global hop, so credit stalls close a loop around the groups (tests/fabric/test_dragonfly.py shows
the same with PFC). With hop classes the class of a packet (its SL 3 plus the global links it has
crossed) is what the egress port's SL -> VL table maps: with 3 VLs, class 3 (before the global
hop) is VL 0 and class 4 (on and after it) VL 1, so no loop can close. The deadlock detector finds
the credit loop, also when the periodic detector is off (one look at the end of a stuck scenario).
"""

from __future__ import annotations

from routing_util import adversarial

from rdmasim import fabric
from rdmasim import ib_fabric as ib
from rdmasim.scenario import loads, run_scenario
from rdmasim.topology import dragonfly

FLOW = 256 * 1024


def _run(hop_classes: bool, vls: int, detector: bool = True):
    df = dragonfly(2, 1, 1, routing="minimal", hop_classes=hop_classes)
    ib.enable_credits(df.sim, vls=vls, buffer="16KB")
    if detector:
        fabric.enable_deadlock_detector(df.sim, "10us")
    src, dst = adversarial(df, 2)
    flows = df.sim.add_flows({"src": src, "dst": dst, "size": [FLOW] * len(src)})
    df.sim.run_flows(until="2ms")
    return df, flows.results()


def _vl_pkts(df, a: str, b: str) -> list[int]:
    sw = df.sim.switches[a]
    return sw.port_stats(sw.port_to(df.sim.switches[b]))["queue_tx_pkts"]


def test_hop_classes_put_each_class_on_its_own_vl_and_the_flows_finish() -> None:
    df, res = _run(hop_classes=True, vls=3)
    assert (res["finish_ps"] >= 0).all() and (res["bytes_delivered"] == FLOW).all()
    assert fabric.deadlock(df.sim) is None
    # global links (r0_0 - r1_1, r0_1 - r2_0, r1_0 - r2_1) carry class 4 only: VL 1
    for links in df.global_links.values():
        for link in links:
            for a, b in ((link.a, link.b), (link.b, link.a)):
                q = _vl_pkts(df, a.name, b.name)
                assert q[1] > 0 and q[0] == q[2] == 0, (a.name, b.name, q)
    # a local link carries packets before their global hop (h0_1_0 -> h1_1_0: r0_1 -> r0_0, class 3)
    # and after it (h2_0_0 -> h0_0_0: r2_0 -> r0_1 -> r0_0, class 4): on distinct VLs
    q = _vl_pkts(df, "r0_1", "r0_0")
    assert q[0] > 0 and q[1] > 0 and q[2] == 0, q
    assert sum(s.totals()["drops"] for s in df.sim.switches.values()) == 0


def _assert_credit_loop(df, res) -> None:
    assert (res["finish_ps"] < 0).all()           # stuck, every flow
    found = fabric.deadlock(df.sim)
    assert found is not None
    _, cycle = found
    assert {name.split("_")[0] for name, _, _ in cycle} == {"r0", "r1", "r2"}  # around the groups
    for name, port, vl in cycle:
        st = df.sim.switches[name].port_stats(port)
        assert st["credit_stalled_mask"] >> vl & 1 and st["pfc_xoff_sent"] == 0
    assert sum(s.totals()["drops"] for s in df.sim.switches.values()) == 0


def test_without_hop_classes_the_credit_loop_closes_and_is_found() -> None:
    df, res = _run(hop_classes=False, vls=3)
    _assert_credit_loop(df, res)
    assert {vl for _, _, vl in fabric.deadlock(df.sim)[1]} == {0}  # SL 3 mod 3: one VL for all


def test_one_vl_is_not_enough_for_hop_classes() -> None:
    df, res = _run(hop_classes=True, vls=1)
    _assert_credit_loop(df, res)


def test_check_deadlock_finds_it_with_the_detector_off() -> None:
    df, res = _run(hop_classes=False, vls=3, detector=False)
    assert fabric.deadlock(df.sim) is None      # nobody looked
    found = fabric.check_deadlock(df.sim)
    assert found is not None and found[0] == df.sim.now and len(found[1]) >= 3
    assert fabric.check_deadlock(df.sim) == found  # the first one found is kept


def _scenario(hop_classes: bool) -> str:
    flows = "".join(f'[[flows]]\nsrc = "h{g}_{r}_0"\ndst = "h{(g + 1) % 3}_{r}_0"\nsize = "256KiB"\n'
                    for g in range(3) for r in range(2))
    return f"""
[simulation]
progress = false
duration = "1ms"
[topology]
kind = "dragonfly"
routers_per_group = 2
hosts_per_router = 1
global_per_router = 1
routing = "minimal"
hop_classes = {str(hop_classes).lower()}
[switch]
flow_control = "credits"
scheduler = "wrr"
[switch.credits]
vls = 3
buffer = "16KB"
""" + flows


def test_scenario_reports_the_credit_loop_without_a_periodic_check() -> None:
    stuck = run_scenario(loads(_scenario(False), "d.toml"), out_dir="", progress=False)
    assert all(f.status == "incomplete" for f in stuck.flows)
    assert stuck.deadlock is not None and len(stuck.deadlock[1]) >= 3
    assert stuck.metadata()["deadlock"]["cycle"]
    assert "CREDIT LOOP DEADLOCK" in stuck.summary()
    ok = run_scenario(loads(_scenario(True), "d.toml"), out_dir="", progress=False)
    assert all(f.status == "ok" for f in ok.flows) and ok.deadlock is None


def test_too_few_vls_for_the_hop_classes_is_a_warning() -> None:
    few = loads(_scenario(True).replace("vls = 3", "vls = 1"), "d.toml")
    assert [w.path for w in few.warnings] == ["switch.credits.vls"]
    assert "need 2 VLs" in str(few.warnings[0])
    assert loads(_scenario(True), "d.toml").warnings == []
    assert loads(_scenario(False).replace("vls = 3", "vls = 1"), "d.toml").warnings == []
