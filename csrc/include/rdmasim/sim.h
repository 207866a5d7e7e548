/* Public C API of the simulation: the control path the Cython layer calls.
 *
 * All state hangs off one rs_sim; several can live in one process.  Functions
 * return 0 (or a non-negative id) on success and a negative rs_err on failure,
 * with a readable reason in rs_sim_errmsg().  Nothing here aborts. */
#ifndef RDMASIM_SIM_H
#define RDMASIM_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "rdmasim/base.h"
#include "rdmasim/fabric.h"
#include "rdmasim/verbs.h"

/* ---- simulation ---- */
rs_sim *rs_sim_new(uint64_t seed);
void rs_sim_free(rs_sim *sim);
const char *rs_sim_errmsg(const rs_sim *sim);
int64_t rs_sim_now(const rs_sim *sim);

enum rs_run_reason {
    RS_RUN_UNTIL = 0,      /* reached until_ps */
    RS_RUN_IDLE = 1,       /* no events left */
    RS_RUN_CQ = 2,         /* the watched CQ holds at least the requested completions */
    RS_RUN_MAX_EVENTS = 3, /* processed max_events (progress reporting / step-through) */
    RS_RUN_ERROR = 4,      /* internal failure (out of memory): see rs_sim_errmsg */
    RS_RUN_PEER = 5,       /* a scripted peer received a frame: Python handles it, then runs on */
    RS_RUN_STEP = 6,       /* stopped after the next frame went on a link (rs_sim_stop_after_next_frame) */
    RS_RUN_FLOWS_DONE = 7, /* every bulk flow finished (rdmasim/flows.h, rs_flows_stop_when_done) */
};

typedef struct rs_run_args {
    int64_t until_ps;    /* stop before processing events later than this (INT64_MAX: no limit) */
    uint64_t max_events; /* 0 = unlimited */
    int watch_host;      /* -1: none */
    int watch_cq;
    uint32_t watch_count;
} rs_run_args;

/* Run the event loop. Returns an rs_run_reason. */
int rs_sim_run(rs_sim *sim, const rs_run_args *args);
uint64_t rs_sim_events(const rs_sim *sim);
/* Split the runs from now on into `parts` partitions (sim/par.c): host i runs in host_part[i],
 * switch j in switch_part[j] (one entry per host and switch of the fabric as it is); parts <= 1:
 * one queue.  Every run orders simultaneous events by keys that do not depend on the split
 * (engine/engine.h, link/link.c): any partitioning, one queue included, gives the results of
 * a run without one.  `threads` only names the setting in refusals.  RS_OK or RS_ERR_INVAL (bad table, a link between partitions
 * without delay). */
int rs_sim_set_partitions(rs_sim *sim, uint32_t parts, uint32_t threads, const uint16_t *host_part, uint32_t n_hosts,
                          const uint16_t *switch_part, uint32_t n_switches);
/* The lookahead of the partitioning (ps; INT64_MAX: no link cut), or -1 without one. */
int64_t rs_sim_partition_lookahead(const rs_sim *sim);
/* What the partitioned runs did since the partitions were set, into out[0..n): runs, jobs, barrier
 * waits, windows, global events, events handled in jobs, the critical path over threads and over
 * partitions (per job the most events one handled, summed), then the events of each partition.
 * Returns how many values there are (8 + partitions; 0 without partitions). */
uint32_t rs_sim_par_stats(const rs_sim *sim, uint64_t *out, uint32_t n);
/* RS_OK, or RS_ERR_INVAL with the reason when a partitioned run cannot hold what `args` and the
 * simulation ask for (the reason names the setting: "[simulation] threads = N: ... need threads = 1"). */
int rs_sim_par_check(rs_sim *sim, const rs_run_args *args);
/* Packets currently allocated from the pool, and the peak. */
void rs_sim_pool_stats(const rs_sim *sim, uint64_t out[4]);
/* rs_pool_trim of the packet pool: 1 if it held nothing in use and was emptied. */
int rs_sim_pool_trim(rs_sim *sim);

/* The fabric's link layer, enum rs_link_layer (RS_LL_ROCE default, RS_LL_IB: InfiniBand framing, no
 * PFC); only before any host, switch or capture exists. */
int rs_sim_set_link_layer(rs_sim *sim, int link_layer);
/* pcap capture of every frame put on any link (at its transmit start); LINKTYPE_INFINIBAND on IB. */
int rs_sim_pcap_open(rs_sim *sim, const char *path, uint32_t snaplen); /* snaplen 0: whole frames */
/* ... with the file's pcap link type: 0 the fabric's (1 Ethernet; 247 InfiniBand), or on an IB
 * fabric 197 (ERF InfiniBand records, which Wireshark opens). */
int rs_sim_pcap_open_as(rs_sim *sim, const char *path, uint32_t snaplen, uint32_t linktype);
int rs_sim_pcap_close(rs_sim *sim);
/* Write the capture's buffered frames to its file (a no-op without a capture); a write error stops
 * the capture as during a run (rs_sim_pcap_status reports it). */
void rs_sim_pcap_flush(rs_sim *sim);

/* ---- topology ---- */
/* Add a host (one NIC with one port). Returns its index. */
int rs_host_add(rs_sim *sim);
/* Full-duplex link between two hosts' ports. Returns the id of the a->b direction;
 * b->a is that id + 1. */
int rs_link_connect(rs_sim *sim, int host_a, int host_b, int64_t rate_bps, int64_t delay_ps);
int rs_link_set_loss(rs_sim *sim, int link, double loss_prob);
/* Gilbert-Elliott bursty loss (replaces i.i.d. loss on this direction). */
int rs_link_set_gilbert(rs_sim *sim, int link, double p_good_bad, double p_bad_good, double loss_good,
                        double loss_bad);

enum rs_drop_match {
    RS_DROP_NTH = 0, /* the n-th frame (0-based) transmitted in this direction */
    RS_DROP_PSN = 1, /* the next `count` RoCE frames carrying this PSN */
};
int rs_link_add_drop(rs_sim *sim, int link, int match, uint64_t value, uint32_t count);

int rs_link_get_stats(const rs_sim *sim, int link, rs_link_stats *out);
int rs_host_info(const rs_sim *sim, int host, uint8_t mac[6], uint32_t *ip);
/* A host port's InfiniBand addresses: its LID (host index + 1) and GID (fe80::/64 + port GUID). */
int rs_host_ib_addr(const rs_sim *sim, int host, uint16_t *lid, uint8_t gid[16]);

/* ---- step-through and inspection (teaching, debugging) ---- */
/* Make the next rs_sim_run return RS_RUN_STEP right after the next frame is put on a link. */
void rs_sim_stop_after_next_frame(rs_sim *sim);

#endif
