/* Trace records of a frame (trace_frame.h). */
#include "codec/trace_frame.h"

void rs_trace_rec_frame(rs_engine *e, uint8_t kind, const rs_pkt *p, int link, int node, int peer,
                        uint8_t reason)
{
    rs_trace_rec *r = rs_trace_slot(e);
    if (!r)
        return;
    r->kind = kind;
    r->link = link;
    r->node = (uint16_t)(node < 0 ? 0xFFFF : node);
    r->peer = (uint16_t)(peer < 0 ? 0xFFFF : peer);
    r->node_kind = node < 0 ? RS_TR_NODE_NONE : RS_TR_NODE_HOST;
    r->peer_kind = peer < 0 ? RS_TR_NODE_NONE : RS_TR_NODE_HOST;
    r->reason = reason;

    r->pkt_kind = (uint8_t)p->kind;
    r->priority = p->priority;
    if (p->kind == RS_PKT_PFC) {
        r->aux = p->pfc_class_enable;
        return;
    }
    r->qpn = p->src_qpn;
    r->dest_qpn = p->dest_qpn;
    r->psn = p->psn;
    r->msn = p->aeth_msn;
    r->len = p->payload_len;
    r->aux = p->reth_len; /* RETH DMA length (first packet of a WRITE, READ request); else 0 */
    r->opcode = p->opcode;
    r->syndrome = p->aeth_syndrome;
    r->ecn = p->tos & 3u;
    r->flags = (uint8_t)((p->ackreq ? RS_TRF_ACKREQ : 0) | (p->se ? RS_TRF_SE : 0));
}
