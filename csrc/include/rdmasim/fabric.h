/* Public C API of switched fabrics (issue 4): switches, links between any two
 * nodes, routing (shortest paths + ECMP), the shared-buffer MMU, PFC and ECN.
 *
 * A node is a host (kind RS_NODE_HOST, index from rs_host_add) or a switch
 * (kind RS_NODE_SWITCH, index from rs_switch_add).  Routes are recomputed
 * lazily, at the start of the next rs_sim_run after the graph changed.
 * Control path only; every call returns RS_OK / an id, or a negative rs_err
 * with the reason in rs_sim_errmsg. */
#ifndef RDMASIM_FABRIC_H
#define RDMASIM_FABRIC_H

#include <stdint.h>

#include "rdmasim/base.h"

#define RS_NPRIO 8

/* Counters of one link direction (rs_link_get_stats, sim.h). */
typedef struct rs_link_stats {
    uint64_t frames;     /* put on the wire */
    uint64_t bytes;      /* frame bytes (no preamble/IFG) */
    int64_t busy_ps;     /* time spent serialising */
    uint64_t delivered;
    uint64_t dropped;    /* lost: i.i.d. or drop list (last: the rare one, link.h's layout) */
} rs_link_stats;

enum rs_node_kind { RS_NODE_HOST = 0, RS_NODE_SWITCH = 1 };

/* Why a switch dropped a packet (counted on the ingress port). */
enum rs_sw_drop {
    RS_SWDROP_NO_ROUTE = 0,        /* no path to the destination host */
    RS_SWDROP_LOSSY_THRESHOLD = 1, /* lossy class: egress queue over its threshold */
    RS_SWDROP_BUFFER_FULL = 2,     /* lossy class: shared buffer exhausted */
    RS_SWDROP_HEADROOM = 3,        /* lossless class: PFC headroom overflowed (mis-sized headroom) */
    RS_SWDROP_WATCHDOG = 4,        /* reserved: PFC watchdog dropping a stormed queue */
    RS_SWDROP__COUNT = 5,
};

typedef struct rs_switch_cfg {
    uint32_t n_ports;              /* 1..4096 */
    /* MMU (protocol.md 6.3) */
    uint64_t buffer_bytes;         /* shared buffer size */
    uint32_t reserve_bytes;        /* guaranteed per (ingress port, priority) */
    uint32_t headroom_bytes;       /* PFC headroom per (ingress port, lossless priority) */
    uint32_t dynamic;              /* 1: T = free shared >> alpha_shift; 0: T = xoff_bytes */
    uint32_t alpha_shift;          /* 0..16 */
    uint64_t xoff_bytes;           /* static threshold: shared bytes of one ingress queue */
    uint32_t resume_offset_bytes;  /* XON when shared + offset <= T (hysteresis) */
    uint64_t lossy_limit_bytes;    /* lossy egress queue cap; 0: dynamic (free shared >> alpha_shift) */
    /* classes */
    uint8_t pfc_mask;              /* bit p: priority p lossless (PFC on); others lossy */
    uint16_t pfc_quanta;           /* pause time put in XOFF frames (1..65535) */
    uint8_t dscp_to_prio[64];
    /* scheduling: 0 strict priority (7 highest), 1 weighted round robin (packets) */
    uint32_t wrr;
    uint8_t wrr_weight[RS_NPRIO];  /* 1..255 */
    /* ECN (protocol.md 7), per priority; kmax 0 = off */
    uint64_t ecn_kmin[RS_NPRIO];
    uint64_t ecn_kmax[RS_NPRIO];
    double ecn_pmax[RS_NPRIO];
    uint32_t ecn_on_dequeue;       /* 0: mark on enqueue (ASICs); 1: on dequeue (HPCC ns-3) */
    uint64_t ecmp_seed;            /* XORed with the switch id: per-switch hash */
    uint32_t path_select;          /* RS_PATH_*: how a packet picks among equal-cost next hops */
    int64_t pfc_response_ps;       /* a received PFC frame acts this long after it arrived (0: at once) */
    uint32_t routing;              /* RS_ROUTE_*: shortest paths, or by group (dragonfly) */
    uint32_t group;                /* the switch's group under group routing, 0..RS_MAX_GROUPS-1 */
    uint32_t hop_classes;          /* group routing: 1 = a packet's priority rises by one per global link
                                    * it has crossed (Kim et al.'s virtual channels: no PFC cycle) */
    int64_t latency_ps;            /* forwarding latency: a frame received is seen this long after its
                                    * last bit arrived (added to the links into the switch) */
    uint32_t ar_band_bytes;        /* adaptive path selection compares egress queues in bands of this
                                    * many bytes (queue bytes / band; 0 or 1: bytes exactly) */
    /* packet trimming (link/trim.c, docs/multipath.md): a packet whose transport allows it (rs_pkt
     * trim_ok) and whose egress queue would hold more than trim_threshold_bytes with it, or that
     * the buffer would drop, is cut to its headers and queued at priority trim_prio instead; a
     * trimmed packet goes at trim_prio through every trimming switch.  Not on credit ports. */
    uint32_t trim;                 /* 0 off, 1 on */
    uint64_t trim_threshold_bytes; /* 1..2^40 */
    uint32_t trim_prio;            /* 0..7 */
} rs_switch_cfg;

