/* The wire protocol between librdmasim_ibverbs.so (a verbs program's process) and the fabric daemon
 * (rdmasim/fabricd/server.py; rdmasim/fabricd/proto.py reads these numbers from this file).
 *
 * Every message is a 16-byte header, then n_u64 little-endian 64-bit words, then n_bytes bytes.
 * Request header: op, n_u64, n_bytes, 0.  Reply header: status (>= 0: success, the op's value;
 * < 0: -errno), n_u64, n_bytes, 0.  A failed reply's bytes are a message saying why.
 * REG_MR and CREATE_COMP_CHANNEL carry one file descriptor (SCM_RIGHTS) with the request. */
#ifndef RDMASIM_CVERBS_PROTO_H
#define RDMASIM_CVERBS_PROTO_H

#define RSD_PROTO_VERSION 1

enum rsd_op {
    RSD_HELLO = 1,          /* u64: version, pid, holder (1: rdmasim exec itself); bytes: first host's name -> u64: (host, node GUID) per device */
    RSD_QUERY_DEVICE = 2,   /* host */
    RSD_QUERY_PORT = 3,     /* host, port */
    RSD_QUERY_GID = 4,      /* host, port, index -> bytes: 16-byte GID */
    RSD_ALLOC_PD = 5,       /* host -> status: pd handle */
    RSD_DEALLOC_PD = 6,     /* host, pd */
    RSD_REG_MR = 7,         /* host, pd, addr, length, access, offset of addr in the fd's mapping, mapping length */
    RSD_DEREG_MR = 8,       /* host, mr index */
    RSD_CREATE_CQ = 9,      /* host, cqe, channel (0: none), cookie (the CQ's address) -> u64: handle, cqe */
    RSD_DESTROY_CQ = 10,    /* host, cq */
    RSD_CREATE_QP = 11,     /* host, pd, send_cq, recv_cq, srq, qp_type, sq_sig_all, caps(5) -> u64: qpn, caps(5) */
    RSD_MODIFY_QP = 12,     /* host, qpn, mask, attr words (RSD_QPA_*); bytes: 16-byte dgid */
    RSD_QUERY_QP = 13,      /* host, qpn -> u64: attr words (RSD_QPA_*), caps(5) */
    RSD_DESTROY_QP = 14,    /* host, qpn */
    RSD_POST_SEND = 15,     /* host, qpn, n, then per WR RSD_SWR_WORDS words and 3 words per SGE -> status: 0, or
                             * -errno with u64: index of the bad WR */
    RSD_POST_RECV = 16,     /* host, qpn (0 with srq), srq, n, per WR: wr_id, num_sge, then 3 words per SGE */
    RSD_POLL_CQ = 17,       /* host, cq, n -> status: count; u64: RSD_WC_WORDS per completion.  Waits (see server) */
    RSD_REQ_NOTIFY = 18,    /* host, cq, solicited_only */
    RSD_CREATE_CHANNEL = 19,/* (fd: an eventfd the daemon writes 1 to per event) -> status: channel id */
    RSD_DESTROY_CHANNEL = 20, /* channel */
    RSD_GET_CQ_EVENT = 21,  /* channel -> u64: host, cq, cookie.  Waits until an event is due */
    RSD_CREATE_SRQ = 22,    /* host, pd, max_wr, max_sge, limit -> status: handle */
    RSD_DESTROY_SRQ = 23,   /* host, srq */
    RSD_MODIFY_SRQ = 24,    /* host, srq, mask, max_wr, limit */
    RSD_QUERY_SRQ = 25,     /* host, srq -> u64: max_wr, max_sge, limit */
    RSD_CREATE_AH = 26,     /* host, pd, is_global, dlid, traffic_class; bytes: dgid -> status: dest host */
    RSD_IDLE = 27,          /* this process waits outside verbs until its next call (time may pass) */
    RSD_NOW = 28,           /* -> u64: simulated time (ps), the daemon's wall clock at start (ns since the epoch) */
    /* 64 on: rdmasim/fabricd/server_ext.py */
    RSD_QUERY_DEVICE_EX = 64, /* host -> u64: the words of RSD_DEVX_* */
    RSD_RESIZE_CQ = 65,     /* host, cq, cqe -> u64: the CQ's new cqe */
    RSD_ALLOC_MW = 66,      /* host, pd, type -> status: the window's index; u64: rkey */
    RSD_DEALLOC_MW = 67,    /* host, index */
    RSD_OPEN_ASYNC = 68,    /* host (fd: an eventfd the daemon writes 1 to per event) -> status: queue id */
    RSD_CLOSE_ASYNC = 69,   /* queue */
    RSD_GET_ASYNC_EVENT = 70, /* queue -> u64: event type, element kind (RSD_ELEM_*), element handle.
                               * Waits until an event is due */
    RSD_MEMWAIT = 71,       /* addr, length: the process spins reading these bytes of its registered memory ->
                             * status: 1 when they changed, 0 (the fabric is quiet: nothing will change them).
                             * Waits until either (RDMASIM_WATCH_MEMORY; see memwatch.c) */
};

