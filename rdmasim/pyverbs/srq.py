"""``pyverbs.srq``: shared receive queues.

``SRQ``, ``SrqAttr`` and ``SrqInitAttr`` are rdmasim.verbs' classes when this build has them
(:mod:`rdmasim.verbs.srq`). Without it the names exist (so that code importing them loads) but
creating an SRQ raises EOPNOTSUPP. ``SrqInitAttrEx`` (``ibv_create_srq_ex``: XRC and
tag-matching SRQs) is not emulated: EOPNOTSUPP; Linux rxe has neither XRC nor tag matching.
"""

from __future__ import annotations

from rdmasim.pyverbs import libibverbs_enums as _e
from rdmasim.pyverbs._attrs import attr_class
from rdmasim.pyverbs._unsupported import unsupported

try:
    from rdmasim.verbs.srq import SRQ, SrqAttr, SrqInitAttr
except ImportError:  # a build without SRQ support in rdmasim.verbs
    _WHY = "shared receive queues are not emulated in this build"
    SRQ = unsupported("SRQ", _WHY, __name__)  # type: ignore[misc,assignment]
    SrqAttr = unsupported("SrqAttr", _WHY, __name__)  # type: ignore[misc,assignment]
    SrqInitAttr = unsupported("SrqInitAttr", _WHY, __name__)  # type: ignore[misc,assignment]

SrqInitAttrEx = unsupported("SrqInitAttrEx", "extended SRQs (XRC, tag matching) are not emulated "
                            "(Linux rxe has neither)", __name__)

# a tag-matching operation (ibv_post_srq_ops) on such an SRQ; only the values are kept
OpsWr = attr_class("OpsWr", __name__, "``ibv_ops_wr``: a tag-matching SRQ operation.",
                   [("wr_id", 0), ("opcode", int(_e.IBV_WR_TAG_ADD)), ("flags", int(_e.IBV_OPS_SIGNALED)),
                    ("next_wr", None), ("unexpected_cnt", 0), ("recv_wr_id", 0), ("num_sge", None),
                    ("tag", 0), ("mask", 0), ("sg_list", None)])

__all__ = ["SRQ", "OpsWr", "SrqAttr", "SrqInitAttr", "SrqInitAttrEx"]