/* Path selection among equal-cost next hops: flow hash (ECMP), per-packet spraying (a per-switch
 * packet counter mixed into the hash: deterministic), or adaptive (the egress queue of the packet's
 * priority holding the fewest bytes; ties broken from the flow hash). */
/* RS_PATH_ADAPTIVE_PACKET: as adaptive, but equal queues are broken per packet (the spray hash),
 * not by the flow hash, so an idle fabric spreads one QP too (docs/multipath.md). */
enum rs_path_select { RS_PATH_ECMP = 0, RS_PATH_SPRAY = 1, RS_PATH_ADAPTIVE = 2, RS_PATH_ADAPTIVE_PACKET = 3 };

/* Routing (link/grouproute.c).  SHORTEST: hop-count shortest paths to the destination host.  The
 * others route by group (a dragonfly's groups; `group` in the config): a packet outside its
 * destination's group goes to that group over at most one link between groups (MINIMAL); VALIANT
 * first sends it to an intermediate group drawn at its source switch (uniform over the groups but
 * the source's; the destination's means minimal; per flow under RS_PATH_ECMP, per packet otherwise); UGAL (UGAL-L) takes, at the
 * source switch, the Valiant path only when the minimal egress queue holds more than twice the
 * Valiant one's bytes.  Inside the destination group, and for groups with no link from this one,
 * shortest paths apply. */
enum rs_routing { RS_ROUTE_SHORTEST = 0, RS_ROUTE_MINIMAL = 1, RS_ROUTE_VALIANT = 2, RS_ROUTE_UGAL = 3 };
#define RS_MAX_GROUPS 65535u

/* Defaults: 32 ports, 12 MB buffer, 4 KB reserve, 64 KB headroom, dynamic alpha 1/8, 3 KB resume
 * offset, priority 3 lossless, XOFF 65535 quanta, every DSCP -> 3 except 48 (CNP) -> 6, strict
 * priority, ECN off, enqueue marking. */
void rs_switch_cfg_default(rs_switch_cfg *cfg);
int rs_switch_add(rs_sim *sim, const rs_switch_cfg *cfg);

/* Full-duplex link between two nodes; a switch uses its next free port.  Returns the id of the
 * a->b direction (b->a is id + 1). */
int rs_fabric_connect(rs_sim *sim, int kind_a, int a, int kind_b, int b, int64_t rate_bps, int64_t delay_ps);
/* The switch port a link direction starts from (or -1 for a host end). */
int rs_link_ends(const rs_sim *sim, int link, int *from_kind, int *from_node, int *from_port,
                 int *to_kind, int *to_node, int *to_port);
/* Take both directions of a link down (frames sent are dropped and counted) or up; routes are
 * recomputed before the next event after the change. */
int rs_link_set_up(rs_sim *sim, int link, int up);
/* Schedule rs_link_set_up at an absolute time. */
int rs_link_schedule_up(rs_sim *sim, int link, int up, int64_t t_ps);
/* Change one link direction's line rate (a slow NIC, a degraded link): frames put on it from now on
 * serialise at rate_bps (> 0); a frame already on the wire keeps its time. */
int rs_link_set_rate(rs_sim *sim, int link, int64_t rate_bps);

