/* InfiniBand / RoCEv2 constants: verbs enums (from ib_enums.def) and wire values.
 * Sources: protocol.md sections 1-5 (rxe_hdr.h, ib_pack.h, verbs.h). */
#ifndef RDMASIM_IB_H
#define RDMASIM_IB_H

#include <stdint.h>

/* Verbs enums: RS_<GROUP>_<NAME>, e.g. RS_WR_RDMA_WRITE, RS_WC_STATUS_RETRY_EXC_ERR. */
enum rs_verbs_enum {
#define RS_ENUM(group, name, value) RS_##group##_##name = (value),
#include "ib_enums.def"
#undef RS_ENUM
};

/* One row of ib_enums.def, for Python and docs. */
typedef struct rs_enum_entry {
    const char *group;
    const char *name;
    int64_t value;
} rs_enum_entry;

/* The table, terminated by a row with group == NULL. */
const rs_enum_entry *rs_enum_table(void);

/* RoCEv2 UDP destination port. */
#define RS_ROCE_UDP_PORT 4791u
/* rxe: UDP source port = 0xC000 + (hash(qpn) & 0x3FFF). */
#define RS_ROCE_SPORT_BASE 0xC000u
#define RS_DEFAULT_PKEY 0xFFFFu

/* BTH opcodes, RC transport (protocol.md 1.5). */
enum rs_bth_opcode {
    RS_OP_SEND_FIRST = 0x00,
    RS_OP_SEND_MIDDLE = 0x01,
    RS_OP_SEND_LAST = 0x02,
    RS_OP_SEND_LAST_IMM = 0x03,
    RS_OP_SEND_ONLY = 0x04,
    RS_OP_SEND_ONLY_IMM = 0x05,
    RS_OP_WRITE_FIRST = 0x06,
    RS_OP_WRITE_MIDDLE = 0x07,
    RS_OP_WRITE_LAST = 0x08,
    RS_OP_WRITE_LAST_IMM = 0x09,
    RS_OP_WRITE_ONLY = 0x0A,
    RS_OP_WRITE_ONLY_IMM = 0x0B,
    RS_OP_READ_REQUEST = 0x0C,
    RS_OP_READ_RESP_FIRST = 0x0D,
    RS_OP_READ_RESP_MIDDLE = 0x0E,
    RS_OP_READ_RESP_LAST = 0x0F,
    RS_OP_READ_RESP_ONLY = 0x10,
    RS_OP_ACKNOWLEDGE = 0x11,
    RS_OP_ATOMIC_ACK = 0x12,
    RS_OP_COMPARE_SWAP = 0x13,
    RS_OP_FETCH_ADD = 0x14,
    RS_OP_SEND_LAST_INV = 0x16,
    RS_OP_SEND_ONLY_INV = 0x17,
    RS_OP_FLUSH = 0x1C,        /* BTH + FETH + RETH (IBA 1.5 annex, rxe) */
    RS_OP_ATOMIC_WRITE = 0x1D, /* BTH + RETH + 8 payload bytes */
    RS_OP_UD_SEND_ONLY = 0x64,     /* UD transport: BTH + DETH */
    RS_OP_UD_SEND_ONLY_IMM = 0x65, /* BTH + DETH + ImmDt */
    RS_OP_CNP = 0x81,
};

/* AETH syndrome (protocol.md 2). */
#define RS_AETH_TYPE_MASK 0xE0u
#define RS_AETH_ACK 0x00u
#define RS_AETH_RNR_NAK 0x20u
#define RS_AETH_NAK 0x60u
#define RS_AETH_ACK_UNLIMITED 0x1Fu
#define RS_AETH_NAK_PSN_SEQ 0x60u
#define RS_AETH_NAK_INV_REQ 0x61u
#define RS_AETH_NAK_REM_ACCESS 0x62u
#define RS_AETH_NAK_REM_OP 0x63u

/* ibv_wc_flags */
#define RS_WC_FLAG_GRH 1u
#define RS_WC_FLAG_WITH_IMM 2u
/* Q_Key high bit in a UD send WR: use the QP's own qkey (IBA 10.2.5) */
#define RS_QKEY_USE_QP 0x80000000u

#define RS_PSN_MASK 0x00FFFFFFu
#define RS_QPN_MASK 0x00FFFFFFu

/* Signed distance a - b in 24-bit PSN space: > 0 if a is after b (protocol.md 3.1). */
static inline int32_t rs_psn_diff(uint32_t a, uint32_t b)
{
    return (int32_t)((uint32_t)(a - b) << 8) >> 8;
}

/* Path MTU enum (1..5) to payload bytes; 0 for an invalid enum. */
static inline uint32_t rs_mtu_bytes(int mtu_enum)
{
    return (mtu_enum >= 1 && mtu_enum <= 5) ? (128u << mtu_enum) : 0u;
}

#endif
