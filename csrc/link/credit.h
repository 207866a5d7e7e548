/* InfiniBand credit-based link-level flow control per virtual lane (IBA vol. 1, section 7.9), the
 * alternative to PFC on a port: a port in credit mode never sends or obeys pause frames and its
 * receive buffer never overflows, because its peer sends a data packet on a VL only when the
 * receiver has advertised room for all of it.
 *
 * Units and counters (all modulo 4096, 12 bits, as on the wire):
 *   block  = 64 bytes; a packet of frame_len bytes needs ceil(frame_len / 64) blocks.
 *   FCTBS  (sender, per VL)   total blocks sent since link-up.
 *   ABR    (receiver, per VL) adjusted blocks received: + blocks of each data packet that arrives;
 *                             set to the FCTBS an FC packet from the peer carries (7.9), which
 *                             repairs the count after a data packet was lost on the link.
 *   FCCL   (receiver -> sender) credit limit = ABR + free blocks, or ABR + 2048 when 2048 or more
 *                             blocks are free (7.9; 2048 = half the modulus, so the test
 *                             below never wraps).
 *   credit test (sender):     may send a packet of n blocks iff (FCCL - (FCTBS + n)) mod 4096 <= 2048.
 *
 * A flow-control packet (6 bytes: Op, FCTBS, VL, FCCL, LPCRC; 7.9.4) carries the sender's FCTBS
 * for one direction and the receiver's FCCL for the other, for one VL.  It is link-local: it
 * bypasses the data queues (sent before any data, never blocked by credits) and is consumed at
 * the far port, never forwarded.  When FC packets go out:
 *   - on drain: as soon as blocks of a VL leave the receive buffer (a switch forwards the packet,
 *     a host NIC takes it), one FC packet for that VL, coalesced: the FCCL it carries is computed
 *     when the port puts it on the wire, so many drains while the port is busy cost one packet;
 *   - periodically: every fc_period_ps (IBA: at most 65,536 symbol times between FC packets of a
 *     VL) for each VL whose FCTBS or FCCL changed since its last FC packet, or whose peer is
 *     stalled on it.  An FC packet that would repeat the previous one to a peer that is not
 *     waiting changes nothing; skipping it lets an idle fabric go quiet (runs end).
 *
 * Per port: up to 8 data VLs with a buffer each (VL15 is not modelled), an SL -> VL table (16
 * SLs) for what the port sends, the sender's and the receiver's counters, and the credit-stall
 * time per VL (a VL with a packet to send and too few credits for it), reported like pause time.
 * At a switch, the ingress buffer of (port, VL) is the credit buffer; what the port's owner must
 * not send now is kept in the port's paused_mask (as a pause would), so the schedulers above
 * need no change. */
#ifndef RDMASIM_LINK_CREDIT_H
#define RDMASIM_LINK_CREDIT_H

#include <stdint.h>

#include "rdmasim/eventq.h"
#include "rdmasim/fabric.h"
#include "rdmasim/packet.h"
#include "link/vlarb.h"

struct rs_net;
struct rs_port;

#define RS_CREDIT_BLOCK_BYTES 64u
#define RS_CREDIT_MOD 4096u          /* 12-bit counters */
#define RS_CREDIT_HALF 2048u         /* largest credit an FCCL advertises ahead of ABR */
#define RS_CREDIT_FC_BYTES 6u        /* FC packet: Op 4b, FCTBS 12b, VL 4b, FCCL 12b, LPCRC 16b */
#define RS_CREDIT_NSL 16u

/* Blocks of a packet of frame_len bytes. */
static inline uint32_t rs_credit_blocks(uint32_t frame_len)
{
    return (frame_len + RS_CREDIT_BLOCK_BYTES - 1) / RS_CREDIT_BLOCK_BYTES;
}

/* The IBA credit test: may a packet of `blocks` go with this FCCL and FCTBS? */
static inline int rs_credit_fits(uint32_t fccl, uint32_t fctbs, uint32_t blocks)
{
    return ((fccl - (fctbs + blocks)) & (RS_CREDIT_MOD - 1)) <= RS_CREDIT_HALF;
}

