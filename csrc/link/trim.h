/* Packet trimming in switches (NDP, Handley et al., SIGCOMM 2017; an option of the Ultra Ethernet
 * specification): instead of queueing a packet behind a long queue, or dropping it for lack of
 * buffer, the switch cuts it to its headers and forwards the header at a high priority, so the
 * receiver learns of the loss one queueing delay early and asks for exactly that packet again.
 *
 * Only packets their transport marked trim_ok are trimmed (rs_pkt); RoCE never marks them.  A
 * trimmed packet has payload_len 0 and the frame length of its headers (rs_frame_len), so it
 * occupies the buffer and the wire for its headers only.  Credit (InfiniBand) ports never trim. */
#ifndef RDMASIM_LINK_TRIM_H
#define RDMASIM_LINK_TRIM_H

#include <stdint.h>

#include "link/switch.h"

/* Before admission of pkt (frame of *bytes) to egress queue (out_idx, prio) of sw: the egress
 * priority it goes at.  Trims it (and updates *bytes) when the queue holds more than the
 * threshold with it; a packet trimmed already goes at the trim priority.  Call only when
 * sw->cfg.trim and pkt->trim_ok. */
uint32_t rs_trim_on_enqueue(rs_switch *sw, rs_pkt *pkt, uint32_t out_idx, uint32_t prio, uint32_t *bytes);
/* The buffer refused pkt: trim it if it may be and is not yet (returns 1, with *bytes and *prio
 * the header's), else 0 (drop it). */
int rs_trim_instead_of_drop(rs_switch *sw, rs_pkt *pkt, uint32_t out_idx, uint32_t *prio, uint32_t *bytes);

#endif
