"""The fast verbs data path: the same work requests posted one by one (``post_send``), as one
``next_wr`` chain, or as a numpy batch (``post_send_batch``) make the same simulation, frame for
frame; ``CQ.poll`` and ``CQ.poll_batch`` return the same completions; the batch's checks name the
row of a bad entry; plain and unusual int types of a field post the same thing."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rdmasim
from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.verbs import CQ, MR, PD, QP, SGE, WC, Context, QPCap, QPInitAttr, RecvWR, SendWR, connect_qps
from rdmasim.verbs import enums as e

N = 60  # work requests per run
SLOT = 4096


def _rows() -> dict[str, np.ndarray]:
    """A mix of opcodes, lengths (one and several packets), immediates and signaling."""
    i = np.arange(N)
    ops = np.array([e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_WRITE_WITH_IMM, e.IBV_WR_SEND, e.IBV_WR_RDMA_READ,
                    e.IBV_WR_SEND_WITH_IMM, e.IBV_WR_RDMA_WRITE])[i % 6]
    return {"opcode": ops, "length": np.array([1000, 1024, 3000, 64, 0, 2500])[i % 5],
            "wr_id": 1000 + i, "imm_data": 0x01020304 + i,
            "send_flags": np.where(i % 3 == 0, e.IBV_SEND_SIGNALED, 0)
            | np.where(i % 7 == 0, e.IBV_SEND_SOLICITED, 0),
            "offset": (i % 8) * SLOT}


class Pair:
    def __init__(self, tmp: Path, name: str) -> None:
        self.topo = rdmasim.back_to_back(rate="100Gbps", delay="1us", mtu=1024, seed=3)
        self.pcap = tmp / f"{name}.pcap"
        self.topo.sim.capture(str(self.pcap))
        ca, cb = Context(self.topo.a), Context(self.topo.b)
        pa, pb = PD(ca), PD(cb)
        self.cq_a, self.cq_b = CQ(ca, 4 * N), CQ(cb, 4 * N)
        acc = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
        self.src, self.dst = MR(pa, 8 * SLOT, acc), MR(pb, 8 * SLOT, acc)
        self.src.array[:] = np.arange(8 * SLOT, dtype=np.uint64).astype(np.uint8) ^ 0x5A
        self.dst.array[:] = np.arange(8 * SLOT, dtype=np.uint64).astype(np.uint8) ^ 0xC3
        cap = QPCap(max_send_wr=N, max_recv_wr=N)
        self.qa = QP(pa, QPInitAttr(scq=self.cq_a, rcq=self.cq_a, cap=cap, sq_sig_all=0))
        self.qb = QP(pb, QPInitAttr(scq=self.cq_b, rcq=self.cq_b, cap=cap, sq_sig_all=0))
        connect_qps(self.qa, self.qb)
        for k in range(N):  # for the SENDs and WRITE_WITH_IMMs
            self.qb.post_recv(RecvWR(wr_id=k, sg=[SGE(self.dst.buf + 7 * SLOT, SLOT, self.dst.lkey)]))

    def wrs(self, rows: dict[str, np.ndarray]) -> list[SendWR]:
        out = []
        for k in range(N):
            off = int(rows["offset"][k])
            wr = SendWR(wr_id=int(rows["wr_id"][k]), opcode=int(rows["opcode"][k]),
                        imm_data=int(rows["imm_data"][k]), send_flags=int(rows["send_flags"][k]),
                        sg=[SGE(self.src.buf + off, int(rows["length"][k]), self.src.lkey)])
            wr.set_wr_rdma(self.dst.rkey, self.dst.buf + off)
            out.append(wr)
        return out

    def finish(self) -> dict[str, Any]:
        sim = self.topo.sim
        sim.run_until_idle()
        sim.close_capture()
        return {"events": sim.events, "now": sim.now, "stats": dict(self.qa.stats()),
                "wc_a": self.cq_a.poll(4 * N)[1], "wc_b": self.cq_b.poll(4 * N)[1],
                "dst": bytes(self.dst.array), "src": bytes(self.src.array), "pcap": self.pcap.read_bytes()}


def _posted(tmp: Path, how: str) -> dict[str, Any]:
    p = Pair(tmp, how)
    rows = _rows()
    if how == "one_by_one":
        for wr in p.wrs(rows):
            p.qa.post_send(wr)
    elif how == "chain":
        wrs = p.wrs(rows)
        for a, b in zip(wrs, wrs[1:], strict=False):
            a.next_wr = b
        p.qa.post_send(wrs[0])
    else:
        assert p.qa.post_send_batch(rows["opcode"], p.src.buf + rows["offset"], rows["length"], p.src.lkey,
                                    remote_addr=p.dst.buf + rows["offset"], rkey=p.dst.rkey,
                                    wr_id=rows["wr_id"], send_flags=rows["send_flags"],
                                    imm_data=rows["imm_data"]) == N
    return p.finish()


def test_one_by_one_chain_and_batch_make_the_same_simulation(tmp_path: Path) -> None:
    ref = _posted(tmp_path, "one_by_one")
    assert ref["stats"]["pkts_sent"] > N  # several multi-packet WRs, all of it sent
    assert len(ref["wc_a"]) == N // 3 and all(w.ok for w in ref["wc_a"])
    imm = [w for w in ref["wc_b"] if w.wc_flags & e.IBV_WC_WITH_IMM]
    assert imm and all(0x01020304 <= w.imm_data < 0x01020304 + N for w in imm)  # __be32 round trip
    for how in ("chain", "batch"):
        got = _posted(tmp_path, how)
        for k in ref:
            assert got[k] == ref[k], f"{how}: {k} differs from one-by-one posting"


def test_poll_batch_returns_what_poll_returns(tmp_path: Path) -> None:
    a, b = _posted(tmp_path, "one_by_one"), None
    p = Pair(tmp_path, "arrays")
    for wr in p.wrs(_rows()):
        p.qa.post_send(wr)
    p.topo.sim.run_until_idle()
    arr = p.cq_b.poll_batch()
    b = p.cq_b.poll_batch()
    assert len(b) == 0 and len(arr) == len(a["wc_b"]) > 0
    assert [WC(*(int(x) for x in row)) for row in arr.tolist()] == a["wc_b"]
    first = p.cq_a.poll_batch(2)
    assert list(first["wr_id"]) == [w.wr_id for w in a["wc_a"][:2]]
    assert list(p.cq_a.poll_batch()["wr_id"]) == [w.wr_id for w in a["wc_a"][2:]]
    with pytest.raises(PyverbsUserError, match="max_entries"):
        p.cq_a.poll_batch(-1)


def test_wc_is_a_light_immutable_record() -> None:
    w = WC(wr_id=5, status=0, byte_len=10)
    assert w.ok and w.wr_id == 5 and w == WC(5, 0, 0, 0, 10)
    assert not hasattr(w, "__dict__")
    with pytest.raises(AttributeError):
        w.status = 1  # type: ignore[misc]


def test_work_requests_have_fixed_fields() -> None:
    wr = SendWR()
    with pytest.raises(AttributeError):
        wr.remote_adr = 5  # type: ignore[attr-defined]  # a misspelt field is refused, not ignored
    with pytest.raises(AttributeError):
        SGE(0, 1, 2).lenght = 3  # type: ignore[attr-defined]


@pytest.fixture
def pair(tmp_path: Path) -> Pair:
    return Pair(tmp_path, "x")


def _batch(p: Pair, **kw: Any) -> int:
    args = {"opcode": e.IBV_WR_RDMA_WRITE, "local_addr": p.src.buf, "length": np.full(4, 100),
            "lkey": p.src.lkey, "remote_addr": p.dst.buf, "rkey": p.dst.rkey, "wr_id": np.arange(4),
            "send_flags": e.IBV_SEND_SIGNALED}
    args.update(kw)
    return p.qa.post_send_batch(**args)


@pytest.mark.parametrize(("kw", "row", "match"), [
    ({"length": np.array([1, 2, -1, 4])}, 2, r"length = -1 is out of range: allowed \[0, 4294967295\]"),
    ({"wr_id": np.array([0, 1, 2, 3], dtype=np.int8) - 1}, 0, r"wr_id = -1 is out of range"),
    ({"rkey": np.array([1, 2, 3, 1 << 32], dtype=np.uint64)}, 3, r"rkey = 4294967296 is out of range"),
    ({"opcode": np.array([0, 0, e.IBV_WR_BIND_MW, 0])}, 2, r"opcode 8 \(IBV_WR_BIND_MW\): a batch takes"),
    ({"opcode": np.array([0, e.IBV_WR_ATOMIC_CMP_AND_SWP, 0, 0])}, 1, r"opcode 5 \(IBV_WR_ATOMIC_CMP"),
    ({"send_flags": np.array([2, 2, 2, 1 << 20])}, 3, r"send_flags = 0x100000 has unknown bits 0x100000"),
    # one row, two bad fields: the one post_send checks first is named
    ({"wr_id": np.array([0, -5, 0, 0]), "length": np.array([0, -1, 0, 0])}, 1, r"wr_id = -5"),
    # the earliest bad row wins over an earlier-checked field of a later row
    ({"wr_id": np.array([0, 0, -5, 0]), "length": np.array([0, -1, 0, 0])}, 1, r"length = -1"),
])
def test_batch_names_the_first_bad_row_and_posts_the_rows_before(pair: Pair, kw: dict, row: int,
                                                                  match: str) -> None:
    with pytest.raises(PyverbsUserError, match=rf"post_send_batch row {row}: {match}"):
        _batch(pair, **kw)
    pair.topo.sim.run_until_idle()
    assert [w.wr_id for w in pair.cq_a.poll(10)[1]] == list(range(row))


@pytest.mark.parametrize(("kw", "match"), [
    ({"length": np.array([1.0, 2.0, 3.0, 4.0])}, "length: an integer array, got dtype float64"),
    ({"wr_id": np.array([True, False, True, False])}, "wr_id: an integer array, got dtype bool"),
    ({"wr_id": np.arange(5)}, "length has 4 rows, the arrays before it 5"),
    ({"remote_addr": np.zeros((2, 2), dtype=np.uint64)}, r"remote_addr: a 1-D array or one integer"),
    ({"lkey": -1}, r"post_send_batch lkey"),
    ({"send_flags": 1.5}, r"post_send_batch send_flags must be an integer"),
    ({"length": 100, "wr_id": 0}, "give the work requests as arrays"),
])
def test_batch_refuses_malformed_columns_before_posting(pair: Pair, kw: dict, match: str) -> None:
    with pytest.raises(PyverbsUserError, match=match):
        _batch(pair, **kw)
    pair.topo.sim.run_until_idle()
    assert pair.cq_a.poll(10)[0] == 0


def test_batch_refuses_a_key_of_another_simulation(pair: Pair, tmp_path: Path) -> None:
    other = Pair(tmp_path, "other")
    with pytest.raises(PyverbsUserError, match="another simulation"):
        _batch(pair, rkey=other.dst.rkey)


def test_batch_names_the_row_the_nic_refuses(tmp_path: Path) -> None:
    p = Pair(tmp_path, "full")
    with pytest.raises(PyverbsRDMAError, match=rf"post_send_batch row {N}: .*Errno: 12"):  # ENOMEM
        _batch(p, wr_id=np.arange(N + 5), length=100)  # the send queue holds N
    p.topo.sim.run_until_idle()
    assert [w.wr_id for w in p.cq_a.poll(2 * N)[1]] == list(range(N))


def test_batch_on_a_destroyed_or_ud_qp(pair: Pair) -> None:
    ctx = pair.qa.pd.ctx
    cq = CQ(ctx, 4)
    ud = QP(pair.qa.pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq))
    with pytest.raises(PyverbsUserError, match="UD QP"):
        ud.post_send_batch(e.IBV_WR_SEND, pair.src.buf, np.full(2, 10), pair.src.lkey)
    pair.qa.close()
    with pytest.raises(PyverbsRDMAError, match="destroyed"):
        _batch(pair)


class _Int(int):
    pass


@pytest.mark.parametrize("convert", [np.uint64, np.int32, _Int, e.ibv_wr_opcode])
def test_other_int_types_post_what_plain_ints_post(tmp_path: Path, convert: Any) -> None:
    """The C fast path takes plain ints; numpy ints, int subclasses and enum members go through
    the Python checks: the simulation is the same."""
    results = []
    for conv in (int, convert):
        p = Pair(tmp_path, f"t{len(results)}")
        wr = p.wrs(_rows())[0]
        wr.opcode = conv(e.IBV_WR_RDMA_WRITE)
        num = int if conv is e.ibv_wr_opcode else conv
        wr.wr_id, wr.sg[0].length, wr.remote_addr = num(7), num(1500), num(p.dst.buf + 100)
        wr.send_flags = e.IBV_SEND_SIGNALED
        p.qa.post_send(wr)
        results.append(p.finish())
    for k in results[0]:
        assert results[1][k] == results[0][k], k


def test_bool_fields_are_still_refused(pair: Pair) -> None:
    wr = pair.wrs(_rows())[0]
    wr.wr_id = True
    with pytest.raises(PyverbsUserError, match="post_send work request 0: wr_id must be an integer"):
        pair.qa.post_send(wr)


def test_a_reused_work_request_posts_its_new_fields(pair: Pair) -> None:
    wr = pair.wrs(_rows())[0]
    wr.send_flags = e.IBV_SEND_SIGNALED
    for k in range(3):
        wr.wr_id = 50 + k
        wr.sg[0].length = 10 * (k + 1)
        pair.qa.post_send(wr)
    pair.topo.sim.run_until_idle()
    wcs = pair.cq_a.poll(10)[1]
    assert [(w.wr_id, w.byte_len) for w in wcs] == [(50, 10), (51, 20), (52, 30)]


def test_imm_data_reads_back_as_posted(pair: Pair) -> None:
    wr = SendWR(opcode=e.IBV_WR_SEND_WITH_IMM, imm_data=0xA1B2C3D4,
                sg=[SGE(pair.src.buf, 8, pair.src.lkey)])
    pair.qa.post_send(wr)
    pair.topo.sim.run_until_idle()
    w = pair.cq_b.poll(1)[1][0]
    assert w.imm_data == 0xA1B2C3D4
    assert sys.byteorder in ("little", "big")


def test_plain_work_requests_take_the_c_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Plain ints never reach the Python checks; anything else does (and is decided there)."""
    calls: list[int] = []
    checked = QP._send_args
    monkeypatch.setattr(QP, "_send_args", lambda self, i, wr: calls.append(i) or checked(self, i, wr))
    p = Pair(tmp_path, "c")
    for wr in p.wrs(_rows())[:10]:
        p.qa.post_send(wr)
    assert calls == []
    wr = p.wrs(_rows())[0]
    wr.wr_id = np.uint64(3)
    p.qa.post_send(wr)
    assert calls == [0]


def test_receive_work_requests_take_the_c_path_and_keep_their_checks(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    calls: list[int] = []
    checked = QP._recv_args
    monkeypatch.setattr(QP, "_recv_args", lambda self, i, wr: calls.append(i) or checked(self, i, wr))
    p = Pair(tmp_path, "r")  # posts N plain receive WRs on qb
    assert calls == []
    p.qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(p.src.buf, 100, p.src.lkey)]))
    assert p.finish()["wc_b"][0].wr_id == 0  # the first receive posted took the SEND: room for one
    bad: list[RecvWR] = []
    good = RecvWR(wr_id=7, sg=[SGE(p.dst.buf, 10, p.dst.lkey)])
    wrong = RecvWR(wr_id=8, sg=[SGE(p.dst.buf, 10, p.dst.lkey)])
    wrong.wr_id = -1
    good.next_wr = wrong
    with pytest.raises(PyverbsUserError, match="post_recv work request 1: wr_id = -1 is out of range"):
        p.qb.post_recv(good, bad)
    assert bad == [wrong] and calls == [1]
