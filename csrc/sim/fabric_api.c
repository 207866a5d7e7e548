/* The public fabric calls (rdmasim/fabric.h) take the simulation; the link layer works on its
 * network (link/net.h).  Each call here hands over the network and nothing else. */
#include "sim/sim_impl.h"

int rs_deadlock_result(const rs_sim *sim, int64_t *t_ps, rs_queue_ref *cycle, int cap)
{
    return rs_net_deadlock_result(&sim->tp.net, t_ps, cycle, cap);
}

int rs_switch_add(rs_sim *sim, const rs_switch_cfg *cfg)
{
    return rs_net_switch_add(&sim->tp.net, cfg);
}

int rs_fabric_connect(rs_sim *sim, int kind_a, int a, int kind_b, int b, int64_t rate_bps, int64_t delay_ps)
{
    return rs_net_fabric_connect(&sim->tp.net, kind_a, a, kind_b, b, rate_bps, delay_ps);
}

int rs_link_ends(const rs_sim *sim, int link, int *fk, int *fn, int *fp, int *tk, int *tn, int *tp)
{
    return rs_net_link_ends(&sim->tp.net, link, fk, fn, fp, tk, tn, tp);
}

int rs_link_set_up(rs_sim *sim, int link, int up)
{
    return rs_net_link_set_up(&sim->tp.net, link, up);
}

int rs_link_schedule_up(rs_sim *sim, int link, int up, int64_t t_ps)
{
    return rs_net_link_schedule_up(&sim->tp.net, link, up, t_ps);
}

int rs_link_set_rate(rs_sim *sim, int link, int64_t rate_bps)
{
    return rs_net_link_set_rate(&sim->tp.net, link, rate_bps);
}

int rs_switch_port_stats(const rs_sim *sim, int sw, int port, rs_swport_stats *out)
{
    return rs_net_switch_port_stats(&sim->tp.net, sw, port, out);
}

int rs_switch_queue_bytes(const rs_sim *sim, int sw, int port, int prio, uint64_t *egress, uint64_t *ingress)
{
    return rs_net_switch_queue_bytes(&sim->tp.net, sw, port, prio, egress, ingress);
}

int rs_port_pause_stats(const rs_sim *sim, int kind, int node, int port, rs_pause_stats *out)
{
    return rs_net_port_pause_stats(&sim->tp.net, kind, node, port, out);
}

int rs_port_set_pfc_response(rs_sim *sim, int kind, int node, int port, int64_t response_ps)
{
    return rs_net_port_set_pfc_response(&sim->tp.net, kind, node, port, response_ps);
}

int rs_port_inject_pfc(rs_sim *sim, int kind, int node, int port, uint16_t class_enable, const uint16_t quanta[8])
{
    return rs_net_port_inject_pfc(&sim->tp.net, kind, node, port, class_enable, quanta);
}

int rs_switch_next_hops(rs_sim *sim, int sw, int dst, uint16_t *out, int cap)
{
    return rs_net_switch_next_hops(&sim->tp.net, sw, dst, out, cap);
}

int64_t rs_switch_route_bytes(rs_sim *sim, int sw)
{
    return rs_net_switch_route_bytes(&sim->tp.net, sw);
}

int rs_switch_ecmp_port(rs_sim *sim, int sw, int dst, uint32_t sip, uint32_t dip, uint16_t sport)
{
    return rs_net_switch_ecmp_port(&sim->tp.net, sw, dst, sip, dip, sport);
}

int rs_switch_set_route(rs_sim *sim, int sw, int dst, const uint16_t *ports, int n)
{
    return rs_net_switch_set_route(&sim->tp.net, sw, dst, ports, n);
}

int rs_link_add_drop_rule(rs_sim *sim, int link, const rs_drop_spec *spec)
{
    return rs_net_link_add_drop_rule(&sim->tp.net, link, spec);
}

int rs_link_mark_trim_ok(rs_sim *sim, int link, int on)
{
    return rs_net_link_mark_trim_ok(&sim->tp.net, link, on);
}

int64_t rs_link_drops_pending(const rs_sim *sim, int link)
{
    return rs_net_link_drops_pending(&sim->tp.net, link);
}

int rs_link_schedule_loss(rs_sim *sim, int link, double loss_prob, int64_t t_ps)
{
    return rs_net_link_schedule_loss(&sim->tp.net, link, loss_prob, t_ps);
}

int rs_sim_pcap_status(const rs_sim *sim, uint64_t *frames, int *err)
{
    return rs_net_pcap_status(&sim->tp.net, frames, err);
}

int rs_sim_pcap_links(rs_sim *sim, const int *links, uint32_t n)
{
    return rs_net_pcap_links(&sim->tp.net, links, n);
}

int rs_pfc_watchdog(rs_sim *sim, int64_t poll_ps, int64_t detect_ps, int64_t restore_ps)
{
    return rs_net_pfc_watchdog(&sim->tp.net, poll_ps, detect_ps, restore_ps);
}

int rs_deadlock_detector(rs_sim *sim, int64_t period_ps)
{
    return rs_net_deadlock_detector(&sim->tp.net, period_ps);
}

int rs_switch_victim_mask(rs_sim *sim, int sw, int port, int on)
{
    return rs_net_switch_victim_mask(&sim->tp.net, sw, port, on);
}

int rs_deadlock_check_now(rs_sim *sim)
{
    return rs_net_deadlock_check_now(&sim->tp.net);
}

int rs_sampler_config(rs_sim *sim, int64_t period_ps, const rs_queue_ref *probes, uint32_t n_probes,
                      uint32_t max_samples)
{
    return rs_net_sampler_config(&sim->tp.net, period_ps, probes, n_probes, max_samples);
}

int rs_sampler_read(const rs_sim *sim, int64_t *t, uint64_t *egress, uint64_t *ingress, uint8_t *paused,
                    uint64_t *missed)
{
    return rs_net_sampler_read(&sim->tp.net, t, egress, ingress, paused, missed);
}

int rs_port_credit_config(rs_sim *sim, int kind, int node, int port, const rs_credit_cfg *cfg)
{
    return rs_net_port_credit_config(&sim->tp.net, kind, node, port, cfg);
}

int rs_port_credit_stats(const rs_sim *sim, int kind, int node, int port, rs_credit_stats *out)
{
    return rs_net_port_credit_stats(&sim->tp.net, kind, node, port, out);
}

int rs_switch_set_lft(rs_sim *sim, int sw, const uint16_t *ports, uint32_t n)
{
    return rs_net_switch_set_lft(&sim->tp.net, sw, ports, n);
}

void rs_net_set_switch_tx_eager(rs_sim *sim, int on) { sim->tp.net.switch_tx_eager = on != 0; }
