"""A pyverbs-shaped verbs API over the simulated NICs.

Names follow rdma-core's pyverbs (Context, PD, MR, CQ, QP, QPInitAttr, QPCap, QPAttr, AHAttr,
GlobalRoute, SendWR, RecvWR, SGE, WC) and the enums keep rdma-core's values.
"""

from rdmasim.errors import PyverbsError, PyverbsRDMAError, PyverbsUserError
from rdmasim.verbs import enums
from rdmasim.verbs._checks import PyverbsTypeError
from rdmasim.verbs.ah import AH, AHAttr, GlobalRoute
from rdmasim.verbs.cq import CQ
from rdmasim.verbs.device import PD, Context
from rdmasim.verbs.mr import MR
from rdmasim.verbs.mw import MW, MWBind, MWBindInfo
from rdmasim.verbs.qp import QP, QPAttr, QPCap, QPInitAttr, connect_qps
from rdmasim.verbs.srq import SRQ, SrqAttr, SrqInitAttr
from rdmasim.verbs.wc import WC
from rdmasim.verbs.wr import SGE, RecvWR, SendWR

__all__ = [
    "AH", "AHAttr", "CQ", "Context", "GlobalRoute", "MR", "MW", "MWBind", "MWBindInfo", "PD", "PyverbsError",
    "PyverbsRDMAError", "PyverbsTypeError", "PyverbsUserError", "QP", "QPAttr", "QPCap", "QPInitAttr",
    "RecvWR", "SGE", "SRQ", "SendWR", "SrqAttr", "SrqInitAttr", "WC", "connect_qps", "enums",
]
