/* Frames of cut links as bytes (sim/par_xfer.c): what an MPI rank sends another at a window's end
 * (sim/par_rank.c).  A record is one frame on its way over a link between two partitions: the
 * link id, the packet's fields up to RS_PKT_COMMON_BYTES (its arrival time and key included, as
 * the outbox holds them), its payload bytes and its INT stack.  The ranks run the same build on
 * the same architecture: the fields go as they lie in memory (RS_XFER_MAGIC checks the layout). */
#ifndef RDMASIM_SIM_PAR_XFER_H
#define RDMASIM_SIM_PAR_XFER_H

#include <stddef.h>
#include <stdint.h>

#include "rdmasim/packet.h"
#include "rdmasim/pool.h"

/* Bytes of one frame's record. */
size_t rs_xfer_frame_size(const rs_pkt *pkt);
/* Write pkt's record for link `link` at buf (rs_xfer_frame_size(pkt) bytes); returns the bytes written. */
size_t rs_xfer_put_frame(uint8_t *buf, uint32_t link, const rs_pkt *pkt);
/* Read one record from [buf, end) into a packet taken from `pool` (*out; payload and INT stack
 * attached as the sender's had them): the bytes read, or 0 when the record is cut short or
 * malformed, or -1 out of memory (nothing taken).  pool NULL: the record's length only, no packet. */
long rs_xfer_get_frame(const uint8_t *buf, const uint8_t *end, rs_pool *pool, uint32_t *link, rs_pkt **out);
/* The arrival time of the record at buf (its first rs_xfer_frame_size bytes). */
int64_t rs_xfer_frame_arrival(const uint8_t *buf);

#endif