/* Drop rules on one link direction (checked in C per frame put on it; no cost when none are set).
 * A rule names the fields that must match (RS_DROPF_* in `fields`); among the frames that match, it
 * lets `skip` through, then drops `count`.  Rules are tried in the order added; a frame dropped by
 * one is not seen by the later ones.  Non-RoCE frames (PFC) match only rules on `nth` alone. */
enum rs_drop_field {
    RS_DROPF_NTH = 1u << 0,     /* the nth frame put on this direction (0-based, every kind) */
    RS_DROPF_PSN = 1u << 1,     /* BTH PSN */
    RS_DROPF_OPCODE = 1u << 2,  /* BTH opcode in the set `opcodes` */
    RS_DROPF_DEST_QP = 1u << 3, /* BTH destination QP */
};
typedef struct rs_drop_spec {
    uint32_t fields;
    uint32_t skip;
    uint32_t count;       /* >= 1 */
    uint32_t psn;         /* 0 .. 2^24-1 */
    uint32_t dest_qp;     /* 0 .. 2^24-1 */
    uint64_t nth;
    uint64_t opcodes[4];  /* bit o of opcodes[o / 64]: opcode o; at least one bit with RS_DROPF_OPCODE */
} rs_drop_spec;
int rs_link_add_drop_rule(rs_sim *sim, int link, const rs_drop_spec *spec);
/* Matching frames the rules of a link direction have still to drop (sum of their counts left). */
int64_t rs_link_drops_pending(const rs_sim *sim, int link);
/* Test hook (until a transport that sets it runs over the link): on 1, every RoCE frame put on
 * link direction `link` from now on is marked trim_ok, as if its transport allowed trimming;
 * 0 stops it.  A RoCE NIC drops a trimmed frame as one with a wrong ICRC. */
int rs_link_mark_trim_ok(rs_sim *sim, int link, int on);
/* Change the i.i.d. loss probability of a link direction for the frames put on it at or after
 * t_ps (>= now); changes at the same time apply in the order scheduled. */
int rs_link_schedule_loss(rs_sim *sim, int link, double loss_prob, int64_t t_ps);
/* Which link directions a capture (rs_sim_pcap_open) records: all (links NULL: also directions
 * added later) or exactly links[0..n). */
int rs_sim_pcap_links(rs_sim *sim, const int *links, uint32_t n);
/* The open capture: records accepted so far (after a write error: exactly those in the file) and
 * the errno of the write error that stopped it (0: none).  Returns 0, or 1 when no capture is open. */
int rs_sim_pcap_status(const rs_sim *sim, uint64_t *frames, int *err);

typedef struct rs_swport_stats {
    uint64_t rx_pkts, rx_bytes;        /* arrived at this port (data; PFC frames not included) */
    uint64_t tx_pkts, tx_bytes;        /* sent from this port (data + PFC) */
    uint64_t drops[RS_SWDROP__COUNT];  /* by reason, counted on the ingress port */
    uint64_t ecn_marked;               /* CE set on packets leaving this port */
    uint64_t pfc_xoff_sent, pfc_xon_sent; /* pause frames this port sent upstream (XOFF incl. refresh) */
    uint64_t q_bytes_peak[RS_NPRIO];   /* egress queue peak */
    uint64_t in_bytes_peak[RS_NPRIO];  /* ingress (port, priority) occupancy peak incl. headroom */
    uint64_t hdrm_bytes_peak[RS_NPRIO];
    uint64_t in_bytes_at_first_xoff[RS_NPRIO]; /* occupancy when the first XOFF was decided (0: none) */
    uint64_t wd_storms;                /* PFC watchdog: stormed-queue detections on this egress port */
    /* per queue (priority) */
    uint64_t q_tx_pkts[RS_NPRIO], q_tx_bytes[RS_NPRIO]; /* data sent from egress queue (port, prio) */
    uint64_t q_ecn_marked[RS_NPRIO];
    uint64_t q_drops[RS_NPRIO];        /* drops (any reason) of packets that arrived here in prio */
    uint64_t trims;                    /* packets trimmed to their headers for this egress port */
} rs_swport_stats;

