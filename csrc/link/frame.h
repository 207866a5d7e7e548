/* Link-layer framing of a host port's frames: what the transport asks for (a destination node and
 * a traffic class) turned into the link header's fields.
 *
 * The transport resolves a path once, when a QP gets its address vector (RTR) or, for UD, per work
 * request (rs_port_resolve_path), keeps the small rs_link_path, and stamps every frame it builds
 * with rs_link_frame: a copy of a few fields, inline, so the per-packet cost stays a handful of
 * stores.  Everything the path holds is RoCEv2 over Ethernet's (MACs, IPv4, the UDP source port,
 * ECT, the PFC priority); the transport never reads it.  On an InfiniBand fabric (rs_net.link_layer
 * RS_LL_IB) the path also holds the LRH (DLID/SLID, SL, VL) and the codec frames the packet as IB
 * (codec/ib_codec.c); the Ethernet/IP fields then stay simulator metadata (switch hashing). */
#ifndef RDMASIM_LINK_FRAME_H
#define RDMASIM_LINK_FRAME_H

#include <stdint.h>
#include <string.h>

#include "link/port.h"
#include "rdmasim/packet.h"

struct rs_net;

/* A resolved link-layer address vector: the header fields of every frame on one path. */
typedef struct rs_link_path {
    uint8_t dst_mac[6];
    uint8_t src_mac[6];
    uint32_t src_ip;
    uint32_t dst_ip;
    uint16_t udp_sport; /* per QP (ECMP entropy), as rxe */
    uint8_t tos;        /* DSCP << 2 | ECT(0) */
    uint8_t priority;   /* PFC priority of the DSCP, by the port's DSCP map */
    uint8_t ttl;
    uint8_t link_layer; /* enum rs_link_layer of the fabric */
    uint8_t ib_sl;      /* IB: service level (the QP's class, as its PFC priority on RoCE) */
    uint8_t ib_vl;      /* IB: virtual lane of the first link (SL-to-VL: identity) */
    uint16_t ib_dlid;   /* IB: destination and source LIDs */
    uint16_t ib_slid;
} rs_link_path;

/* The path from host port `port` to host `dst_node` for traffic class `traffic_class` (the IPv4
 * TOS byte a QP asks for; its ECN bits are the port's) and the QP `qpn` (its UDP source port).
 * dst_node must be a host of the network. */
void rs_port_resolve_path(const struct rs_net *net, const rs_port *port, int dst_node, uint8_t traffic_class,
                          uint32_t qpn, rs_link_path *out);

/* The PFC priority a host port gives a frame of DSCP `dscp` (0..63). */
static inline uint8_t rs_port_dscp_prio(const rs_port *port, uint8_t dscp) { return port->addr.dscp_to_prio[dscp & 63u]; }

/* Stamp frame p with path's link header. */
static inline void rs_link_frame(rs_pkt *p, const rs_link_path *path)
{
    memcpy(p->src_mac, path->src_mac, 6);
    memcpy(p->dst_mac, path->dst_mac, 6);
    p->tos = path->tos;
    p->priority = path->priority;
    p->ttl = path->ttl;
    p->src_ip = path->src_ip;
    p->dst_ip = path->dst_ip;
    p->udp_sport = path->udp_sport;
    p->link_layer = path->link_layer;
    if (path->link_layer == RS_LL_IB) { /* the LRH: only the IB codec and credit ports read it */
        p->ib_sl = path->ib_sl;
        p->ib_vl = path->ib_vl;
        p->ib_dlid = path->ib_dlid;
        p->ib_slid = path->ib_slid;
    }
}

/* Give an already stamped frame another DSCP (ECT(0) again), keeping its path's priority: the CNP
 * goes with its own DSCP on the PFC priority of the QP that sends it. */
static inline void rs_link_frame_dscp(rs_pkt *p, uint8_t dscp) { p->tos = (uint8_t)((dscp << 2) | 0x02); }

#endif
