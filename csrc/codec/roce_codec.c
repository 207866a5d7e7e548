/* RoCEv2 frame codec: rs_pkt <-> Ethernet II / IPv4 / UDP 4791 / BTH / ext headers /
 * payload / pad / ICRC (protocol.md 1.1-1.6).  PFC frames are delegated to pfc.c. */
#include <stdint.h>
#include <string.h>

#include "rdmasim/codec.h"
#include "rdmasim/ib.h"
#include "bth.h"
#include "pfc.h"
#include "wire.h"

/* What follows BTH for an opcode. EXT_* order below is also the order on the wire
 * (IBA: FETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH). */
enum {
    OP_KNOWN = 1u << 0,
    OP_PAYLOAD = 1u << 1, /* may carry data */
    EXT_RETH = 1u << 2,
    EXT_ATOMIC = 1u << 3,
    EXT_AETH = 1u << 4,
    EXT_ATOMICACK = 1u << 5,
    EXT_IMM = 1u << 6,
    EXT_IETH = 1u << 7,
    EXT_CNP = 1u << 8, /* CNP's 16 reserved bytes */
    EXT_DETH = 1u << 9, /* UD: Q_Key + source QPN, first after BTH */
    EXT_FETH = 1u << 10, /* FLUSH: selectivity level and placement type, before the RETH */
};

#define SD (OP_KNOWN | OP_PAYLOAD)
/* SEND_* and RDMA_WRITE_* rows, shared by RC (base 0x00) and UC (base 0x20). */
#define SEND_WRITE_ROWS(b)                                                                 \
    [(b) + 0x00] = SD, [(b) + 0x01] = SD, [(b) + 0x02] = SD, [(b) + 0x03] = SD | EXT_IMM,  \
    [(b) + 0x04] = SD, [(b) + 0x05] = SD | EXT_IMM, [(b) + 0x06] = SD | EXT_RETH,          \
    [(b) + 0x07] = SD, [(b) + 0x08] = SD, [(b) + 0x09] = SD | EXT_IMM,                     \
    [(b) + 0x0A] = SD | EXT_RETH, [(b) + 0x0B] = SD | EXT_RETH | EXT_IMM

/* The one opcode table (protocol.md 1.5). Unlisted opcodes (RD, UD other than SEND_ONLY, reserved)
 * are unknown. */
static const uint16_t op_table[256] = {
    SEND_WRITE_ROWS(0x00),
    [RS_OP_READ_REQUEST] = OP_KNOWN | EXT_RETH,
    [RS_OP_READ_RESP_FIRST] = SD | EXT_AETH,
    [RS_OP_READ_RESP_MIDDLE] = SD,
    [RS_OP_READ_RESP_LAST] = SD | EXT_AETH,
    [RS_OP_READ_RESP_ONLY] = SD | EXT_AETH,
    [RS_OP_ACKNOWLEDGE] = OP_KNOWN | EXT_AETH,
    [RS_OP_ATOMIC_ACK] = OP_KNOWN | EXT_AETH | EXT_ATOMICACK,
    [RS_OP_COMPARE_SWAP] = OP_KNOWN | EXT_ATOMIC,
    [RS_OP_FETCH_ADD] = OP_KNOWN | EXT_ATOMIC,
    [RS_OP_SEND_LAST_INV] = SD | EXT_IETH,
    [RS_OP_SEND_ONLY_INV] = SD | EXT_IETH,
    [RS_OP_FLUSH] = OP_KNOWN | EXT_FETH | EXT_RETH,
    [RS_OP_ATOMIC_WRITE] = SD | EXT_RETH,
    SEND_WRITE_ROWS(0x20),
    [RS_OP_UD_SEND_ONLY] = SD | EXT_DETH,
    [RS_OP_UD_SEND_ONLY_IMM] = SD | EXT_DETH | EXT_IMM,
    [RS_OP_CNP] = OP_KNOWN | EXT_CNP,
};

static size_t ext_bytes(uint16_t f)
{
    size_t n = 0;
    n += (f & EXT_RETH) ? RS_RETH_BYTES : 0;
    n += (f & EXT_ATOMIC) ? RS_ATOMICETH_BYTES : 0;
    n += (f & EXT_AETH) ? RS_AETH_BYTES : 0;
    n += (f & EXT_ATOMICACK) ? RS_ATOMICACKETH_BYTES : 0;
    n += (f & EXT_IMM) ? RS_IMMDT_BYTES : 0;
    n += (f & EXT_IETH) ? RS_IETH_BYTES : 0;
    n += (f & EXT_CNP) ? RS_CNP_PAD_BYTES : 0;
    n += (f & EXT_DETH) ? RS_DETH_BYTES : 0;
    n += (f & EXT_FETH) ? RS_FETH_BYTES : 0;
    return n;
}