/* Counters of the receive side of PFC, for any port (host NIC or switch). */
typedef struct rs_pause_stats {
    uint64_t pfc_rx_frames;
    uint64_t pfc_rx_xoff;        /* per-class pause requests (quanta > 0) */
    uint64_t pfc_rx_xon;         /* per-class resumes (quanta 0) */
    int64_t paused_ps[RS_NPRIO]; /* total time each priority was paused (up to now) */
    uint32_t paused_mask;        /* priorities paused now */
} rs_pause_stats;

int rs_switch_port_stats(const rs_sim *sim, int sw, int port, rs_swport_stats *out);
/* Queue bytes now: egress queue and ingress occupancy of (port, priority). */
int rs_switch_queue_bytes(const rs_sim *sim, int sw, int port, int prio, uint64_t *egress, uint64_t *ingress);
/* Test hook: act on a PFC frame at a port now, as if it had just arrived on its link. */
int rs_port_inject_pfc(rs_sim *sim, int kind, int node, int port, uint16_t class_enable, const uint16_t quanta[8]);
int rs_port_pause_stats(const rs_sim *sim, int kind, int node, int port, rs_pause_stats *out);
/* PFC response time of a port: a PFC frame it receives takes effect response_ps after it arrived
 * (0..RS_MAX_TIME_PS; 0 = at once).  Frames already waiting keep their time. */
int rs_port_set_pfc_response(rs_sim *sim, int kind, int node, int port, int64_t response_ps);
/* Equal-cost next-hop ports of switch `sw` towards host `dst` (routes computed if needed). */
int rs_switch_next_hops(rs_sim *sim, int sw, int dst, uint16_t *out, int cap);
/* Bytes of switch `sw`'s routing tables (routes computed if needed), or an RS_ERR_* code. */
int64_t rs_switch_route_bytes(rs_sim *sim, int sw);
/* The port ECMP picks for a 5-tuple (test hook: same hash the data path uses). */
int rs_switch_ecmp_port(rs_sim *sim, int sw, int dst, uint32_t sip, uint32_t dip, uint16_t sport);

/* Slow receiver (link/rxpipe.c): host frames wait in a buffer of buf_bytes drained at rate_bps
 * (0 = stuck); XOFF for the priorities in prio_mask at >= xoff_bytes, XON at <= xon_bytes.
 * enable 0 removes it (only while its buffer is empty). */
int rs_host_set_rx(rs_sim *sim, int host, int enable, int64_t rate_bps, uint64_t buf_bytes, uint64_t xoff_bytes,
                   uint64_t xon_bytes, uint8_t prio_mask, uint16_t quanta);
typedef struct rs_host_rx_stats {
    uint64_t pfc_xoff_sent, pfc_xon_sent, dropped, peak_bytes, bytes;
} rs_host_rx_stats;
int rs_host_rx_stats_get(const rs_sim *sim, int host, rs_host_rx_stats *out);

/* The host NIC's DSCP -> priority table (which PFC priority pauses which QP); map[64] values 0..7. */
int rs_host_set_dscp_map(rs_sim *sim, int host, const uint8_t *map);

/* Static route: pin the next hops of switch `sw` towards host `dst` to ports[0..n) (ECMP among them);
 * n = 0 removes the pin (back to shortest paths).  Pins survive route recomputation. */
int rs_switch_set_route(rs_sim *sim, int sw, int dst, const uint16_t *ports, int n);

/* PFC watchdog on every switch (protocol.md 6.4): every poll_ps, an egress queue that is paused, holds
 * packets and sent nothing for detect_ps is declared stormed: its packets and those arriving for it
 * are dropped (counted as RS_SWDROP_WATCHDOG) and pause is ignored for restore_ps.  poll_ps 0 = off. */
int rs_pfc_watchdog(rs_sim *sim, int64_t poll_ps, int64_t detect_ps, int64_t restore_ps);

/* Deadlock detector: every period_ps, look for a cycle of paused egress queues (switch, port,
 * priority), each waiting on a downstream ingress queue that is pausing it and whose packets sit in
 * the next paused egress queue of the cycle.  0 = off. */
int rs_deadlock_detector(rs_sim *sim, int64_t period_ps);
/* One check now (the detector need not be on), unless a deadlock was already found; the result is
 * read with rs_deadlock_result as the periodic detector's. */
