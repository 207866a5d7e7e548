/* InfiniBand congestion control: the CA's congestion control agent (IBA vol. 1 annex A10).
 *
 * A switch port whose queue passes its threshold marks FECN in the BTH (here: the ECN CE mark of
 * link/ecn.c, which the IB codec shows as the FECN bit); the destination CA returns a BECN to the
 * source (here: the CNP of transport/cc_qp.c, BECN set, as RoCEv2 annex A17 does it); the source CA
 * keeps a CCT index per QP:
 *
 *   BECN                      ─▶ CCTI <- min(CCTI + CCTI_Increase, CCTI_Limit); start the
 *                                CCTI_Timer if it is not running
 *   CCTI_Timer expires        ─▶ CCTI <- CCTI - 1 if CCTI > CCTI_Min; run again while CCTI > CCTI_Min
 *   sending                   ─▶ after each packet the QP waits CCT[CCTI]'s inter-packet delay
 *
 * A CCT entry is 16 bits, CCT_Shift (15:14) and CCT_Multiplier (13:0) (OpenSM
 * osm_congestion_control.c, Linux ib_cc_table_entry); its delay here is multiplier << shift units
 * of ipd_unit.  The timer follows the Linux hfi1 driver (process_becn / cca_timer_fn): started by a
 * BECN when idle, not restarted by later BECNs, re-armed at each expiry while CCTI > CCTI_Min.
 *
 * The delay is inserted after each packet: a packet of wire time T holds the QP for T + delay,
 * which the NIC's pacer (a rate per packet) gets as wire_bits / (T + delay) from the size of the
 * packet just sent (on_sent comes before rate_bps).  Nothing here allocates. */
#include <string.h>

#include "rdmasim/cc.h"
#include "rdmasim/cc_ibcc.h"

uint32_t rs_ibcc_ipd(uint16_t entry) { return (uint32_t)(entry & 0x3fffu) << (entry >> 14); }

void rs_ibcc_init(rs_ibcc_state *s, const rs_ibcc_params *p, double line_bps)
{
    memset(s, 0, sizeof *s);
    s->line_bps = line_bps;
    s->ccti = p->ccti_min;
    s->ccti_peak = p->ccti_min;
}

void rs_ibcc_on_becn(rs_ibcc_state *s, const rs_ibcc_params *p, int64_t now_ps)
{
    s->becns++;
    if (s->ccti >= p->ccti_limit) {
        s->at_limit++;
    } else {
        uint32_t c = (uint32_t)s->ccti + p->ccti_increase;
        s->ccti = (uint16_t)(c < p->ccti_limit ? c : p->ccti_limit);
        if (s->ccti > s->ccti_peak)
            s->ccti_peak = s->ccti;
    }
    if (!s->next_timer_ps && s->ccti > p->ccti_min)
        s->next_timer_ps = now_ps + p->ccti_timer_ps;
}

void rs_ibcc_on_timer(rs_ibcc_state *s, const rs_ibcc_params *p, int64_t now_ps)
{
    while (s->next_timer_ps && s->next_timer_ps <= now_ps) {
        if (s->ccti > p->ccti_min) {
            s->ccti--;
            s->expiries++;
        }
        s->next_timer_ps = s->ccti > p->ccti_min ? s->next_timer_ps + p->ccti_timer_ps : 0;
    }
}

int64_t rs_ibcc_delay_ps(const rs_ibcc_state *s, const rs_ibcc_params *p)
{
    return (int64_t)rs_ibcc_ipd(p->cct[s->ccti]) * p->ipd_unit_ps;
}

double rs_ibcc_rate_bps(const rs_ibcc_state *s, const rs_ibcc_params *p, uint32_t wire_bytes)
{
    int64_t d = rs_ibcc_delay_ps(s, p);
    if (d <= 0 || s->line_bps <= 0)
        return 0.0;
    double bits = 8.0 * (double)wire_bytes;
    return bits / (bits / s->line_bps + (double)d * 1e-12);
}

/* ---- rs_cc_algo adapter ---- */
_Static_assert(sizeof(rs_ibcc_state) <= RS_CC_STATE_BYTES, "IB CC state must fit the per-QP CC storage");
_Static_assert(sizeof(rs_ibcc_params) <= RS_CC_PARAMS_BYTES, "IB CC parameters must fit the host's CC blob");

/* a rate query before the first packet: an IB 4096-byte MTU packet */
enum { QUERY_WIRE_BYTES = 4096 };

static void algo_init(void *st, const void *p, double line, int64_t now) { rs_ibcc_init(st, p, line); }
static void algo_cnp(void *st, const void *p, int64_t now) { rs_ibcc_on_becn(st, p, now); }
static void algo_sent(void *st, const void *p, uint64_t wire_bytes, int64_t now)
{
    ((rs_ibcc_state *)st)->last_wire_bytes = (uint32_t)wire_bytes;
}
static void algo_timer(void *st, const void *p, int64_t now) { rs_ibcc_on_timer(st, p, now); }
static double algo_rate(const void *st, const void *p)
{
    const rs_ibcc_state *s = st;
    return rs_ibcc_rate_bps(s, p, s->last_wire_bytes ? s->last_wire_bytes : QUERY_WIRE_BYTES);
}
static int64_t algo_next_timer(const void *st) { return ((const rs_ibcc_state *)st)->next_timer_ps; }

const rs_cc_algo rs_cc_ibcc = {
    .name = "ibcc",
    .kind = RS_CC_IBCC,
    .flags = 0, /* BECNs come as CNPs: no per-ACK feedback */
    .params_size = sizeof(rs_ibcc_params),
    .state_size = sizeof(rs_ibcc_state),
    .init = algo_init,
    .on_cnp = algo_cnp,
    .on_sent = algo_sent,
    .on_timer = algo_timer,
    .rate_bps = algo_rate,
    .next_timer_ps = algo_next_timer,
};