int rs_opcode_ext_bytes(uint8_t opcode)
{
    uint16_t f = op_table[opcode];
    return (f & OP_KNOWN) ? (int)ext_bytes(f) : -1;
}

/* Offsets of a RoCE frame: headers are fixed-size, so only ext/payload vary. */
struct layout {
    uint16_t flags;
    size_t ext;     /* extension header bytes */
    size_t pad;     /* 0..3 zero bytes after the payload */
    size_t ip_len;  /* IPv4 total length (IP header .. ICRC) */
    size_t frame;   /* Ethernet header + ip_len, before padding to 60 */
};

#define HDRS_TO_BTH (RS_ETH_HDR_BYTES + RS_IPV4_HDR_BYTES + RS_UDP_HDR_BYTES + RS_BTH_BYTES)

/* The BTH rules (rs_bth_check), inline here: the RoCE frame length is computed for every packet
 * built, and through the out-of-line call its results went through memory. */
static inline int bth_check(const rs_pkt *p, uint16_t *flags, size_t *ext, size_t *pad)
{
    *flags = op_table[p->opcode];
    if (!(*flags & OP_KNOWN))
        return RS_CODEC_ERR_BAD_OPCODE;
    if (p->payload_len > RS_MAX_PAYLOAD || (p->payload_len && !(*flags & OP_PAYLOAD)))
        return RS_CODEC_ERR_BAD_FIELD;
    if (p->dest_qpn > RS_QPN_MASK || p->psn > RS_PSN_MASK || p->aeth_msn > 0xFFFFFFu)
        return RS_CODEC_ERR_BAD_FIELD;
    *ext = ext_bytes(*flags);
    *pad = (4u - (p->payload_len & 3u)) & 3u;
    return RS_CODEC_OK;
}

int rs_bth_check(const rs_pkt *p, uint16_t *flags, size_t *ext, size_t *pad)
{
    return bth_check(p, flags, ext, pad);
}

static inline int roce_layout(const rs_pkt *p, struct layout *l)
{
    int st = bth_check(p, &l->flags, &l->ext, &l->pad);
    if (st != RS_CODEC_OK)
        return st;
    l->ip_len = RS_IPV4_HDR_BYTES + RS_UDP_HDR_BYTES + RS_BTH_BYTES + l->ext + p->payload_len +
                l->pad + RS_ICRC_BYTES;
    l->frame = RS_ETH_HDR_BYTES + l->ip_len;
    return RS_CODEC_OK;
}

size_t rs_frame_len(const rs_pkt *p)
{
    struct layout l;
    if (p->link_layer == RS_LL_IB)
        return rs_ib_frame_len(p);
    if (p->kind == RS_PKT_PFC)
        return p->pfc_class_enable > 0xFFu ? 0 : RS_ETH_MIN_FRAME_NOFCS;
    if (p->kind == RS_PKT_RAW) /* the bytes as sent, padded by the MAC to the minimum */
        return p->payload_len < RS_ETH_MIN_FRAME_NOFCS ? RS_ETH_MIN_FRAME_NOFCS : p->payload_len;
    if (p->kind == RS_PKT_UET)
        return rs_uet_frame_len(p);
    if (p->kind != RS_PKT_ROCE || roce_layout(p, &l) != RS_CODEC_OK)
        return 0;
    return l.frame < RS_ETH_MIN_FRAME_NOFCS ? RS_ETH_MIN_FRAME_NOFCS : l.frame;
}

/* RFC 1071 ones' complement sum over the 20-byte IPv4 header (checksum field zero). */
static uint16_t ipv4_checksum(const uint8_t *ip);
uint16_t rs_ipv4_checksum(const uint8_t *ip) { return ipv4_checksum(ip); }
static uint16_t ipv4_checksum(const uint8_t *ip)
{
    uint32_t sum = 0;
    for (size_t i = 0; i < RS_IPV4_HDR_BYTES; i += 2)
        sum += rs_get16(ip + i);
    while (sum >> 16)
        sum = (sum & 0xFFFFu) + (sum >> 16);
    return (uint16_t)~sum;
}

