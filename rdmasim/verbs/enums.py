"""Verbs enums with rdma-core's names and values, built from the C table
(csrc/include/rdmasim/ib_enums.def) so each value is written once.

Use them as pyverbs does: ``from rdmasim.verbs import enums as e; e.IBV_WR_RDMA_WRITE``,
or through the enum classes (``e.ibv_wr_opcode.IBV_WR_RDMA_WRITE``).
"""

from __future__ import annotations

from enum import IntEnum, IntFlag
from typing import Any

from rdmasim import _core

# C group -> (Python enum class name, name prefix, flag?)
_GROUPS = {
    "WR": ("ibv_wr_opcode", "IBV_WR_", False),
    "WC_STATUS": ("ibv_wc_status", "IBV_WC_", False),
    "WC_OPCODE": ("ibv_wc_opcode", "IBV_WC_", False),
    "QPS": ("ibv_qp_state", "IBV_QPS_", False),
    "QPT": ("ibv_qp_type", "IBV_QPT_", False),
    "ACCESS": ("ibv_access_flags", "IBV_ACCESS_", True),
    "SEND": ("ibv_send_flags", "IBV_SEND_", True),
    "MTU": ("ibv_mtu", "IBV_MTU_", False),
    "QP": ("ibv_qp_attr_mask", "IBV_QP_", True),
}

_members: dict[str, dict[str, int]] = {g: {} for g in _GROUPS}
for _group, _name, _value in _core.enum_table():
    _members[_group][_GROUPS[_group][1] + _name] = _value

ibv_wr_opcode: Any = IntEnum("ibv_wr_opcode", _members["WR"])
ibv_wc_status: Any = IntEnum("ibv_wc_status", _members["WC_STATUS"])
ibv_wc_opcode: Any = IntEnum("ibv_wc_opcode", _members["WC_OPCODE"])
ibv_qp_state: Any = IntEnum("ibv_qp_state", _members["QPS"])
ibv_qp_type: Any = IntEnum("ibv_qp_type", _members["QPT"])
ibv_access_flags: Any = IntFlag("ibv_access_flags", _members["ACCESS"])
ibv_send_flags: Any = IntFlag("ibv_send_flags", _members["SEND"])
ibv_mtu: Any = IntEnum("ibv_mtu", _members["MTU"])
ibv_qp_attr_mask: Any = IntFlag("ibv_qp_attr_mask", _members["QP"])

IBV_WC_GRH = 1  # ibv_wc_flags
IBV_WC_WITH_IMM = 2

# Module-level names, as pyverbs.enums exposes them (IBV_WR_RDMA_WRITE, IBV_QPS_RTS, ...).
for _group, (_cls_name, _prefix, _flag) in _GROUPS.items():
    globals().update(_members[_group])

MTU_BYTES = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}


def mtu_enum(nbytes: int) -> int:
    """IBV_MTU_* value for a path MTU in bytes (256..4096)."""
    for k, v in MTU_BYTES.items():
        if v == nbytes:
            return k
    raise ValueError(f"path MTU {nbytes!r} bytes: must be one of {sorted(MTU_BYTES.values())}")


def wc_status_to_str(status: int) -> str:
    """The rdma-core name of a work-completion status (as ibv_wc_status_str)."""
    try:
        return ibv_wc_status(status).name
    except ValueError:
        return f"unknown status {status}"
