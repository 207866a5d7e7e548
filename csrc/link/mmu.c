/* Shared-buffer accounting (see mmu.h for the model). */
#include "link/mmu.h"

#include <stdlib.h>

#define IDX(port, prio) ((size_t)(port) * RS_NPRIO + (prio))

static uint32_t popcount8(uint8_t v)
{
    uint32_t n = 0;
    for (; v; v &= (uint8_t)(v - 1))
        n++;
    return n;
}

int rs_mmu_init(rs_mmu *m, const rs_switch_cfg *cfg)
{
    m->cfg = cfg;
    m->n_ports = cfg->n_ports;
    size_t n = (size_t)cfg->n_ports * RS_NPRIO;
    uint64_t fixed = (uint64_t)cfg->n_ports * RS_NPRIO * cfg->reserve_bytes +
                     (uint64_t)cfg->n_ports * popcount8(cfg->pfc_mask) * cfg->headroom_bytes;
    if (fixed > cfg->buffer_bytes)
        return -2;
    m->pool_bytes = cfg->buffer_bytes - fixed;
    m->in_bytes = calloc(n, sizeof(uint64_t));
    m->hdrm_bytes = calloc(n, sizeof(uint64_t));
    m->eg_bytes = calloc(n, sizeof(uint64_t));
    m->shared_used = 0;
    if (!m->in_bytes || !m->hdrm_bytes || !m->eg_bytes) {
        rs_mmu_free(m);
        return -1;
    }
    return 0;
}

void rs_mmu_free(rs_mmu *m)
{
    free(m->in_bytes);
    free(m->hdrm_bytes);
    free(m->eg_bytes);
    m->in_bytes = m->hdrm_bytes = m->eg_bytes = NULL;
}

uint64_t rs_mmu_threshold(const rs_mmu *m)
{
    if (!m->cfg->dynamic)
        return m->cfg->xoff_bytes;
    uint64_t free_shared = m->shared_used < m->pool_bytes ? m->pool_bytes - m->shared_used : 0;
    return free_shared >> m->cfg->alpha_shift;
}

uint64_t rs_mmu_shared_of(const rs_mmu *m, uint32_t port, uint32_t prio)
{
    uint64_t b = m->in_bytes[IDX(port, prio)];
    return b > m->cfg->reserve_bytes ? b - m->cfg->reserve_bytes : 0;
}

/* Add bytes outside headroom to an ingress queue and the shared pool. */
static void add_ingress(rs_mmu *m, size_t i, uint32_t bytes)
{
    uint64_t before = m->in_bytes[i], after = before + bytes, r = m->cfg->reserve_bytes;
    uint64_t sh_before = before > r ? before - r : 0, sh_after = after > r ? after - r : 0;
    m->in_bytes[i] = after;
    m->shared_used += sh_after - sh_before;
}

int rs_mmu_admit(rs_mmu *m, uint32_t in, uint32_t in_prio, uint32_t out, uint32_t prio, uint32_t bytes)
{
    size_t i = IDX(in, in_prio), o = IDX(out, prio);
    uint64_t r = m->cfg->reserve_bytes;
    uint64_t after = m->in_bytes[i] + bytes;
    uint64_t sh_after = after > r ? after - r : 0;
    uint64_t sh_grow = sh_after - rs_mmu_shared_of(m, in, in_prio);
    if (m->cfg->pfc_mask & (1u << in_prio)) {
        if (sh_after == 0 || sh_after <= rs_mmu_threshold(m)) {
            add_ingress(m, i, bytes);
        } else if (m->hdrm_bytes[i] + bytes <= m->cfg->headroom_bytes) {
            m->hdrm_bytes[i] += bytes;
        } else {
            return RS_SWDROP_HEADROOM;
        }
    } else {
        uint64_t limit = m->cfg->lossy_limit_bytes ? m->cfg->lossy_limit_bytes : rs_mmu_threshold(m);
        if (m->eg_bytes[o] + bytes > limit)
            return RS_SWDROP_LOSSY_THRESHOLD;
        if (m->shared_used + sh_grow > m->pool_bytes)
            return RS_SWDROP_BUFFER_FULL;
        add_ingress(m, i, bytes);
    }
    m->eg_bytes[o] += bytes;
    return -1;
}

int rs_mmu_admit_credit(rs_mmu *m, uint32_t in, uint32_t in_prio, uint32_t out, uint32_t prio, uint32_t bytes)
{
    add_ingress(m, IDX(in, in_prio), bytes);
    m->eg_bytes[IDX(out, prio)] += bytes;
    return -1;
}

void rs_mmu_release(rs_mmu *m, uint32_t in, uint32_t in_prio, uint32_t out, uint32_t prio, uint32_t bytes)
{
    size_t i = IDX(in, in_prio), o = IDX(out, prio);
    /* headroom drains first (as HPCC), then the shared part, then the reserve */
    uint64_t from_hdrm = m->hdrm_bytes[i] < bytes ? m->hdrm_bytes[i] : bytes;
    m->hdrm_bytes[i] -= from_hdrm;
    uint64_t rest = bytes - from_hdrm;
    uint64_t sh = rs_mmu_shared_of(m, in, in_prio);
    m->shared_used -= rest < sh ? rest : sh;
    m->in_bytes[i] -= rest < m->in_bytes[i] ? rest : m->in_bytes[i];
    m->eg_bytes[o] -= bytes < m->eg_bytes[o] ? bytes : m->eg_bytes[o];
}

int rs_mmu_should_pause(const rs_mmu *m, uint32_t port, uint32_t prio)
{
    return m->hdrm_bytes[IDX(port, prio)] > 0 || rs_mmu_shared_of(m, port, prio) >= rs_mmu_threshold(m);
}

int rs_mmu_should_resume(const rs_mmu *m, uint32_t port, uint32_t prio)
{
    if (m->hdrm_bytes[IDX(port, prio)] > 0)
        return 0;
    uint64_t sh = rs_mmu_shared_of(m, port, prio);
    return sh == 0 || sh + m->cfg->resume_offset_bytes <= rs_mmu_threshold(m);
}
