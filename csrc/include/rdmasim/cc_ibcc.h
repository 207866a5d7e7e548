/* InfiniBand congestion control (IBA vol. 1 annex A10), the CA's reaction (csrc/cc/ibcc.c): its
 * parameters and its per-QP state.  Plain C (cffi-clean). */
#ifndef RDMASIM_CC_IBCC_H
#define RDMASIM_CC_IBCC_H

#include <stdint.h>

/* Congestion control table entries a host holds: two of the annex's 64-entry blocks (the Linux
 * qib driver's minimum table, IB_CCT_MIN_ENTRIES). */
#define RS_IBCC_CCT_MAX 128

typedef struct rs_ibcc_params {
    int64_t ccti_timer_ps;   /* CCTI_Timer: each expiry lowers CCTI by one (annex: 1.024 us units) */
    int64_t ipd_unit_ps;     /* the time one unit of an entry's inter-packet delay stands for */
    uint16_t ccti_increase;  /* CCTI_Increase: added to CCTI per BECN */
    uint16_t ccti_limit;     /* CCTI_Limit: the highest index (< cct_len) */
    uint16_t ccti_min;       /* CCTI_Min: the timer stops lowering CCTI here */
    uint16_t cct_len;        /* entries in cct */
    uint16_t cct[RS_IBCC_CCT_MAX]; /* CCT entries as on the wire: shift (bits 15:14), multiplier (13:0) */
} rs_ibcc_params;

typedef struct rs_ibcc_state {
    double line_bps;         /* the port's rate */
    int64_t next_timer_ps;   /* the CCTI_Timer's next expiry (0 = not running) */
    uint32_t last_wire_bytes; /* the packet just sent: the pacer spaces the next one after it */
    uint16_t ccti;           /* the index into the CCT */
    uint16_t ccti_peak;      /* the highest CCTI reached (statistics) */
    uint64_t becns;          /* BECNs (CNPs) received */
    uint64_t at_limit;       /* of which found CCTI at CCTI_Limit already */
    uint64_t expiries;       /* timer expiries (each lowered CCTI by one) */
} rs_ibcc_state;

/* The inter-packet delay of a CCT entry: multiplier << shift, in ipd_unit. */
uint32_t rs_ibcc_ipd(uint16_t entry);
void rs_ibcc_init(rs_ibcc_state *s, const rs_ibcc_params *p, double line_bps);
void rs_ibcc_on_becn(rs_ibcc_state *s, const rs_ibcc_params *p, int64_t now_ps);
/* Apply every timer expiry up to now. */
void rs_ibcc_on_timer(rs_ibcc_state *s, const rs_ibcc_params *p, int64_t now_ps);
/* The delay the current CCT entry inserts after each packet (ps). */
int64_t rs_ibcc_delay_ps(const rs_ibcc_state *s, const rs_ibcc_params *p);
/* The rate that spaces packets of wire_bytes by their wire time plus the delay (0 = line rate). */
double rs_ibcc_rate_bps(const rs_ibcc_state *s, const rs_ibcc_params *p, uint32_t wire_bytes);

#endif