void rs_put_ipv4_udp(const rs_pkt *p, uint8_t *ip, size_t ip_len, uint16_t dport)
{
    ip[0] = 0x45; /* version 4, IHL 5 */
    ip[1] = p->tos;
    rs_put16(ip + 2, (uint16_t)ip_len);
    rs_put16(ip + 4, p->ip_id);
    rs_put16(ip + 6, RS_IPV4_FLAG_DF); /* RDMA NICs set DF; never fragmented */
    ip[8] = p->ttl;
    ip[9] = RS_IP_PROTO_UDP;
    rs_put16(ip + 10, 0);
    rs_put32(ip + 12, p->src_ip);
    rs_put32(ip + 16, p->dst_ip);
    rs_put16(ip + 10, ipv4_checksum(ip));

    uint8_t *udp = ip + RS_IPV4_HDR_BYTES;
    rs_put16(udp, p->udp_sport);
    rs_put16(udp + 2, dport);
    rs_put16(udp + 4, (uint16_t)(ip_len - RS_IPV4_HDR_BYTES));
    rs_put16(udp + 6, 0); /* optional for IPv4; masked out of the ICRC anyway */
}

void rs_get_eth_ipv4_udp(const uint8_t *frame, rs_pkt *p)
{
    const uint8_t *ip = frame + RS_ETH_HDR_BYTES;
    memcpy(p->dst_mac, frame, 6);
    memcpy(p->src_mac, frame + 6, 6);
    p->tos = ip[1];
    p->ip_id = rs_get16(ip + 4);
    p->ttl = ip[8];
    p->src_ip = rs_get32(ip + 12);
    p->dst_ip = rs_get32(ip + 16);
    p->udp_sport = rs_get16(ip + RS_IPV4_HDR_BYTES);
}

int rs_encode_ipv4_header(const rs_pkt *p, uint8_t out[RS_IPV4_HDR_BYTES])
{
    struct layout l;
    uint8_t ip_udp[RS_IPV4_HDR_BYTES + RS_UDP_HDR_BYTES];
    if (p->kind != RS_PKT_ROCE)
        return RS_CODEC_ERR_BAD_FIELD;
    int st = roce_layout(p, &l);
    if (st != RS_CODEC_OK)
        return st;
    rs_put_ipv4_udp(p, ip_udp, l.ip_len, RS_ROCE_UDP_PORT);
    memcpy(out, ip_udp, RS_IPV4_HDR_BYTES);
    return RS_CODEC_OK;
}

static void put_bth(const rs_pkt *p, const struct layout *l, uint8_t *b)
{
    rs_bth_put(p, l->pad, b);
}

void rs_bth_put(const rs_pkt *p, size_t pad, uint8_t *b)
{
    b[0] = p->opcode;
    b[1] = (uint8_t)((p->se ? 0x80u : 0) | (p->mig ? 0x40u : 0) | (pad << 4)); /* TVer 0 */
    rs_put16(b + 2, p->pkey);
    b[4] = (uint8_t)((p->fecn ? 0x80u : 0) | (p->becn ? 0x40u : 0));
    rs_put24(b + 5, p->dest_qpn);
    b[8] = p->ackreq ? 0x80u : 0;
    rs_put24(b + 9, p->psn);
}

/* Writes the extension headers in wire order; returns the bytes written (== l->ext). */
size_t rs_bth_put_ext(const rs_pkt *p, uint16_t f, uint8_t *b)
{
    uint8_t *start = b;
    if (f & EXT_DETH) { /* Q_Key, a reserved byte, the sending QP */
        rs_put32(b, p->deth_qkey);
        b[4] = 0;
        rs_put24(b + 5, p->src_qpn & RS_QPN_MASK);
        b += RS_DETH_BYTES;
    }
    if (f & EXT_FETH) { /* FLUSH: the one 32-bit FETH word is carried in p->imm, like the IETH */
        rs_put32(b, p->imm);
        b += RS_FETH_BYTES;
    }
    if (f & EXT_RETH) {
        rs_put64(b, p->reth_va);
        rs_put32(b + 8, p->reth_rkey);
        rs_put32(b + 12, p->reth_len);
        b += RS_RETH_BYTES;
    }
    if (f & EXT_ATOMIC) {
        rs_put64(b, p->atomic_va);
        rs_put32(b + 8, p->atomic_rkey);
        rs_put64(b + 12, p->atomic_swap_add);
        rs_put64(b + 20, p->atomic_compare);
        b += RS_ATOMICETH_BYTES;
    }
    if (f & EXT_AETH) {
        b[0] = p->aeth_syndrome;
        rs_put24(b + 1, p->aeth_msn);
        b += RS_AETH_BYTES;
    }
    if (f & EXT_ATOMICACK) {
        rs_put64(b, p->atomic_orig);
        b += RS_ATOMICACKETH_BYTES;
    }
    if (f & (EXT_IMM | EXT_IETH)) { /* ImmDt and IETH are both one 32-bit word from p->imm */
        rs_put32(b, p->imm);
        b += 4;
    }
    if (f & EXT_CNP) {
        memset(b, 0, RS_CNP_PAD_BYTES);
        b += RS_CNP_PAD_BYTES;
    }
    return (size_t)(b - start);
}

