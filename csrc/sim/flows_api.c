/* The public bulk-flow calls (rdmasim/flows.h) take the simulation; the workload works on its
 * flow table over the transport (workload/flows_impl.h).  Each call here hands them over. */
#include "sim/sim_impl.h"

int64_t rs_flows_add(rs_sim *sim, uint32_t n, const int32_t *src, const int32_t *dst, const uint64_t *size,
                     const int64_t *start_ps, const int64_t *hold_ps, const uint8_t *verb, const uint8_t *prio,
                     const int64_t *dep_ptr, const int32_t *deps, uint64_t n_deps, const uint8_t *dep_on,
                     const uint32_t *need, const uint32_t *after, const rs_flow_cfg *cfg)
{
    if (!sim)
        return RS_ERR_INVAL;
    int uet = cfg && cfg->transport == RS_FLOW_UET;
    if (uet && sim->tp.net.link_layer == RS_LL_ROCE && rs_sim_uet_enable(sim) != RS_OK)
        return RS_ERR_NOMEM;
    int64_t first = rs_wl_flows_add(&sim->tp, &sim->flows, &sim->flows_stop, n, src, dst, size, start_ps, hold_ps,
                                    verb, prio, dep_ptr, deps, n_deps, dep_on, need, after, cfg);
    if (uet && first >= 0 && sim->flows && !sim->flows->uet)
        rs_wl_flows_attach_uet(sim->flows, &sim->uet);
    return first;
}

int rs_flows_results(const rs_sim *sim, uint64_t first, uint32_t n, rs_flow_result *out)
{
    return rs_wl_flows_results(&sim->tp, sim->flows, first, n, out);
}

void rs_flows_get_counts(const rs_sim *sim, rs_flows_counts *out) { rs_wl_flows_get_counts(sim->flows, out); }

size_t rs_flows_bytes_per_flow(void) { return rs_wl_flows_bytes_per_flow(); }

void rs_flows_stop_when_done(rs_sim *sim, int on)
{
    rs_wl_flows_stop_when_done(&sim->tp, &sim->flows, &sim->flows_stop, on);
}

int rs_flows_uet_bytes(const rs_sim *sim, uint64_t id, const uint8_t **src, uint64_t *src_len, const uint8_t **dst,
                       uint64_t *dst_len)
{
    return rs_wl_flows_uet_bytes(&sim->tp, sim->flows, id, src, src_len, dst, dst_len);
}

uint32_t rs_flows_sample(const rs_sim *sim, uint32_t cap, uint64_t *ids, uint64_t *bytes, double *rate_bps)
{
    return rs_wl_flows_sample(&sim->tp, sim->flows, cap, ids, bytes, rate_bps);
}
