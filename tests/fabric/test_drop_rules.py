"""Drop rules on opcode, destination QP, PSN and nth frame (with skip/count) per link direction,
and loss changes scheduled at a simulated time. The trace names the exact frame dropped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.verbs_pair import VerbsPair

import rdmasim
from rdmasim import trace as tr
from rdmasim.capture import read_pcap
from rdmasim.fabric import drops_pending
from rdmasim.verbs import SGE, QPCap, SendWR
from rdmasim.verbs import enums as e

ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ | \
    e.IBV_ACCESS_REMOTE_ATOMIC
ATOMIC_ACK = 0x12


class Pair(VerbsPair):
    def __init__(self, tmp_path: Path) -> None:
        super().__init__(mtu=1024, seed=3, pcap=tmp_path / "cap.pcap", cqe=64,
                         cap=QPCap(max_send_wr=16, max_recv_wr=16), path_mtu=1024, psn_a=100, timeout=8,
                         retry_cnt=7, max_rd_atomic=1, access=ACCESS)
        self.cq = self.cq_a
        self.loc = self.mr_a(4096, e.IBV_ACCESS_LOCAL_WRITE)
        self.rem = self.mr_b(4096, ACCESS, fill=0)
        self.trace = self.sim.trace()

    def fetch_add(self, wr_id: int, off: int) -> None:
        wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD, send_flags=e.IBV_SEND_SIGNALED,
                    sg=[SGE(self.loc.buf + 8 * wr_id, 8, self.loc.lkey)])
        wr.set_wr_atomic(self.rem.rkey, self.rem.buf + off, 1, 0)
        self.qa.post_send(wr)

    def write(self, wr_id: int, n: int) -> None:
        wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_WRITE, send_flags=e.IBV_SEND_SIGNALED,
                    sg=[SGE(self.loc.buf, n, self.loc.lkey)])
        wr.set_wr_rdma(self.rem.rkey, self.rem.buf)
        self.qa.post_send(wr)

    def drops(self) -> np.ndarray:
        a = self.trace.to_numpy()
        return a[a["kind"] == tr.DROP]

    def wire(self) -> list[tuple[int, int, int]]:
        """(opcode, dest QP, PSN) of every frame put on the wire, both directions, in order."""
        self.sim.close_capture()
        return [(f.fields["opcode"], f.fields["dest_qpn"], f.fields["psn"]) for f in read_pcap(self.pcap)]


def test_drop_the_first_atomic_acknowledge_to_a_qp(tmp_path: Path) -> None:
    p = Pair(tmp_path)
    p.t.link.ba.drop(opcode="ATOMIC_ACKNOWLEDGE", dest_qp=p.qa.qp_num)
    assert drops_pending(p.t.link.ba) == 1
    p.fetch_add(1, 0)
    p.fetch_add(2, 8)
    wcs = p.sim.wait_for(p.cq, 2)
    assert [w.status for w in wcs] == [e.IBV_WC_SUCCESS] * 2
    p.sim.run_until_idle()
    d = p.drops()
    assert len(d) == 1
    assert (int(d["opcode"][0]), int(d["dest_qpn"][0]), int(d["psn"][0])) == (ATOMIC_ACK, p.qa.qp_num, 100)
    assert tr.DROP_REASONS[int(d["reason"][0])] == "drop-list"
    assert drops_pending(p.t.link.ba) == 0 and p.t.link.ba.stats()["dropped"] == 1
    # each atomic executed once (the resent request is answered from the saved result)
    assert p.rem.array[:16].view(np.uint64).tolist() == [1, 1]
    acks = [f for f in p.wire() if f[0] == ATOMIC_ACK]
    assert acks.count((ATOMIC_ACK, p.qa.qp_num, 100)) == 2  # the dropped one, then the replay
    assert acks.count((ATOMIC_ACK, p.qa.qp_num, 101)) == 1


def test_skip_drops_a_later_match_and_other_qps_are_untouched(tmp_path: Path) -> None:
    p = Pair(tmp_path)
    p.t.link.ba.drop(opcode=ATOMIC_ACK, dest_qp=p.qa.qp_num + 1)  # another QP: never matches
    p.t.link.ba.drop(opcode=["ATOMIC_ACKNOWLEDGE"], dest_qp=p.qa.qp_num, skip=1)
    for i in range(3):
        p.fetch_add(i + 1, 8 * i)
    assert [w.status for w in p.sim.wait_for(p.cq, 3)] == [e.IBV_WC_SUCCESS] * 3
    p.sim.run_until_idle()
    d = p.drops()
    assert [(int(x["opcode"]), int(x["psn"])) for x in d] == [(ATOMIC_ACK, 101)]  # the second one
    assert drops_pending(p.t.link.ba) == 1  # the rule for the other QP is still armed


def test_requests_are_matched_by_opcode_in_their_own_direction(tmp_path: Path) -> None:
    p = Pair(tmp_path)
    p.t.link.ab.drop(opcode=("RDMA_WRITE_MIDDLE", "RDMA_WRITE_LAST"), count=2)
    p.t.link.ba.drop(opcode="RDMA_WRITE_MIDDLE")  # no request goes b -> a: never matches
    p.write(1, 4096)  # FIRST, MIDDLE, MIDDLE, LAST at MTU 1024: PSNs 100..103
    assert [w.status for w in p.sim.wait_for(p.cq, 1)] == [e.IBV_WC_SUCCESS]
    p.sim.run_until_idle()
    assert [(int(x["opcode"]), int(x["psn"])) for x in p.drops()] == [(7, 101), (7, 102)]
    assert drops_pending(p.t.link.ba) == 1


def test_psn_and_nth_rules_combine(tmp_path: Path) -> None:
    p = Pair(tmp_path)
    p.t.link.ab.drop(psn=102, nth=1)  # frame 1 carries PSN 101: both must hold, so nothing
    p.t.link.ab.drop(psn=102, nth=2)  # frame 2 carries PSN 102: dropped
    p.write(1, 4096)
    p.sim.wait_for(p.cq, 1)
    p.sim.run_until_idle()
    assert [int(x["psn"]) for x in p.drops()] == [102]


@pytest.mark.parametrize("kw, msg", [
    ({}, "at least one of"),
    ({"opcode": "ATOMIC_ACK"}, "unknown; allowed names: .*ATOMIC_ACKNOWLEDGE"),
    ({"opcode": 256}, r"drop opcode = 256 is out of range: allowed \[0, 255\]"),
    ({"opcode": []}, "empty set"),
    ({"dest_qp": 1 << 24}, r"drop dest_qp = 16777216 is out of range"),
    ({"psn": -1}, r"drop psn = -1 is out of range"),
    ({"nth": 0, "count": 0}, r"drop count = 0 is out of range: allowed \[1,"),
    ({"nth": 0, "skip": -1}, r"drop skip = -1 is out of range"),
])
def test_bad_drop_rules_are_refused_naming_the_argument(kw: dict, msg: str) -> None:
    t = rdmasim.back_to_back()
    with pytest.raises(ValueError, match=msg):
        t.link.ab.drop(**kw)
    with pytest.raises(TypeError):
        t.link.ab.drop(dest_qp=1.0)


def test_loss_scheduled_at_a_simulated_time() -> None:
    t = rdmasim.back_to_back(mtu=1024, seed=2)
    sim = t.sim
    t.link.ab.set_loss(1.0, at="20us")
    t.link.ab.set_loss(0.0, at="30us")
    trace = sim.trace()
    fs = sim.add_flows({"src": np.array([0]), "dst": np.array([1]), "size": np.array([2_000_000])},
                       timeout=4)
    sim.run_flows()
    assert fs.results()["status"][0] == 0
    a = trace.to_numpy()
    ab = a["link"] == t.link.ab.link_id
    tx = a[(a["kind"] == tr.TX) & ab]
    dropped = a[(a["kind"] == tr.DROP) & ab]
    window = (tx["t_ps"] >= 20_000_000) & (tx["t_ps"] < 30_000_000)
    assert window.sum() > 0 and len(dropped) == window.sum()  # every frame sent in [20, 30) us, only those
    assert set(dropped["t_ps"].tolist()) == set(tx["t_ps"][window].tolist())
    assert t.link.ab.stats()["dropped"] == len(dropped)


def test_scheduled_loss_is_checked() -> None:
    t = rdmasim.back_to_back()
    with pytest.raises(ValueError, match=r"allowed \[0.0, 1.0\]"):
        t.link.ab.set_loss(float("nan"), at="1us")
    with pytest.raises(ValueError, match="cannot read time"):
        t.link.ab.set_loss(0.1, at="1 fortnight")
    t.sim.run("5us")
    with pytest.raises(ValueError, match="before now"):
        t.link.ab.set_loss(0.1, at="1us")
