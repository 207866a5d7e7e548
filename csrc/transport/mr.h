/* Memory regions: caller-owned bytes registered with a host.  Keys follow rxe:
 * lkey = (index << 8) | 8 random bits; rkey = lkey when any REMOTE_* access is
 * granted, else 0.  Addresses are deterministic per host (iova), so pcaps do
 * not depend on where Python put the buffers. */
#ifndef RDMASIM_TRANSPORT_MR_H
#define RDMASIM_TRANSPORT_MR_H

#include <stdint.h>

typedef struct rs_mr {
    uint8_t *base;     /* caller's buffer; NULL when the slot is free */
    uint64_t iova;
    uint64_t length;
    uint32_t lkey;
    uint32_t rkey;
    uint32_t access;
    uint32_t pd;
} rs_mr;

struct rs_host;

/* Resolve [addr, addr+len) under `key` for `need` access (0 = local read).
 * Returns a pointer into the buffer, or NULL if the key, PD, access or range is wrong. */
uint8_t *rs_mr_resolve(struct rs_host *h, uint32_t key, int remote, uint32_t pd, uint32_t need,
                       uint64_t addr, uint64_t len);

/* Write `len` bytes at offset `off` of the byte stream described by the SGE list (LOCAL_WRITE
 * needed; NULL data writes zeros). Returns 0, or -1 on a key/range failure or a too-short list. */
struct rs_sge;
int rs_scatter_sges(struct rs_host *h, uint32_t pd, const struct rs_sge *sge, uint32_t n, uint64_t off,
                    const uint8_t *data, uint32_t len);

#endif
