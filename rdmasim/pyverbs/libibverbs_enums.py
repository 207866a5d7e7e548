"""``pyverbs.libibverbs_enums``: the verbs enum classes with rdma-core's names and values.

As with rdma-core's pyverbs (v59), each enum is a class (``ibv_qp_type.IBV_QPT_RC``) and each member
is also a module-level name (``IBV_QPT_RC``). The data-path enums come from rdmasim's C table
(:mod:`rdmasim.verbs.enums`); the device, port and GID enums below are libibverbs' ``verbs.h``
values, which no emulated behaviour depends on.
"""

from __future__ import annotations

from enum import IntEnum, IntFlag
from typing import Any

from rdmasim.verbs import enums as _e

ibv_wr_opcode: Any = _e.ibv_wr_opcode
ibv_wc_status: Any = _e.ibv_wc_status
ibv_wc_opcode: Any = _e.ibv_wc_opcode
ibv_qp_state: Any = _e.ibv_qp_state
ibv_qp_type: Any = _e.ibv_qp_type
ibv_access_flags: Any = _e.ibv_access_flags
ibv_send_flags: Any = _e.ibv_send_flags
ibv_mtu: Any = _e.ibv_mtu
ibv_qp_attr_mask: Any = _e.ibv_qp_attr_mask

ibv_wc_flags: Any = IntFlag("ibv_wc_flags", {"IBV_WC_GRH": 1, "IBV_WC_WITH_IMM": 2,
                                             "IBV_WC_IP_CSUM_OK": 4, "IBV_WC_WITH_INV": 8,
                                             "IBV_WC_TM_SYNC_REQ": 16, "IBV_WC_TM_MATCH": 32,
                                             "IBV_WC_TM_DATA_VALID": 64})
ibv_port_state: Any = IntEnum("ibv_port_state", {"IBV_PORT_NOP": 0, "IBV_PORT_DOWN": 1,
                                                 "IBV_PORT_INIT": 2, "IBV_PORT_ARMED": 3,
                                                 "IBV_PORT_ACTIVE": 4, "IBV_PORT_ACTIVE_DEFER": 5})
ibv_link_layer: Any = IntEnum("ibv_link_layer", {"IBV_LINK_LAYER_UNSPECIFIED": 0,
                                                 "IBV_LINK_LAYER_INFINIBAND": 1,
                                                 "IBV_LINK_LAYER_ETHERNET": 2})
ibv_gid_type: Any = IntEnum("ibv_gid_type", {"IBV_GID_TYPE_IB": 0, "IBV_GID_TYPE_ROCE_V1": 1,
                                             "IBV_GID_TYPE_ROCE_V2": 2})
ibv_gid_type_sysfs: Any = IntEnum("ibv_gid_type_sysfs", {"IBV_GID_TYPE_SYSFS_IB_ROCE_V1": 0,
                                                         "IBV_GID_TYPE_SYSFS_ROCE_V2": 1})
ibv_node_type: Any = IntEnum("ibv_node_type", {"IBV_NODE_UNKNOWN": -1, "IBV_NODE_CA": 1,
                                               "IBV_NODE_SWITCH": 2, "IBV_NODE_ROUTER": 3,
                                               "IBV_NODE_RNIC": 4, "IBV_NODE_USNIC": 5,
                                               "IBV_NODE_USNIC_UDP": 6, "IBV_NODE_UNSPECIFIED": 7})
ibv_transport_type: Any = IntEnum("ibv_transport_type", {"IBV_TRANSPORT_UNKNOWN": -1,
                                                         "IBV_TRANSPORT_IB": 0, "IBV_TRANSPORT_IWARP": 1,
                                                         "IBV_TRANSPORT_USNIC": 2,
                                                         "IBV_TRANSPORT_USNIC_UDP": 3,
                                                         "IBV_TRANSPORT_UNSPECIFIED": 4})
ibv_atomic_cap: Any = IntEnum("ibv_atomic_cap", {"IBV_ATOMIC_NONE": 0, "IBV_ATOMIC_HCA": 1,
                                                 "IBV_ATOMIC_GLOB": 2})
ibv_port_cap_flags: Any = IntFlag("ibv_port_cap_flags", {"IBV_PORT_CM_SUP": 1 << 16,
                                                         "IBV_PORT_IP_BASED_GIDS": 1 << 26})

_WC_EX = {"IBV_WC_EX_WITH_BYTE_LEN": 1 << 0, "IBV_WC_EX_WITH_IMM": 1 << 1,
          "IBV_WC_EX_WITH_QP_NUM": 1 << 2, "IBV_WC_EX_WITH_SRC_QP": 1 << 3,
          "IBV_WC_EX_WITH_SLID": 1 << 4, "IBV_WC_EX_WITH_SL": 1 << 5,
          "IBV_WC_EX_WITH_DLID_PATH_BITS": 1 << 6, "IBV_WC_EX_WITH_COMPLETION_TIMESTAMP": 1 << 7}
ibv_create_cq_wc_flags: Any = IntFlag("ibv_create_cq_wc_flags", {
    **_WC_EX, "IBV_WC_STANDARD_FLAGS": sum(v for v in _WC_EX.values() if v < 1 << 7)})

_CLASSES = [ibv_wr_opcode, ibv_wc_status, ibv_wc_opcode, ibv_qp_state, ibv_qp_type, ibv_access_flags,
            ibv_send_flags, ibv_mtu, ibv_qp_attr_mask, ibv_wc_flags, ibv_port_state, ibv_link_layer,
            ibv_gid_type, ibv_gid_type_sysfs, ibv_node_type, ibv_transport_type, ibv_atomic_cap,
            ibv_port_cap_flags, ibv_create_cq_wc_flags]
for _cls in _CLASSES:
    globals().update({_name: _member for _name, _member in _cls.__members__.items()})
del _cls
