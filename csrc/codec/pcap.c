/* Classic pcap writer: magic 0xa1b23c4d (nanosecond timestamps), version 2.4,
 * LINKTYPE_ETHERNET.  Everything is written little-endian explicitly, so the file
 * is the same on any host; readers detect the byte order from the magic. */
#include <errno.h>
#include <string.h>

#include "rdmasim/codec.h"

#define PCAP_MAGIC_NS 0xa1b23c4du
#define LINKTYPE_ETHERNET 1u
#define PS_PER_NS 1000
#define NS_PER_S 1000000000

static void put_le16(uint8_t *b, uint16_t v)
{
    b[0] = (uint8_t)v;
    b[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *b, uint32_t v)
{
    put_le16(b, (uint16_t)v);
    put_le16(b + 2, (uint16_t)(v >> 16));
}

int rs_pcap_open(rs_pcap *pc, const char *path, uint32_t snaplen)
{
    uint8_t hdr[24];
    pc->frames = 0;
    if (snaplen > RS_PCAP_SNAPLEN_MAX) {
        pc->fp = NULL;
        errno = EINVAL;
        return -1;
    }
    pc->snaplen = snaplen ? snaplen : RS_PCAP_SNAPLEN_MAX;
    pc->fp = fopen(path, "wb");
    if (!pc->fp)
        return -1;
    put_le32(hdr, PCAP_MAGIC_NS);
    put_le16(hdr + 4, 2); /* version 2.4 */
    put_le16(hdr + 6, 4);
    put_le32(hdr + 8, 0);  /* thiszone: timestamps are UTC */
    put_le32(hdr + 12, 0); /* sigfigs */
    put_le32(hdr + 16, pc->snaplen);
    put_le32(hdr + 20, LINKTYPE_ETHERNET);
    if (fwrite(hdr, 1, sizeof hdr, pc->fp) != sizeof hdr) {
        int e = errno;
        fclose(pc->fp);
        pc->fp = NULL;
        errno = e;
        return -1;
    }
    return 0;
}

int rs_pcap_write(rs_pcap *pc, const rs_pkt *p, int64_t t_ps)
{
    if (!pc->fp || t_ps < 0)
        return -1;
    int64_t ns = t_ps / PS_PER_NS;
    int64_t sec = ns / NS_PER_S;
    if (sec > (int64_t)UINT32_MAX) /* ts_sec is 32 bits: beyond year 2106 */
        return -1;
    size_t frame = 0;
    int n = rs_encode_prefix(p, pc->buf, sizeof pc->buf, pc->snaplen, &frame);
    if (n < 0)
        return -1;
    size_t incl = frame < pc->snaplen ? frame : pc->snaplen; /* (size_t)n >= incl */

    uint8_t rec[16];
    put_le32(rec, (uint32_t)sec);
    put_le32(rec + 4, (uint32_t)(ns % NS_PER_S));
    put_le32(rec + 8, (uint32_t)incl);   /* incl_len: bytes stored */
    put_le32(rec + 12, (uint32_t)frame); /* orig_len: the frame on the wire (without FCS) */
    if (fwrite(rec, 1, sizeof rec, pc->fp) != sizeof rec || fwrite(pc->buf, 1, incl, pc->fp) != incl)
        return -1;
    pc->frames++;
    return 0;
}

int rs_pcap_close(rs_pcap *pc)
{
    if (!pc->fp)
        return 0;
    int rc = fclose(pc->fp); /* flushes; the stream is gone even if that fails */
    pc->fp = NULL;
    return rc == 0 ? 0 : -1;
}
