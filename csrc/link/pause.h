/* Receive side of 802.1Qbb PFC (protocol.md 6.1), and the frame its senders (a switch's
 * lossless queues, link/pfc.c; a slow NIC, link/rxpipe.c) build.  A port that receives a PFC
 * frame stops sending the enabled priorities for time[i] x 512 bit times at
 * its own transmit rate (a new frame restarts the timer; time 0 resumes at
 * once).  Works the same for host NIC ports and switch ports.  PFC frames are
 * consumed here: never forwarded, never queued behind data. */
#ifndef RDMASIM_NET_PAUSE_H
#define RDMASIM_NET_PAUSE_H

#include <stdint.h>

#include "link/port.h"

struct rs_net;

/* A PFC frame arrived at `port`; takes ownership of pkt. */
void rs_pause_receive(struct rs_net *net, rs_port *port, rs_pkt *pkt);
/* The pfc_respond timer fired: the waiting PFC frames whose response time is over act now. */
void rs_pause_respond(struct rs_net *net, rs_port *port);
/* The pause_end timer fired: resume priorities whose time is up. */
void rs_pause_expire(struct rs_net *net, rs_port *port);
/* Picoseconds of `quanta` x 512 bit times at rate_bps, rounded up. */
int64_t rs_pause_quanta_ps(uint32_t quanta, int64_t rate_bps);
/* A PFC frame from `src_mac` pausing the priorities of `class_mask` for `quanta` (0: resume), to the
 * 802.1Qbb multicast address; NULL on out of memory (the run is then marked failed). */
rs_pkt *rs_pfc_frame_new(struct rs_net *net, const uint8_t src_mac[6], uint8_t class_mask, uint16_t quanta);
/* Stats with time paused accounted up to `now_ps`. */
void rs_pause_stats_now(const rs_port *port, int64_t now_ps, rs_pause_stats *out);

#endif
