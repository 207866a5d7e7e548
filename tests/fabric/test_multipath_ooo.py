"""Out-of-order placement as a NIC capability (profiles cx7-ar / ib-ar, recovery "ooo";
csrc/transport/irn.c, docs/multipath.md).

The responder places each SEND/WRITE packet where its header says and completes messages in order;
an out-of-order arrival is no sequence error (no NAK), a gap is reported lost once a later PSN has
been held for the profile's reorder time, and only what was reported (or timed out) is resent.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.verbs_pair import mr, open_host, qp_pair, random_bytes, write_wr

import rdmasim
from rdmasim import nic
from rdmasim.errors import PyverbsUserError
from rdmasim.verbs import QPCap
from rdmasim.verbs import enums as e

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import multipath  # noqa: E402

RW = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE


def cross_leaf_writes(mode: str, *, size: int = 1 << 20, n_msgs: int = 4, loss: float = 0.0,
                      profile: str = "cx7-ar", recovery: str = "ooo", seed: int = 1,
                      both_ways: bool = True) -> dict[str, Any]:
    """Every host of a 2 x 2 x 2 leaf-spine (or, without ``both_ways``, every host of leaf0) writes
    ``size`` bytes (``n_msgs`` WRITEs) of random data to the host with its index on the other leaf
    over one RC QP pair; ``loss`` on the link leaf0 -> spine0 (which then carries only data).
    Returns the requesters' and responders' counters summed, the drops and whether every
    destination holds exactly the bytes sent."""
    topo = rdmasim.leaf_spine(2, 2, 2, seed=seed, switch_config={"path_select": mode})
    for h in topo.sim.hosts.values():
        h.set_nic_profile(profile)
    lossy = None
    if loss:
        leaf0, spine0 = topo.sim.switches["leaf0"], topo.sim.switches["spine0"]
        link = next(lk for lk in topo.sim.links if {lk.a, lk.b} == {leaf0, spine0})
        lossy = link.direction(leaf0)
        lossy.set_loss(loss)
    hosts = [h for row in topo.hosts_by_leaf for h in row]
    opened = [open_host(h, 4 * n_msgs) for h in hosts]
    jobs = []
    for i, _ in enumerate(hosts if both_ways else hosts[:2]):
        j = (i + 2) % len(hosts)
        (_, pd_a, cq_a), (_, pd_b, cq_b) = opened[i], opened[j]
        src = mr(pd_a, size, e.IBV_ACCESS_LOCAL_WRITE, random_bytes(size, seed * 100 + i))
        dst = mr(pd_b, size, RW, 0)
        qa, qb = qp_pair(pd_a, cq_a, pd_b, cq_b, cap=QPCap(max_send_wr=n_msgs), recovery=recovery,
                         irn_window=64)
        step = size // n_msgs
        for k in range(n_msgs):
            qa.post_send(write_wr(k, src, dst, step, off=k * step))
        jobs.append((qa, qb, src, dst, cq_a))
    topo.sim.run(until=topo.sim.now + rdmasim.units.parse_time("100ms"))
    out = {"ok": True, "retx": 0, "naks_sent": 0, "naks_rcvd": 0, "timeouts": 0, "sent": 0}
    for qa, qb, src, dst, _cq in jobs:
        sa, sb = qa.stats(), qb.stats()
        out["retx"] += sa["pkts_retx"]
        out["sent"] += sa["pkts_sent"]
        out["naks_rcvd"] += sa["naks_rcvd"]
        out["timeouts"] += sa["timeouts"]
        out["naks_sent"] += sb["naks_sent"]
        out["ok"] &= bool(np.array_equal(src.array, dst.array))
    wcs = [wc for _, _, cq in opened for wc in cq.poll(64)[1]]
    out["completions"] = len(wcs)
    out["all_success"] = all(wc.ok for wc in wcs)
    out["dropped"] = lossy.stats()["dropped"] if lossy is not None else 0
    return out


def test_spray_on_a_symmetric_fabric_resends_nothing_and_naks_nothing() -> None:
    got = cross_leaf_writes("spray")
    assert got["ok"] and got["all_success"] and got["completions"] == 4 * 4, got
    assert got["retx"] == 0 and got["naks_sent"] == 0 and got["naks_rcvd"] == 0, got
    # the same traffic reorders: IRN NAKs every out-of-order arrival, and resends some of them
    irn = cross_leaf_writes("spray", recovery="irn")
    assert irn["ok"] and irn["naks_sent"] > 0, irn


@pytest.mark.parametrize("loss", [0.001, 0.01])
def test_loss_resends_what_was_lost_and_keeps_the_bytes(loss: float) -> None:
    got = cross_leaf_writes("spray", size=4 << 20, loss=loss, both_ways=False)
    assert got["ok"] and got["all_success"] and got["completions"] == 2 * 4, got
    lost = got["dropped"]  # data packets only: that direction carries no ACKs here
    assert lost > 0, got
    # exactly the lost packets go again, each reported once by the responder (no timeout)
    assert got["retx"] == lost and got["naks_sent"] == lost and got["timeouts"] == 0, got


def test_a_gap_behind_a_full_window_is_reported_after_the_reorder_time() -> None:
    """The sender stops when its window is full behind a lost packet: no later arrival comes, so
    the responder's reorder timer reports the gap (not the sender's 320 us retransmit timeout)."""
    topo = rdmasim.back_to_back()
    for h in (topo.a, topo.b):
        h.set_nic_profile("cx7-ar")
    topo.a.link.direction(topo.a).drop(psn=10)
    (_, pd_a, cq_a), (_, pd_b, cq_b) = open_host(topo.a, 4), open_host(topo.b, 4)
    qa, qb = qp_pair(pd_a, cq_a, pd_b, cq_b, recovery="ooo", irn_window=16)
    size = 256 * 4096
    src = mr(pd_a, size, e.IBV_ACCESS_LOCAL_WRITE, random_bytes(size, 5))
    dst = mr(pd_b, size, RW, 0)
    qa.post_send(write_wr(1, src, dst, size))
    wc = topo.sim.wait_for(cq_a, 1, timeout=None)[0]
    assert wc.ok and np.array_equal(src.array, dst.array)
    st = qa.stats()
    assert st["pkts_retx"] == 1 and st["timeouts"] == 0 and st["naks_rcvd"] == 1, st
    reorder = nic.get_profile("cx7-ar").reorder_ps
    line = size * 8 / 100e9 * 1e12
    assert topo.sim.now < line + reorder + 20_000_000, topo.sim.now  # + a few round trips


def test_adaptive_with_ooo_placement_runs_at_line_rate_small() -> None:
    ooo = multipath.run("adaptive", "ooo", leaves=2, spines=2, hosts_per_leaf=4, size=4 << 20)
    gbn = multipath.run("adaptive", "gbn", leaves=2, spines=2, hosts_per_leaf=4, size=4 << 20)
    ecmp = multipath.run("ecmp", "gbn", leaves=2, spines=2, hosts_per_leaf=4, size=4 << 20)
    assert ooo["ok"] and ooo["retx"] == 0, ooo
    assert ooo["mean"] >= 0.95, ooo
    assert ooo["mean"] > ecmp["mean"] and gbn["retx"] > 0, (ooo, gbn, ecmp)


def test_adaptive_packet_spreads_one_qp_on_an_idle_fabric() -> None:
    """'adaptive' follows the flow hash while the queues are equal (one QP on an idle fabric keeps
    one path); 'adaptive_packet' breaks that tie per packet and uses every uplink."""
    used = {}
    for mode in ("adaptive", "adaptive_packet"):
        topo = rdmasim.leaf_spine(2, 2, 1, seed=1, switch_config={"path_select": mode})
        for h in topo.sim.hosts.values():
            h.set_nic_profile("cx7-ar")
        flows = topo.sim.add_flows({"src": [0], "dst": [1], "size": [1 << 20]})
        topo.sim.run_flows()
        assert flows.results()["retx_pkts"].sum() == 0
        leaf0 = topo.sim.switches["leaf0"]
        ups = [lk.direction(leaf0).stats()["frames"] for lk in topo.sim.links
               if leaf0 in (lk.a, lk.b) and {lk.a, lk.b} & set(topo.sim.switches.values()) - {leaf0}]
        used[mode] = sum(1 for f in ups if f > 10)
    assert used == {"adaptive": 1, "adaptive_packet": 2}, used


@pytest.mark.slow
def test_leaf_spine_permutation_ooo() -> None:
    """4 leaves x 4 spines x 16 hosts, 100 Gb/s, PFC, a random permutation of long WRITEs, no CC."""
    ecmp_gbn, ecmp_ooo = multipath.run("ecmp", "gbn"), multipath.run("ecmp", "ooo")
    adaptive_irn, adaptive_ooo = multipath.run("adaptive", "irn"), multipath.run("adaptive", "ooo")
    spray = multipath.run("spray", "ooo", size=32 << 20, irn_window=128)
    got = {"ecmp_gbn": ecmp_gbn, "ecmp_ooo": ecmp_ooo, "adaptive_irn": adaptive_irn,
           "adaptive_ooo": adaptive_ooo, "spray_ooo": spray}
    assert spray["mean"] >= 0.95 and spray["retx"] == 0, got
    assert adaptive_ooo["retx"] == 0 and adaptive_irn["retx"] > 0, got
    assert adaptive_ooo["mean"] > adaptive_irn["mean"], got
    # ECMP keeps one path per QP: out-of-order placement changes nothing there
    assert ecmp_ooo["mean"] == pytest.approx(ecmp_gbn["mean"], abs=0.01), got


# ---- selection and bad input -----------------------------------------------------------------


def test_profiles_with_ooo_placement() -> None:
    for name in ("cx7-ar", "ib-ar"):
        p = nic.get_profile(name)
        assert p.ooo_placement and p.reorder_ps > 0
    assert not nic.get_profile("rxe").ooo_placement and not nic.get_profile("cx6").ooo_placement
    assert not nic.get_profile("cx7-ar", ooo_placement=False).ooo_placement


def test_ooo_placement_cannot_be_added_to_a_profile_that_lacks_it() -> None:
    with pytest.raises(nic.NicProfileError, match="ooo_placement") as exc:
        nic.get_profile("rxe", ooo_placement=True)
    assert exc.value.keys == ("ooo_placement",)
    with pytest.raises(nic.NicProfileError, match="reorder_time"):
        nic.get_profile("cx7-ar", reorder_time=0)


CROSS = {"src": [0, 1, 2, 3], "dst": [2, 3, 0, 1], "size": [1 << 20] * 4}  # every flow crosses the spines


def _sprayed_permutation(profile: str, **kw: Any) -> int:
    topo = rdmasim.leaf_spine(2, 2, 2, seed=1, switch_config={"path_select": "spray"})
    for h in topo.sim.hosts.values():
        h.set_nic_profile(profile)
    flows = topo.sim.add_flows(CROSS, **kw)
    topo.sim.run_flows()
    res = flows.results()
    assert (res["status"] == 0).all()
    return int(res["retx_pkts"].sum())


def test_add_flows_default_follows_the_profiles() -> None:
    # cx7-ar: out-of-order placement by default, nothing resent; rxe: Go-Back-N resends
    assert _sprayed_permutation("cx7-ar") == 0
    assert _sprayed_permutation("rxe") > 0
    assert _sprayed_permutation("cx7-ar", recovery="gbn") > 0
    rxe = rdmasim.leaf_spine(2, 2, 2, seed=1)
    with pytest.raises(ValueError, match="recovery = 'ooo'.*'rxe'"):
        rxe.sim.add_flows(CROSS, recovery="ooo")


def test_verbs_ooo_needs_the_profile() -> None:
    topo = rdmasim.back_to_back()
    (_, pd_a, cq_a), (_, pd_b, cq_b) = open_host(topo.a, 4), open_host(topo.b, 4)
    with pytest.raises(PyverbsUserError, match="recovery='ooo'.*'rxe'"):
        qp_pair(pd_a, cq_a, pd_b, cq_b, recovery="ooo")
    topo.a.set_nic_profile("ib-ar")
    topo.b.set_nic_profile("ib-ar")
    qa, _ = qp_pair(pd_a, cq_a, pd_b, cq_b, recovery="ooo")
    assert qa.recovery["mode"] == "ooo" and qa.recovery["reorder_ps"] == nic.get_profile("ib-ar").reorder_ps


SCENARIO = """
[simulation]
name = "s"
progress = false
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
[switch]
path_select = "{mode}"
[nic]
profile = "{profile}"
{extra}
[traffic.permutation]
size = "64KiB"
"""


def _validate(tmp_path: Path, **kw: str) -> tuple[Any, list[Any]]:
    from rdmasim.scenario import ScenarioError, load

    f = tmp_path / "s.toml"
    f.write_text(SCENARIO.format(**{"mode": "ecmp", "profile": "rxe", "extra": "", **kw}))
    try:
        sc = load(f)
    except ScenarioError as exc:
        return exc, []
    return None, sc.warnings


def test_scenario_spraying_in_front_of_in_order_receivers_warns(tmp_path: Path) -> None:
    err, warnings = _validate(tmp_path, mode="adaptive")
    assert err is None and [w.path for w in warnings] == ["switch.path_select"], warnings
    assert "out of order" in str(warnings[0])
    for kw in ({"mode": "adaptive", "profile": "cx7-ar"}, {"mode": "ecmp"},
               {"mode": "spray", "extra": "[qp]\nrecovery = \"irn\""}):
        err, warnings = _validate(tmp_path, **kw)
        assert err is None and not warnings, (kw, warnings)


def test_scenario_ooo_on_an_in_order_profile_is_refused(tmp_path: Path) -> None:
    err, _ = _validate(tmp_path, extra="[qp]\nrecovery = \"ooo\"")
    assert err is not None and "qp.recovery" in str(err) and "'rxe'" in str(err), err
    err, _ = _validate(tmp_path, extra="[nic.overrides]\nooo_placement = true")
    assert err is not None and "nic.overrides.ooo_placement" in str(err), err
    err, _ = _validate(tmp_path, profile="cx7-ar", mode="spray", extra="[qp]\nrecovery = \"ooo\"")
    assert err is None
