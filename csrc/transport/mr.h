/* Memory regions: caller-owned bytes registered with a host.  Keys follow rxe:
 * lkey = (index << 8) | 8 random bits; rkey = lkey when any REMOTE_* access is
 * granted, else 0.  Addresses are deterministic per host (iova), so pcaps do
 * not depend on where Python put the buffers. */
#ifndef RDMASIM_TRANSPORT_MR_H
#define RDMASIM_TRANSPORT_MR_H

#include <stdint.h>

struct rs_transport;

typedef struct rs_mr {
    uint8_t *base;     /* caller's buffer; NULL when the slot is free (or size_only) */
    uint64_t iova;
    uint64_t length;
    uint32_t lkey;
    uint32_t rkey;
    uint32_t access;
    uint32_t pd;
    uint32_t size_only; /* registered without bytes: packets carry lengths only (bulk flows) */
} rs_mr;

/* What rs_mr_resolve returns for a size-only region: the access is valid, there are no bytes to
 * move.  Never dereferenced: every copy site compares against it. */
#define RS_MR_NO_BYTES ((uint8_t *)(uintptr_t)1)

struct rs_host;

/* Resolve [addr, addr+len) under `key` for `need` access (0 = local read): a local access
 * (remote_qpn 0) by lkey, or a remote one on behalf of QP `remote_qpn` by rkey, which may name
 * a memory window (mw.h).
 * Returns a pointer into the buffer, RS_MR_NO_BYTES for a size-only region, or NULL if the key,
 * PD, access or range is wrong. */
uint8_t *rs_mr_resolve(struct rs_host *h, uint32_t key, uint32_t remote_qpn, uint32_t pd, uint32_t need,
                       uint64_t addr, uint64_t len);

/* Write `len` bytes at offset `off` of the byte stream described by the SGE list (LOCAL_WRITE
 * needed; NULL data writes zeros). Returns 0, or -1 on a key/range failure or a too-short list. */
struct rs_sge;
int rs_scatter_sges(struct rs_host *h, uint32_t pd, const struct rs_sge *sge, uint32_t n, uint64_t off,
                    const uint8_t *data, uint32_t len);

/* Register a region of `length` bytes that has no memory behind it (rdmasim/flows.h): every rule
 * of rs_mr_reg applies; REMOTE_ATOMIC is refused (an atomic needs a real word). */
int rs_mr_reg_size_only(struct rs_transport *tp, int host, uint32_t pd, uint64_t length, uint32_t access,
                        uint64_t *iova, uint32_t *lkey, uint32_t *rkey);

#endif
