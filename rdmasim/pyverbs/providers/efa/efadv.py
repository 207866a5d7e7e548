"""``pyverbs.providers.efa.efadv``: EFA direct verbs. The emulated devices are not EFA devices
(neither is rxe): every class here raises ``PyverbsRDMAError`` with EOPNOTSUPP."""

from __future__ import annotations

from rdmasim.pyverbs._unsupported import unsupported

_WHY = "EFA direct verbs need an EFA device; the emulated device (like rxe) is not one"
_NAMES = ("EfaContext", "EfaCQ", "EfaQP", "EfaQPEx", "EfaDVCQInitAttr", "EfaDVDeviceAttr",
          "EfaAH", "EfaMR", "EfaDVMRAttr", "SRDQP", "SRDQPEx")
globals().update({_n: unsupported(_n, _WHY, __name__) for _n in _NAMES})
__all__ = list(_NAMES)
