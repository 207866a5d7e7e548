/* A host: one RoCE NIC with one port, its memory regions, CQs and QPs. */
#ifndef RDMASIM_TRANSPORT_HOST_H
#define RDMASIM_TRANSPORT_HOST_H

#include <stdint.h>

#include "link/port.h"
#include "rdmasim/cc.h"
#include "rdmasim/rng.h"
#include "rdmasim/verbs.h"
#include "transport/cq.h"
#include "transport/mr.h"
#include "transport/mw.h"
#include "transport/nic_params.h"
#include "transport/qp.h"
#include "transport/qpn.h"
#include "transport/srq.h"

struct rs_transport;

typedef struct rs_host {
    struct rs_transport *tp;
    int id;
    rs_port port;            /* its addresses and DSCP map too (port.addr) */
    rs_rng rng;              /* key generation */
    uint64_t next_iova;

    rs_mr *mrs;
    uint32_t n_mrs;
    /* bumped whenever a region's PD or access changes, a region goes, or a window is bound,
     * invalidated or deallocated (rs_host_keys_changed): a send WQE whose SGEs all resolved at the
     * same value still resolves (rs_swqe.res_gen), and so does the rest of a WRITE's RETH range
     * (rs_qp.write_gen) */
    uint32_t mr_gen;
    rs_mw *mws;              /* memory windows by index (mw.h) */
    uint32_t n_mws;
    rs_cq *cqs;
    uint32_t n_cqs;
    rs_qpn_table qpns;       /* the live QPs by number (qpn.h) */
    rs_srq **srqs;           /* shared receive queues by handle - 1 (NULL: destroyed) */
    uint32_t n_srqs;

    rs_qp *ring[8];          /* per PFC priority: round-robin ring of QPs with data to send (nic.c) */
    uint8_t rr_prio;         /* the priority whose ring goes first next time */
    uint8_t ring_mask;       /* bit p: ring[p] is not empty */
    uint32_t ring_len[8];    /* QPs in each ring (rs_nic_idle_after decides from it with many) */
    rs_qp **pace_heap;       /* QPs held by their rate limiter, earliest next_tx_ps first */
    uint32_t pace_len;
    uint32_t pace_cap;
    rs_cc_config cc;         /* congestion control for QPs created afterwards */
    uint8_t *cc_plugin_params[RS_CC_PLUGINS]; /* the parameters of each plug-in kind (cc_plugin.c) */
    rs_nic_params nic;       /* NIC-dependent transport constants (nic_params.h) */
    rs_timer pace;           /* wakes the port when a paced QP may send again */
    int scripted;            /* frames go to Python (peer.c), not to the transport */
    rs_pkt *peer_head;       /* received frames waiting for Python */
    rs_pkt *peer_tail;
    uint64_t rx_unknown_qp;  /* frames for a QPN that does not exist (dropped, counted) */
    uint64_t rx_bad_state;   /* frames for a QP that cannot accept them (dropped, counted) */
    uint64_t rx_bad_icrc;    /* frames whose ICRC is wrong (dropped, counted) */
    uint64_t rx_malformed;   /* frames that do not parse as RoCEv2 or PFC (dropped, counted) */
    rs_pkt *lb_head;         /* frames to the NIC's own host, looped inside it (nic.c), oldest first */
    rs_pkt *lb_tail;
    rs_timer loopback;       /* fires when lb_head reaches the NIC's receive path */
    uint64_t lb_frames;      /* frames looped back so far */
} rs_host;

/* A key's region, window, PD or access changed: what was resolved before is resolved again
 * (mr_gen never reaches UINT32_MAX, so that mr_gen + 1, a resolution's mark, is never 0) */
static inline void rs_host_keys_changed(rs_host *h) { h->mr_gen = h->mr_gen + 1u == UINT32_MAX ? 0 : h->mr_gen + 1u; }

rs_srq *rs_host_srq(rs_host *h, uint32_t handle);
void rs_host_free_srqs(rs_host *h);

static inline rs_qp *rs_host_qp(rs_host *h, uint32_t qpn) { return rs_qpn_find(&h->qpns, qpn); }

#endif
