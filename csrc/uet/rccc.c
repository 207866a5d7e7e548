/* RCCC (placeholder: the credit scheduler follows). */
#include "uet/rccc.h"

#include <string.h>

void rs_rccc_rx_init(rs_rccc_rx *rx, const rs_rccc_rx_params *p, int64_t now_ps)
{
    memset(rx, 0, sizeof *rx);
    rx->p = *p;
    rx->last_ps = now_ps;
}

int rs_rccc_rx_on_data(rs_rccc_rx *rx, int64_t now_ps, uint32_t key, uint32_t bytes, uint64_t backlog)
{
    rx->arrived += bytes;
    return 0;
}

uint64_t rs_rccc_rx_grant(rs_rccc_rx *rx, int64_t now_ps, uint32_t key) { return 0; }

void rs_rccc_tx_init(rs_rccc_tx *tx, uint64_t initial_credit)
{
    memset(tx, 0, sizeof *tx);
    tx->credit = initial_credit;
}

void rs_rccc_tx_on_credit(rs_rccc_tx *tx, uint64_t bytes)
{
    tx->credit += bytes;
    tx->received += bytes;
}

int rs_rccc_tx_may_send(const rs_rccc_tx *tx, uint32_t bytes) { return tx->credit >= bytes; }

void rs_rccc_tx_on_sent(rs_rccc_tx *tx, uint32_t bytes)
{
    tx->credit = tx->credit > bytes ? tx->credit - bytes : 0;
    tx->sent += bytes;
}