/* Sending end of one VL. */
typedef struct rs_credit_tx {
    uint16_t fctbs;        /* total blocks sent, mod 4096 */
    uint16_t fccl;         /* credit limit last received */
    uint32_t need;         /* while stalled: blocks of the packet waiting */
    int64_t stall_since_ps;
} rs_credit_tx;

/* Receiving end of one VL: the buffer the peer's credits count. */
typedef struct rs_credit_rx {
    uint16_t abr;          /* adjusted blocks received, mod 4096 */
    uint32_t cap_blocks;   /* buffer size */
    uint32_t used_blocks;  /* held now (at a switch: received on this port and VL, not yet sent on) */
} rs_credit_rx;

/* The credit state of one port (both ends that sit at it). */
typedef struct rs_credit_port {
    struct rs_port *port;
    uint8_t n_vls;                   /* data VLs 0..n_vls-1 */
    uint8_t sl2vl[RS_CREDIT_NSL];    /* VL of what this port sends, by SL */
    uint8_t stalled;                 /* VLs stalled for credits (bit per VL) */
    uint8_t waited;                  /* VLs stalled since their last packet was sent */
    uint8_t starved;                 /* VLs whose last packet sent had waited for credits */
    uint8_t fc_due;                  /* VLs whose FC packet should go out now (drained) */
    uint8_t fc_next_vl;              /* round robin among due VLs */
    int64_t fc_period_ps;
    rs_credit_tx tx[RS_NPRIO];
    rs_credit_rx rx[RS_NPRIO];
    uint16_t last_fctbs[RS_NPRIO];   /* what the last FC packet of each VL carried */
    uint16_t last_fccl[RS_NPRIO];
    rs_pkt *held[RS_NPRIO];          /* host port: a built packet waiting for credits on its VL */
    rs_timer fc_timer;               /* periodic FC packets */
    rs_vlarb arb;                    /* switch port: VL arbitration tables (off: the switch's scheduler) */
    rs_credit_stats stats;
} rs_credit_port;

/* ---- data path (O(1), no allocation but the FC packet from the pool) ---- */

/* The port is free: an FC packet that is due, else a held packet whose credits have come; NULL
 * when there is neither. */
rs_pkt *rs_credit_next_frame(struct rs_net *net, struct rs_port *port);
/* A data packet the owner handed the port: stamp its VL and spend its credits (1), or, when the
 * VL lacks credits, keep it (host port: held until credits come) and stall the VL (0). */
int rs_credit_take(struct rs_net *net, struct rs_port *port, rs_pkt *pkt);
/* Switch scheduler: may the packet at the head of egress queue `vl` go now?  If not, the VL is
 * stalled (its bit set in the port's paused_mask) until credits for it arrive. */
int rs_credit_ready(struct rs_net *net, struct rs_port *port, uint32_t vl, const rs_pkt *head);
/* A data packet arrived at the port on VL pkt->priority: count its blocks in the buffer. */
void rs_credit_arrive(struct rs_net *net, struct rs_port *port, const rs_pkt *pkt);
/* `blocks` of VL `vl` left the port's receive buffer: an FC packet is due. */
void rs_credit_drained(struct rs_net *net, struct rs_port *port, uint32_t vl, uint32_t blocks);
/* An FC packet arrived at the port; takes ownership. */
void rs_credit_fc_receive(struct rs_net *net, struct rs_port *port, rs_pkt *pkt);
/* The periodic timer fired. */
void rs_credit_fc_timer(struct rs_net *net, rs_credit_port *cr);
/* IB congestion control (annex A10): the port lacks credits on VL `vl` -- stalled now, stalled since
 * its last packet, or that packet had waited -- so a queue there is a victim of congestion further
 * on, not its root. */
static inline int rs_credit_starved(const rs_credit_port *cr, uint32_t vl)
{
    return ((cr->stalled | cr->waited | cr->starved) >> vl) & 1u;
}
/* The VL a port sends a packet of SL `sl` on. */
static inline uint32_t rs_credit_vl(const rs_credit_port *cr, uint32_t sl) { return cr->sl2vl[sl & 15u]; }

/* ---- control path ---- */
void rs_credit_free(struct rs_net *net, struct rs_port *port);

#endif
