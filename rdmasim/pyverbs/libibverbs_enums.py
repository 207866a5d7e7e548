"""``pyverbs.libibverbs_enums``: the verbs enum classes with rdma-core's names and values.

As with rdma-core's pyverbs (v59), each enum is a class (``ibv_qp_type.IBV_QPT_RC``) and each member
is also a module-level name (``IBV_QPT_RC``). The data-path enums come from rdmasim's C table
(:mod:`rdmasim.verbs.enums`); the device, port and GID enums below are libibverbs' ``verbs.h``
values, which no emulated behaviour depends on.
"""

from __future__ import annotations

from enum import IntEnum, IntFlag
from typing import Any

from rdmasim.pyverbs import _enum_merge, _enum_values
from rdmasim.verbs import enums as _e

# the emulated opcodes plus verbs.h's others (post_send refuses them)
ibv_wr_opcode: Any = IntEnum("ibv_wr_opcode", {**_e.ibv_wr_opcode.__members__, "IBV_WR_DRIVER1": 11,
                                               "IBV_WR_FLUSH": 14, "IBV_WR_ATOMIC_WRITE": 15})
ibv_wc_status: Any = _e.ibv_wc_status
ibv_wc_opcode: Any = _e.ibv_wc_opcode
ibv_qp_state: Any = _e.ibv_qp_state
# the emulated types (rdmasim's C table) plus the rest of verbs.h's, which QP creation refuses
ibv_qp_type: Any = IntEnum("ibv_qp_type", {**_e.ibv_qp_type.__members__, "IBV_QPT_RAW_PACKET": 8,
                                           "IBV_QPT_XRC_SEND": 9, "IBV_QPT_XRC_RECV": 10,
                                           "IBV_QPT_DRIVER": 0xFF})
# the emulated access bits plus verbs.h's others (IBV_ACCESS_RELAXED_ORDERING is the first
# optional bit, IBV_ACCESS_OPTIONAL_FIRST)
ibv_access_flags: Any = IntFlag("ibv_access_flags", {
    **_e.ibv_access_flags.__members__, "IBV_ACCESS_HUGETLB": 1 << 7, "IBV_ACCESS_FLUSH_GLOBAL": 1 << 8,
    "IBV_ACCESS_FLUSH_PERSISTENT": 1 << 9, "IBV_ACCESS_RELAXED_ORDERING": 1 << 20})
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

ibv_odp_general_caps: Any = IntFlag("ibv_odp_general_caps", {"IBV_ODP_SUPPORT": 1,
                                                             "IBV_ODP_SUPPORT_IMPLICIT": 2})
ibv_odp_transport_cap_bits: Any = IntFlag("ibv_odp_transport_cap_bits", {
    "IBV_ODP_SUPPORT_SEND": 1, "IBV_ODP_SUPPORT_RECV": 2, "IBV_ODP_SUPPORT_WRITE": 4,
    "IBV_ODP_SUPPORT_READ": 8, "IBV_ODP_SUPPORT_ATOMIC": 16, "IBV_ODP_SUPPORT_SRQ_RECV": 32,
    "IBV_ODP_SUPPORT_FLUSH": 64, "IBV_ODP_SUPPORT_ATOMIC_WRITE": 128})
ibv_device_cap_flags: Any = IntFlag("ibv_device_cap_flags", {
    "IBV_DEVICE_RESIZE_MAX_WR": 1, "IBV_DEVICE_BAD_PKEY_CNTR": 2, "IBV_DEVICE_BAD_QKEY_CNTR": 4,
    "IBV_DEVICE_RAW_MULTI": 8, "IBV_DEVICE_AUTO_PATH_MIG": 16, "IBV_DEVICE_CHANGE_PHY_PORT": 32,
    "IBV_DEVICE_UD_AV_PORT_ENFORCE": 64, "IBV_DEVICE_CURR_QP_STATE_MOD": 128,
    "IBV_DEVICE_SHUTDOWN_PORT": 256, "IBV_DEVICE_INIT_TYPE": 512, "IBV_DEVICE_PORT_ACTIVE_EVENT": 1024,
    "IBV_DEVICE_SYS_IMAGE_GUID": 2048, "IBV_DEVICE_RC_RNR_NAK_GEN": 4096,
    "IBV_DEVICE_SRQ_RESIZE": 8192, "IBV_DEVICE_N_NOTIFY_CQ": 16384, "IBV_DEVICE_MEM_WINDOW": 1 << 17,
    "IBV_DEVICE_UD_IP_CSUM": 1 << 18, "IBV_DEVICE_XRC": 1 << 20,
    "IBV_DEVICE_MEM_MGT_EXTENSIONS": 1 << 21, "IBV_DEVICE_MEM_WINDOW_TYPE_2A": 1 << 23,
    "IBV_DEVICE_MEM_WINDOW_TYPE_2B": 1 << 24, "IBV_DEVICE_RC_IP_CSUM": 1 << 25,
    "IBV_DEVICE_RAW_IP_CSUM": 1 << 26, "IBV_DEVICE_MANAGED_FLOW_STEERING": 1 << 29})
