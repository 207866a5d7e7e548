"""The RC connection walk the pv_*.py scripts share: INIT (optionally), RTR and RTS of a pyverbs QP
against its peer on the emulated fabric, with the timeouts and retry counts every script uses.
Works with rdma-core's pyverbs and with rdmasim.pyverbs (import it after ``rdmasim.pyverbs.install()``)."""

import pyverbs.enums as e
from pyverbs.addr import AHAttr
from pyverbs.qp import QPAttr


def walk_to_rts(qp, gr, dest_qpn, psn, peer_psn, access=None):
    """Move ``qp`` to RTS toward ``dest_qpn`` reached through the GlobalRoute ``gr``; INIT first
    with ``access`` as its remote access flags unless ``access`` is None (the QP is in INIT)."""
    if access is not None:
        attr = QPAttr(qp_state=e.IBV_QPS_INIT, port_num=1)
        attr.qp_access_flags = access
        qp.to_init(attr)
    attr = QPAttr(port_num=1)
    attr.path_mtu = e.IBV_MTU_1024
    attr.dest_qp_num = dest_qpn
    attr.rq_psn = peer_psn
    attr.sq_psn = psn
    attr.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
    attr.timeout, attr.retry_cnt, attr.rnr_retry, attr.min_rnr_timer = 14, 7, 7, 12
    attr.max_dest_rd_atomic = attr.max_rd_atomic = 1
    qp.to_rtr(attr)
    qp.to_rts(attr)
