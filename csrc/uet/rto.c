/* The retransmit timeout of a PDC: fixed, or estimated from RTT samples with exponential backoff.
 *
 * The estimate is RFC 6298's (TCP's, as htsim's UEC sender keeps it too: a smoothed RTT, a mean
 * deviation and a minimum timeout): the first sample R gives SRTT = R and RTTVAR = R / 2; each
 * later one RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R| and SRTT = 7/8 SRTT + 1/8 R; the timeout is
 * SRTT + 4 RTTVAR within [rto_min, rto_max].  Samples come only from packets sent once (Karn's
 * rule, endpoint.c).  Each timeout that declares a loss doubles the timeout (up to rto_max) until
 * the next sample or the next ACK that acknowledges something new (as Linux TCP ends its backoff
 * on forward progress): only a PDC that hears nothing keeps backing off.  Before the first sample the timeout is prm.rto_ps; with prm.rto_fixed it stays
 * prm.rto_ps whatever the samples say (no estimate, no backoff). */
#include "uet/uet.h"

static int64_t clamp(const rs_uet_params *prm, int64_t v)
{
    return v < prm->rto_min_ps ? prm->rto_min_ps : v > prm->rto_max_ps ? prm->rto_max_ps : v;
}

void rs_uet_rto_init(rs_pdc *c)
{
    c->srtt_ps = c->rttvar_ps = 0;
    c->rto_ps = c->prm.rto_ps;
}

int rs_uet_rto_sample(rs_pdc *c, int64_t rtt_ps)
{
    if (c->prm.rto_fixed || rtt_ps < 0)
        return 0;
    int64_t before = c->rto_ps;
    if (!c->srtt_ps) {
        c->srtt_ps = rtt_ps > 0 ? rtt_ps : 1;
        c->rttvar_ps = rtt_ps / 2;
    } else {
        int64_t d = c->srtt_ps - rtt_ps;
        c->rttvar_ps += ((d < 0 ? -d : d) - c->rttvar_ps) / 4;
        c->srtt_ps += (rtt_ps - c->srtt_ps) / 8;
        if (c->srtt_ps < 1)
            c->srtt_ps = 1;
    }
    c->rto_ps = clamp(&c->prm, c->srtt_ps + 4 * c->rttvar_ps); /* a sample ends any backoff */
    return c->rto_ps < before;
}

void rs_uet_rto_backoff(rs_pdc *c)
{
    if (c->prm.rto_fixed)
        return;
    c->rto_ps = c->rto_ps > c->prm.rto_max_ps / 2 ? c->prm.rto_max_ps : 2 * c->rto_ps;
}

int rs_uet_rto_progress(rs_pdc *c)
{
    if (c->prm.rto_fixed)
        return 0;
    int64_t base = c->srtt_ps ? clamp(&c->prm, c->srtt_ps + 4 * c->rttvar_ps) : c->prm.rto_ps;
    if (c->rto_ps <= base)
        return 0;
    c->rto_ps = base;
    return 1;
}
