"""``pyverbs.providers.mlx5.mlx5dv``: mlx5 direct verbs. The emulated devices are not mlx5 devices
(neither is rxe): opening a ``Mlx5Context`` or making any other object here raises
``PyverbsRDMAError`` with EOPNOTSUPP."""

from __future__ import annotations

from rdmasim.pyverbs._unsupported import unsupported

_WHY = "mlx5 direct verbs need an mlx5 device; the emulated device (like rxe) is not one"

_NAMES = ("Mlx5CQ", "Mlx5Context", "Mlx5Cqe64", "Mlx5DCIStreamInitAttr", "Mlx5DVCQInitAttr",
          "Mlx5DVContextAttr", "Mlx5DVDCInitAttr", "Mlx5DVQPInitAttr", "Mlx5DevxObj", "Mlx5QP",
          "Mlx5UAR", "Mlx5UMEM", "Wqe", "WqeCtrlSeg", "WqeDataSeg", "Mlx5PD", "Mlx5VAR",
          "Mlx5DmOpAddr", "Mlx5DevxMsiVector", "Mlx5DevxEq", "Mlx5DVPortAttr")
globals().update({_n: unsupported(_n, _WHY, __name__) for _n in _NAMES})
__all__ = list(_NAMES)
