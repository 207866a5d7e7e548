/* The simulation object and the internal calls between engine, network and transport. */
#ifndef RDMASIM_CORE_SIM_IMPL_H
#define RDMASIM_CORE_SIM_IMPL_H

#include <stdio.h>

#include "engine/engine.h"
#include "link/link.h"
#include "link/net.h"
#include "rdmasim/codec.h"
#include "rdmasim/eventq.h"
#include "rdmasim/mutants.h"
#include "rdmasim/pool.h"
#include "rdmasim/sim.h"
#include "transport/host.h"

/* Event kinds of the transport's and the workload's timers (the link layer's: link/net.h). */
enum rs_event_kind {
    RS_EV_QP_RTO = 3,       /* owner: rs_qp, retransmit (local ACK) timeout */
    RS_EV_QP_RNR = 4,       /* owner: rs_qp, RNR wait over */
    /* 11 was the per-QP congestion-control timer: CC timers now run lazily (transport/cc_qp.c) */
    RS_EV_NIC_PACE = 12,     /* owner: rs_host, a paced QP may send */
    RS_EV_QP_RESP_DRAIN = 13, /* owner: rs_qp, run requests held behind a finished READ */
    RS_EV_FLOWS = 14,        /* owner: rs_flows, start due flows, free finished ones (workload/flows.c) */
    RS_EV_NIC_LOOPBACK = 16, /* owner: rs_host, a frame the NIC looped back to itself is received (nic.c) */
};

struct rs_switch;
struct rs_monitor;
struct rs_flows;

struct rs_sim {
    rs_net net;    /* the engine (net.eng) and the ports, links, switches, monitors, capture (link/net.h) */
    uint64_t events;
    rs_pool pool;
    rs_host **hosts;
    uint32_t n_hosts;
    struct rs_flows *flows; /* NULL: no bulk flows (workload/flows.c) */
    /* A QP carrying a bulk flow (rs_qp.flow_ref) completed its work request: the transport calls
     * this instead of writing a CQE.  The workload registers it with its flow table. */
    void (*flow_complete)(rs_sim *sim, rs_qp *qp, uint32_t status);
    /* Every QP's memory.  A destroyed QP goes back to the slab for reuse and is freed only with the
     * simulation: event-queue entries of its timers may still be in the heap (lazy cancel), and
     * reading such an entry's timer must find memory of a QP, never freed memory.  A reused QP's
     * timers get new sequence numbers, so old entries stay stale (rdmasim/eventq.h). */
    rs_slab qp_slab;
    rs_slab qp_cc_slab; /* QPs created on a host that runs CC: rs_qp plus RS_CC_STATE_BYTES (qp.h) */
    rs_slab cc_slab;    /* CC state of a QP created before its host turned CC on (cc_qp.c) */
    int flows_stop; /* every bulk flow finished: return to Python after this event */
    int peer_stop;  /* a scripted peer got a frame: return to Python after this event */
};

/* Record a failure reason; returns `code` for tail calls. */
int rs_sim_fail(rs_sim *sim, int code, const char *fmt, ...);

/* Arm a timer on the simulation's queue; on out of memory marks the run failed. */
static inline void rs_sim_arm(rs_sim *sim, rs_timer *tm, int64_t t_ps) { rs_engine_arm(&sim->net.eng, tm, t_ps); }

/* ---- NIC (transport/nic.c) ---- */
/* The host port's client: these NIC calls behind the link-layer seam (link/port.h). */
rs_port_client rs_nic_port_client(rs_host *h);
/* The NIC's next frame for its port: a control frame, else a data frame round-robin over QPs. */
rs_pkt *rs_nic_next_frame(rs_sim *sim, rs_host *h);
/* A frame arrived at the host's port. Takes ownership of pkt. */
/* A frame for host h was just put on its link: start loading what its arrival reads (nic.c). */
void rs_nic_frame_coming(rs_host *h, const rs_pkt *pkt);
void rs_nic_receive(rs_sim *sim, rs_host *h, rs_pkt *pkt);
/* Queue a control frame (ACK/NAK) and kick the port. */
void rs_nic_send_ctrl(rs_sim *sim, rs_host *h, rs_pkt *pkt);
/* After a frame that ends at free_ps: 1 if nothing can be sent before the NIC's pace timer (which is
 * then armed, not before free_ps), so the port needs no transmit-done event; 0 otherwise. */
int rs_nic_idle_after(rs_sim *sim, rs_host *h, int64_t free_ps);
/* RoCE loopback: the port hands back a frame for the NIC's own host with its serialisation time
 * at the port link's rate; it reaches rs_nic_receive then, never the link; the loopback event. */
void rs_nic_loopback(rs_sim *sim, rs_host *h, rs_pkt *pkt, int64_t ser_ps);
void rs_nic_loopback_arrival(rs_sim *sim, rs_host *h);
/* The QP may have a packet to send: put it on the round-robin ring and kick the port. */
void rs_nic_wake(rs_sim *sim, rs_qp *qp);
/* peer.c: keep a frame that reached a scripted host for Python. */
void rs_peer_deliver(rs_sim *sim, rs_host *h, rs_pkt *pkt);
/* Fill the L2/L3/UDP/BTH fields every packet from this QP carries. */
rs_pkt *rs_nic_new_packet(rs_sim *sim, rs_qp *qp, uint8_t opcode, uint32_t psn);

#endif
