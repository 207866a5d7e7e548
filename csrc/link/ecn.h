/* ECN marking at a switch egress queue (protocol.md 7): RED on the
 * instantaneous queue, p = 0 at or below Kmin, Pmax (q - Kmin) / (Kmax - Kmin)
 * up to Kmax, 1 above.  Only ECT packets (ECN bits 01 or 10) are marked CE (11). */
#ifndef RDMASIM_NET_ECN_H
#define RDMASIM_NET_ECN_H

#include <stdint.h>

#include "rdmasim/packet.h"
#include "rdmasim/rng.h"

/* Maybe set CE on pkt given queue depth q_bytes; returns 1 if it marked. Draws from rng only when
 * Kmin < q <= Kmax and the packet is ECT, so unmarked configurations leave the stream untouched. */
int rs_ecn_maybe_mark(rs_pkt *pkt, uint64_t q_bytes, uint64_t kmin, uint64_t kmax, double pmax, rs_rng *rng);

#endif
