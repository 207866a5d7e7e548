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
/* ATOMIC WRITE (8 bytes placed at once) and FLUSH: single-packet requests answered by a zero-length
 * RDMA READ response ONLY (IBA 1.5 annex A19; rxe send_read_response_ack) */
static inline int rs_op_is_atomic_write(uint8_t op) { return op == RS_OP_ATOMIC_WRITE; }
static inline int rs_op_is_flush(uint8_t op) { return op == RS_OP_FLUSH; }
/* Requests that take a responder resource and get their own response (not a plain ACK) */
static inline int rs_op_is_rd_atomic(uint8_t op)
{
    return rs_op_is_read(op) || rs_op_is_atomic(op) || rs_op_is_atomic_write(op) || rs_op_is_flush(op);
}
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
