/* Trace records of a frame (the buffer is the engine's, engine/trace.h). */
#ifndef RDMASIM_CODEC_TRACE_FRAME_H
#define RDMASIM_CODEC_TRACE_FRAME_H

#include "engine/trace.h"
#include "rdmasim/packet.h"

/* A frame record; node and peer are host indices (-1: none). */
void rs_trace_rec_frame(rs_engine *e, uint8_t kind, const rs_pkt *p, int link, int node, int peer,
                        uint8_t reason);

/* a frame discarded inside host `host` after delivery (e.g. unknown QP) */
static inline void rs_trace_host_drop(rs_engine *e, int host, const rs_pkt *p, int reason)
{
    if (RS_TRACE_ON(e))
        rs_trace_rec_frame(e, RS_TR_DROP, p, -1, host, p->src_node, (uint8_t)reason);
}

#endif
