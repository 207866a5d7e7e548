"""``pyverbs.providers.mlx5.dr_rule``: mlx5 direct-rule rules.

They need an mlx5 device; the emulated device (like rxe) is not one, so every class here raises
``PyverbsRDMAError`` with EOPNOTSUPP."""

from __future__ import annotations

from rdmasim.pyverbs._unsupported import unsupported_module
from rdmasim.pyverbs.providers.mlx5.mlx5dv import WHY

_NAMES = ("DrRule",)
globals().update(unsupported_module(__name__, WHY, _NAMES))
__all__ = list(_NAMES)
