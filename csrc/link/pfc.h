/* Send side of PFC: one XOFF/XON machine per switch (ingress port, lossless
 * priority), driven by the MMU's occupancy (protocol.md 6.2, 6.3).
 *
 *   RUNNING --enqueue, should_pause--> PAUSING: send XOFF (cfg.pfc_quanta), arm refresh
 *   PAUSING --refresh timer---------> PAUSING: send XOFF again (before the upstream's timer
 *                                      expires: every half pause time), re-arm
 *   PAUSING --dequeue, should_resume-> RUNNING: send XON (quanta 0), cancel refresh
 * The frames go on the ingress port's own control queue, i.e. back upstream,
 * ahead of any data. */
#ifndef RDMASIM_NET_PFC_H
#define RDMASIM_NET_PFC_H

#include <stdint.h>

#include "rdmasim/eventq.h"

struct rs_net;
struct rs_switch;

typedef struct rs_pfc_queue {
    struct rs_switch *sw;
    uint16_t port;
    uint8_t prio;
    uint8_t pausing;       /* XOFF sent and not yet resumed */
    rs_timer refresh;
} rs_pfc_queue;

void rs_pfc_init(rs_pfc_queue *q, struct rs_switch *sw, uint16_t port, uint8_t prio);
/* After a packet was admitted to ingress queue q. */
void rs_pfc_on_enqueue(struct rs_net *net, rs_pfc_queue *q);
/* After a packet that came in on q left the switch. */
void rs_pfc_on_dequeue(struct rs_net *net, rs_pfc_queue *q);
/* Refresh timer fired. */
void rs_pfc_refresh(struct rs_net *net, rs_pfc_queue *q);

#endif
