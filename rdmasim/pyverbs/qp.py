"""``pyverbs.qp``: QP and its attribute classes, with pyverbs' defaults.

``QPInitAttr()`` and ``QPInitAttrEx()`` default to ``qp_type=IBV_QPT_UD`` as in pyverbs.
"""

from __future__ import annotations

from typing import Any

from rdmasim.errors import PyverbsUserError
from rdmasim.verbs import enums as e
from rdmasim.verbs import qp as _qp
from rdmasim.verbs._checks import U32, instance, int_in
from rdmasim.verbs.device import PD, Context
from rdmasim.verbs.wr import RecvWR, SendWR

QPAttr = _qp.QPAttr
QPCap = _qp.QPCap

__all__ = ["QP", "QPAttr", "QPCap", "QPInitAttr", "QPInitAttrEx"]


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
        super().__init__(creator, init_attr, qp_attr)

    def post_send(self, send_wr: SendWR, bad_wr: SendWR | list[SendWR] | None = None) -> None:
        """Post a work request (or a ``next_wr`` chain). As in pyverbs, ``bad_wr`` may be a
        ``SendWR``: on failure the failing request's fields are copied into it before the error
        is raised. (A list, rdmasim.verbs' form, gets the failing request appended.)"""
        if isinstance(bad_wr, SendWR):
            failed: list[SendWR] = []
            try:
                super().post_send(send_wr, failed)
            except Exception:
                if failed:
                    vars(bad_wr).update(vars(failed[0]))
                raise
            return
        super().post_send(send_wr, bad_wr)

    def post_recv(self, recv_wr: RecvWR, bad_wr: RecvWR | list[RecvWR] | None = None) -> None:
        """Post a receive work request (or a chain); ``bad_wr`` as in :meth:`post_send`."""
        if isinstance(bad_wr, RecvWR):
            failed: list[RecvWR] = []
            try:
                super().post_recv(recv_wr, failed)
            except Exception:
                if failed:
                    vars(bad_wr).update(vars(failed[0]))
                raise
            return
        super().post_recv(recv_wr, bad_wr)