int rs_deadlock_check_now(rs_sim *sim);
typedef struct rs_queue_ref {
    int32_t sw;
    int32_t port;
    int32_t prio;
} rs_queue_ref;
/* Opt-in sampled time series: every period_ps record egress bytes, ingress bytes and the paused
 * state of each probe queue, up to max_samples rows (preallocated here; later samples are counted
 * as missed).  Reconfiguring discards earlier samples. */
int rs_sampler_config(rs_sim *sim, int64_t period_ps, const rs_queue_ref *probes, uint32_t n_probes,
                      uint32_t max_samples);
/* Copy the rows so far (t[n], egress/ingress/paused[n * n_probes]); returns n. */
int rs_sampler_read(const rs_sim *sim, int64_t *t, uint64_t *egress, uint64_t *ingress, uint8_t *paused,
                    uint64_t *missed);

/* InfiniBand credit-based flow control on one port (link/credit.h): the port stops using PFC and
 * sends a data packet on a VL only with credits for all its 64-byte blocks.  Give both ends of a
 * link the same configuration kind (a port whose peer has none never gets credits).  Configure a
 * port while nothing is queued at it or on its link. */
typedef struct rs_credit_cfg {
    uint32_t n_vls;                       /* data VLs 0..n_vls-1, 1..8 */
    uint32_t buffer_blocks[RS_NPRIO];     /* receive buffer per VL in 64-byte blocks, 1..65535 */
    uint8_t sl2vl[16];                    /* VL of what the port sends, by SL (each < n_vls) */
    int64_t fc_period_ps;                 /* periodic FC packets (IBA: <= 65,536 symbol times), > 0 */
    /* VL arbitration at switch ports (link/vlarb.h); vlarb 0: the switch's strict / WRR scheduler */
    uint32_t vlarb;
    uint8_t vlarb_high[RS_NPRIO];         /* weight per VL in 64-byte units, 0: not in the table */
    uint8_t vlarb_low[RS_NPRIO];
    uint32_t vlarb_high_limit;            /* LimitOfHighPriority: x 4096 bytes, 255 unlimited, 0..255 */
} rs_credit_cfg;
typedef struct rs_credit_stats {
    int64_t stall_ps[RS_NPRIO];           /* time each VL had a packet to send and too few credits */
    uint32_t stalled_mask;                /* VLs stalled now */
    uint64_t fc_sent, fc_rx;              /* flow-control packets sent and received */
    uint64_t stalls;                      /* times a VL became stalled */
    uint32_t used_blocks[RS_NPRIO];       /* receive buffer held now, per VL */
    uint32_t peak_blocks[RS_NPRIO];       /* its peak */
    uint32_t cap_blocks[RS_NPRIO];
    uint64_t overruns;                    /* arrivals that found too little room (0 unless a bug) */
} rs_credit_stats;
int rs_port_credit_config(rs_sim *sim, int kind, int node, int port, const rs_credit_cfg *cfg);
/* Testing: 1 makes every switch port arm its transmit-done event after each frame, also when
 * nothing is queued behind it (0, the default, skips it; the results are the same, the event
 * count is higher). */
void rs_net_set_switch_tx_eager(rs_sim *sim, int on);
/* IB congestion control (annex A10) Victim_Mask bit of a switch port (default 0): a credit-mode port
 * that lacks credits (link/credit.h rs_credit_starved) is a victim of congestion and ECN-marks (FECN)
 * only when its bit is set; a port with credits marks as usual.  Ports without credits ignore it. */
int rs_switch_victim_mask(rs_sim *sim, int sw, int port, int on);
/* Returns RS_ERR_INVAL for no such port, 1 when the port is not in credit mode, else RS_OK. */
int rs_port_credit_stats(const rs_sim *sim, int kind, int node, int port, rs_credit_stats *out);

/* Linear forwarding table (IBA 18.2.4): switch `sw` forwards a packet for DLID d (host index + 1)
 * out of port ports[d] (0xFFFF: no route, the packet is dropped as no_route), for d < n; n = 0
 * returns the switch to its computed routes.  Computed by a subnet manager (rdmasim.ib_fabric). */
int rs_switch_set_lft(rs_sim *sim, int sw, const uint16_t *ports, uint32_t n);

/* First deadlock found: returns the cycle length (0: none yet), fills *t_ps and up to cap entries. */
int rs_deadlock_result(const rs_sim *sim, int64_t *t_ps, rs_queue_ref *cycle, int cap);

#endif
