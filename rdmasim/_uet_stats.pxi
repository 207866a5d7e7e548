# A host's UET endpoint counters: PDC establishment and close (csrc/sim/uet_api.c).

cdef extern from "rdmasim/uet.h" nogil:
    ctypedef struct rs_uet_ep_stats:
        uint64_t syn_sent
        uint64_t pdcs_created
        uint64_t closes_sent
        uint64_t pdcs_closed
        uint64_t pdcs_released
        uint64_t close_gave_up
        uint64_t pdcs_live
        uint64_t rx_unknown
        uint64_t pdcs_refused
        uint64_t close_reqs_sent
    int rs_uet_host_stats(const rs_sim *sim, int host, rs_uet_ep_stats *out)


def uet_host_stats(SimCore core, int host):
    """rs_uet_host_stats as a dict (rdmasim.uet.endpoint_stats)."""
    cdef rs_uet_ep_stats s
    if rs_uet_host_stats(core.sim, host, &s) != 0:
        raise ValueError(f"uet endpoint_stats: host index {host} is not a host of this simulation")
    return {"syn_sent": s.syn_sent, "pdcs_created": s.pdcs_created, "closes_sent": s.closes_sent,
            "pdcs_closed": s.pdcs_closed, "pdcs_released": s.pdcs_released, "close_gave_up": s.close_gave_up,
            "pdcs_live": s.pdcs_live, "rx_unknown": s.rx_unknown, "pdcs_refused": s.pdcs_refused,
            "close_reqs_sent": s.close_reqs_sent}
