"""The setups the tests of the rdma-core-shaped namespace (``rdmasim.pyverbs``) share.

Objects come from the namespace as an rdma-core test makes them: devices by name (``rxe0``,
``rxe1``, ... of the default simulation, which the ``fresh_pyverbs`` fixture of tests/conftest.py
forgets before and after a test), ``QP(pd, init_attr[, qp_attr])``, busy polling.

- ``qpex_loopback``: an extended RC QP (``QPEx``) and a plain RC peer on one device, connected
  through its port, as rdma-core's test_qpex pairs them.
- ``ud_qp``: a UD QP taken to RTS at creation; ``ah_to``: an address handle for another device.
- ``poll``: busy-poll a CQ until it returns completions.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from rdmasim.pyverbs import libibverbs_enums as e
from rdmasim.pyverbs.addr import AH, AHAttr, GlobalRoute
from rdmasim.pyverbs.cq import CQ
from rdmasim.pyverbs.device import Context
from rdmasim.pyverbs.pd import PD
from rdmasim.pyverbs.qp import QP, QPAttr, QPCap, QPEx, QPInitAttr, QPInitAttrEx
from rdmasim.verbs import connect_qps


class QPExPair(NamedTuple):
    """What ``qpex_loopback`` makes: ``qpex`` sends on ``scq``; ``peer`` completes on ``rcq``."""

    ctx: Context
    pd: PD
    qpex: QPEx
    peer: QP
    scq: CQ
    rcq: CQ


def qpex_loopback(send_ops: int, *, device: str = "rxe0", peer_cap: QPCap | None = None,
                  **connect_kw: Any) -> QPExPair:
    """On ``device``: a PD, two CQs of 16, a ``QPEx`` with ``send_ops`` (send CQ and receive CQ
    ``scq``, 8 send and 8 receive WRs) and an RC ``peer`` (``rcq``; ``peer_cap``, default 8 receive
    WRs), connected with ``connect_qps(qpex, peer, **connect_kw)``: loopback through the port."""
    ctx = Context(name=device)
    pd = PD(ctx)
    scq, rcq = CQ(ctx, 16), CQ(ctx, 16)
    attr = QPInitAttrEx(qp_type=e.IBV_QPT_RC, scq=scq, rcq=scq, cap=QPCap(max_send_wr=8, max_recv_wr=8),
                        pd=pd, comp_mask=e.IBV_QP_INIT_ATTR_PD | e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
                        send_ops_flags=send_ops)
    qpex = QPEx(ctx, attr)
    cap = QPCap(max_recv_wr=8) if peer_cap is None else peer_cap
    peer = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=rcq, rcq=rcq, cap=cap))
    connect_qps(qpex, peer, **connect_kw)
    return QPExPair(ctx, pd, qpex, peer, scq, rcq)


def ud_qp(pd: PD, cq: CQ, qkey: int, max_send_wr: int = 4, max_recv_wr: int = 4) -> QP:
    """A UD QP (the namespace's QPInitAttr default type) on ``cq``, in RTS with ``qkey``: the
    ``QP(pd, init_attr, QPAttr(qkey=...))`` form rdma-core's UD tests use."""
    init = QPInitAttr(scq=cq, rcq=cq, cap=QPCap(max_send_wr=max_send_wr, max_recv_wr=max_recv_wr))
    return QP(pd, init, QPAttr(qkey=qkey))


def ah_to(pd: PD, ctx: Context) -> AH:
    """An address handle in ``pd`` for port 1, GID 0 of the device ``ctx``."""
    return AH(pd, attr=AHAttr(gr=GlobalRoute(dgid=ctx.query_gid(1, 0)), is_global=1, port_num=1))


def poll(cq: CQ) -> list[Any]:
    """Poll ``cq`` until it returns completions (busy polling advances simulated time); those."""
    n, wcs = 0, []
    while n == 0:
        n, wcs = cq.poll()
    return wcs