uint32_t rs_wire_icrc(const rs_pkt *p, uint32_t crc)
{
    return crc ^ (p->icrc_bad ? (p->icrc_xor ? p->icrc_xor : 0xFFFFFFFFu) : 0u);
}

size_t rs_put_payload(const rs_pkt *p, uint8_t *b, size_t hdrs, size_t want, size_t pad, uint8_t **end)
{
    if (want <= hdrs + p->payload_len) { /* the prefix ends in the payload */
        size_t n = want > hdrs ? want - hdrs : 0;
        if (n && p->payload)
            memcpy(b, p->payload, n);
        else if (n)
            memset(b, 0, n);
        return hdrs + n;
    }
    if (p->payload_len) {
        if (p->payload)
            memcpy(b, p->payload, p->payload_len);
        else
            memset(b, 0, p->payload_len); /* size-only packet: contents do not matter */
        b += p->payload_len;
    }
    memset(b, 0, pad);
    *end = b + pad;
    return 0;
}

void rs_put_icrc(uint8_t *b, uint32_t crc)
{
    /* Least-significant byte first, like the Ethernet FCS. */
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(crc >> (8 * i));
}

int rs_encode(const rs_pkt *p, uint8_t *out, size_t cap)
{
    return rs_encode_prefix(p, out, cap, SIZE_MAX, NULL);
}

int rs_encode_prefix(const rs_pkt *p, uint8_t *out, size_t cap, size_t want, size_t *frame_len)
{
    if (p->link_layer == RS_LL_IB)
        return rs_ib_encode_prefix(p, out, cap, want, frame_len);
    if (p->kind == RS_PKT_PFC) { /* 60 bytes: always whole */
        int n = rs_pfc_encode(p, out, cap);
        if (frame_len && n >= 0)
            *frame_len = (size_t)n;
        return n;
    }
    if (p->kind == RS_PKT_RAW) { /* undecodable bytes (scripted peer): exactly as sent */
        size_t total = rs_frame_len(p);
        if (frame_len)
            *frame_len = total;
        size_t n = want < total ? want : total;
        if (!p->payload || cap < n)
            return RS_CODEC_ERR_SHORT;
        size_t k = n < p->payload_len ? n : p->payload_len;
        memcpy(out, p->payload, k);
        memset(out + k, 0, n - k);
        return (int)n;
    }
    if (p->kind == RS_PKT_UET)
        return rs_uet_encode_prefix(p, out, cap, want, frame_len);
    if (p->kind != RS_PKT_ROCE)
        return RS_CODEC_ERR_BAD_FIELD;

    struct layout l;
    int st = roce_layout(p, &l);
    if (st != RS_CODEC_OK)
        return st;
    size_t total = l.frame < RS_ETH_MIN_FRAME_NOFCS ? RS_ETH_MIN_FRAME_NOFCS : l.frame;
    if (frame_len)
        *frame_len = total;
    if (cap < total)
        return RS_CODEC_ERR_SHORT;

    memcpy(out, p->dst_mac, 6);
    memcpy(out + 6, p->src_mac, 6);
    rs_put16(out + 12, RS_ETHERTYPE_IPV4);
    rs_put_ipv4_udp(p, out + RS_ETH_HDR_BYTES, l.ip_len, RS_ROCE_UDP_PORT);
    put_bth(p, &l, out + RS_ETH_HDR_BYTES + RS_IPV4_HDR_BYTES + RS_UDP_HDR_BYTES);

    uint8_t *b = out + HDRS_TO_BTH;
    b += rs_bth_put_ext(p, l.flags, b);
    size_t cut = rs_put_payload(p, b, (size_t)(b - out), want, l.pad, &b);
    if (cut) /* the prefix ends in the payload: no pad, no ICRC */
        return (int)cut;
    rs_put_icrc(b, rs_wire_icrc(p, rs_icrc(out, (size_t)(b - out))));
    b += RS_ICRC_BYTES;
    memset(b, 0, total - l.frame); /* Ethernet minimum-size padding, outside IP */
    return (int)total;
}

