"""RC queue pairs and their attributes, shaped like pyverbs."""

from __future__ import annotations

import errno
import sys
from typing import Any

import numpy as np

from rdmasim import _core
from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.transport.handle import Host
from rdmasim.transport.irn import IRN_DEFAULT_WINDOW, irn_bdp_window  # noqa: F401  (re-exported)
from rdmasim.verbs import enums as e
from rdmasim.verbs._checks import (
    U8,
    U16,
    U32,
    U64,
    MRKey,
    flags_in,
    imm_to_wire,
    instance,
    int_in,
    key,
    same_sim,
    wr_chain,
)
from rdmasim.verbs.ah import AHAttr, GlobalRoute, check_av_port
from rdmasim.verbs.cq import CQ
from rdmasim.verbs.device import CLOSE_QP, PD
from rdmasim.verbs.mw import IBV_MW_TYPE_1, MW, MWBind, inc_rkey
from rdmasim.verbs.srq import SRQ
from rdmasim.verbs.wr import SGE, RecvWR, SendWR, report_bad_wr, sge_list

# Loss recovery (docs/design.md "Loss recovery: IRN"). IRN defaults from Mittal et al., SIGCOMM 2018:
# RTO_low = 100 us while fewer than N = 3 packets are in flight, RTO_high = 320 us otherwise.
RECOVERY_MODES = {"gbn": 0, "irn": 1, "ooo": 2}
IRN_RTO_LOW = "100us"
IRN_RTO_HIGH = "320us"
IRN_RTO_LOW_PACKETS = 3


class QPCap:
    """Queue sizes (``struct ibv_qp_cap``)."""

    def __init__(self, max_send_wr: int = 1, max_recv_wr: int = 10, max_send_sge: int = 1,
                 max_recv_sge: int = 1, max_inline_data: int = 0) -> None:
        self.max_send_wr = int_in("QPCap max_send_wr", max_send_wr, 0, U32)
        self.max_recv_wr = int_in("QPCap max_recv_wr", max_recv_wr, 0, U32)
        self.max_send_sge = int_in("QPCap max_send_sge", max_send_sge, 0, U32)
        self.max_recv_sge = int_in("QPCap max_recv_sge", max_recv_sge, 0, U32)
        self.max_inline_data = int_in("QPCap max_inline_data", max_inline_data, 0, U32)

    def __repr__(self) -> str:
        return (f"QPCap(max_send_wr={self.max_send_wr}, max_recv_wr={self.max_recv_wr}, "
                f"max_send_sge={self.max_send_sge}, max_recv_sge={self.max_recv_sge})")


def _cap_field(name: str) -> property:
    """``QPInitAttr.<name>``: pyverbs' shortcut to ``cap.<name>``, checked as QPCap checks it."""

    def get(self: QPInitAttr) -> int:
        return int(getattr(self.cap, name))

    def put(self: QPInitAttr, value: int) -> None:
        setattr(self.cap, name, int_in(f"QPInitAttr {name}", value, 0, U32))

    return property(get, put, doc=f"``cap.{name}``")


class QPInitAttr:
    """Creation attributes (``struct ibv_qp_init_attr``). ``IBV_QPT_RC``, ``IBV_QPT_UC`` and
    ``IBV_QPT_UD`` are emulated. As in pyverbs, ``max_send_wr`` ... ``max_inline_data`` read and
    write ``cap``."""

    max_send_wr = _cap_field("max_send_wr")
    max_recv_wr = _cap_field("max_recv_wr")
    max_send_sge = _cap_field("max_send_sge")
    max_recv_sge = _cap_field("max_recv_sge")
    max_inline_data = _cap_field("max_inline_data")

    def __init__(self, qp_type: int = e.IBV_QPT_RC, qp_context: object = None,
                 scq: CQ | None = None, rcq: CQ | None = None, srq: object = None,
                 cap: QPCap | None = None, sq_sig_all: int = 1) -> None:
        self.qp_type = int_in("QPInitAttr qp_type", qp_type, 0, U32)
        self.qp_context = qp_context
        self.send_cq = scq
        self.recv_cq = rcq
        self.srq = srq
        self.cap = cap if cap is not None else QPCap()
        self.sq_sig_all = _sig_all(sq_sig_all)


class QPAttr:
    """Modify/query attributes (``struct ibv_qp_attr``), with rdma-core's field names.

    As in pyverbs, a new QPAttr holds ``qp_state=IBV_QPS_INIT``, ``cur_qp_state=IBV_QPS_RESET``,
    ``port_num=1`` and ``path_mtu=IBV_MTU_1024``; every other field is 0 (the zeroed C
    struct): set what the transition needs (``timeout``, ``retry_cnt``, ... for RTS). Other
    fields may be given as keywords too. Unknown attribute names raise AttributeError, so a
    misspelt field (``attr.retry_count``) is never ignored silently.
    """

    __slots__ = ("qp_state", "cur_qp_state", "port_num", "path_mtu", "qp_access_flags", "pkey_index",
                 "dest_qp_num", "rq_psn", "sq_psn", "max_rd_atomic", "max_dest_rd_atomic",
                 "min_rnr_timer", "timeout", "retry_cnt", "rnr_retry", "ah_attr", "qkey",
                 "path_mig_state", "cap", "alt_ah_attr", "alt_pkey_index", "en_sqd_async_notify",
                 "sq_draining", "alt_port_num", "alt_timeout", "rate_limit")

    def __init__(self, qp_state: int = e.IBV_QPS_INIT, cur_qp_state: int = e.IBV_QPS_RESET,
                 port_num: int = 1, path_mtu: int = e.IBV_MTU_1024, qp_access_flags: int = 0,
                 pkey_index: int = 0, dest_qp_num: int = 0, rq_psn: int = 0, sq_psn: int = 0,
                 max_rd_atomic: int = 0, max_dest_rd_atomic: int = 0, min_rnr_timer: int = 0,
                 timeout: int = 0, retry_cnt: int = 0, rnr_retry: int = 0,
                 ah_attr: AHAttr | None = None, qkey: int = 0) -> None:
        values = dict(qp_state=qp_state, cur_qp_state=cur_qp_state, port_num=port_num, path_mtu=path_mtu,
                      qp_access_flags=qp_access_flags, pkey_index=pkey_index, dest_qp_num=dest_qp_num,
                      rq_psn=rq_psn, sq_psn=sq_psn, max_rd_atomic=max_rd_atomic,
                      max_dest_rd_atomic=max_dest_rd_atomic, min_rnr_timer=min_rnr_timer,
                      timeout=timeout, retry_cnt=retry_cnt, rnr_retry=rnr_retry, qkey=qkey)
        for k, v in values.items():
            setattr(self, k, _attr_value(k, v))
        self.ah_attr = None if ah_attr is None else instance("QPAttr ah_attr", ah_attr, AHAttr)
        self.qkey = int_in("QPAttr qkey", qkey, 0, U32)
        self.path_mig_state = 0
        self.cap = None
        self.alt_ah_attr = None
        self.alt_pkey_index = self.en_sqd_async_notify = self.sq_draining = 0
        self.alt_port_num = self.alt_timeout = self.rate_limit = 0

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in _SIMPLE_FIELDS)
        return f"QPAttr({fields})"


