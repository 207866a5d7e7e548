"""Out-of-order placement for every RC operation: WRITE, SEND and READ responses
(recovery "ooo", csrc/transport/irn.c and csrc/transport/ooo_read.c, docs/multipath.md).

With recovery "ooo" the requester places each READ response packet where its PSN says (offset
(PSN - first PSN) x PMTU of the READ's local buffer) and completes READs in order; an out-of-order
response is no sequence error.  On a symmetric sprayed fabric nothing is lost, so nothing may be
resent and no NAK may be sent, whatever the operation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.verbs_pair import mr, open_host, qp_pair, random_bytes, recv_wr, write_wr

import rdmasim
from rdmasim.verbs import SGE, QPCap, SendWR
from rdmasim.verbs import enums as e

RW = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ


def sprayed_ops(ops: tuple[str, ...], *, mode: str = "spray", profile: str = "cx7-ar",
                recovery: str = "ooo", size: int = 1 << 20, n_msgs: int = 4, loss: float = 0.0,
                seed: int = 1) -> dict[str, Any]:
    """Every host i of a 2 x 2 x 2 leaf-spine runs, to host (i + 2) % 4 on the other leaf, one RC QP
    pair per operation of ``ops`` ("write", "send", "read"), each moving ``size`` bytes of random
    data in ``n_msgs`` messages.  ``loss`` on both directions of the link leaf0 <-> spine0.
    Returns the counters of both ends of every QP summed and whether every destination holds
    exactly the bytes of its source."""
    topo = rdmasim.leaf_spine(2, 2, 2, seed=seed, switch_config={"path_select": mode})
    for h in topo.sim.hosts.values():
        h.set_nic_profile(profile)
    lossy = []
    if loss:
        leaf0, spine0 = topo.sim.switches["leaf0"], topo.sim.switches["spine0"]
        link = next(lk for lk in topo.sim.links if {lk.a, lk.b} == {leaf0, spine0})
        lossy = [link.direction(leaf0), link.direction(spine0)]
        for d in lossy:
            d.set_loss(loss)
    hosts = [h for row in topo.hosts_by_leaf for h in row]
    opened = [open_host(h, 16 * n_msgs) for h in hosts]
    step = size // n_msgs
    checks = []
    pairs = []
    for i in range(len(hosts)):
        j = (i + 2) % len(hosts)
        (_, pd_a, cq_a), (_, pd_b, cq_b) = opened[i], opened[j]
        for n, op in enumerate(ops):
            seed_ij = seed * 1000 + i * 10 + n
            qa, qb = qp_pair(pd_a, cq_a, pd_b, cq_b, cap=QPCap(max_send_wr=n_msgs, max_recv_wr=n_msgs),
                             recovery=recovery, irn_window=64)
            pairs.append((qa, qb, op))
            if op == "read":  # a reads b's bytes into its own buffer
                src = mr(pd_b, size, RW, random_bytes(size, seed_ij))
                dst = mr(pd_a, size, RW, 0)
                for k in range(n_msgs):
                    qa.post_send(write_wr(k, dst, src, step, off=k * step, opcode=e.IBV_WR_RDMA_READ))
            elif op == "write":
                src = mr(pd_a, size, e.IBV_ACCESS_LOCAL_WRITE, random_bytes(size, seed_ij))
                dst = mr(pd_b, size, RW, 0)
                for k in range(n_msgs):
                    qa.post_send(write_wr(k, src, dst, step, off=k * step))
            else:
                src = mr(pd_a, size, e.IBV_ACCESS_LOCAL_WRITE, random_bytes(size, seed_ij))
                dst = mr(pd_b, size, RW, 0)
                for k in range(n_msgs):
                    qb.post_recv(recv_wr(k, dst, step, off=k * step))
                for k in range(n_msgs):
                    qa.post_send(SendWR(wr_id=k, opcode=e.IBV_WR_SEND,
                                        sg=[SGE(src.buf + k * step, step, src.lkey)]))
            checks.append((op, src, dst))
    topo.sim.run(until=topo.sim.now + rdmasim.units.parse_time("200ms"))
    out: dict[str, Any] = {"ok": True, "retx": 0, "naks_sent": 0, "naks_rcvd": 0, "timeouts": 0,
                           "implied_naks": 0, "read_placed": 0, "bad": []}
    for qa, qb, op in pairs:
        if op == "read":
            out["read_placed"] += qa.stats()["ooo_placed"]  # READ responses placed ahead of the expected PSN
        for s in (qa.stats(), qb.stats()):
            out["retx"] += s["pkts_retx"]
            out["naks_sent"] += s["naks_sent"]
            out["naks_rcvd"] += s["naks_rcvd"]
            out["timeouts"] += s["timeouts"]
            out["implied_naks"] += s["implied_naks"]
    for op, src, dst in checks:
        if not np.array_equal(src.array, dst.array):
            out["ok"] = False
            out["bad"].append(op)
    wcs = [wc for _, _, cq in opened for wc in cq.poll(1024)[1]]
    want = len(hosts) * n_msgs * (len(ops) + ops.count("send"))  # a SEND completes at both ends
    out["completions"] = len(wcs)
    out["all_success"] = len(wcs) == want and all(wc.ok for wc in wcs)
    out["dropped"] = sum(d.stats()["dropped"] for d in lossy)
    return out


def test_sprayed_reads_are_placed_out_of_order_and_resend_nothing() -> None:
    got = sprayed_ops(("read",))
    assert got["ok"] and got["all_success"], got
    assert got["retx"] == 0 and got["implied_naks"] == 0 and got["naks_sent"] == 0, got
    assert got["timeouts"] == 0 and got["read_placed"] > 0, got
    # the same READs on an in-order requester: reordered responses look lost and are asked again
    gbn = sprayed_ops(("read",), recovery="gbn")
    assert gbn["ok"] and gbn["all_success"] and gbn["retx"] > 0, gbn


def test_reorder_tolerance_is_exact_for_write_send_and_read() -> None:
    """Spraying on a symmetric fabric reorders every operation but loses nothing: zero
    retransmissions, zero NAKs (sent or received), no timeout, exact bytes."""
    got = sprayed_ops(("write", "send", "read"))
    assert got["ok"] and got["all_success"], got
    assert got["retx"] == 0 and got["naks_sent"] == 0 and got["naks_rcvd"] == 0, got
    assert got["timeouts"] == 0 and got["implied_naks"] == 0, got


def test_lost_read_responses_are_asked_again_and_the_bytes_are_exact() -> None:
    got = sprayed_ops(("read",), size=4 << 20, loss=0.005)
    assert got["dropped"] > 0, got
    assert got["ok"] and got["all_success"], got
    assert 0 < got["retx"], got


# ---- bad input on the command line: one line, naming the key -----------------------------------

CLI_SCENARIO = """
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


