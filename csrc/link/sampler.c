/* Opt-in sampled time series of switch queues: taken by the monitor timer into arrays allocated when
 * the sampler is configured (control path), read out in bulk. */
#include <stdlib.h>
#include <string.h>

#include "link/net.h"
#include "link/monitor.h"
#include "link/switch.h"

void rs_sampler_take(rs_net *net, rs_monitor *m)
{
    if (m->n_samples >= m->max_samples) {
        m->samples_missed++;
        return;
    }
    size_t row = (size_t)m->n_samples * m->n_probes;
    m->s_t[m->n_samples] = net->eng.now_ps;
    for (uint32_t k = 0; k < m->n_probes; k++) {
        const rs_queue_ref *q = &m->probes[k];
        const rs_switch *sw = net->switches[q->sw];
        size_t i = (size_t)q->port * RS_NPRIO + (size_t)q->prio;
        m->s_egress[row + k] = sw->mmu.eg_bytes[i];
        m->s_ingress[row + k] = sw->mmu.in_bytes[i] + sw->mmu.hdrm_bytes[i];
        m->s_paused[row + k] = (uint8_t)((sw->ports[q->port].port.paused_mask >> q->prio) & 1u);
    }
    m->n_samples++;
}

int rs_net_sampler_config(rs_net *net, int64_t period_ps, const rs_queue_ref *probes, uint32_t n_probes,
                          uint32_t max_samples)
{
    if (period_ps <= 0 || n_probes == 0 || max_samples == 0)
        return rs_net_fail(net, RS_ERR_INVAL, "sampler: need period > 0, at least one probe and max_samples > 0");
    for (uint32_t k = 0; k < n_probes; k++) {
        const rs_switch *s =
            probes[k].sw >= 0 && (uint32_t)probes[k].sw < net->n_switches ? net->switches[probes[k].sw] : NULL;
        if (!s || probes[k].port < 0 || (uint32_t)probes[k].port >= s->cfg.n_ports || probes[k].prio < 0 ||
            probes[k].prio >= RS_NPRIO)
            return rs_net_fail(net, RS_ERR_INVAL, "probe %u: (switch %d, port %d, priority %d) does not exist", k,
                               probes[k].sw, probes[k].port, probes[k].prio);
    }
    if ((uint64_t)n_probes * max_samples > (1ull << 31))
        return rs_net_fail(net, RS_ERR_INVAL, "sampler: probes x max_samples above 2^31");
    rs_monitor *m = rs_monitor_get(net);
    if (!m)
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory");
    size_t cells = (size_t)n_probes * max_samples;
    free(m->probes);
    free(m->s_t);
    free(m->s_egress);
    free(m->s_ingress);
    free(m->s_paused);
    m->probes = malloc(n_probes * sizeof(*m->probes));
    m->s_t = malloc(max_samples * sizeof(int64_t));
    m->s_egress = malloc(cells * sizeof(uint64_t));
    m->s_ingress = malloc(cells * sizeof(uint64_t));
    m->s_paused = malloc(cells);
    if (!m->probes || !m->s_t || !m->s_egress || !m->s_ingress || !m->s_paused) {
        m->sample_period_ps = 0;
        m->n_probes = m->max_samples = 0;
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory for %u samples of %u probes", max_samples, n_probes);
    }
    memcpy(m->probes, probes, n_probes * sizeof(*probes));
    m->n_probes = n_probes;
    m->max_samples = max_samples;
    m->n_samples = 0;
    m->samples_missed = 0;
    m->sample_period_ps = period_ps;
    m->next_sample_ps = net->eng.now_ps;
    rs_timer_cancel(&m->tick);
    rs_monitor_resume(net);
    return net->eng.failed ? RS_ERR_NOMEM : RS_OK;
}

int rs_net_sampler_read(const rs_net *net, int64_t *t, uint64_t *egress, uint64_t *ingress, uint8_t *paused,
                        uint64_t *missed)
{
    const rs_monitor *m = net->monitor;
    if (!m || !m->sample_period_ps)
        return 0;
    size_t cells = (size_t)m->n_samples * m->n_probes;
    memcpy(t, m->s_t, m->n_samples * sizeof(int64_t));
    memcpy(egress, m->s_egress, cells * sizeof(uint64_t));
    memcpy(ingress, m->s_ingress, cells * sizeof(uint64_t));
    memcpy(paused, m->s_paused, cells);
    *missed = m->samples_missed;
    return (int)m->n_samples;
}
