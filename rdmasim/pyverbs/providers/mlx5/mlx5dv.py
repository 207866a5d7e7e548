"""``pyverbs.providers.mlx5.mlx5dv``: mlx5 direct verbs. The emulated devices are not mlx5 devices
(neither is rxe): opening a ``Mlx5Context`` or making any other object here raises
``PyverbsRDMAError`` with EOPNOTSUPP."""

from __future__ import annotations

from typing import Any

from rdmasim.pyverbs._unsupported import unsupported_module
from rdmasim.pyverbs.providers.mlx5 import mlx5_enums as _dve

WHY = "mlx5 direct verbs need an mlx5 device; the emulated device (like rxe) is not one"

_NAMES = ("Mlx5CQ", "Mlx5Context", "Mlx5Cqe64", "Mlx5DCIStreamInitAttr", "Mlx5DVCQInitAttr",
          "Mlx5DVContextAttr", "Mlx5DVDCInitAttr", "Mlx5DVQPInitAttr", "Mlx5DevxObj", "Mlx5QP",
          "Mlx5UAR", "Mlx5UMEM", "Wqe", "WqeSeg", "WqeCtrlSeg", "WqeDataSeg", "Mlx5PD", "Mlx5VAR",
          "Mlx5PP", "Mlx5DVContext", "Mlx5DmOpAddr", "Mlx5DevxMsiVector", "Mlx5DevxEq", "Mlx5DVPortAttr")
# pyverbs' static methods (called on the class)
_STATIC = {"Mlx5Context": ("crypto_login", "crypto_logout", "device_timestamp_to_ns",
                           "devx_general_cmd", "query_login_state", "query_mlx5_port",
                           "reserved_qpn_alloc", "reserved_qpn_dealloc"),
           "Mlx5QP": ("map_ah_to_qp", "modify_dci_stream_channel_id", "modify_lag_port",
                      "modify_qp_sched_elem", "modify_udp_sport", "query_lag_port"),
           "WqeDataSeg": ("sizeof",), "WqeCtrlSeg": ("sizeof",)}
globals().update(unsupported_module(__name__, WHY, _NAMES, _STATIC))
__all__ = [*_NAMES, "context_flags_to_str", "cqe_comp_to_str"]


def _bits(flags: int, cls: Any) -> str:
    return ", ".join(n for n, m in cls.__members__.items() if m and flags & m == m) or "none"


def context_flags_to_str(flags: int) -> str:
    """The names of the ``mlx5dv_context_flags`` bits set in ``flags``."""
    return _bits(flags, _dve.mlx5dv_context_flags)


def cqe_comp_to_str(cqe: int) -> str:
    """The names of the ``mlx5dv_cqe_comp_res_format`` bits set in ``cqe``."""
    return _bits(cqe, _dve.mlx5dv_cqe_comp_res_format)
