"""``pyverbs.providers.efa.efadv``: EFA direct verbs. The emulated devices are not EFA devices
(neither is rxe): every class here raises ``PyverbsRDMAError`` with EOPNOTSUPP."""

from __future__ import annotations

from rdmasim.pyverbs._unsupported import unsupported
from rdmasim.pyverbs.providers.efa import efa_enums as _dve

_WHY = "EFA direct verbs need an EFA device; the emulated device (like rxe) is not one"
_NAMES = ("EfaContext", "EfaCQ", "EfaQP", "EfaQPEx", "EfaDVCQInitAttr", "EfaDVDeviceAttr",
          "EfaAH", "EfaMR", "EfaDVMRAttr", "EfaQPInitAttr", "SRDQP", "SRDQPEx")
globals().update({_n: unsupported(_n, _WHY, __name__) for _n in _NAMES})
__all__ = [*_NAMES, "dev_cap_to_str"]


def dev_cap_to_str(flags: int) -> str:
    """The names of the ``EFADV_DEVICE_ATTR_CAPS_*`` bits set in ``flags``."""
    names = [n for n in dir(_dve) if n.startswith("EFADV_DEVICE_ATTR_CAPS_")]
    return ", ".join(n for n in names if flags & getattr(_dve, n)) or "none"