ibv_qp_init_attr_mask: Any = IntFlag("ibv_qp_init_attr_mask", {
    "IBV_QP_INIT_ATTR_PD": 1, "IBV_QP_INIT_ATTR_XRCD": 2, "IBV_QP_INIT_ATTR_CREATE_FLAGS": 4,
    "IBV_QP_INIT_ATTR_MAX_TSO_HEADER": 8, "IBV_QP_INIT_ATTR_IND_TABLE": 16,
    "IBV_QP_INIT_ATTR_RX_HASH": 32, "IBV_QP_INIT_ATTR_SEND_OPS_FLAGS": 64})
ibv_qp_create_flags: Any = IntFlag("ibv_qp_create_flags", {
    "IBV_QP_CREATE_BLOCK_SELF_MCAST_LB": 2, "IBV_QP_CREATE_SCATTER_FCS": 256,
    "IBV_QP_CREATE_CVLAN_STRIPPING": 512, "IBV_QP_CREATE_SOURCE_QPN": 1024,
    "IBV_QP_CREATE_PCI_WRITE_END_PADDING": 2048})
ibv_raw_packet_caps: Any = IntFlag("ibv_raw_packet_caps", {
    "IBV_RAW_PACKET_CAP_CVLAN_STRIPPING": 1, "IBV_RAW_PACKET_CAP_SCATTER_FCS": 2,
    "IBV_RAW_PACKET_CAP_IP_CSUM": 4, "IBV_RAW_PACKET_CAP_DELAY_DROP": 8})

# device_cap_flags_ex bits beyond 32 bits, exposed with a leading underscore as pyverbs does
_IBV_DEVICE_RAW_SCATTER_FCS = 1 << 34
_IBV_DEVICE_PCI_WRITE_END_PADDING = 1 << 36
_IBV_DEVICE_FLUSH_GLOBAL = 1 << 38
_IBV_DEVICE_FLUSH_PERSISTENT = 1 << 39
_IBV_DEVICE_ATOMIC_WRITE = 1 << 40

_WC_EX = {"IBV_WC_EX_WITH_BYTE_LEN": 1 << 0, "IBV_WC_EX_WITH_IMM": 1 << 1,
          "IBV_WC_EX_WITH_QP_NUM": 1 << 2, "IBV_WC_EX_WITH_SRC_QP": 1 << 3,
          "IBV_WC_EX_WITH_SLID": 1 << 4, "IBV_WC_EX_WITH_SL": 1 << 5,
          "IBV_WC_EX_WITH_DLID_PATH_BITS": 1 << 6, "IBV_WC_EX_WITH_COMPLETION_TIMESTAMP": 1 << 7}
ibv_create_cq_wc_flags: Any = IntFlag("ibv_create_cq_wc_flags", {
    **_WC_EX, "IBV_WC_STANDARD_FLAGS": sum(v for v in _WC_EX.values() if v < 1 << 7)})

ibv_cq_init_attr_mask: Any = IntFlag("ibv_cq_init_attr_mask", {"IBV_CQ_INIT_ATTR_MASK_FLAGS": 1,
                                                               "IBV_CQ_INIT_ATTR_MASK_PD": 2})
ibv_create_cq_attr_flags: Any = IntFlag("ibv_create_cq_attr_flags", {
    "IBV_CREATE_CQ_ATTR_SINGLE_THREADED": 1, "IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN": 2})
ibv_event_type: Any = IntEnum("ibv_event_type", {n: i for i, n in enumerate((
    "IBV_EVENT_CQ_ERR", "IBV_EVENT_QP_FATAL", "IBV_EVENT_QP_REQ_ERR", "IBV_EVENT_QP_ACCESS_ERR",
    "IBV_EVENT_COMM_EST", "IBV_EVENT_SQ_DRAINED", "IBV_EVENT_PATH_MIG", "IBV_EVENT_PATH_MIG_ERR",
    "IBV_EVENT_DEVICE_FATAL", "IBV_EVENT_PORT_ACTIVE", "IBV_EVENT_PORT_ERR", "IBV_EVENT_LID_CHANGE",
    "IBV_EVENT_PKEY_CHANGE", "IBV_EVENT_SM_CHANGE", "IBV_EVENT_SRQ_ERR",
    "IBV_EVENT_SRQ_LIMIT_REACHED", "IBV_EVENT_QP_LAST_WQE_REACHED", "IBV_EVENT_CLIENT_REREGISTER",
    "IBV_EVENT_GID_CHANGE", "IBV_EVENT_WQ_FATAL"))})
ibv_mw_type: Any = IntEnum("ibv_mw_type", {"IBV_MW_TYPE_1": 1, "IBV_MW_TYPE_2": 2})
ibv_placement_type: Any = IntFlag("ibv_placement_type", {"IBV_FLUSH_GLOBAL": 1,
                                                         "IBV_FLUSH_PERSISTENT": 2})
