/* Memory windows (rxe_mw.c rules, IBA 10.6.7): a window grants remote access to part of a memory
 * region that has IBV_ACCESS_MW_BIND.  Type 1 windows are bound by ibv_bind_mw, type 2 by a
 * IBV_WR_BIND_MW work request; a type 2 window is bound to the QP that bound it.  Window keys use
 * slot indexes from RS_MW_MIN_INDEX on (rxe_param.h's RXE_MIN_MW_INDEX), so one key names either a
 * region or a window (rxe's rkey_is_mw). */
#ifndef RDMASIM_TRANSPORT_MW_H
#define RDMASIM_TRANSPORT_MW_H

#include <stdint.h>

struct rs_transport;
struct rs_host;
struct rs_qp;
struct rs_swqe;

#define RS_MW_MIN_INDEX 0x00010001u /* rxe_param.h RXE_MIN_MW_INDEX; regions use indexes below it */
#define RS_MW_MAX 0x00001000u       /* rxe_param.h RXE_MAX_MW */

enum { RS_MW_SLOT_FREE = 0, RS_MW_STATE_FREE = 1, RS_MW_STATE_VALID = 2 }; /* rxe's FREE / VALID */

typedef struct rs_mw {
    uint32_t state;  /* RS_MW_SLOT_FREE: not allocated */
    uint32_t type;   /* 1 or 2 */
    uint32_t pd;
    uint32_t rkey;
    uint32_t qpn;    /* type 2: the QP it was bound through */
    int32_t mr;      /* region index, -1 when unbound */
    uint32_t access;
    uint64_t addr;
    uint64_t length;
} rs_mw;

static inline int rs_key_is_mw(uint32_t key) { return (key >> 8) >= RS_MW_MIN_INDEX; }

/* Remote access under a window key for QP `qpn` on PD `pd`: the window is valid, its key, PD,
 * QP (type 2), access and range match, and its region still resolves. NULL otherwise.  `addr` is
 * an offset from the window's start for a zero-based window (IBV_ACCESS_ZERO_BASED), else an
 * address of the region. */
uint8_t *rs_mw_resolve(struct rs_host *h, uint32_t key, uint32_t qpn, uint32_t pd, uint32_t need, uint64_t addr,
                       uint64_t len);

/* The local operations of a send queue, run by the requester in order: IBV_WR_BIND_MW and
 * IBV_WR_LOCAL_INV. Return the WQE's completion status (IBV_WC_SUCCESS, IBV_WC_MW_BIND_ERR or
 * IBV_WC_LOC_QP_OP_ERR, as rxe_do_local_ops). */
uint32_t rs_mw_bind(struct rs_host *h, const struct rs_qp *qp, const struct rs_swqe *w);
uint32_t rs_mw_local_inv(struct rs_host *h, uint32_t key);

/* Invalidation by a received SEND with Invalidate (IETH): 0, or -1 when the key names no
 * window of type 2 that is valid on this PD (rxe_invalidate_mw). */
int rs_mw_invalidate(struct rs_host *h, uint32_t key, uint32_t pd);

/* QP `qpn` is destroyed: the type 2 windows bound through it become unbound (rxe keeps the QP
 * referenced by the window, so no access through it can succeed; a QP number reused later must
 * not inherit the binding). */
void rs_mw_forget_qp(struct rs_host *h, uint32_t qpn);

/* Windows bound to region `mr` (a bound region cannot be deregistered, as rxe). */
uint32_t rs_mw_count_on_mr(const struct rs_host *h, int mr);

#endif
