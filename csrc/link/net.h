/* The link layer's context: what ports, links, switches and their monitors share.  The
 * simulation (sim/) owns one and passes it down; it holds no host, QP or flow, only the hosts'
 * ports, so the link layer works the same whatever transport drives those ports. */
#ifndef RDMASIM_LINK_NET_H
#define RDMASIM_LINK_NET_H

#include <stdint.h>

#include "engine/engine.h"
#include "link/link.h"
#include "link/port.h"
#include "rdmasim/codec.h"
#include "rdmasim/fabric.h"
#include "rdmasim/pool.h"

struct rs_link;
struct rs_port;
struct rs_switch;
struct rs_monitor;

/* Event kinds of the link layer's timers (rs_timer.kind; sim/sim.c dispatches every layer's, and
 * its switch makes a number used twice a compile error). */
enum rs_net_event {
    RS_EV_PORT_TX_DONE = 1,   /* owner: rs_port */
    RS_EV_LINK_ARRIVAL = 2,   /* owner: rs_link */
    RS_EV_PORT_PAUSE_END = 5, /* owner: rs_port, a received pause expires (pause.c) */
    RS_EV_PFC_REFRESH = 6,    /* owner: rs_pfc_queue, re-send XOFF while congested (pfc.c) */
    RS_EV_LINK_STATE = 7,     /* owner: rs_link, scheduled failure / recovery (fabric.c) */
    RS_EV_MONITOR = 8,        /* owner: rs_monitor, PFC watchdog / deadlock detector (monitor.c) */
    RS_EV_RX_DRAIN = 9,       /* owner: rs_rxpipe, a slow receiver takes its next frame (rxpipe.c) */
    RS_EV_RX_REFRESH = 10,    /* owner: rs_rxpipe, re-send XOFF while its buffer is full */
    RS_EV_PORT_PFC_RESPOND = 24, /* owner: rs_port, a received PFC frame's response time is over (pause.c) */
    RS_EV_CREDIT_FC = 25,     /* owner: rs_credit_port, periodic IB flow-control packets (credit.c) */
};

typedef struct rs_net {
    rs_engine eng;              /* the clock, queue and failure state (the layers above use it too) */
    rs_pool *pool;              /* packets */
    struct rs_link **links;     /* link directions by id */
    uint32_t n_links;
    struct rs_switch **switches;
    uint32_t n_switches;
    struct rs_port **host_ports; /* each host's port, by host index (the owner adds it) */
    uint32_t n_hosts;
    int routes_dirty;           /* graph changed: recompute routes before the next event */
    /* group routing (grouproute.c; NULL when no switch routes by group): per host, the group and
     * the switch of the switch it is linked to (0xFFFF: none or not grouped) */
    uint16_t *host_group;
    uint16_t *host_switch;
    uint32_t n_groups;
    struct rs_monitor *monitor; /* NULL: no PFC watchdog / deadlock detector */
    rs_pcap *pcap;              /* NULL: capture off */
    int pcap_all;               /* the capture takes every link direction, also those added later */
    uint8_t link_layer;         /* enum rs_link_layer of every port (rs_sim_set_link_layer, before any host) */
    /* IB has no PFC: on an IB fabric switches and slow receivers send no pause frames
     * (rs_net_pfc_allowed); its link-level flow control is credits per VL (link/credit.h, enabled
     * per port), without which it is lossy (tail drop). */
    int stop_after_frame;       /* step-through: armed by rs_sim_stop_after_next_frame */
    int frame_stop;             /* set when that frame went out */
    /* 1: a switch port always arms its transmit-done event, even with nothing queued behind the
     * frame (the reference the lazy path is tested against: rs_port_kick) */
    int switch_tx_eager;
} rs_net;

/* Whether this fabric's link layer has PFC pause frames (Ethernet); InfiniBand has none. */
static inline int rs_net_pfc_allowed(const rs_net *net) { return net->link_layer == RS_LL_ROCE; }

