/* A host's QP numbers and the table that finds a QP by its number (qpn.c).
 *
 * Numbers are handed out in order, cyclically over [RS_QPN_BASE, limit] (limit = RS_QPN_MASK: the
 * 24-bit BTH field), skipping those still in use, as rxe allocates its QP indices (and those the
 * table below cannot place): a number comes back only after the whole range went round, so frames
 * still in flight to a destroyed QP do not reach a new one, and a host can create QPs without end
 * (a bulk flow creates one per host).
 * The table is indexed by the number's low bits, so a lookup is one load and QPs created one after
 * another sit side by side.  It is kept at most 7/8 full (doubling when a QP would fill more),
 * and a number whose slot holds an older live one is passed over like a number in use: its size
 * follows the most QPs alive at once, not the QPs ever created nor the span between the oldest
 * and the newest live number (one long-lived QP among millions of short ones made a table of the
 * whole 24-bit range when slots were doubled until two numbers no longer shared one).  Each slot
 * keeps the number beside the pointer: a lookup reads no QP. */
#ifndef RDMASIM_TRANSPORT_QPN_H
#define RDMASIM_TRANSPORT_QPN_H

#include <stddef.h>
#include <stdint.h>

struct rs_qp;

/* The first QP number (0 and 1 are QP0/QP1 on real devices; rxe starts its RC QPs at 0x11). */
#define RS_QPN_BASE 0x11u

typedef struct rs_qpn_slot {
    uint32_t qpn;
    struct rs_qp *qp; /* NULL: empty */
} rs_qpn_slot;

typedef struct rs_qpn_table {
    rs_qpn_slot *slot; /* mask + 1 slots, or NULL before the first QP */
    uint32_t mask;
    uint32_t live;     /* QPs in the table */
    uint32_t next;     /* the number to try first for the next QP */
    uint32_t limit;    /* the highest number (RS_QPN_MASK unless a test lowers it) */
} rs_qpn_table;

void rs_qpn_init(rs_qpn_table *t, uint32_t limit);
void rs_qpn_free(rs_qpn_table *t);
/* Give qp the next free number (*qpn) and enter it: RS_OK, or RS_ERR_NOMEM when every number is in
 * use (*qpn = 0) or memory ran out (*qpn = the number it would have had). */
int rs_qpn_add(rs_qpn_table *t, struct rs_qp *qp, uint32_t *qpn);
/* Forget a number (no-op when not in use). */
void rs_qpn_remove(rs_qpn_table *t, uint32_t qpn);

static inline struct rs_qp *rs_qpn_find(const rs_qpn_table *t, uint32_t qpn)
{
    if (!t->slot)
        return NULL;
    const rs_qpn_slot *s = &t->slot[qpn & t->mask];
    return s->qpn == qpn ? s->qp : NULL;
}

/* Visit every live QP: for (i = 0; i < rs_qpn_slots(t); i++) if (t->slot[i].qp) ... */
static inline size_t rs_qpn_slots(const rs_qpn_table *t) { return t->slot ? (size_t)t->mask + 1 : 0; }

#endif