_SIMPLE_FIELDS = ("qp_state", "cur_qp_state", "path_mtu", "qp_access_flags", "pkey_index",
                  "port_num", "dest_qp_num", "rq_psn", "sq_psn", "max_rd_atomic",
                  "max_dest_rd_atomic", "min_rnr_timer", "timeout", "retry_cnt", "rnr_retry", "qkey")

# The C type of each struct ibv_qp_attr field: a value that does not fit it is malformed
# (PyverbsUserError); one that fits but is out of the verbs range is the NIC's EINVAL
# (PyverbsRDMAError, from the core's checks).
_FIELD_MAX = {"qp_state": U32, "cur_qp_state": U32, "path_mtu": U32, "qp_access_flags": U32,
              "pkey_index": U16, "port_num": U8, "dest_qp_num": U32, "rq_psn": U32, "sq_psn": U32,
              "max_rd_atomic": U8, "max_dest_rd_atomic": U8, "min_rnr_timer": U8, "timeout": U8,
              "retry_cnt": U8, "rnr_retry": U8, "qkey": U32}

# UD QPs walk RESET→INIT→RTR→RTS with these masks (pyverbs does the same per qp_type).
_UD_STEP_MASKS = {e.IBV_QPS_INIT: e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_QKEY,
                  e.IBV_QPS_RTR: 0, e.IBV_QPS_RTS: e.IBV_QP_SQ_PSN}


def _attr_value(name: str, value: Any) -> int:
    if name == "qp_access_flags":
        return flags_in("QPAttr qp_access_flags", value, _ACCESS_FLAGS)
    return int_in(f"QPAttr {name}", value, 0, _FIELD_MAX[name])