/* what an asynchronous event concerns */
enum rsd_elem { RSD_ELEM_NONE, RSD_ELEM_QP, RSD_ELEM_CQ, RSD_ELEM_SRQ, RSD_ELEM_PORT };

/* ibv_device_attr_ex beyond orig_attr, in this order (RSD_QUERY_DEVICE_EX) */
enum rsd_devx {
    RSD_DEVX_CAP_FLAGS_EX, RSD_DEVX_PHYS_PORT_CNT_EX, RSD_DEVX_ODP_GENERAL, RSD_DEVX_ODP_RC, RSD_DEVX_ODP_UC,
    RSD_DEVX_ODP_UD, RSD_DEVX_XRC_ODP, RSD_DEVX_TS_MASK, RSD_DEVX_CORE_CLOCK, RSD_DEVX_RAW_PACKET_CAPS,
    RSD_DEVX_MAX_WQ_TYPE_RQ, RSD_DEVX_MAX_DM_SIZE, RSD_DEVX_MAX_TSO, RSD_DEVX_TSO_QPTS, RSD_DEVX_WORDS
};

/* QP attribute words of MODIFY_QP / QUERY_QP, in this order */
enum rsd_qpa {
    RSD_QPA_STATE, RSD_QPA_CUR_STATE, RSD_QPA_PATH_MTU, RSD_QPA_ACCESS, RSD_QPA_PKEY_INDEX, RSD_QPA_PORT,
    RSD_QPA_QKEY, RSD_QPA_DEST_QP, RSD_QPA_RQ_PSN, RSD_QPA_SQ_PSN, RSD_QPA_MAX_RD_ATOMIC,
    RSD_QPA_MAX_DEST_RD_ATOMIC, RSD_QPA_MIN_RNR_TIMER, RSD_QPA_TIMEOUT, RSD_QPA_RETRY_CNT, RSD_QPA_RNR_RETRY,
    RSD_QPA_AH_IS_GLOBAL, RSD_QPA_AH_DLID, RSD_QPA_AH_SGID_INDEX, RSD_QPA_AH_TRAFFIC_CLASS, RSD_QPA_AH_HOP_LIMIT,
    RSD_QPA_AH_SL, RSD_QPA_WORDS
};

/* a send WR: wr_id, opcode, send_flags, imm_data (host order), remote_addr, rkey, compare_add, swap,
 * ah (the AH's destination host, -1: none), remote_qpn, remote_qkey, num_sge; then the SGEs */
#define RSD_SWR_WORDS 12
/* IBV_WR_BIND_MW: remote_addr is the window's start, rkey its new key, compare_add its length, swap
 * the access flags << 32 | the region's lkey, remote_qpn the window's current key */
/* IBV_SEND_INLINE WRs: their SGEs' bytes follow the words, in WR order (the daemon copies them to memory
 * of its own that the NIC reads) */
/* a completion: wr_id, status, opcode, vendor_err, byte_len, imm_data (host order), qp_num, src_qp,
 * wc_flags, pkey_index, slid, sl, dlid_path_bits */
#define RSD_WC_WORDS 13

#endif
