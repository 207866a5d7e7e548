/* Shared-buffer MMU of one switch (protocol.md 6.3, after HPCC's switch-mmu.cc).
 *
 * Ingress accounting per (port, priority): the first `reserve` bytes are
 * guaranteed; bytes above it are "shared" and count against the switch-wide
 * shared pool; a lossless queue whose shared use would exceed the threshold T
 * puts further bytes in its headroom (that is what arrives after XOFF).
 *   T = xoff_bytes                                       (static)
 *   T = (buffer - sum headroom - sum reserve - shared used) >> alpha_shift  (dynamic)
 * Egress accounting per (port, priority) gives queue depth for ECN and the
 * lossy drop threshold.  Lossless packets are dropped only when the headroom
 * overflows (a mis-sized headroom); lossy ones when their egress queue is over
 * its limit or the shared pool is exhausted. */
#ifndef RDMASIM_NET_MMU_H
#define RDMASIM_NET_MMU_H

#include <stdint.h>

#include "rdmasim/fabric.h"

typedef struct rs_mmu {
    const rs_switch_cfg *cfg;
    uint32_t n_ports;
    uint64_t pool_bytes;   /* buffer - sum headroom - sum reserve */
    uint64_t *in_bytes;    /* [port * 8 + prio]: ingress bytes outside headroom */
    uint64_t *hdrm_bytes;  /* [port * 8 + prio]: ingress bytes in headroom */
    uint64_t *eg_bytes;    /* [port * 8 + prio]: egress queue bytes */
    uint64_t shared_used;  /* sum over ingress queues of bytes above reserve */
} rs_mmu;

/* Allocate the counters; returns 0, -1 on out of memory, -2 if reserve + headroom exceed the buffer. */
int rs_mmu_init(rs_mmu *m, const rs_switch_cfg *cfg);
void rs_mmu_free(rs_mmu *m);

/* Decide whether a packet of `bytes` from ingress queue (in, in_prio) to egress queue (out, prio)
 * fits (the two priorities differ only under hop classes): returns -1 if admitted (and
 * accounted), else the rs_sw_drop reason.  Lossless or lossy: by the ingress priority. */
int rs_mmu_admit(rs_mmu *m, uint32_t in, uint32_t in_prio, uint32_t out, uint32_t prio, uint32_t bytes);
/* Credit mode (credit.h): the sender checked the room, so the packet is always admitted and
 * accounted (never in headroom); returns -1. */
int rs_mmu_admit_credit(rs_mmu *m, uint32_t in, uint32_t in_prio, uint32_t out, uint32_t prio, uint32_t bytes);
/* The packet left egress queue (out, prio): release its bytes. */
void rs_mmu_release(rs_mmu *m, uint32_t in, uint32_t in_prio, uint32_t out, uint32_t prio, uint32_t bytes);

uint64_t rs_mmu_threshold(const rs_mmu *m);
uint64_t rs_mmu_shared_of(const rs_mmu *m, uint32_t port, uint32_t prio);
/* PFC decisions for a lossless ingress queue (HPCC rules). */
int rs_mmu_should_pause(const rs_mmu *m, uint32_t port, uint32_t prio);
int rs_mmu_should_resume(const rs_mmu *m, uint32_t port, uint32_t prio);

#endif
