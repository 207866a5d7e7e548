"""``pyverbs.qp``: QP and its attribute classes, with pyverbs' defaults.

``QPInitAttr()`` and ``QPInitAttrEx()`` default to ``qp_type=IBV_QPT_UD`` as in pyverbs.
"""

from __future__ import annotations

import errno
import socket
from typing import Any

from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.pyverbs import _devices
from rdmasim.verbs import enums as e
from rdmasim.verbs import qp as _qp
from rdmasim.verbs._checks import U32, instance, int_in
from rdmasim.verbs.device import PD, Context
from rdmasim.verbs.wr import SGE, SendWR

QPAttr = _qp.QPAttr
QPCap = _qp.QPCap

__all__ = ["QP", "QPAttr", "QPCap", "QPEx", "QPInitAttr", "QPInitAttrEx"]


class QPInitAttr(_qp.QPInitAttr):
    """``struct ibv_qp_init_attr``; ``qp_type`` defaults to IBV_QPT_UD (pyverbs' default)."""

    def __init__(self, qp_type: int = e.IBV_QPT_UD, qp_context: object = None, scq: Any = None,
                 rcq: Any = None, srq: object = None, cap: QPCap | None = None,
                 sq_sig_all: int = 1) -> None:
        super().__init__(qp_type=qp_type, qp_context=qp_context, scq=scq, rcq=rcq, srq=srq,
                         cap=cap, sq_sig_all=sq_sig_all)


class QPInitAttrEx(QPInitAttr):
    """``struct ibv_qp_init_attr_ex``: the basic fields plus ``pd``, ``comp_mask``,
    ``create_flags`` and ``send_ops_flags``. Extended creation options beyond the PD
    (create_flags, TSO, RSS, XRC) are refused when set, as not emulated."""

    def __init__(self, qp_type: int = e.IBV_QPT_UD, qp_context: object = None, scq: Any = None,
                 rcq: Any = None, srq: object = None, cap: QPCap | None = None,
                 sq_sig_all: int = 0, comp_mask: int = 0, pd: PD | None = None, xrcd: object = None,
                 create_flags: int = 0, max_tso_header: int = 0, source_qpn: int = 0,
                 hash_conf: object = None, ind_table: object = None, send_ops_flags: int = 0) -> None:
        super().__init__(qp_type=qp_type, qp_context=qp_context, scq=scq, rcq=rcq, srq=srq, cap=cap,
                         sq_sig_all=sq_sig_all)
        self.comp_mask = int_in("QPInitAttrEx comp_mask", comp_mask, 0, U32)
        self.pd = pd
        self.create_flags = int_in("QPInitAttrEx create_flags", create_flags, 0, U32)
        self.send_ops_flags = int_in("QPInitAttrEx send_ops_flags", send_ops_flags, 0, (1 << 64) - 1)
        for name, v in (("xrcd", xrcd), ("hash_conf", hash_conf), ("ind_table", ind_table)):
            if v is not None:
                raise PyverbsUserError(f"QPInitAttrEx {name}: not emulated (give None)")
        for name, n in (("create_flags", self.create_flags), ("max_tso_header", max_tso_header),
                        ("source_qpn", source_qpn)):
            if n:
                raise PyverbsUserError(f"QPInitAttrEx {name}={n}: not emulated (give 0)")


def _check_depths(cap: QPCap, has_srq: bool) -> list[str]:
    """rxe's ``rxe_qp_chk_cap`` on the queue depths: each at most the device's ``max_qp_wr``
    (EINVAL above it; the receive depth is not checked when the QP uses an SRQ), 0 allowed.
    Returns the names of the depths that are 0."""
    top = _devices.RXE_DEVICE_ATTR["max_qp_wr"]
    fields = ["max_send_wr"] if has_srq else ["max_send_wr", "max_recv_wr"]
    for name in fields:
        n = int_in(f"QPCap {name}", getattr(cap, name), 0, U32)
        if n > top:
            raise PyverbsRDMAError(f"Failed to create QP: {name}={n} is above the device's "
                                   f"max_qp_wr={top}", errno.EINVAL)
    return [name for name in fields if getattr(cap, name) == 0]


def _queue_full(what: str, field: str) -> Any:
    """The post method of a queue created with depth 0: always full, as rxe's queue of 0 entries
    (ENOMEM, what ``ibv_post_send``/``ibv_post_recv`` return for a full queue)."""

    def post(wr: Any, bad_wr: Any = None) -> None:
        raise PyverbsRDMAError(f"Failed to post {what}: the queue is full ({field}=0)", errno.ENOMEM)

    return post


