/* BTH opcode classes (protocol.md 1.5), shared by the Go-Back-N and IRN responders. */
#ifndef RDMASIM_TRANSPORT_OPCODES_H
#define RDMASIM_TRANSPORT_OPCODES_H

#include <stdint.h>

#include "rdmasim/ib.h"

static inline int rs_op_is_send(uint8_t op)
{
    return op <= RS_OP_SEND_ONLY_IMM || op == RS_OP_SEND_LAST_INV || op == RS_OP_SEND_ONLY_INV;
}
/* SEND with Invalidate: the IETH names the rkey to invalidate (IBA 9.4.1.1.4) */
static inline int rs_op_has_inv(uint8_t op) { return op == RS_OP_SEND_LAST_INV || op == RS_OP_SEND_ONLY_INV; }
static inline int rs_op_is_read(uint8_t op) { return op == RS_OP_READ_REQUEST; }
static inline int rs_op_is_atomic(uint8_t op) { return op == RS_OP_COMPARE_SWAP || op == RS_OP_FETCH_ADD; }
static inline int rs_op_is_write(uint8_t op) { return op >= RS_OP_WRITE_FIRST && op <= RS_OP_WRITE_ONLY_IMM; }

/* FIRST or ONLY: the packet starts a SEND/WRITE message. */
static inline int rs_op_starts(uint8_t op)
{
    return op == RS_OP_SEND_FIRST || op == RS_OP_SEND_ONLY || op == RS_OP_SEND_ONLY_IMM ||
           op == RS_OP_SEND_ONLY_INV || op == RS_OP_WRITE_FIRST || op == RS_OP_WRITE_ONLY || op == RS_OP_WRITE_ONLY_IMM;
}

/* LAST or ONLY: the packet ends a SEND/WRITE message. */
static inline int rs_op_ends(uint8_t op)
{
    return op == RS_OP_SEND_LAST || op == RS_OP_SEND_LAST_IMM || op == RS_OP_SEND_ONLY ||
           op == RS_OP_SEND_ONLY_IMM || rs_op_has_inv(op) || op == RS_OP_WRITE_LAST || op == RS_OP_WRITE_LAST_IMM ||
           op == RS_OP_WRITE_ONLY || op == RS_OP_WRITE_ONLY_IMM;
}

static inline int rs_op_has_imm(uint8_t op)
{
    return op == RS_OP_SEND_LAST_IMM || op == RS_OP_SEND_ONLY_IMM || op == RS_OP_WRITE_LAST_IMM ||
           op == RS_OP_WRITE_ONLY_IMM;
}

#endif
