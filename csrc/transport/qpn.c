/* QP numbers: cyclic allocation and the table of live QPs (qpn.h). */
#include "transport/qpn.h"

#include <stdlib.h>

#include "rdmasim/base.h"

#define MIN_SLOTS 64u

void rs_qpn_init(rs_qpn_table *t, uint32_t limit)
{
    *t = (rs_qpn_table){.next = RS_QPN_BASE, .limit = limit};
}

void rs_qpn_free(rs_qpn_table *t)
{
    free(t->slot);
    *t = (rs_qpn_table){.next = t->next, .limit = t->limit};
}

static uint32_t after(const rs_qpn_table *t, uint32_t qpn) { return qpn == t->limit ? RS_QPN_BASE : qpn + 1; }

/* Double the table: live numbers that differ in their low bits still do with one bit more, so
 * every QP keeps a slot of its own.  Never past a slot per possible number. */
static int grow(rs_qpn_table *t)
{
    size_t slots = rs_qpn_slots(t), n = slots ? 2 * slots : MIN_SLOTS;
    if (slots > t->limit)
        return RS_ERR_NOMEM; /* cannot happen: at limit + 1 slots no two numbers share one */
    rs_qpn_slot *ns = calloc(n, sizeof(*ns));
    if (!ns)
        return RS_ERR_NOMEM;
    for (size_t i = 0; i < slots; i++)
        if (t->slot[i].qp)
            ns[t->slot[i].qpn & (n - 1)] = t->slot[i];
    free(t->slot);
    t->slot = ns;
    t->mask = (uint32_t)(n - 1);
    return RS_OK;
}

int rs_qpn_add(rs_qpn_table *t, struct rs_qp *qp, uint32_t *qpn)
{
    *qpn = 0;
    if (t->live > t->limit - RS_QPN_BASE) /* every number in use */
        return RS_ERR_NOMEM;
    /* at most 7/8 full (until there is a slot per number): a free slot is then never far on, and
     * 100k QPs numbered one after another fill 2^17 slots, as many as the span rule gave them */
    while (rs_qpn_slots(t) <= t->limit && (size_t)t->live + 1 > rs_qpn_slots(t) - rs_qpn_slots(t) / 8)
        if (grow(t) != RS_OK) {
            *qpn = t->next;
            return RS_ERR_NOMEM;
        }
    /* the next number after the last one given that is not in use and whose slot is free (a number
     * whose slot holds an older live one is passed over: the table stays at the live count's size) */
    uint32_t n = t->next;
    while (t->slot[n & t->mask].qp)
        n = after(t, n);
    *qpn = n;
    t->slot[n & t->mask] = (rs_qpn_slot){.qpn = n, .qp = qp};
    t->live++;
    t->next = after(t, n);
    return RS_OK;
}

void rs_qpn_remove(rs_qpn_table *t, uint32_t qpn)
{
    if (!rs_qpn_find(t, qpn))
        return;
    t->slot[qpn & t->mask] = (rs_qpn_slot){0};
    t->live--;
}
