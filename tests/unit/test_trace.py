"""The C event trace: records agree with the pcap and the link/QP counters, drops carry their
reason, verbs events carry wr_id/status, the cap is honoured and counted, and tracing off records
nothing and changes nothing."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

import rdmasim
from rdmasim import _core
from rdmasim import trace as tr
from rdmasim.capture import read_pcap
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, RecvWR, SendWR, connect_qps
from rdmasim.verbs import enums as e


class Run:
    """a -> b: WRITEs and SENDs over a back-to-back link, optionally lossy and traced."""

    def __init__(self, tmp: Path | None = None, *, trace: bool = True, max_records: int | None = None,
                 loss: float = 0.0, drop_psns: tuple[int, ...] = (), seed: int = 7, mtu: int = 1024,
                 retry_cnt: int = 7, timeout: int = 4) -> None:
        self.topo = rdmasim.back_to_back(rate="100Gbps", delay="1us", mtu=mtu, loss_ab=loss,
                                         loss_ba=loss, seed=seed)
        self.sim = self.topo.sim
        self.pcap = None
        if tmp is not None:
            self.pcap = tmp / f"run-{trace}-{max_records}.pcap"
            self.sim.capture(str(self.pcap))
        for psn in drop_psns:
            self.topo.link.ab.drop(psn=psn)
        self.trace = self.sim.trace(max_records=max_records) if trace else None
        ctx_a, ctx_b = Context(self.topo.a), Context(self.topo.b)
        pd_a, pd_b = PD(ctx_a), PD(ctx_b)
        self.cq_a, self.cq_b = CQ(ctx_a, 64), CQ(ctx_b, 64)
        size = 64 * 1024
        self.src = MR(pd_a, size, e.IBV_ACCESS_LOCAL_WRITE)
        self.src.array[:] = np.random.default_rng(1).integers(0, 256, size, dtype=np.uint8)
        self.dst = MR(pd_b, size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
        self.qa = QP(pd_a, QPInitAttr(scq=self.cq_a, rcq=self.cq_a, cap=QPCap(max_send_wr=16)))
        self.qb = QP(pd_b, QPInitAttr(scq=self.cq_b, rcq=self.cq_b,
                                      cap=QPCap(max_send_wr=16, max_recv_wr=16)))
        connect_qps(self.qa, self.qb, path_mtu=mtu, timeout=timeout, retry_cnt=retry_cnt)

    def write(self, wr_id: int, off: int, n: int) -> None:
        wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(self.src.buf + off, n, self.src.lkey)])
        wr.set_wr_rdma(self.dst.rkey, self.dst.buf + off)
        self.qa.post_send(wr)

    def send(self, wr_id: int, off: int, n: int) -> None:
        self.qb.post_recv(RecvWR(wr_id=1000 + wr_id, sg=[SGE(self.dst.buf + off, n, self.dst.lkey)]))
        self.qa.post_send(SendWR(wr_id=wr_id, opcode=e.IBV_WR_SEND,
                                 sg=[SGE(self.src.buf + off, n, self.src.lkey)]))

    def workload(self) -> Run:
        self.write(1, 0, 10_000)
        self.send(2, 10_000, 3000)
        self.write(3, 20_000, 20_000)
        self.sim.run_until_idle()
        if self.pcap is not None:
            self.sim.close_capture()
        return self


def kinds(a: np.ndarray, kind: int) -> np.ndarray:
    return a[a["kind"] == kind]


def test_record_layout_is_64_bytes_with_named_fields() -> None:
    assert tr.TRACE_DTYPE.itemsize == 64
    for name in ("t_ps", "kind", "node", "peer", "link", "qpn", "dest_qpn", "opcode", "psn", "len",
                 "syndrome", "msn", "ecn", "flags", "reason", "wr_id", "status", "verb_op"):
        assert name in tr.TRACE_DTYPE.names


def test_tx_records_match_the_pcap(tmp_path: Path) -> None:
    run = Run(tmp_path, loss=0.05, drop_psns=(3,)).workload()
    a = run.trace.to_numpy()
    tx = kinds(a, tr.TX)
    frames = list(read_pcap(run.pcap))
    assert len(tx) == len(frames) > 30
    assert [int(x) for x in tx["opcode"]] == [f.fields["opcode"] for f in frames]
    assert [int(x) for x in tx["psn"]] == [f.fields["psn"] for f in frames]
    assert [int(t) // 1000 for t in tx["t_ps"]] == [f.t_ns for f in frames]
    assert [int(x) for x in tx["len"]] == [len(f.fields.get("payload", b"")) for f in frames]
    assert [int(x) for x in tx["ecn"]] == [f.fields["tos"] & 3 for f in frames]
    assert np.all(np.diff(a["t_ps"]) >= 0), "records are in time order"


def test_drops_have_reasons_and_rx_matches_delivered() -> None:
    run = Run(loss=0.05, drop_psns=(3,)).workload()
    a = run.trace.to_numpy()
    drops = kinds(a, tr.DROP)
    assert set(int(r) for r in drops["reason"]) <= {tr.DROP_REASON_CODES["loss"],
                                                     tr.DROP_REASON_CODES["drop-list"]}
    listed = drops[drops["reason"] == tr.DROP_REASON_CODES["drop-list"]]
    assert len(listed) == 1 and int(listed["psn"][0]) == 3
    for d in (run.topo.link.ab, run.topo.link.ba):
        st = d.stats()
        assert len(drops[drops["link"] == d.link_id]) == st["dropped"]
        rx = kinds(a, tr.RX)
        assert len(rx[rx["link"] == d.link_id]) == st["delivered"]
        tx = kinds(a, tr.TX)
        assert len(tx[tx["link"] == d.link_id]) == st["frames"]
        # TX: node is the sender; RX: node is the receiver
        assert set(tx[tx["link"] == d.link_id]["node"]) == {d.src.index}
        assert set(rx[rx["link"] == d.link_id]["node"]) == {d.dst.index}
    assert int(listed["node"][0]) == run.topo.a.index and int(listed["peer"][0]) == run.topo.b.index


def test_posts_and_completions_carry_wr_id_and_status() -> None:
    run = Run().workload()
    a = run.trace.to_numpy()
    posts = kinds(a, tr.POST_SEND)
    assert [int(w) for w in posts["wr_id"]] == [1, 2, 3]
    assert [int(v) for v in posts["verb_op"]] == [e.IBV_WR_RDMA_WRITE, e.IBV_WR_SEND, e.IBV_WR_RDMA_WRITE]
    assert [int(n) for n in posts["len"]] == [10_000, 3000, 20_000]
    recvs = kinds(a, tr.POST_RECV)
    assert [int(w) for w in recvs["wr_id"]] == [1002] and int(recvs["node"][0]) == run.topo.b.index
    comp = kinds(a, tr.COMPLETE)
    send_side = comp[(comp["flags"] & tr.FLAG_RECV) == 0]
    recv_side = comp[(comp["flags"] & tr.FLAG_RECV) != 0]
    assert [int(w) for w in send_side["wr_id"]] == [1, 2, 3]
    assert set(int(s) for s in comp["status"]) == {e.IBV_WC_SUCCESS}
    assert [int(w) for w in recv_side["wr_id"]] == [1002]
    assert int(recv_side["verb_op"][0]) == e.IBV_WC_RECV and int(recv_side["len"][0]) == 3000
    assert all(int(f) & tr.FLAG_CQE for f in comp["flags"])
    assert set(int(q) for q in send_side["qpn"]) == {run.qa.qp_num}


def test_timeouts_retries_and_retry_exhaustion_are_recorded() -> None:
    run = Run(retry_cnt=2, timeout=1)
    run.topo.link.ab.set_loss(1.0)
    run.write(5, 0, 4096)
    run.write(6, 4096, 100)
    run.sim.run_until_idle()
    a = run.trace.to_numpy()
    stats = run.qa.stats()
    assert len(kinds(a, tr.TIMEOUT)) == stats["timeouts"] == 3
    retries = kinds(a, tr.RETRY)
    assert len(retries) == 2 and set(int(r) for r in retries["reason"]) == {1}  # timeout
    assert [int(x) for x in retries["aux"]] == [1, 0]
    comp = kinds(a, tr.COMPLETE)
    assert [(int(w), int(s)) for w, s in zip(comp["wr_id"], comp["status"], strict=True)] == [
        (5, e.IBV_WC_RETRY_EXC_ERR), (6, e.IBV_WC_WR_FLUSH_ERR)]


def test_nak_retry_is_recorded_with_its_cause() -> None:
    run = Run(drop_psns=(1,))
    run.write(1, 0, 3072)
    run.sim.run_until_idle()
    a = run.trace.to_numpy()
    naks = kinds(a, tr.TX)
    naks = naks[(naks["opcode"] == 0x11) & ((naks["syndrome"] & 0xE0) == 0x60)]
    assert len(naks) == 1 and int(naks["psn"][0]) == 1
    retry = kinds(a, tr.RETRY)
    assert len(retry) == 1 and int(retry["reason"][0]) == 2 and int(retry["psn"][0]) == 1


def test_cap_is_honoured_and_the_rest_counted() -> None:
    full = Run().workload().trace
    total = full.recorded
    assert total > 50 and full.not_recorded == 0
    capped = Run(max_records=20).workload().trace
    with pytest.warns(tr.TraceRecordsNotKept, match=rf"{total - 20} event\(s\) so far were not recorded: "
                      r"its cap of max_records=20 was reached after 20 records"):
        a = capped.to_numpy()
    assert len(a) == 20 == capped.recorded
    assert capped.not_recorded == total - 20
    assert np.array_equal(a, full.to_numpy()[:20])
    assert f"{total - 20} not recorded" in repr(capped)


def test_a_trace_is_bounded_by_default() -> None:
    import inspect

    from rdmasim import Simulator

    assert inspect.signature(Simulator.trace).parameters["max_records"].default == tr.DEFAULT_MAX_RECORDS
    sim = rdmasim.back_to_back().sim
    trace = sim.trace()
    assert trace.max_records == tr.DEFAULT_MAX_RECORDS
    assert _core.trace_counts(sim._core)[2] == tr.DEFAULT_MAX_RECORDS  # the C buffer's cap
    unbounded = Run().sim.trace(max_records=None)
    assert unbounded.max_records is None
    with pytest.raises(TypeError, match="max_records"):
        Run().sim.trace(max_records=2.5)  # type: ignore[arg-type]


def test_the_final_count_is_reported_when_the_trace_stops() -> None:
    run = Run(max_records=5)
    run.write(1, 0, 2000)
    run.sim.run_until_idle()
    with pytest.warns(tr.TraceRecordsNotKept) as first:
        run.trace.drain()
    so_far = run.trace.not_recorded
    run.write(2, 0, 20_000)
    run.sim.run_until_idle()
    with pytest.warns(tr.TraceRecordsNotKept) as final:
        run.trace.stop()
    assert len(first) == 1 and len(final) == 1
    assert f"{run.trace.not_recorded} event(s)" in str(final[0].message)
    assert run.trace.not_recorded > so_far and len(run.trace) == 5


def test_draining_in_chunks_gives_the_same_records() -> None:
    whole = Run().workload().trace.to_numpy()
    run = Run()
    run.write(1, 0, 10_000)
    run.send(2, 10_000, 3000)
    run.write(3, 20_000, 20_000)
    chunks = []
    for _ in range(20):
        run.sim.run(run.sim.now + 500_000)  # 0.5 us at a time
        chunks.append(run.trace.drain())
    run.sim.run_until_idle()
    chunks.append(run.trace.drain())
    assert sum(1 for c in chunks if len(c)) > 3
    assert np.array_equal(np.concatenate(chunks), whole)
    assert np.array_equal(run.trace.to_numpy(), whole)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_trace_off_records_nothing_and_changes_nothing(tmp_path: Path) -> None:
    off = Run(tmp_path, trace=False, loss=0.03, drop_psns=(2,)).workload()
    assert _core.trace_counts(off.sim._core) == (0, 0, 0)
    assert len(_core.trace_drain(off.sim._core)) == 0
    assert not _core.trace_enabled(off.sim._core)
    on = Run(tmp_path, trace=True, loss=0.03, drop_psns=(2,)).workload()
    assert len(on.trace) > 0
    assert _sha(off.pcap) == _sha(on.pcap)
    assert off.qa.stats() == on.qa.stats() and off.sim.now == on.sim.now
    capped = Run(tmp_path, trace=True, max_records=5, loss=0.03, drop_psns=(2,)).workload()
    assert _sha(off.pcap) == _sha(capped.pcap)


def test_stop_and_restart() -> None:
    run = Run()
    run.write(1, 0, 1000)
    run.sim.run_until_idle()
    first = run.trace
    n = len(first)
    first.stop()
    assert not first.active and not _core.trace_enabled(run.sim._core)
    run.write(2, 0, 1000)
    run.sim.run_until_idle()
    assert len(first) == n
    with run.sim.trace() as second:
        run.write(3, 0, 1000)
        run.sim.run_until_idle()
    assert not second.active
    posts = kinds(second.to_numpy(), tr.POST_SEND)
    assert [int(w) for w in posts["wr_id"]] == [3]
    with pytest.raises(ValueError, match="max_records"):
        run.sim.trace(max_records=0)


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    t = Run(drop_psns=(1,)).workload().trace
    path = t.save(tmp_path / "t.npz")
    back = tr.load(path)
    assert np.array_equal(back.to_numpy(), t.to_numpy())
    assert back.node_names == {0: "a", 1: "b"}


def test_to_pandas_names_columns() -> None:
    pytest.importorskip("pandas")
    t = Run(drop_psns=(1,)).workload().trace
    df = t.to_pandas()
    assert len(df) == len(t)
    assert {"kind_name", "opcode_name", "node_name", "peer_name", "reason_name"} <= set(df.columns)
    assert "RDMA_WRITE_FIRST" in set(df["opcode_name"])
    assert "drop-list" in set(df["reason_name"])
    assert set(df.loc[df.kind_name == "TX", "node_name"]) == {"a", "b"}


def test_drain_without_keeping_streams_records() -> None:
    from rdmasim import topology

    sim = topology.back_to_back(rate="100Gbps", delay="1us", mtu=1024).sim
    tr = sim.trace()
    sim.add_flows({"src": [0], "dst": [1], "size": [64 * 1024]})
    sim.run_flows(until="5us")
    first = tr.drain(keep=False)
    sim.run_flows()
    rest = tr.drain(keep=False)
    assert len(first) > 0 and len(rest) > 0
    assert len(tr.to_numpy()) == 0  # nothing kept inside the trace


def test_to_pandas_names_every_record_as_the_helpers_do() -> None:
    # a run with losses, retries and a timeout: every kind of name column has values
    from rdmasim import trace as tr
    from rdmasim.ladder import example_write

    t = example_write(size=8192, mtu=1024, drop_psn=[1], loss=0.2, seed=3)
    a = t.to_numpy()
    df = t.to_pandas()
    names = t.node_names
    assert list(df["kind_name"]) == [tr.kind_name(k) for k in a["kind"]]
    assert list(df["opcode_name"]) == [tr.opcode_name(o) if k in (tr.TX, tr.DROP, tr.RX) else ""
                                       for k, o in zip(a["kind"], a["opcode"], strict=True)]
    assert list(df["node_name"]) == [names.get(int(n), "") for n in a["node"]]
    assert list(df["peer_name"]) == [names.get(int(n), "") for n in a["peer"]]
    assert list(df["reason_name"]) == [
        tr.DROP_REASONS.get(int(r), str(r)) if k == tr.DROP else
        tr.RETRY_CAUSES.get(int(r), str(r)) if k == tr.RETRY else ""
        for k, r in zip(a["kind"], a["reason"], strict=True)]
    assert {"DROP", "RETRY"} <= set(df["kind_name"]) and set(df["reason_name"]) - {""}
    assert list(df.columns[:2]) == ["t_ps", "kind_name"]


def test_to_pandas_reads_columns_not_records(monkeypatch: pytest.MonkeyPatch) -> None:
    # a capped trace has 2 million records: no Python call per record (that took 6 s of it)
    from rdmasim.ladder import example_write

    t = example_write(size=8192, mtu=1024, drop_psn=[1])
    calls: list[int] = []
    monkeypatch.setattr(tr, "kind_name", lambda k: calls.append(k) or "x")
    monkeypatch.setattr(tr, "opcode_name", lambda o: calls.append(o) or "x")
    n = len(t.to_pandas())
    assert n > 20 and calls == []
