"""``pyverbs.providers.mlx5.mlx5dv_objects``: mlx5 object introspection; EOPNOTSUPP here."""

from __future__ import annotations

from rdmasim.pyverbs._unsupported import unsupported

Mlx5DvObj = unsupported("Mlx5DvObj", "mlx5dv_init_obj needs an mlx5 device", __name__)
__all__ = ["Mlx5DvObj"]