class QP(_qp.QP):
    """``QP(pd, QPInitAttr, qp_attr=None)``, or ``QP(ctx, QPInitAttrEx(pd=pd, ...))``."""

    def __init__(self, creator: PD | Context, init_attr: QPInitAttr, qp_attr: QPAttr | None = None) -> None:
        if isinstance(creator, Context):
            if not isinstance(init_attr, QPInitAttrEx) or init_attr.pd is None:
                raise PyverbsUserError("QP(ctx, ...) needs a QPInitAttrEx with pd=; or give QP(pd, ...)")
            pd = instance("QPInitAttrEx pd", init_attr.pd, PD)
            if pd.ctx is not creator:
                raise PyverbsUserError("QPInitAttrEx pd belongs to another Context")
            creator = pd
        cap = init_attr.cap if init_attr.cap is not None else QPCap()
        empty = _check_depths(cap, init_attr.srq is not None)
        if empty:  # the core's rings hold at least one WQE; posts to an empty queue are refused here
            init_attr.cap = QPCap(max(cap.max_send_wr, 1), max(cap.max_recv_wr, 1), cap.max_send_sge,
                                  cap.max_recv_sge, cap.max_inline_data)
        try:
            super().__init__(creator, init_attr, qp_attr)
        except PyverbsUserError as exc:
            # a QP type the emulator does not create: the device does not support it (EOPNOTSUPP,
            # as ibv_create_qp answers), which rdma-core's tests take as a skip
            if str(exc).startswith(f"qp_type {init_attr.qp_type}:") and init_attr.qp_type != e.IBV_QPT_RC:
                raise PyverbsRDMAError(f"Failed to create QP: {exc}", errno.EOPNOTSUPP) from None
            raise
        finally:
            init_attr.cap = cap
        self.cap = cap
        if "max_send_wr" in empty:
            self.post_send = _queue_full("send", "max_send_wr")  # type: ignore[method-assign]
        if "max_recv_wr" in empty:
            self.post_recv = _queue_full("recv", "max_recv_wr")  # type: ignore[method-assign]

    def post_send_batch(self, *args: Any, **kwargs: Any) -> int:
        """rdmasim's column-wise post (rdmasim.verbs.QP.post_send_batch); in one process only."""
        if getattr(self._sim._core, "remote", False):
            raise PyverbsRDMAError("post_send_batch: not available to a process attached to the fabric "
                                   "daemon (rdmasim exec); post a chain of SendWRs", errno.EOPNOTSUPP)
        return int(super().post_send_batch(*args, **kwargs))

    def query_ece(self) -> Any:
        """``ibv_query_ece``: EOPNOTSUPP, as on rxe (no enhanced connection establishment)."""
        raise PyverbsRDMAError("Failed to query ECE: not supported by the device", errno.EOPNOTSUPP)

    def set_ece(self, ece: Any) -> None:
        """``ibv_set_ece``: EOPNOTSUPP, as on rxe."""
        raise PyverbsRDMAError("Failed to set ECE: not supported by the device", errno.EOPNOTSUPP)

    def _make_poster(self) -> Any:
        core = self._sim._core
        if getattr(core, "remote", False):  # on the fabric daemon: each post is one request
            from rdmasim.pyverbs import _remote

            self._recv_poster = _remote.RecvPoster(self)
            return _remote.SendPoster(self)
        return super()._make_poster()

    def query_data_in_order(self, op: int, flags: int = 0) -> int:
        """``ibv_query_qp_data_in_order``: 0. rxe's provider does not implement the query, and
        libibverbs then answers 0 ("not guaranteed"), which is what a program sees on rxe."""
        self._check_alive("query_data_in_order")
        return 0


# ibv_qp_create_send_ops_flags that map onto an ordinary SendWR opcode
_SEND_OPS = {1 << 0: "RDMA_WRITE", 1 << 1: "RDMA_WRITE_WITH_IMM", 1 << 2: "SEND",
             1 << 3: "SEND_WITH_IMM", 1 << 4: "RDMA_READ", 1 << 5: "ATOMIC_CMP_AND_SWP",
             1 << 6: "ATOMIC_FETCH_AND_ADD", 1 << 7: "LOCAL_INV", 1 << 8: "BIND_MW", 1 << 9: "SEND_WITH_INV",
             1 << 11: "FLUSH", 1 << 12: "ATOMIC_WRITE"}
_SEND_OPS_MASK = sum(_SEND_OPS)


