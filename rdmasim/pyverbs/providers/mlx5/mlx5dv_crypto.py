"""``pyverbs.providers.mlx5.mlx5dv_crypto``: mlx5 crypto (DEKs, crypto login).

They need an mlx5 device; the emulated device (like rxe) is not one, so every class here raises
``PyverbsRDMAError`` with EOPNOTSUPP."""

from __future__ import annotations

from rdmasim.pyverbs._unsupported import unsupported_module
from rdmasim.pyverbs.providers.mlx5.mlx5dv import WHY

_NAMES = ("Mlx5CryptoLoginAttr", "Mlx5CryptoExtLoginAttr", "Mlx5DEKInitAttr", "Mlx5DEKAttr",
          "Mlx5CryptoAttr", "Mlx5DEK", "Mlx5CryptoLogin")
globals().update(unsupported_module(__name__, WHY, _NAMES))
__all__ = list(_NAMES)
