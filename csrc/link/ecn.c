/* RED-style ECN marking (see ecn.h). */
#include "link/ecn.h"

int rs_ecn_maybe_mark(rs_pkt *pkt, uint64_t q, uint64_t kmin, uint64_t kmax, double pmax, rs_rng *rng)
{
    uint8_t ecn = pkt->tos & 3u;
    if (kmax == 0 || (ecn != 1u && ecn != 2u) || q <= kmin)
        return 0;
    if (q <= kmax) {
        double p = pmax * (double)(q - kmin) / (double)(kmax - kmin);
        if (rs_rng_uniform(rng) >= p)
            return 0;
    }
    pkt->tos |= 3u;
    return 1;
}
