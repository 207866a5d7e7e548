/* The simulation object: every layer's context, composed (the layers' own structs are in
 * engine/engine.h, link/net.h, transport/transport.h, workload/flows_impl.h). */
#ifndef RDMASIM_CORE_SIM_IMPL_H
#define RDMASIM_CORE_SIM_IMPL_H

#include "rdmasim/sim.h"
#include "transport/transport.h"
#include "uet/uet.h"
#include "workload/flows_impl.h"

struct rs_flows;
struct rs_nic_mux;

struct rs_sim {
    rs_transport tp; /* hosts and QPs, over the network (tp.net) and the engine (tp.net.eng) */
    uint64_t events;
    struct rs_flows *flows; /* NULL: no bulk flows (workload/flows.c) */
    int flows_stop; /* every bulk flow finished: return to Python after this event */
    rs_uet uet;     /* the Ultra Ethernet transport, beside tp (uet/uet.h) */
    struct rs_nic_mux **mux; /* by host: its port shared by both transports (sim/nic_mux.c); NULL: RoCE only */
    uint32_t n_mux;
    struct rs_par *par; /* NULL: one queue; else where each node runs (sim/par.c) */
};

/* Handle one event (sim/sim.c): the dispatch of every layer's timers. */
void rs_sim_dispatch(rs_sim *sim, const rs_event *ev);

/* sim/nic_mux.c: the hosts' ports serve both transports from now on (idempotent; new hosts too). */
int rs_sim_uet_enable(rs_sim *sim);
void rs_sim_mux_free(rs_sim *sim);

/* Record a failure reason; returns `code` for tail calls. */
int rs_sim_fail(rs_sim *sim, int code, const char *fmt, ...);

/* Arm a timer on the simulation's queue; on out of memory marks the run failed. */
static inline void rs_sim_arm(rs_sim *sim, rs_timer *tm, int64_t t_ps) { rs_engine_arm(&sim->tp.net.eng, tm, t_ps); }

#endif
