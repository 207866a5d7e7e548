"""``pyverbs.providers.mlx5.mlx5_enums``: the mlx5 names rdma-core's test helpers import, with the
values of rdma-core's ``mlx5dv.h`` (no emulated behaviour depends on them)."""

from __future__ import annotations

from enum import IntEnum, IntFlag
from typing import Any

from rdmasim.pyverbs import _enum_merge, _enum_values

mlx5dv_qp_init_attr_mask: Any = IntFlag("mlx5dv_qp_init_attr_mask", {
    "MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS": 1, "MLX5DV_QP_INIT_ATTR_MASK_DC": 2,
    "MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS": 4, "MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS": 8})
mlx5dv_dc_type: Any = IntEnum("mlx5dv_dc_type", {"MLX5DV_DCTYPE_DCT": 1, "MLX5DV_DCTYPE_DCI": 2})
mlx5dv_context_attr_flags: Any = IntFlag("mlx5dv_context_attr_flags", {"MLX5DV_CONTEXT_FLAGS_DEVX": 1})
mlx5dv_context_attr_comp_mask: Any = IntFlag("mlx5dv_context_attr_comp_mask", {
    "MLX5DV_CONTEXT_ATTR_MASK_FD_ARRAY": 1})
mlx5dv_obj_type: Any = IntFlag("mlx5dv_obj_type", {
    "MLX5DV_OBJ_QP": 1, "MLX5DV_OBJ_CQ": 2, "MLX5DV_OBJ_SRQ": 4, "MLX5DV_OBJ_RWQ": 8,
    "MLX5DV_OBJ_DM": 16, "MLX5DV_OBJ_AH": 32, "MLX5DV_OBJ_PD": 64, "MLX5DV_OBJ_DEVX": 128})
for _cls in (mlx5dv_qp_init_attr_mask, mlx5dv_dc_type, mlx5dv_context_attr_flags,
             mlx5dv_context_attr_comp_mask, mlx5dv_obj_type):
    globals().update(_cls.__members__)
del _cls

MLX5_CQE_REQ = 0
MLX5_CQE_RESP_SEND_IMM = 3
MLX5_CQE_REQ_ERR = 13
MLX5_CQE_RESP_ERR = 14
MLX5_CQE_INVALID = 15
MLX5_OPCODE_SEND_IMM = 0x0B
MLX5_RCV_DBR = 0
MLX5_SND_DBR = 1
MLX5_SEND_WQE_BB = 64
MLX5_SEND_WQE_SHIFT = 6
MLX5_WQE_CTRL_CQ_UPDATE = 2 << 2
_MLX5DV_UAR_ALLOC_TYPE_NC = 1

# every other enum and name of rdma-core's mlx5_enums (mlx5dv.h's values)
_enum_merge.complete(globals(), _enum_values.MLX5, _enum_values.MLX5_ALIASES)
