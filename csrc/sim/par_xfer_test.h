/* Testing the frame records of sim/par_xfer.h (sim/par_xfer_test.c; rdmasim._core.xfer_roundtrip). */
#ifndef RDMASIM_SIM_PAR_XFER_TEST_H
#define RDMASIM_SIM_PAR_XFER_TEST_H

#include <stddef.h>
#include <stdint.h>

/* A packet of random fields from `seed` (with payload bytes and an INT stack if asked) to its
 * record (copied to rec, *rec_len bytes, at most cap) and back into a packet of another pool:
 * 1 when every byte came back (the pointers aside), 0 when not, -1 out of memory or no room. */
int rs_xfer_selftest(uint64_t seed, int with_payload, int with_int, uint8_t *rec, size_t cap, size_t *rec_len);
/* The bytes of the record at rec (len bytes available), 0 when cut short or malformed. */
int rs_xfer_parse_check(const uint8_t *rec, size_t len);

#endif
