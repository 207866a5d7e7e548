"""``pyverbs.providers.mlx5.mlx5dv_flow``: mlx5 flow steering.

They need an mlx5 device; the emulated device (like rxe) is not one, so every class here raises
``PyverbsRDMAError`` with EOPNOTSUPP."""

from __future__ import annotations

from rdmasim.pyverbs._unsupported import unsupported_module
from rdmasim.pyverbs.providers.mlx5.mlx5dv import WHY

_NAMES = ("Mlx5FlowMatchParameters", "Mlx5FlowMatcherAttr", "Mlx5FlowMatcher",
          "Mlx5PacketReformatFlowAction", "Mlx5FlowActionAttr", "Mlx5Flow")
globals().update(unsupported_module(__name__, WHY, _NAMES))
__all__ = list(_NAMES)
