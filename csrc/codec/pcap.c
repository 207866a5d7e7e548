/* Classic pcap writer: magic 0xa1b23c4d (nanosecond timestamps), version 2.4,
 * LINKTYPE_ETHERNET, or for an IB fabric LINKTYPE_INFINIBAND (247: packets from the LRH) or
 * LINKTYPE_ERF (197) with one ERF InfiniBand record per packet, the form Wireshark reads (it maps
 * no dissector to 247).  Everything is written little-endian explicitly, so the file
 * is the same on any host; readers detect the byte order from the magic. */
#define _POSIX_C_SOURCE 200809L /* fileno, ftruncate */
#include <errno.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "rdmasim/codec.h"

#define PCAP_MAGIC_NS 0xa1b23c4du
#define PS_PER_NS 1000
#define NS_PER_S 1000000000
#define PCAP_REC_HDR 16
#define ERF_HDR 16
#define ERF_TYPE_INFINIBAND 21u
#define ERF_FLAG_VARLEN 0x04u

_Static_assert(sizeof(((rs_pcap *)0)->wbuf) >= PCAP_REC_HDR + ERF_HDR + sizeof(((rs_pcap *)0)->buf),
               "a whole record must fit in the write buffer");

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

/* Stop on the first write error: forget the records not written and cut a partly written one, so
 * the file holds exactly `frames` whole records (ftruncate fails harmlessly on devices). */
static void pcap_fail(rs_pcap *pc, int e)
{
    pc->err = e ? e : EIO;
    pc->frames -= pc->pending;
    pc->pending = 0;
    pc->wlen = 0;
    if (ftruncate(fileno(pc->fp), (off_t)pc->file_bytes) != 0)
        errno = pc->err;
}

int rs_pcap_flush(rs_pcap *pc)
{
    if (!pc->fp || pc->err)
        return pc->err ? -1 : 0;
    if (!pc->wlen)
        return 0;
    errno = 0;
    size_t put = fwrite(pc->wbuf, 1, pc->wlen, pc->fp); /* unbuffered stream: straight to the file */
    if (put != pc->wlen) {
        pcap_fail(pc, errno);
        return -1;
    }
    pc->file_bytes += put;
    pc->wlen = 0;
    pc->pending = 0;
    return 0;
}

int rs_pcap_open(rs_pcap *pc, const char *path, uint32_t snaplen)
{
    return rs_pcap_open_linktype(pc, path, snaplen, RS_LINKTYPE_ETHERNET);
}

int rs_pcap_open_linktype(rs_pcap *pc, const char *path, uint32_t snaplen, uint32_t linktype)
{
    pc->linktype = linktype;
    uint8_t hdr[24];
    pc->frames = pc->pending = pc->file_bytes = 0;
    pc->wlen = 0;
    pc->err = 0;
    if (snaplen > RS_PCAP_SNAPLEN_MAX) {
        pc->fp = NULL;
        errno = EINVAL;
        return -1;
    }
    pc->snaplen = snaplen ? snaplen : RS_PCAP_SNAPLEN_MAX;
    pc->fp = fopen(path, "wb");
    if (!pc->fp)
        return -1;
    setvbuf(pc->fp, NULL, _IONBF, 0); /* wbuf is the buffer: we know which records reached the file */
    put_le32(hdr, PCAP_MAGIC_NS);
    put_le16(hdr + 4, 2); /* version 2.4 */
    put_le16(hdr + 6, 4);
    put_le32(hdr + 8, 0);  /* thiszone: timestamps are UTC */
    put_le32(hdr + 12, 0); /* sigfigs */
    put_le32(hdr + 16, pc->snaplen);
    put_le32(hdr + 20, linktype);
    errno = 0;
    if (fwrite(hdr, 1, sizeof hdr, pc->fp) != sizeof hdr) {
        int e = errno ? errno : EIO;
        fclose(pc->fp);
        pc->fp = NULL;
        errno = e;
        return -1;
    }
    pc->file_bytes = sizeof hdr;
    return 0;
}

int rs_pcap_write(rs_pcap *pc, const rs_pkt *p, int64_t t_ps)
{
    if (!pc->fp || pc->err || t_ps < 0)
        return -1;
    int64_t ns = t_ps / PS_PER_NS;
    int64_t sec = ns / NS_PER_S;
    if (sec > (int64_t)UINT32_MAX) { /* ts_sec is 32 bits: beyond year 2106 */
        errno = EOVERFLOW;
        return -1;
    }
    if ((pc->linktype != RS_LINKTYPE_ETHERNET) != (p->link_layer == RS_LL_IB)) {
        errno = EINVAL; /* a frame of the other link layer has no form in this file */
        return -1;
    }
    size_t frame = 0;
    int n = rs_encode_prefix(p, pc->buf, sizeof pc->buf, pc->snaplen, &frame);
    if (n < 0) {
        errno = EINVAL;
        return -1;
    }
    size_t incl = frame < pc->snaplen ? frame : pc->snaplen; /* (size_t)n >= incl */
    size_t erf = pc->linktype == RS_LINKTYPE_ERF ? ERF_HDR : 0;

    if (pc->wlen + PCAP_REC_HDR + erf + incl > sizeof pc->wbuf && rs_pcap_flush(pc) != 0)
        return -1;
    uint8_t *rec = pc->wbuf + pc->wlen;
    put_le32(rec, (uint32_t)sec);
    put_le32(rec + 4, (uint32_t)(ns % NS_PER_S));
    put_le32(rec + 8, (uint32_t)(erf + incl));   /* incl_len: bytes stored */
    put_le32(rec + 12, (uint32_t)(erf + frame)); /* orig_len: the frame on the wire (without FCS) */
    if (erf) { /* ERF record header: time as 32.32 fixed point seconds (little-endian), type, flags,
                * record length and wire length (big-endian) */
        uint64_t frac = ((uint64_t)(ns % NS_PER_S) << 32) / NS_PER_S;
        uint8_t *h = rec + PCAP_REC_HDR;
        put_le32(h, (uint32_t)frac);
        put_le32(h + 4, (uint32_t)sec);
        h[8] = ERF_TYPE_INFINIBAND;
        h[9] = ERF_FLAG_VARLEN;
        h[10] = (uint8_t)((ERF_HDR + incl) >> 8);
        h[11] = (uint8_t)(ERF_HDR + incl);
        h[12] = h[13] = 0; /* loss counter */
        h[14] = (uint8_t)(frame >> 8);
        h[15] = (uint8_t)frame;
    }
    memcpy(rec + PCAP_REC_HDR + erf, pc->buf, incl);
    pc->wlen += PCAP_REC_HDR + erf + incl;
    pc->pending++;
    pc->frames++;
    return 0;
}

int rs_pcap_close(rs_pcap *pc)
{
    if (!pc->fp)
        return pc->err ? -1 : 0;
    if (!pc->err)
        rs_pcap_flush(pc);
    errno = 0;
    if (fclose(pc->fp) != 0 && !pc->err) /* the stream is gone even if that fails */
        pc->err = errno ? errno : EIO;
    pc->fp = NULL;
    return pc->err ? -1 : 0;
}
