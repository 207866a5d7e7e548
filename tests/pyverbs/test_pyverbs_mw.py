"""Memory windows through the pyverbs namespace: docs/pyverbs.md's example runs as written on a
connected RC pair, and the keys it produces give exactly the access the windows grant."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import rdmasim.pyverbs as rp
from rdmasim.pyverbs import enums as e
from rdmasim.pyverbs.addr import AHAttr, GlobalRoute
from rdmasim.pyverbs.cq import CQ
from rdmasim.pyverbs.device import Context
from rdmasim.pyverbs.mr import MR
from rdmasim.pyverbs.pd import PD
from rdmasim.pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from rdmasim.pyverbs.wr import SGE, SendWR

DOC = Path(__file__).resolve().parents[2] / "docs" / "pyverbs.md"


@pytest.fixture(autouse=True)
def _fresh_devices() -> Iterator[None]:
    rp.reset()
    yield
    rp.reset()


def _rc_pair() -> tuple[list, list]:
    ends = []
    for name in ("rxe0", "rxe1"):
        ctx = Context(name=name)
        pd = PD(ctx)
        cq = CQ(ctx, 16)
        qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_send_wr=8, max_recv_wr=8)))
        ends.append([ctx, pd, cq, qp])
    for me, other in ((ends[0], ends[1]), (ends[1], ends[0])):
        attr = QPAttr(qp_access_flags=e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
                      | e.IBV_ACCESS_REMOTE_READ, path_mtu=e.IBV_MTU_1024, dest_qp_num=other[3].qp_num,
                      rq_psn=0, sq_psn=0, timeout=14, retry_cnt=7, max_rd_atomic=1, max_dest_rd_atomic=1)
        attr.ah_attr = AHAttr(gr=GlobalRoute(dgid=other[0].query_gid(1, 0)), is_global=1, port_num=1)
        me[3].to_rts(attr)
    return ends[0], ends[1]


def _poll(cq: CQ) -> list:
    while True:
        n, wcs = cq.poll()
        if n:
            return wcs


def test_docs_memory_window_example_runs_and_grants_what_it_says() -> None:
    block = re.search(r"## Memory windows\n.*?```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert block, "docs/pyverbs.md has no memory-window example"
    (ctx, pd, cq, qp), (pctx, ppd, pcq, pqp) = _rc_pair()
    ns: dict = {"pd": pd, "qp": qp}
    exec(compile(block.group(1), "docs/pyverbs.md[memory windows]", "exec"), ns)
    assert [w.opcode for w in _poll(cq)] == [e.IBV_WC_BIND_MW]
    assert [(w.opcode, w.status) for w in _poll(cq)] == [(e.IBV_WC_BIND_MW, e.IBV_WC_SUCCESS)]  # type 2
    mr, mw1, wr = ns["mr"], ns["mw1"], ns["wr"]
    src = MR(ppd, 2048, e.IBV_ACCESS_LOCAL_WRITE)
    src.write(b"w" * 2048, 2048)

    def remote(opcode: int, rkey: int, addr: int, length: int = 64) -> int:
        s = SendWR(wr_id=5, opcode=opcode, num_sge=1, sg=[SGE(src.buf, length, src.lkey)])
        s.set_wr_rdma(rkey, addr)
        pqp.post_send(s)
        (wc,) = _poll(pcq)
        return wc.status

    assert remote(e.IBV_WR_RDMA_WRITE, mw1.rkey, mr.buf) == e.IBV_WC_SUCCESS
    assert mr.read(64, 0) == b"w" * 64
    assert remote(e.IBV_WR_RDMA_READ, wr.rkey, mr.buf + 1024) == e.IBV_WC_SUCCESS
    assert remote(e.IBV_WR_RDMA_WRITE, wr.rkey, mr.buf + 1024) == e.IBV_WC_REM_ACCESS_ERR  # read-only window