class QPEx(QP):
    """An extended QP (``ibv_qp_ex``): work requests are built with ``wr_start()``, one
    ``wr_<opcode>(...)`` per request (taking ``wr_id`` and ``wr_flags`` as set on the QP at that
    moment) followed by its ``wr_set_sge``/``wr_set_sge_list``/``wr_set_ud_addr``, and posted
    together by ``wr_complete()`` (``wr_abort()`` drops them). Each request is an ordinary
    ``SendWR`` posted with :meth:`QP.post_send`, so the rules and errors are post_send's.

    ``send_ops_flags`` may hold SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ,
    ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD, LOCAL_INV, BIND_MW, SEND_WITH_INV, FLUSH and
    ATOMIC_WRITE (RC, as rxe); TSO is refused with EOPNOTSUPP, as are inline data and XRC/DC
    addressing."""

    def __init__(self, creator: PD | Context, init_attr: QPInitAttrEx,
                 qp_attr: QPAttr | None = None) -> None:
        instance("QPEx init_attr", init_attr, QPInitAttrEx)
        extra = init_attr.send_ops_flags & ~_SEND_OPS_MASK
        if extra:
            raise PyverbsRDMAError(f"QPEx send_ops_flags=0x{init_attr.send_ops_flags:x}: operations "
                                   f"0x{extra:x} are not emulated (supported mask 0x{_SEND_OPS_MASK:x})",
                                   errno.EOPNOTSUPP)
        super().__init__(creator, init_attr, qp_attr)
        self.send_ops_flags = init_attr.send_ops_flags
        self.ind_table = None
        self.wr_id = 0
        self.wr_flags = 0
        self._wrs: list[SendWR] | None = None

    def wr_start(self) -> None:
        """``ibv_wr_start``: begin a batch of work requests."""
        self._wrs = []

    def _new(self, what: str, op: str) -> SendWR:
        if self._wrs is None:
            raise PyverbsUserError(f"QPEx.{what}: call wr_start() first")
        bit = next(b for b, name in _SEND_OPS.items() if name == op)
        if not self.send_ops_flags & bit:
            raise PyverbsUserError(f"QPEx.{what}: IBV_QP_EX_WITH_{op} is not in the QP's "
                                   f"send_ops_flags (0x{self.send_ops_flags:x})")
        wr = SendWR(wr_id=self.wr_id, opcode=int(getattr(e, "IBV_WR_" + op)), send_flags=self.wr_flags)
        self._wrs.append(wr)
        return wr

    def _cur(self, what: str) -> SendWR:
        if not self._wrs:
            raise PyverbsUserError(f"QPEx.{what}: no work request started (call wr_<opcode> first)")
        return self._wrs[-1]

    def wr_send(self) -> None:
        """Start a SEND."""
        self._new("wr_send", "SEND")

    def wr_send_imm(self, imm_data: int) -> None:
        """Start a SEND with immediate data given in host order (pyverbs converts it with
        htobe32; the receiver's ``wc.imm_data`` is in network order)."""
        v = int_in("wr_send_imm imm_data", imm_data, 0, U32)
        self._new("wr_send_imm", "SEND_WITH_IMM").imm_data = socket.htonl(v)

    def wr_rdma_write(self, rkey: int, remote_addr: int) -> None:
        """Start an RDMA WRITE to ``remote_addr`` under ``rkey``."""
        self._new("wr_rdma_write", "RDMA_WRITE").set_wr_rdma(rkey, remote_addr)

    def wr_rdma_write_imm(self, rkey: int, remote_addr: int, imm_data: int) -> None:
        """Start an RDMA WRITE with immediate data (host order, as :meth:`wr_send_imm`)."""
        wr = self._new("wr_rdma_write_imm", "RDMA_WRITE_WITH_IMM")
        wr.set_wr_rdma(rkey, remote_addr)
        wr.imm_data = socket.htonl(int_in("wr_rdma_write_imm imm_data", imm_data, 0, U32))

    def wr_rdma_read(self, rkey: int, remote_addr: int) -> None:
        """Start an RDMA READ from ``remote_addr`` under ``rkey``."""
        self._new("wr_rdma_read", "RDMA_READ").set_wr_rdma(rkey, remote_addr)

    def wr_atomic_cmp_swp(self, rkey: int, remote_addr: int, compare: int, swap: int) -> None:
        """Start an atomic compare-and-swap."""
        self._new("wr_atomic_cmp_swp", "ATOMIC_CMP_AND_SWP").set_wr_atomic(rkey, remote_addr, compare, swap)

    def wr_atomic_fetch_add(self, rkey: int, remote_addr: int, add: int) -> None:
        """Start an atomic fetch-and-add."""
        self._new("wr_atomic_fetch_add", "ATOMIC_FETCH_AND_ADD").set_wr_atomic(rkey, remote_addr, add)

    def wr_set_sge(self, sge: SGE) -> None:
        """The current request's single scatter/gather element."""
        wr = self._cur("wr_set_sge")
        wr.sg = [instance("wr_set_sge sge", sge, SGE)]
        wr.num_sge = 1

    def wr_set_sge_list(self, num_sge: int, sg_list: list[SGE]) -> None:
        """The current request's first ``num_sge`` elements of ``sg_list``."""
        wr = self._cur("wr_set_sge_list")
        n = int_in("wr_set_sge_list num_sge", num_sge, 0, len(sg_list))
        wr.sg = [instance("wr_set_sge_list sg_list item", s, SGE) for s in sg_list[:n]]
        wr.num_sge = n

    def wr_set_ud_addr(self, ah: Any, remote_qpn: int, remote_qkey: int) -> None:
        """The current (UD) request's destination."""
        wr = self._cur("wr_set_ud_addr")
        if not hasattr(wr, "set_wr_ud"):
            raise PyverbsRDMAError("wr_set_ud_addr: UD is not emulated in this build", errno.EOPNOTSUPP)
        wr.set_wr_ud(ah, remote_qpn, remote_qkey)

    def wr_complete(self) -> None:
        """``ibv_wr_complete``: post the batch (in order); errors are post_send's."""
        if self._wrs is None:
            raise PyverbsUserError("QPEx.wr_complete: call wr_start() first")
        wrs, self._wrs = self._wrs, None
        for a, b in zip(wrs, wrs[1:], strict=False):
            a.next_wr = b
        if wrs:
            self.post_send(wrs[0])

    def wr_abort(self) -> None:
        """``ibv_wr_abort``: drop the batch."""
        self._wrs = None

    def _unsupported(self, what: str) -> None:
        raise PyverbsRDMAError(f"QPEx.{what}: not emulated", errno.EOPNOTSUPP)

    def wr_bind_mw(self, mw: Any, rkey: int, bind_info: Any) -> None:
        """``ibv_wr_bind_mw``: bind type 2 window ``mw`` as ``bind_info`` says, under the new key
        ``rkey`` (usually ``inc_rkey(mw.rkey)``); ``mw.rkey`` is not changed (as libibverbs)."""
        wr = self._new("wr_bind_mw", "BIND_MW")
        wr.set_bind_wr(mw, bind_info)
        wr.rkey = int_in("wr_bind_mw rkey", rkey, 0, U32)

    def wr_local_inv(self, invalidate_rkey: int) -> None:
        """``ibv_wr_local_inv``: invalidate the type 2 window whose key is ``invalidate_rkey``."""
        self._new("wr_local_inv", "LOCAL_INV").imm_data = int_in("wr_local_inv invalidate_rkey",
                                                                  invalidate_rkey, 0, U32)

    def wr_send_inv(self, invalidate_rkey: int) -> None:
        """``ibv_wr_send_inv``: a SEND that invalidates the receiver's window ``invalidate_rkey``."""
        self._new("wr_send_inv", "SEND_WITH_INV").imm_data = int_in("wr_send_inv invalidate_rkey",
                                                                     invalidate_rkey, 0, U32)

    def wr_atomic_write(self, rkey: int, remote_addr: int, atomic_wr: bytes) -> None:
        """``ibv_wr_atomic_write``: place the 8 bytes ``atomic_wr`` at ``remote_addr`` (8-byte
        aligned) under ``rkey`` in one step; the request takes no SGE."""
        self._new("wr_atomic_write", "ATOMIC_WRITE").set_wr_atomic_write(rkey, remote_addr, atomic_wr)

    def wr_flush(self, rkey: int, remote_addr: int, length: int, ptype: int, level: int) -> None:
        """``ibv_wr_flush``: make ``length`` bytes at ``remote_addr`` (level ``IBV_FLUSH_RANGE``) or
        the whole region (``IBV_FLUSH_MR``) visible (``IBV_FLUSH_GLOBAL``) and/or persistent
        (``IBV_FLUSH_PERSISTENT``); the request takes no SGE."""
        self._new("wr_flush", "FLUSH").set_wr_flush(rkey, remote_addr, length, ptype, level)

    def wr_set_inline_data(self, *args: Any) -> None:
        """Inline data through the extended API is not emulated: EOPNOTSUPP."""
        self._unsupported("wr_set_inline_data")

    def wr_set_xrc_srqn(self, *args: Any) -> None:
        """XRC is not emulated (nor in rxe): EOPNOTSUPP."""
        self._unsupported("wr_set_xrc_srqn")