def _sig_all(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    return int_in("QPInitAttr sq_sig_all", value, 0, 1)


_ACCESS_FLAGS = {n: int(v) for n, v in e.ibv_access_flags.__members__.items()}
# IBV_ACCESS_FLUSH_GLOBAL / _PERSISTENT on the QP let a FLUSH of that placement type in (rxe)
_MASK_FLAGS = {n: int(v) for n, v in e.ibv_qp_attr_mask.__members__.items()}
_SEND_FLAGS = {n: int(v) for n, v in e.ibv_send_flags.__members__.items()}
# the core's UD fields of a work request on an RC QP (post_send's defaults)
_NO_UD = {"ud_dest_host": -1, "ud_traffic_class": 0, "ud_remote_qpn": 0, "ud_remote_qkey": 0}
# the opcodes post_send_batch takes: one SGE, a remote target, no other operands
_BATCH_OPCODES = (e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_WRITE_WITH_IMM, e.IBV_WR_SEND, e.IBV_WR_SEND_WITH_IMM,
                  e.IBV_WR_RDMA_READ)
# post_send_batch's columns (in the order post_send checks a work request's fields), their maxima
_BATCH_MAX = {"wr_id": U64, "opcode": U32, "send_flags": U32, "imm_data": U32, "local_addr": U64,
              "length": U32, "lkey": U32, "remote_addr": U64, "rkey": U32}


def _batch_opcode_msg(op: int) -> str:
    try:
        op_name = f"{op} ({e.ibv_wr_opcode(op).name})"
    except ValueError:
        op_name = str(op)
    return (f"opcode {op_name}: a batch takes " + ", ".join(e.ibv_wr_opcode(o).name for o in _BATCH_OPCODES)
            + " (post other work requests with post_send)")


# ... and its bind fields of a work request that is not a BIND_MW
_NO_BIND = {"bind_mw_rkey": 0, "bind_lkey": 0, "bind_access": 0, "bind_len": 0}


class QP:
    """A queue pair (``ibv_create_qp``), created in RESET: reliable connected (``IBV_QPT_RC``),
    unreliable connected (``IBV_QPT_UC``: SEND and RDMA WRITE, no ACKs, no retransmission, a lost
    packet loses its message) or unreliable datagram (``IBV_QPT_UD``).

    Walk it RESET→INIT→RTR→RTS with ``to_init``/``to_rtr``/``to_rts`` (or ``modify`` with an
    attribute mask), or connect two QPs at once with ``rdmasim.verbs.connect_qps``.
    """

    _close_rank = CLOSE_QP

    def __init__(self, pd: PD, init_attr: QPInitAttr, qp_attr: QPAttr | None = None) -> None:
        instance("QP pd", pd, PD)
        pd._check_open("QP")
        instance("QP init_attr", init_attr, QPInitAttr)
        int_in("QPInitAttr qp_type", init_attr.qp_type, 0, U32)
        if init_attr.qp_type not in (e.IBV_QPT_RC, e.IBV_QPT_UC, e.IBV_QPT_UD):
            raise PyverbsUserError(
                f"qp_type {init_attr.qp_type}: IBV_QPT_RC ({e.IBV_QPT_RC}), IBV_QPT_UC ({e.IBV_QPT_UC}) "
                f"and IBV_QPT_UD ({e.IBV_QPT_UD}) are emulated"
            )
        srq_handle = 0
        if init_attr.srq is not None:
            srq = instance("QPInitAttr srq", init_attr.srq, SRQ)
            if srq._closed or srq._host is not pd.ctx.host:
                raise PyverbsUserError(f"QPInitAttr srq {srq!r} is destroyed or belongs to another host")
            srq_handle = srq.handle
        for name, cq in (("scq", init_attr.send_cq), ("rcq", init_attr.recv_cq)):
            if not isinstance(cq, CQ):
                raise PyverbsUserError(f"QPInitAttr.{name} must be a CQ, got {cq!r}")
            same_sim(f"QPInitAttr.{name}", cq.ctx.sim, pd.ctx.sim)
            if cq.ctx.host is not pd.ctx.host:
                raise PyverbsUserError(f"QPInitAttr.{name} belongs to another host's context")
            if cq._closed:
                raise PyverbsUserError(f"QPInitAttr.{name} {cq!r} is destroyed")
        self.pd = pd
        self._host = pd.ctx.host
        self._sim = self._host.sim
        cap = instance("QPInitAttr cap", init_attr.cap, QPCap)
        caps = {k: int_in(f"QPCap {k}", getattr(cap, k), 0, U32)
                for k in ("max_send_wr", "max_recv_wr", "max_send_sge", "max_recv_sge")}
        sig_all = _sig_all(init_attr.sq_sig_all)
        self.cap = cap
        self.send_cq = init_attr.send_cq
        self.recv_cq = init_attr.recv_cq
        self.sq_sig_all = init_attr.sq_sig_all
        self.qp_type = init_attr.qp_type
        assert self.send_cq is not None and self.recv_cq is not None
        self.qp_num = self._sim._core.qp_create(
            self._host.index, pd.handle, self.send_cq._handle, self.recv_cq._handle,
            caps["max_send_wr"], caps["max_recv_wr"], caps["max_send_sge"], caps["max_recv_sge"],
            bool(sig_all), init_attr.qp_type, srq_handle,
        )
        self._closed = False
        self._poster = self._make_poster()
        # The posters' own methods are this QP's post_send / post_recv (they check for a destroyed QP
        # and fill bad_wr as the methods below do): a Python method around them cost as much as the
        # conversion and the post themselves. A subclass that overrides one keeps its own.
        if type(self).post_send is QP.post_send:
            self.post_send = self._poster.post  # type: ignore[method-assign]
        if type(self).post_recv is QP.post_recv:
            self.post_recv = self._recv_poster.post  # type: ignore[method-assign]
        pd._children.add(self)
        if qp_attr is not None:  # as pyverbs: a UD QP goes all the way to RTS, an RC QP to INIT
            (self.to_rts if self.qp_type == e.IBV_QPT_UD else self.to_init)(qp_attr)

    def _make_poster(self) -> Any:
        """The send path of this QP (rdmasim/_post.pxi): plain work requests converted in C, all
        others checked by ``_send_args``; likewise its receive path (``_recv_poster``)."""
        mask = 0
        for bit in _SEND_FLAGS.values():
            mask |= bit
        qpn = self.qp_num
        self._recv_poster = _core.RecvPoster(self._sim._core, self._host.index, qpn, self._sim,
                                             RecvWR, SGE, MRKey, self._recv_args, self._recv_chain)
        self._recv_poster.dead = lambda: _raise_destroyed("post_recv", qpn)
        self._recv_poster.report = report_bad_wr
        poster = _core.SendPoster(self._sim._core, self._host.index, qpn, self.qp_type == e.IBV_QPT_UD,
                                  sys.byteorder == "little", mask, self._sim, SendWR, SGE, MRKey,
                                  self._send_args, self._send_chain)
        poster.dead = lambda: _raise_destroyed("post_send", qpn)
        poster.report = report_bad_wr
        return poster

    # ---- state machine ----
    def _attr_dict(self, attr: QPAttr, mask: int) -> dict[str, Any]:
        instance("qp_attr", attr, QPAttr)
        d = {k: _attr_value(k, getattr(attr, k)) for k in _SIMPLE_FIELDS}
        if mask & e.IBV_QP_AV:
            ah = attr.ah_attr
            if ah is None:
                raise PyverbsUserError("IBV_QP_AV is in the mask but QPAttr.ah_attr is None")
            instance("QPAttr ah_attr", ah, AHAttr)
            check_av_port(f"modify QP 0x{self.qp_num:x}: ah_attr", ah)
            gr = None if ah.gr is None else instance("AHAttr gr", ah.gr, GlobalRoute)
            if ah.dest is not None:
                dest = instance("AHAttr dest", ah.dest, Host)
                same_sim(f"AHAttr dest {dest.name}", dest.sim, self._sim)
            elif gr is not None and gr.dgid:
                if not int_in("AHAttr is_global", ah.is_global, 0, 1):
                    raise PyverbsRDMAError(
                        "ah_attr: is_global=0 but a RoCE address needs the GRH: give "
                        "AHAttr(is_global=1, gr=GlobalRoute(dgid=<peer GID>))", errno.EINVAL)
                instance("GlobalRoute dgid", gr.dgid, str)
                try:
                    dest = self._sim.host_by_gid(gr.dgid)
                except (KeyError, ValueError) as exc:
                    raise PyverbsUserError(f"GlobalRoute dgid {gr.dgid!r}: {exc}") from None
            else:
                raise PyverbsUserError("ah_attr needs gr=GlobalRoute(dgid=<peer GID>) or dest=<Host>")
            d["dest_host"] = dest.index
            d["traffic_class"] = int_in("GlobalRoute traffic_class", gr.traffic_class, 0, U8) if gr else 0
        return d

    def modify(self, qp_attr: QPAttr, attr_mask: int) -> None:
        """``ibv_modify_qp``: the mask must hold exactly what the transition requires/allows."""
        mask = flags_in("attr_mask", attr_mask, _MASK_FLAGS)
        self._check_alive("modify")
        self._sim._core.qp_modify(self._host.index, self.qp_num, self._attr_dict(qp_attr, mask), mask)

    def _check_alive(self, what: str) -> None:
        if self._closed:  # its number may belong to a newer QP by now: never reach the core with it
            _raise_destroyed(what, self.qp_num)

    def _ud_step(self, qp_attr: QPAttr, state: int) -> None:
        """UD: walk from the current state up to ``state`` (RESET→INIT→RTR→RTS) as pyverbs does."""
        order = [e.IBV_QPS_INIT, e.IBV_QPS_RTR, e.IBV_QPS_RTS]
        cur = self.qp_state
        steps = [state]
        if cur == e.IBV_QPS_RESET or (cur in order and order.index(cur) < order.index(state)):
            first = 0 if cur == e.IBV_QPS_RESET else order.index(cur) + 1
            steps = order[first:order.index(state) + 1]
        for st in steps:
            qp_attr.qp_state = st
            self.modify(qp_attr, e.IBV_QP_STATE | _UD_STEP_MASKS[st])

    def to_init(self, qp_attr: QPAttr) -> None:
        """RESET→INIT with pkey_index, port_num and qp_access_flags from ``qp_attr``."""
        if self.qp_type == e.IBV_QPT_UD:
            return self._ud_step(qp_attr, e.IBV_QPS_INIT)
        qp_attr.qp_state = e.IBV_QPS_INIT
        self.modify(qp_attr, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT
                    | e.IBV_QP_ACCESS_FLAGS)

    def to_rtr(self, qp_attr: QPAttr) -> None:
        """→RTR: address vector, path MTU, dest QPN, rq_psn, max_dest_rd_atomic, min_rnr_timer
        (a UC QP: without the last two; a UD QP: the state only).

        As pyverbs, a QP not in INIT is first moved to INIT (``to_init``), so RESET→INIT→RTR
        takes one call."""
        self._check_alive("to_rtr")
        if self.qp_type == e.IBV_QPT_UD:
            return self._ud_step(qp_attr, e.IBV_QPS_RTR)
        if self.qp_state != e.IBV_QPS_INIT:
            self.to_init(qp_attr)
        qp_attr.qp_state = e.IBV_QPS_RTR
        mask = e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN
        if self.qp_type == e.IBV_QPT_RC:  # UC has no READ/atomic resources and no RNR
            mask |= e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER
        self.modify(qp_attr, mask)

    def to_rts(self, qp_attr: QPAttr) -> None:
        """→RTS: timeout, retry_cnt, rnr_retry, sq_psn, max_rd_atomic (UC and UD QPs: sq_psn).

        As pyverbs, a QP not in RTR is first moved to RTR (``to_rtr``, which starts with
        ``to_init`` from RESET), so RESET or INIT→...→RTS takes one call."""
        self._check_alive("to_rts")
        if self.qp_type == e.IBV_QPT_UD:
            return self._ud_step(qp_attr, e.IBV_QPS_RTS)
        if self.qp_state != e.IBV_QPS_RTR:
            self.to_rtr(qp_attr)
        qp_attr.qp_state = e.IBV_QPS_RTS
        mask = e.IBV_QP_STATE | e.IBV_QP_SQ_PSN
        if self.qp_type == e.IBV_QPT_RC:  # UC: nothing is acknowledged, so no timeout or retries
            mask |= e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY | e.IBV_QP_MAX_QP_RD_ATOMIC
        self.modify(qp_attr, mask)

    def query(self, attr_mask: int = 0) -> tuple[QPAttr, QPInitAttr]:
        """``ibv_query_qp``: current attributes and the creation attributes."""
        int_in("QP.query attr_mask", attr_mask, 0, U32)
        self._check_alive("query")
        raw = self._sim._core.qp_query(self._host.index, self.qp_num)
        attr = QPAttr(**{k: int(raw[k]) for k in _SIMPLE_FIELDS})
        attr.cap = QPCap(self.cap.max_send_wr, self.cap.max_recv_wr, self.cap.max_send_sge,
                         self.cap.max_recv_sge, self.cap.max_inline_data)  # a copy, as ibv_query_qp fills it
        if raw["dest_host"] >= 0:
            dest = self._sim.host_by_index(raw["dest_host"])
            attr.ah_attr = AHAttr(is_global=1, dest=dest,
                                  gr=GlobalRoute(dgid=dest.gid, traffic_class=raw["traffic_class"]))
        init = QPInitAttr(qp_type=self.qp_type, scq=self.send_cq, rcq=self.recv_cq, cap=self.cap,
                          sq_sig_all=self.sq_sig_all)
        return attr, init

    @property
    def qp_state(self) -> int:
        """Current state (an IBV_QPS_* value)."""
        self._check_alive("qp_state")
        return int(self._sim._core.qp_query(self._host.index, self.qp_num)["qp_state"])

    # ---- data path ----
    def post_send(self, send_wr: SendWR, bad_wr: SendWR | list[SendWR] | None = None) -> None:
        """Post one work request or a chain (``next_wr``), in one call into the core. On error
        nothing after the failing WR is posted and it is reported in ``bad_wr``: a SendWR
        (pyverbs' signature: the failing WR is copied into it) or a list (it is appended).

        Every field is checked as the work request is posted; a work request may be changed and
        posted again (the core keeps its own copy), as C programs reuse their ``ibv_send_wr``."""
        self._poster.post(send_wr, bad_wr)  # checks each WR, posts it (rdmasim/_post.pxi SendPoster)

    def post_send_batch(self, opcode: Any, local_addr: Any, length: Any, lkey: Any, remote_addr: Any = 0,
                        rkey: Any = 0, wr_id: Any = 0, send_flags: Any = 0, imm_data: Any = 0) -> int:
        """Post many send work requests from numpy arrays, in one call into the core: row ``i``
        is the work request ``opcode[i]`` with one SGE (``local_addr[i]``, ``length[i]``,
        ``lkey[i]``), target ``remote_addr[i]`` / ``rkey[i]``, ``wr_id[i]``, ``send_flags[i]``
        and ``imm_data[i]`` (``__be32`` as in ``SendWR``). Each argument is a 1-D integer array
        or one integer for every row; the arrays have one length, the number of work requests.

        A batch takes ``IBV_WR_RDMA_WRITE``, ``IBV_WR_RDMA_WRITE_WITH_IMM``, ``IBV_WR_SEND``,
        ``IBV_WR_SEND_WITH_IMM`` and ``IBV_WR_RDMA_READ`` on RC and UC QPs (post other work
        requests, and UD ones, with :meth:`post_send`). The rows are posted exactly as the same
        work requests posted one by one with :meth:`post_send` would be (same simulation), and
        checked as it checks them: a bad value raises PyverbsUserError naming its row, a row the
        NIC refuses raises its PyverbsRDMAError naming the row; the rows before that one are
        posted, none after it. Returns the number of rows posted."""
        self._check_alive("post_send_batch")
        what = "post_send_batch"
        if self.qp_type == e.IBV_QPT_UD:
            raise PyverbsUserError(f"{what}: a UD QP needs an address handle per work request; "
                                   "post UD work requests with post_send")
        given = {"wr_id": wr_id, "opcode": opcode, "send_flags": send_flags, "imm_data": imm_data,
                 "local_addr": local_addr, "length": length, "lkey": lkey, "remote_addr": remote_addr,
                 "rkey": rkey}
        cols: dict[str, Any] = {}
        n: int | None = None
        for name, v in given.items():
            hi = _BATCH_MAX[name]
            if isinstance(v, np.ndarray) and v.ndim == 0:
                v = v[()]
            if np.ndim(v) == 0:  # one value for every row
                if name in ("lkey", "rkey"):
                    v = key(f"{what} {name}", v, self._sim)  # an MR's key must be of this simulation
                cols[name] = np.array([int_in(f"{what} {name}", v, 0, hi)], dtype=np.uint64)
                continue
            a = np.asarray(v)
            if a.ndim != 1:
                raise PyverbsUserError(f"{what} {name}: a 1-D array or one integer, got shape {a.shape}")
            if a.dtype.kind not in "iu":
                raise PyverbsUserError(f"{what} {name}: an integer array, got dtype {a.dtype}")
            if n is not None and len(a) != n:
                raise PyverbsUserError(f"{what} {name} has {len(a)} rows, the arrays before it {n}")
            n = len(a)
            cols[name] = a
        if n is None:
            raise PyverbsUserError(f"{what}: give the work requests as arrays (at least one argument an "
                                   "array; post one work request with post_send)")
        # Each column's first bad row, checked in the order post_send checks a work request's
        # fields; the earliest row wins, and on one row the first field checked.
        bad_row, bad_msg = n, ""
        for name, a in cols.items():
            hi = _BATCH_MAX[name]
            out = (a < 0) | (a > hi) if a.dtype.kind == "i" else a > hi
            if out.any():
                r = int(np.argmax(out))
                row = r if len(a) > 1 else 0
                if row < bad_row:
                    bad_row, bad_msg = row, f"{name} = {int(a[r])} is out of range: allowed [0, {hi}]"
                continue
            a = cols[name] = a.astype(np.uint64)  # in range: exact as uint64
            if name == "opcode":
                out = ~np.isin(a, np.array(_BATCH_OPCODES, dtype=np.uint64))
                if out.any():
                    r = int(np.argmax(out))
                    row = r if len(a) > 1 else 0
                    if row < bad_row:
                        bad_row, bad_msg = row, _batch_opcode_msg(int(a[r]))
            elif name == "send_flags":
                allowed = 0
                for bit in _SEND_FLAGS.values():
                    allowed |= bit
                out = (a & np.uint64(U32 & ~allowed)) != 0
                if out.any():
                    r = int(np.argmax(out))
                    row = r if len(a) > 1 else 0
                    if row < bad_row:
                        v = int(a[r])
                        flag_names = ", ".join(f"{k}=0x{b:x}" for k, b in
                                               sorted(_SEND_FLAGS.items(), key=lambda kv: kv[1]))
                        bad_row, bad_msg = row, (f"send_flags = 0x{v:x} has unknown bits 0x{v & ~allowed:x}; "
                                                 f"known flags: {flag_names}")
        good = bad_row
        core_cols = []
        for name, a in cols.items():  # the rows to post, as the core's C types (a value: a broadcast view)
            dt = np.uint64 if _BATCH_MAX[name] == U64 else np.uint32
            c = a.astype(dt) if len(a) == 1 else a[:good].astype(dt)
            if name == "imm_data" and sys.byteorder == "little":  # __be32: the wire reads it byte-swapped
                c = c.byteswap()
            core_cols.append(np.broadcast_to(c, (good,)) if len(c) == 1 else c)
        core = self._sim._core
        try:
            _core.post_send_arrays(core, self._host.index, self.qp_num, *core_cols, good)
        except PyverbsRDMAError as exc:
            msg = str(exc).rsplit(". Errno:", 1)[0]
            raise PyverbsRDMAError(f"{what} row {core.last_posted}: {msg}", exc.error_code) from None
        if good < n:
            posted = {0: "nothing was posted", 1: "row 0 was posted"}.get(
                good, f"rows 0..{good - 1} were posted")
            raise PyverbsUserError(f"{what} row {good}: {bad_msg} ({posted})")
        return n

    def _send_chain(self, first: Any) -> list[SendWR]:
        """The work requests of a post_send chain from ``first``, or the error refusing it."""
        return wr_chain("post_send", first, SendWR)

    def _send_args(self, i: int, wr: SendWR) -> tuple[Any, ...]:
        """Work request ``i`` of a post_send chain, checked, as the core takes it (``_wr_from_tuple``
        in rdmasim/_post.pxi): the reference checks (the fast path there passes only what these
        accept unchanged, and hands everything else here)."""
        what = f"post_send work request {i}"
        args = (int_in(f"{what}: wr_id", wr.wr_id, 0, U64),
                int_in(f"{what}: opcode", wr.opcode, 0, U32),
                flags_in(f"{what}: send_flags", wr.send_flags, _SEND_FLAGS),
                self._imm(what, wr),
                self._sges(what, wr.sg, wr.num_sge),
                int_in(f"{what}: remote_addr", wr.remote_addr, 0, U64),
                key(f"{what}: rkey", wr.rkey, self._sim),
                int_in(f"{what}: compare_add", wr.compare_add, 0, U64),
                int_in(f"{what}: swap", wr.swap, 0, U64))
        ud = wr.ud_args(what, self._sim, self.pd) if self.qp_type == e.IBV_QPT_UD else _NO_UD
        bind = _NO_BIND
        if wr.opcode == e.IBV_WR_BIND_MW:  # the window and bind info; remote_addr is the bind address
            bind = wr.bind_args(what, self._sim)
            args = (*args[:5], int_in(f"{what}: bind addr", wr.bind_info.addr, 0, U64), *args[6:])
        return (*args,
                ud["ud_dest_host"], ud["ud_traffic_class"], ud["ud_remote_qpn"], ud["ud_remote_qkey"],
                bind["bind_mw_rkey"], bind["bind_lkey"], bind["bind_access"], bind["bind_len"])

    @staticmethod
    def _imm(what: str, wr: Any) -> int:
        """ImmDt as the wire reads it; for LOCAL_INV and SEND_WITH_INV the field is
        ``invalidate_rkey`` (a union in ``ibv_send_wr``), a plain key."""
        v = int_in(f"{what}: imm_data", wr.imm_data, 0, U32)
        plain = (e.IBV_WR_LOCAL_INV, e.IBV_WR_SEND_WITH_INV, e.IBV_WR_FLUSH)  # FLUSH: the FETH word
        return v if wr.opcode in plain else imm_to_wire(v)

    def bind_mw(self, mw: Any, mw_bind: Any) -> None:
        """``ibv_bind_mw``: bind type 1 window ``mw`` through this QP's send queue as ``mw_bind``
        (an MWBind) says. As rxe's provider: a BIND_MW work request with key ``inc_rkey(mw.rkey)``
        is posted and ``mw.rkey`` takes that key at once (if the bind then fails, its completion
        says so, and the window keeps its old key in the NIC)."""
        mw = instance("bind_mw mw", mw, MW)
        mw_bind = instance("bind_mw mw_bind", mw_bind, MWBind)
        if mw.type != IBV_MW_TYPE_1:
            raise PyverbsRDMAError(f"Failed to Bind MW: bind_mw binds type 1 windows; {mw!r} is type "
                                   f"{mw.type} (post an IBV_WR_BIND_MW work request)", errno.EINVAL)
        if mw_bind.bind_info.mw_access_flags & e.IBV_ACCESS_ZERO_BASED:
            raise PyverbsRDMAError("Failed to Bind MW: a type 1 window cannot be zero-based (rxe: EINVAL)",
                                   errno.EINVAL)
        wr = SendWR(wr_id=mw_bind.wr_id, opcode=e.IBV_WR_BIND_MW, send_flags=mw_bind.send_flags)
        wr.bind_mw, wr.bind_info = mw, mw_bind.bind_info
        wr.rkey = inc_rkey(mw.rkey)
        self.post_send(wr)
        mw.rkey = MRKey(wr.rkey, self._sim)

    def _sges(self, what: str, sg: Any, num_sge: Any) -> list[tuple[int, int, int]]:
        """The first ``num_sge`` SGEs of a work request as checked (addr, length, lkey) tuples."""
        return sge_list(what, sg, num_sge, self._sim, "QP")

    def post_recv(self, recv_wr: RecvWR, bad_wr: RecvWR | list[RecvWR] | None = None) -> None:
        """Post one receive work request or a chain, in one call into the core; ``bad_wr`` as in
        ``post_send``."""
        self._recv_poster.post(recv_wr, bad_wr)  # checks each WR, posts it (rdmasim/_post.pxi RecvPoster)

    def _recv_chain(self, first: Any) -> list[RecvWR]:
        """The work requests of a post_recv chain from ``first``, or the error refusing it."""
        return wr_chain("post_recv", first, RecvWR)

    def _recv_args(self, i: int, wr: RecvWR) -> tuple[int, list[tuple[int, int, int]]]:
        """Receive work request ``i`` of a chain, checked: ``(wr_id, sges)``; the reference checks
        (the fast path of rdmasim/_post.pxi passes only what these accept unchanged)."""
        what = f"post_recv work request {i}"
        return int_in(f"{what}: wr_id", wr.wr_id, 0, U64), self._sges(what, wr.sg, wr.num_sge)

    def stats(self) -> dict[str, int]:
        """Per-QP counters: packets/bytes sent and retransmitted, NAKs, timeouts, ... A dict that
        prints as a table and shows in Jupyter as an HTML table (:class:`rdmasim.report.Report`)."""
        from rdmasim.report import Report

        self._check_alive("stats")
        counters = self._sim._core.qp_stats(self._host.index, self.qp_num).items()
        return Report(f"QP 0x{self.qp_num:x} on {self._host.name}: counters",
                      {k: int(v) for k, v in counters})

    def inspect(self) -> dict[str, Any]:
        """Transport state now: PSNs (requester next / oldest unacknowledged / responder expected),
        MSN, work outstanding, retries left, timers (ps, 0 = stopped), rate."""
        self._check_alive("inspect")
        d = dict(self._sim._core.qp_inspect(self._host.index, self.qp_num))
        d["state"] = e.ibv_qp_state(d["state"]).name
        d["recovery"] = {v: k for k, v in RECOVERY_MODES.items()}.get(int(d["recovery"]), str(d["recovery"]))
        return d

    def explain(self) -> str:
        """The state of the QP in words, for teaching: PSNs, work outstanding (READ/atomic
        requests awaiting their responses), retries left (``rnr_retry`` 7 reads "infinite"), the
        retransmit timer and an RNR wait in progress, the responder's expected PSN."""
        from rdmasim.units import format_time

        q = self.inspect()
        attr = self._sim._core.qp_query(self._host.index, self.qp_num)
        now = self._sim.now
        unacked = (q["req_psn"] - q["comp_psn"]) % (1 << 24)
        rnr = ("infinite (rnr_retry 7 = retry forever)" if int(attr["rnr_retry"]) == 7
               else f"{q['rnr_left']} of rnr_retry {int(attr['rnr_retry'])}")
        lines = [
            f"QP 0x{self.qp_num:x} on {self._host.name} is in {q['state']}.",
            f"  Requester: next PSN to send {q['req_psn']}, oldest unacknowledged {q['comp_psn']} "
            f"({unacked} PSN(s) in flight); {q['sq_outstanding']} send WR(s) not completed, "
            f"{q['sq_started']} of them fully sent.",
        ]
        if q["rd_outstanding"]:
            lines.append(f"  {q['rd_outstanding']} READ/atomic request(s) sent and awaiting their "
                         f"responses (at most max_rd_atomic = {int(attr['max_rd_atomic'])}).")
        lines.append(
            f"  Retries left: {q['retry_left']} of retry_cnt {int(attr['retry_cnt'])} (timeout/NAK); "
            f"RNR: {rnr}; "
            + (f"retransmit timer fires at {format_time(q['rto_deadline_ps'])}."
               if q["rto_deadline_ps"] else "retransmit timer stopped."))
        if q["rnr_until_ps"] > now:
            lines.append(f"  RNR wait: an RNR NAK paused the requester until "
                         f"{format_time(q['rnr_until_ps'])} ({format_time(q['rnr_until_ps'] - now)} "
                         f"from now); then it resends from PSN {q['comp_psn']}.")
        lines.append(
            f"  Responder: expects PSN {q['resp_psn']}, MSN {q['msn']}, {q['rq_posted']} receive WR(s) "
            f"posted" + (", a NAK was sent for the current gap" if q["nak_sent"] else "") + ".")
        if q["recovery"] == "irn":
            lines.append(
                "  Loss recovery IRN (selective repeat): "
                + ("in recovery, resending what is lost; " if q["irn_in_recovery"] else "")
                + f"{q['irn_sacked']} PSN(s) selectively acknowledged; responder holds "
                f"{q['irn_ooo_held']} out-of-order packet(s).")
        if q["rate_bps"]:
            lines.append(f"  Congestion control paces it at {q['rate_bps'] / 1e9:.3f} Gb/s.")
        return "\n".join(lines)

    def set_recovery(self, recovery: str = "gbn", *, window: int | None = None,
                     rto_low: str | int = IRN_RTO_LOW, rto_high: str | int = IRN_RTO_HIGH,
                     rto_low_packets: int = IRN_RTO_LOW_PACKETS,
                     reorder_time: str | int | None = None) -> None:
        """Loss recovery of this QP: ``"gbn"`` (Go-Back-N, the default, as RoCEv2 NICs), ``"irn"``
        (IRN selective repeat) or ``"ooo"`` (IRN's out-of-order placement with a reorder-tolerant
        receiver, docs/multipath.md: needs a host NIC profile with ``ooo_placement``; a gap counts
        as lost after ``reorder_time``, default the profile's). Allowed in RESET, INIT or RTR; both
        ends must use the same mode.

        IRN: at most ``window`` packets in flight (default: the path's BDP, ``irn_bdp_window``);
        the retransmit timer is ``rto_low`` while fewer than ``rto_low_packets`` are in flight,
        else ``rto_high`` (the QP's ``timeout`` attribute is not used).
        """
        from rdmasim.checks import MAX_TIME_PS
        from rdmasim.units import parse_time

        if not isinstance(recovery, str) or recovery not in RECOVERY_MODES:
            raise PyverbsUserError(f"recovery={recovery!r}: choose one of {sorted(RECOVERY_MODES)}")
        self._check_alive("set_recovery")
        if window is None:
            window = irn_bdp_window(self._host.link, self._path_mtu_bytes())
        times = []
        for name, t in (("rto_low", rto_low), ("rto_high", rto_high)):
            if isinstance(t, bool) or not isinstance(t, (str, int)):
                raise PyverbsUserError(f"{name}={t!r}: a time such as '100us' or integer picoseconds")
            try:
                times.append(int_in(name, parse_time(t), 0, MAX_TIME_PS))
            except ValueError as exc:
                raise PyverbsUserError(f"{name}={t!r}: {exc}") from None
        reorder_ps = 0
        if recovery == "ooo":
            profile = self._host.nic_profile
            if not profile.ooo_placement:
                raise PyverbsUserError(f"recovery='ooo': host {self._host.name!r} has NIC profile "
                                       f"{profile.name!r}, which places packets in order only; allowed 'gbn' "
                                       "or 'irn', or a profile with ooo_placement (cx7-ar, ib-ar)")
            t = profile.reorder_time if reorder_time is None else reorder_time
            try:
                reorder_ps = int_in("reorder_time", parse_time(t), 1, MAX_TIME_PS)
            except (TypeError, ValueError) as exc:
                raise PyverbsUserError(f"reorder_time={t!r}: {exc}") from None
        self._sim._core.qp_set_recovery(self._host.index, self.qp_num, RECOVERY_MODES[recovery],
                                        int_in("window", window, 0, U32),
                                        int_in("rto_low_packets", rto_low_packets, 0, U32), *times,
                                        reorder_ps=reorder_ps)

    def _path_mtu_bytes(self) -> int:
        raw = self._sim._core.qp_query(self._host.index, self.qp_num)
        return 256 << (int(raw["path_mtu"]) - 1)

    @property
    def recovery(self) -> dict[str, Any]:
        """Loss recovery: ``mode`` ("gbn"/"irn"/"ooo"), and for IRN and OOO ``window``,
        ``rto_low_packets``, ``rto_low_ps``, ``rto_high_ps``; for OOO ``reorder_ps``."""
        self._check_alive("recovery")
        raw = dict(self._sim._core.qp_get_recovery(self._host.index, self.qp_num))
        names = {v: k for k, v in RECOVERY_MODES.items()}
        raw["mode"] = names.get(int(raw["mode"]), str(raw["mode"]))
        if raw["mode"] != "ooo":
            raw.pop("reorder_ps", None)  # OOO only
        return raw

    @property
    def rate_bps(self) -> float:
        """The rate its congestion control paces it at (bits/s); 0 when it runs at line rate."""
        self._check_alive("rate_bps")
        return float(self._sim._core.qp_rate_bps(self._host.index, self.qp_num))

    def dcqcn_state(self) -> dict[str, Any] | None:
        """DCQCN reaction-point state (rc_bps, rt_bps, alpha, counters), or None without DCQCN."""
        self._check_alive("dcqcn_state")
        return self._sim._core.qp_dcqcn_state(self._host.index, self.qp_num)

    def cc_state(self) -> dict[str, Any] | None:
        """Its congestion control's state as of now (the algorithm's C state fields, with
        ``"algorithm"``: its name), or None when it runs none."""
        self._check_alive("cc_state")
        return self._sim._core.qp_cc_state(self._host.index, self.qp_num)

    def close(self) -> None:
        """Destroy the QP (``ibv_destroy_qp``). Work requests still posted, send and receive, are
        dropped without completions, as rxe does; completions already in the CQs stay there.
        Frames it already sent still arrive at the peer, and what comes back to it is dropped
        (counted in ``Context.rx_counters()["unknown_qp"]``). Closing its PD or Context does the
        same."""
        if not self._closed:
            self._sim._core.qp_destroy(self._host.index, self.qp_num)
            self._closed = True
            self._poster.closed = self._recv_poster.closed = True
            self.pd._children.discard(self)

    def __enter__(self) -> QP:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._closed:
            return f"QP(host={self._host.name}, qp_num=0x{self.qp_num:x}, destroyed)"
        q = self.inspect()
        return (f"QP(host={self._host.name}, qp_num=0x{self.qp_num:x}, state={q['state']}, "
                f"next_psn={q['req_psn']}, unacked_from={q['comp_psn']}, expected_psn={q['resp_psn']}, "
                f"outstanding_wrs={q['sq_outstanding']})")


def _raise_destroyed(what: str, qpn: int) -> None:
    raise PyverbsRDMAError(f"QP.{what}: QP 0x{qpn:x} is destroyed")


def connect_qps(qp_a: QP, qp_b: QP, *, path_mtu: int | None = None, psn_a: int = 0, psn_b: int = 0,
                access: int = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
                | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC,
                timeout: int = 14, retry_cnt: int = 7, rnr_retry: int = 7,
                min_rnr_timer: int = 12, max_rd_atomic: int = 1, traffic_class: int = 0,
                recovery: str = "gbn", irn_window: int | None = None,
                rto_low: str | int = IRN_RTO_LOW, rto_high: str | int = IRN_RTO_HIGH,
                rto_low_packets: int = IRN_RTO_LOW_PACKETS) -> None:
    """Walk two RC (or two UC) QPs RESET→INIT→RTR→RTS, each pointing at the other. They may be on one
    host (loopback inside its NIC), or be one QP connected to itself.

    ``psn_a`` is the first PSN ``qp_a`` sends (and ``qp_b`` expects); likewise ``psn_b``.
    ``path_mtu`` is in bytes (default: the link MTU between the hosts).
    ``recovery`` is ``"gbn"`` (Go-Back-N) or ``"irn"`` (selective repeat, set on both QPs; see
    ``QP.set_recovery`` for ``irn_window``, ``rto_low``, ``rto_high``, ``rto_low_packets``).
    """
    instance("connect_qps qp_a", qp_a, QP)
    instance("connect_qps qp_b", qp_b, QP)
    same_sim("connect_qps: qp_b", qp_b._sim, qp_a._sim)
    qp_a._check_alive("connect_qps")
    qp_b._check_alive("connect_qps")
    host_a, host_b = qp_a._host, qp_b._host
    if path_mtu is None:
        link = host_a.link
        path_mtu = link.mtu if link is not None else 1024
    int_in("connect_qps path_mtu", path_mtu, 0, U32)
    try:
        mtu = e.mtu_enum(path_mtu)
    except ValueError as exc:
        raise PyverbsUserError(f"connect_qps: {exc}") from None
    if not isinstance(recovery, str) or recovery not in RECOVERY_MODES:
        raise PyverbsUserError(f"recovery={recovery!r}: choose one of {sorted(RECOVERY_MODES)}")
    for name, v, hi in (("psn_a", psn_a, (1 << 24) - 1), ("psn_b", psn_b, (1 << 24) - 1),
                        ("timeout", timeout, U8), ("retry_cnt", retry_cnt, U8), ("rnr_retry", rnr_retry, U8),
                        ("min_rnr_timer", min_rnr_timer, U8), ("max_rd_atomic", max_rd_atomic, U8),
                        ("traffic_class", traffic_class, U8)):
        int_in(f"connect_qps {name}", v, 0, hi)
    flags_in("connect_qps access", access, _ACCESS_FLAGS)
    if irn_window is not None:
        int_in("connect_qps irn_window", irn_window, 0, U32)
    window = irn_bdp_window(host_a.link, path_mtu) if irn_window is None else irn_window
    for qp in (qp_a,) if qp_a is qp_b else (qp_a, qp_b):
        if recovery != "gbn" or qp.recovery["mode"] != "gbn":
            qp.set_recovery(recovery, window=window, rto_low=rto_low, rto_high=rto_high,
                            rto_low_packets=rto_low_packets)
    pairs = [(qp_a, qp_b, psn_b, psn_a), (qp_b, qp_a, psn_a, psn_b)]
    for qp, peer, rq_psn, sq_psn in pairs[:1] if qp_a is qp_b else pairs:  # a QP may talk to itself
        attr = QPAttr(qp_access_flags=access, path_mtu=mtu, dest_qp_num=peer.qp_num, rq_psn=rq_psn,
                      sq_psn=sq_psn, timeout=timeout, retry_cnt=retry_cnt, rnr_retry=rnr_retry,
                      min_rnr_timer=min_rnr_timer, max_rd_atomic=max_rd_atomic,
                      max_dest_rd_atomic=max_rd_atomic,
                      ah_attr=AHAttr(is_global=1,
                                     gr=GlobalRoute(dgid=peer._host.gid, traffic_class=traffic_class)))
        qp.to_init(attr)
        qp.to_rtr(attr)
        qp.to_rts(attr)
    del host_b
