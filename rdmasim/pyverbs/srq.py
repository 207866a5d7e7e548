"""``pyverbs.srq``: shared receive queues.

``SRQ``, ``SrqAttr`` and ``SrqInitAttr`` are rdmasim.verbs' classes when this build has them
(:mod:`rdmasim.verbs.srq`). Without it the names exist (so that code importing them loads) but
creating an SRQ raises EOPNOTSUPP. ``SrqInitAttrEx`` (``ibv_create_srq_ex``: XRC and
tag-matching SRQs) is not emulated: EOPNOTSUPP; Linux rxe has neither XRC nor tag matching.
"""

from __future__ import annotations

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

__all__ = ["SRQ", "SrqAttr", "SrqInitAttr", "SrqInitAttrEx"]