/* Record a failure reason in the engine; returns `code` for tail calls (control path). */
int rs_net_fail(rs_net *net, int code, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The link layer's side of the public fabric calls (rdmasim/fabric.h): sim/fabric_api.c maps each
 * rs_* call taking the simulation to the rs_net_* one taking its network. */
int rs_net_deadlock_result(const rs_net *net, int64_t *t_ps, rs_queue_ref *cycle, int cap);
int rs_net_switch_add(rs_net *net, const rs_switch_cfg *cfg);
int rs_net_fabric_connect(rs_net *net, int kind_a, int a, int kind_b, int b, int64_t rate_bps, int64_t delay_ps);
int rs_net_link_ends(const rs_net *net, int link, int *fk, int *fn, int *fp, int *tk, int *tn, int *tp);
int rs_net_link_set_up(rs_net *net, int link, int up);
int rs_net_link_schedule_up(rs_net *net, int link, int up, int64_t t_ps);
int rs_net_link_set_rate(rs_net *net, int link, int64_t rate_bps);
int rs_net_switch_port_stats(const rs_net *net, int sw, int port, rs_swport_stats *out);
int rs_net_switch_queue_bytes(const rs_net *net, int sw, int port, int prio, uint64_t *egress, uint64_t *ingress);
int rs_net_port_pause_stats(const rs_net *net, int kind, int node, int port, rs_pause_stats *out);
int rs_net_port_set_pfc_response(rs_net *net, int kind, int node, int port, int64_t response_ps);
int rs_net_port_inject_pfc(rs_net *net, int kind, int node, int port, uint16_t class_enable, const uint16_t quanta[8]);
int rs_net_switch_next_hops(rs_net *net, int sw, int dst, uint16_t *out, int cap);
int64_t rs_net_switch_route_bytes(rs_net *net, int sw);
int rs_net_switch_ecmp_port(rs_net *net, int sw, int dst, uint32_t sip, uint32_t dip, uint16_t sport);
int rs_net_switch_set_route(rs_net *net, int sw, int dst, const uint16_t *ports, int n);
int rs_net_link_add_drop_rule(rs_net *net, int link, const rs_drop_spec *spec);
int rs_net_link_mark_trim_ok(rs_net *net, int link, int on);
int64_t rs_net_link_drops_pending(const rs_net *net, int link);
int rs_net_link_schedule_loss(rs_net *net, int link, double loss_prob, int64_t t_ps);
int rs_net_port_credit_config(rs_net *net, int kind, int node, int port, const rs_credit_cfg *cfg);
int rs_net_port_credit_stats(const rs_net *net, int kind, int node, int port, rs_credit_stats *out);
int rs_net_switch_set_lft(rs_net *net, int sw, const uint16_t *ports, uint32_t n);
/* The port `port` of a switch, or a host's port (port ignored); NULL if none. */
struct rs_port *rs_net_find_port(const rs_net *net, int kind, int node, int port);
int rs_net_pcap_status(const rs_net *net, uint64_t *frames, int *err);
int rs_net_pcap_links(rs_net *net, const int *links, uint32_t n);
int rs_net_pfc_watchdog(rs_net *net, int64_t poll_ps, int64_t detect_ps, int64_t restore_ps);
int rs_net_deadlock_detector(rs_net *net, int64_t period_ps);
int rs_net_deadlock_check_now(rs_net *net);
int rs_net_switch_victim_mask(rs_net *net, int sw_id, int port, int on);
int rs_net_sampler_config(rs_net *net, int64_t period_ps, const rs_queue_ref *probes, uint32_t n_probes,
                          uint32_t max_samples);
int rs_net_sampler_read(const rs_net *net, int64_t *t, uint64_t *egress, uint64_t *ingress, uint8_t *paused,
                        uint64_t *missed);


/* ---- ports and links (port.c, link.c, fabric.c, route.c, switch.c) ---- */
/* Start sending if the port is idle and has something to send. */
void rs_port_kick(rs_net *net, struct rs_port *port);
void rs_port_tx_done(rs_net *net, struct rs_port *port);
/* Queue a control frame (ACK/NAK, CNP, PFC) on the port, ahead of data, and kick it. */
void rs_port_send_ctrl(rs_net *net, struct rs_port *port, rs_pkt *pkt);
void rs_link_arrival(rs_net *net, struct rs_link *link);
/* link/fabric.c: free switches; fire a scheduled link state change */
void rs_fabric_free(rs_net *net);
void rs_link_state_event(rs_net *net, struct rs_link *link);
/* link/route.c */
int rs_routes_compute(rs_net *net);
/* link/grouproute.c: the group tables (after the host tables); free them */
int rs_group_routes_compute(rs_net *net);
void rs_group_routes_free(rs_net *net);
/* link/switch.c: the switch's next frame for its egress `port` */
rs_pkt *rs_switch_next_frame(rs_net *net, struct rs_switch *sw, struct rs_port *port);
/* Put a frame on the link now (port has just started serialising it). Returns serialisation ps. */
int64_t rs_link_transmit(rs_net *net, struct rs_link *link, rs_pkt *pkt);
/* link.c: a new link direction from -> to (net->links must have room) */
struct rs_link *rs_link_new(rs_net *net, struct rs_port *from, struct rs_port *to, int64_t rate_bps,
                            int64_t delay_ps);

#endif