static void get_ext(const uint8_t *b, uint16_t f, rs_pkt *p);

int rs_bth_parse(const uint8_t *bth, uint16_t *flags, size_t *ext, size_t *pad)
{
    *flags = op_table[bth[0]];
    if (!(*flags & OP_KNOWN))
        return RS_CODEC_ERR_BAD_OPCODE;
    if ((bth[1] & 0x0F) != 0) /* TVer */
        return RS_CODEC_ERR_BAD_FIELD;
    *ext = ext_bytes(*flags);
    *pad = (bth[1] >> 4) & 3u;
    return RS_CODEC_OK;
}

int rs_bth_payload_ok(uint16_t flags, size_t payload_len)
{
    if (payload_len && !(flags & OP_PAYLOAD))
        return RS_CODEC_ERR_BAD_LENGTH;
    return payload_len > RS_MAX_PAYLOAD ? RS_CODEC_ERR_BAD_FIELD : RS_CODEC_OK;
}

void rs_bth_get(const uint8_t *bth, uint16_t flags, rs_pkt *p)
{
    p->opcode = bth[0];
    p->se = (bth[1] >> 7) & 1u;
    p->mig = (bth[1] >> 6) & 1u;
    p->pkey = rs_get16(bth + 2);
    p->fecn = (bth[4] >> 7) & 1u;
    p->becn = (bth[4] >> 6) & 1u;
    p->dest_qpn = rs_get24(bth + 5);
    p->ackreq = (bth[8] >> 7) & 1u;
    p->psn = rs_get24(bth + 9);
    get_ext(bth + RS_BTH_BYTES, flags, p);
}

static void get_ext(const uint8_t *b, uint16_t f, rs_pkt *p)
{
    if (f & EXT_DETH) {
        p->deth_qkey = rs_get32(b);
        p->src_qpn = rs_get24(b + 5);
        b += RS_DETH_BYTES;
    }
    if (f & EXT_FETH) {
        p->imm = rs_get32(b);
        b += RS_FETH_BYTES;
    }
    if (f & EXT_RETH) {
        p->reth_va = rs_get64(b);
        p->reth_rkey = rs_get32(b + 8);
        p->reth_len = rs_get32(b + 12);
        b += RS_RETH_BYTES;
    }
    if (f & EXT_ATOMIC) {
        p->atomic_va = rs_get64(b);
        p->atomic_rkey = rs_get32(b + 8);
        p->atomic_swap_add = rs_get64(b + 12);
        p->atomic_compare = rs_get64(b + 20);
        b += RS_ATOMICETH_BYTES;
    }
    if (f & EXT_AETH) {
        p->aeth_syndrome = b[0];
        p->aeth_msn = rs_get24(b + 1);
        b += RS_AETH_BYTES;
    }
    if (f & EXT_ATOMICACK) {
        p->atomic_orig = rs_get64(b);
        b += RS_ATOMICACKETH_BYTES;
    }
    if (f & (EXT_IMM | EXT_IETH))
        p->imm = rs_get32(b);
    /* CNP reserved bytes are ignored on receive. */
}

/* IPv4 / UDP 4791 / BTH checks, then fields. buf[0..len) holds at least the Ethernet header. */
/* `wire_len` > `len`: buf holds the first `len` bytes of a `wire_len`-byte frame (a capture with
 * a snaplen): the headers must be there; the payload and the ICRC are not checked. */
