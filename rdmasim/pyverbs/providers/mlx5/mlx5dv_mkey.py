"""``pyverbs.providers.mlx5.mlx5dv_mkey``: mlx5 memory keys and signature offload.

They need an mlx5 device; the emulated device (like rxe) is not one, so every class here raises
``PyverbsRDMAError`` with EOPNOTSUPP."""

from __future__ import annotations

from rdmasim.pyverbs._unsupported import unsupported_module
from rdmasim.pyverbs.providers.mlx5.mlx5dv import WHY

_NAMES = ("Mlx5SigCrc", "Mlx5SigT10Dif", "Mlx5SigBlockDomain", "Mlx5SigBlockAttr", "Mlx5SigErr",
          "Mlx5MkeyErr", "Mlx5MkeyConfAttr", "Mlx5MrInterleaved", "Mlx5Mkey")
globals().update(unsupported_module(__name__, WHY, _NAMES))
__all__ = list(_NAMES)