def _cli_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str = "spray",
                  profile: str = "rxe", extra: str = "") -> tuple[int, list[str]]:
    from rdmasim.cli import main

    f = tmp_path / "s.toml"
    f.write_text(CLI_SCENARIO.format(mode=mode, profile=profile, extra=extra))
    rc = main(["validate", str(f)])
    cap = capsys.readouterr()
    return rc, [ln for ln in (cap.out + cap.err).splitlines() if ln.strip()]


@pytest.mark.parametrize("mode", ["spray", "adaptive", "adaptive_packet"])
def test_validate_warns_in_one_line_that_per_packet_paths_reorder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str) -> None:
    rc, lines = _cli_validate(tmp_path, capsys, mode=mode)
    assert rc == 0, lines
    warned = [ln for ln in lines if ln.startswith("warning:")]
    assert len(warned) == 1 and "switch.path_select" in warned[0] and "out of order" in warned[0], lines
    rc, lines = _cli_validate(tmp_path, capsys, mode=mode, profile="cx7-ar")
    assert rc == 0 and not [ln for ln in lines if ln.startswith("warning:")], lines


@pytest.mark.parametrize(("extra", "key"), [("[qp]\nrecovery = \"ooo\"", "qp.recovery"),
                                            ("[nic.overrides]\nooo_placement = true",
                                             "nic.overrides.ooo_placement")])
def test_validate_refuses_ooo_placement_on_an_in_order_profile_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str, key: str) -> None:
    rc, lines = _cli_validate(tmp_path, capsys, mode="ecmp", extra=extra)
    assert rc == 2, lines
    named = [ln for ln in lines if key in ln]
    assert len(named) == 1 and "'rxe'" in named[0], lines
