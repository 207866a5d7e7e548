"""``pyverbs.providers.mlx5.mlx5dv_sched``: mlx5 scheduling elements.

They need an mlx5 device; the emulated device (like rxe) is not one, so every class here raises
``PyverbsRDMAError`` with EOPNOTSUPP."""

from __future__ import annotations

from rdmasim.pyverbs._unsupported import unsupported_module
from rdmasim.pyverbs.providers.mlx5.mlx5dv import WHY

_NAMES = ("Mlx5dvSchedAttr", "Mlx5dvSchedNode", "Mlx5dvSchedLeaf")
globals().update(unsupported_module(__name__, WHY, _NAMES))
__all__ = list(_NAMES)