static int decode_roce(const uint8_t *buf, size_t len, size_t wire_len, rs_pkt *p)
{
    const uint8_t *ip = buf + RS_ETH_HDR_BYTES;
    if (len < RS_ETH_HDR_BYTES + RS_IPV4_HDR_BYTES)
        return RS_CODEC_ERR_SHORT;
    if ((ip[0] >> 4) != 4 || ip[9] != RS_IP_PROTO_UDP)
        return RS_CODEC_ERR_NOT_ROCE;
    if ((ip[0] & 0x0F) != 5) /* IP options: never sent by RoCE NICs, not supported */
        return RS_CODEC_ERR_BAD_FIELD;
    if (ipv4_checksum(ip) != 0) /* summed with its checksum field, a good header gives 0 */
        return RS_CODEC_ERR_BAD_IP_CSUM;
    if (rs_get16(ip + 6) & (RS_IPV4_FLAG_MF | RS_IPV4_FRAG_OFFSET_MASK))
        return RS_CODEC_ERR_IP_FRAGMENT;
    if (len < RS_ETH_HDR_BYTES + RS_IPV4_HDR_BYTES + RS_UDP_HDR_BYTES)
        return RS_CODEC_ERR_SHORT;
    const uint8_t *udp = ip + RS_IPV4_HDR_BYTES;
    if (rs_get16(udp + 2) == RS_UET_UDP_PORT)
        return rs_uet_decode(buf, len, wire_len, p);
    if (rs_get16(udp + 2) != RS_ROCE_UDP_PORT)
        return RS_CODEC_ERR_NOT_ROCE;

    size_t ip_len = rs_get16(ip + 2);
    if (ip_len < HDRS_TO_BTH - RS_ETH_HDR_BYTES + RS_ICRC_BYTES)
        return RS_CODEC_ERR_BAD_LENGTH;
    /* Bytes past the IP datagram (Ethernet padding, trailers) are allowed and ignored. */
    if (RS_ETH_HDR_BYTES + ip_len > wire_len)
        return RS_CODEC_ERR_SHORT;
    if (rs_get16(udp + 4) != ip_len - RS_IPV4_HDR_BYTES)
        return RS_CODEC_ERR_BAD_LENGTH;

    const uint8_t *bth = udp + RS_UDP_HDR_BYTES;
    uint16_t f;
    size_t ext, pad;
    int st = rs_bth_parse(bth, &f, &ext, &pad);
    if (st != RS_CODEC_OK)
        return st;
    if (HDRS_TO_BTH + ext > len) /* a capture too short for the headers */
        return RS_CODEC_ERR_SHORT;
    size_t fixed = HDRS_TO_BTH - RS_ETH_HDR_BYTES + ext + RS_ICRC_BYTES;
    if (ip_len < fixed || ip_len - fixed < pad)
        return RS_CODEC_ERR_BAD_LENGTH;
    size_t payload_len = ip_len - fixed - pad;
    st = rs_bth_payload_ok(f, payload_len);
    if (st != RS_CODEC_OK)
        return st;

    rs_get_eth_ipv4_udp(buf, p);
    p->kind = RS_PKT_ROCE;
    rs_bth_get(bth, f, p);
    p->payload_len = (uint32_t)payload_len;
    if (RS_ETH_HDR_BYTES + ip_len > len) /* truncated capture: no payload pointer, no ICRC */
        return RS_CODEC_OK;
    /* Cast away const: rs_pkt.payload is mutable for pool-owned packets; decode never writes. */
    p->payload = payload_len ? (uint8_t *)(uintptr_t)(bth + RS_BTH_BYTES + ext) : NULL;

    const uint8_t *icrc = buf + RS_ETH_HDR_BYTES + ip_len - RS_ICRC_BYTES;
    uint32_t wire = (uint32_t)icrc[0] | ((uint32_t)icrc[1] << 8) | ((uint32_t)icrc[2] << 16) |
                    ((uint32_t)icrc[3] << 24);
    if (rs_icrc(buf, (size_t)(icrc - buf)) != wire)
        return RS_CODEC_ERR_BAD_ICRC;
    return RS_CODEC_OK;
}

int rs_decode(const uint8_t *buf, size_t len, rs_pkt *p)
{
    memset(p, 0, sizeof *p);
    if (len < RS_ETH_HDR_BYTES)
        return RS_CODEC_ERR_SHORT;
    uint16_t ethertype = rs_get16(buf + 12);
    if (ethertype == RS_ETHERTYPE_IPV4)
        return decode_roce(buf, len, len, p);
    if (ethertype == RS_ETHERTYPE_MAC_CONTROL)
        return rs_pfc_decode(buf, len, p);
    return RS_CODEC_ERR_NOT_ROCE;
}

int rs_decode_captured(const uint8_t *buf, size_t len, size_t wire_len, rs_pkt *p)
{
    if (wire_len <= len)
        return rs_decode(buf, len, p);
    memset(p, 0, sizeof *p);
    if (len < RS_ETH_HDR_BYTES)
        return RS_CODEC_ERR_SHORT;
    if (rs_get16(buf + 12) != RS_ETHERTYPE_IPV4) /* a PFC frame cut short: nothing to decode */
        return rs_get16(buf + 12) == RS_ETHERTYPE_MAC_CONTROL ? RS_CODEC_ERR_SHORT : RS_CODEC_ERR_NOT_ROCE;
    return decode_roce(buf, len, wire_len, p);
}
