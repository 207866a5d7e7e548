/* NIC-dependent transport constants of one host (rdmasim/nic.py names the profiles and their
 * sources).  The defaults are Linux rxe's, so a host nobody configured behaves as before. */
#ifndef RDMASIM_TRANSPORT_NIC_PARAMS_H
#define RDMASIM_TRANSPORT_NIC_PARAMS_H

#include <stdint.h>

/* rxe_param.h RXE_MAX_UNACKED_PSNS: a request may start while req_psn - comp_psn <= this */
#define RS_NIC_RXE_MAX_UNACKED_PSNS 128u
/* rxe_req.c: a packet that does not end its message asks for an ACK when
 * `noack_pkts++ > RXE_MAX_PKT_PER_ACK` (64): the 66th packet since the last AckReq */
#define RS_NIC_RXE_ACK_REQ_INTERVAL 66u
/* Largest window accepted: half the 24-bit PSN space, so PSN comparisons stay unambiguous */
#define RS_NIC_MAX_UNACKED_PSNS_LIMIT (1u << 22)

typedef struct rs_nic_params {
    uint32_t max_unacked_psns; /* requester window in PSNs (1 .. RS_NIC_MAX_UNACKED_PSNS_LIMIT) */
    /* Responder ACK coalescing: an AckReq packet is acknowledged at once when it completes a group of
     * `ack_coalesce_pkts` accepted packets since the last ACK; otherwise the ACK waits at most
     * `ack_timeout_ps` (a later ACK covers it).  1 = every AckReq packet is acknowledged (rxe). */
    uint32_t ack_coalesce_pkts;
    int64_t ack_timeout_ps;    /* > 0 when ack_coalesce_pkts > 1 */
    /* Requester: AckReq on a message's last packet and on the ack_req_interval-th packet since the
     * last AckReq (>= 1; 1 = every packet, as ns-3 HPCC's L2_ACK_INTERVAL 1; at most
     * max_unacked_psns + 1: the window must hold the packets up to the next AckReq) */
    uint32_t ack_req_interval;
} rs_nic_params;

static inline void rs_nic_params_default(rs_nic_params *p)
{
    p->max_unacked_psns = RS_NIC_RXE_MAX_UNACKED_PSNS;
    p->ack_coalesce_pkts = 1;
    p->ack_timeout_ps = 0;
    p->ack_req_interval = RS_NIC_RXE_ACK_REQ_INTERVAL;
}

#endif