ibv_selectivity_level: Any = IntEnum("ibv_selectivity_level", {"IBV_FLUSH_RANGE": 0, "IBV_FLUSH_MR": 1})
ibv_qp_create_send_ops_flags: Any = IntFlag("ibv_qp_create_send_ops_flags", {n: 1 << i for i, n in enumerate((
    "IBV_QP_EX_WITH_RDMA_WRITE", "IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM", "IBV_QP_EX_WITH_SEND",
    "IBV_QP_EX_WITH_SEND_WITH_IMM", "IBV_QP_EX_WITH_RDMA_READ", "IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP",
    "IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD", "IBV_QP_EX_WITH_LOCAL_INV", "IBV_QP_EX_WITH_BIND_MW",
    "IBV_QP_EX_WITH_SEND_WITH_INV", "IBV_QP_EX_WITH_TSO", "IBV_QP_EX_WITH_FLUSH",
    "IBV_QP_EX_WITH_ATOMIC_WRITE"))})
ibv_query_qp_data_in_order_caps: Any = IntFlag("ibv_query_qp_data_in_order_caps", {
    "IBV_QUERY_QP_DATA_IN_ORDER_WHOLE_MSG": 1, "IBV_QUERY_QP_DATA_IN_ORDER_ALIGNED_128_BYTES": 2})
ibv_query_qp_data_in_order_flags: Any = IntFlag("ibv_query_qp_data_in_order_flags", {
    "IBV_QUERY_QP_DATA_IN_ORDER_RETURN_CAPS": 1})
ibv_rereg_mr_flags: Any = IntFlag("ibv_rereg_mr_flags", {
    "IBV_REREG_MR_CHANGE_TRANSLATION": 1, "IBV_REREG_MR_CHANGE_PD": 2, "IBV_REREG_MR_CHANGE_ACCESS": 4,
    "IBV_REREG_MR_FLAGS_SUPPORTED": 7})
ibv_srq_attr_mask: Any = IntFlag("ibv_srq_attr_mask", {"IBV_SRQ_MAX_WR": 1, "IBV_SRQ_LIMIT": 2})
ibv_srq_init_attr_mask: Any = IntFlag("ibv_srq_init_attr_mask", {
    "IBV_SRQ_INIT_ATTR_TYPE": 1, "IBV_SRQ_INIT_ATTR_PD": 2, "IBV_SRQ_INIT_ATTR_XRCD": 4,
    "IBV_SRQ_INIT_ATTR_CQ": 8, "IBV_SRQ_INIT_ATTR_TM": 16, "IBV_SRQ_INIT_ATTR_RESERVED": 32})
ibv_srq_type: Any = IntEnum("ibv_srq_type", {"IBV_SRQT_BASIC": 0, "IBV_SRQT_XRC": 1, "IBV_SRQT_TM": 2})
ibv_xrcd_init_attr_mask: Any = IntFlag("ibv_xrcd_init_attr_mask", {
    "IBV_XRCD_INIT_ATTR_FD": 1, "IBV_XRCD_INIT_ATTR_OFLAGS": 2, "IBV_XRCD_INIT_ATTR_RESERVED": 4})

# ibv_advise_mr's advice and flags (kernel uAPI ib_uverbs_advise_mr_*), underscored as in pyverbs
_IBV_ADVISE_MR_ADVICE_PREFETCH = 0
_IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE = 1
_IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT = 2
_IBV_ADVISE_MR_FLAG_FLUSH = 1

_CLASSES = [ibv_wr_opcode, ibv_wc_status, ibv_wc_opcode, ibv_qp_state, ibv_qp_type, ibv_access_flags,
            ibv_send_flags, ibv_mtu, ibv_qp_attr_mask, ibv_wc_flags, ibv_port_state, ibv_link_layer,
            ibv_gid_type, ibv_gid_type_sysfs, ibv_node_type, ibv_transport_type, ibv_atomic_cap,
            ibv_port_cap_flags, ibv_create_cq_wc_flags, ibv_odp_general_caps, ibv_odp_transport_cap_bits,
            ibv_device_cap_flags, ibv_qp_init_attr_mask, ibv_qp_create_flags, ibv_raw_packet_caps,
            ibv_cq_init_attr_mask, ibv_create_cq_attr_flags, ibv_event_type, ibv_mw_type,
            ibv_placement_type, ibv_selectivity_level, ibv_qp_create_send_ops_flags,
            ibv_query_qp_data_in_order_caps, ibv_query_qp_data_in_order_flags, ibv_rereg_mr_flags,
            ibv_srq_attr_mask, ibv_srq_init_attr_mask, ibv_srq_type, ibv_xrcd_init_attr_mask]
for _cls in _CLASSES:
    globals().update({_name: _member for _name, _member in _cls.__members__.items()})
del _cls

# every other enum and member of rdma-core's libibverbs_enums.pxd (and verbs.h's ibv_rate), with
# the values of rdma-core's headers
_enum_merge.complete(globals(), _enum_values.VERBS, _enum_values.VERBS_ALIASES)
