# MPI ranks of a partitioned run (csrc/sim/par_rank.h, par_xfer.h): the C side of rdmasim.mpi.

from libc.stdlib cimport free as _rk_free

cdef extern from "sim/par_rank.h" nogil:
    ctypedef int (*rs_par_allgather_fn)(void *ctx, const uint8_t *send, size_t len, const uint8_t **recv,
                                        const uint64_t **lens) noexcept
    int rs_sim_par_ranks(rs_sim *sim, uint32_t n_ranks, uint32_t me, const uint16_t *owner, uint32_t parts,
                         rs_par_allgather_fn fn, void *ctx)
    int rs_par_rank_flows_out(rs_sim *sim, uint8_t **out, size_t *len)
    int rs_par_rank_flows_in(rs_sim *sim, const uint8_t *all, const uint64_t *lens, uint32_t n_ranks)

cdef extern from "sim/par_xfer_test.h" nogil:
    int rs_xfer_selftest(uint64_t seed, int with_payload, int with_int, uint8_t *rec, size_t cap, size_t *rec_len)
    int rs_xfer_parse_check(const uint8_t *rec, size_t len)


cdef class RankExchange:
    """The allgather of a run over MPI ranks: ``comm.allgather(bytes)`` once per agreement, the
    messages kept until the next one (the C side reads them in place)."""
    cdef object comm
    cdef object _all
    cdef object _lens
    cdef public object error
    cdef public uint64_t calls
    cdef public uint64_t bytes_sent

    def __init__(self, comm):
        self.comm = comm
        self.error = None
        self.calls = 0
        self.bytes_sent = 0


cdef int _rank_allgather(void *ctx, const uint8_t *send, size_t length, const uint8_t **recv,
                         const uint64_t **lens) noexcept with gil:
    cdef RankExchange x = <RankExchange>ctx
    cdef uint64_t[::1] lv
    cdef const unsigned char[::1] av
    try:
        parts = x.comm.allgather((<const char *>send)[:length] if length else b"")
        x.calls += 1
        x.bytes_sent += length
        x._all = _np.frombuffer(b"".join(parts) + b"\0", dtype=_np.uint8)
        x._lens = _np.array([len(p) for p in parts], dtype=_np.uint64)
        av = x._all
        lv = x._lens
        recv[0] = &av[0]
        lens[0] = &lv[0]
        return 0
    except BaseException as exc:  # the run fails; rdmasim.mpi raises this
        x.error = exc
        return -1


def rank_set(SimCore core, uint32_t n_ranks, uint32_t me, owner, RankExchange x):
    """This process is rank ``me`` of ``n_ranks``; partition i runs on rank owner[i]."""
    cdef uint16_t[::1] ow = _np.ascontiguousarray(owner, dtype=_np.uint16)
    cdef uint16_t dummy = 0
    core._check(rs_sim_par_ranks(core.sim, n_ranks, me, &ow[0] if ow.shape[0] else &dummy, <uint32_t>ow.shape[0],
                                 _rank_allgather, <void *>x))


def rank_clear(SimCore core):
    """One process again."""
    core._check(rs_sim_par_ranks(core.sim, 0, 0, NULL, 0, NULL, NULL))


def rank_flows_out(SimCore core):
    """This rank's part of the flow table after a run (bytes for rank_flows_in)."""
    cdef uint8_t *out = NULL
    cdef size_t n = 0
    core._check(rs_par_rank_flows_out(core.sim, &out, &n))
    try:
        return (<const char *>out)[:n] if n else b""
    finally:
        _rk_free(out)


def rank_flows_in(SimCore core, parts):
    """Every rank's rank_flows_out (in rank order) into this rank's flow table."""
    lens = _np.array([len(p) for p in parts], dtype=_np.uint64)
    cdef const unsigned char[::1] av = _np.frombuffer(b"".join(parts) + b"\0", dtype=_np.uint8)
    cdef uint64_t[::1] lv = lens
    core._check(rs_par_rank_flows_in(core.sim, &av[0], &lv[0], <uint32_t>len(parts)))


def xfer_roundtrip(uint64_t seed, bint payload, bint intel):
    """Testing: a frame of random fields (payload bytes and INT stack if asked) to its record and
    back; returns (1 when the packet came back byte for byte, the record)."""
    cdef uint8_t rec[8192]
    cdef size_t n = 0
    cdef int ok = rs_xfer_selftest(seed, payload, intel, rec, sizeof(rec), &n)
    return ok, (<const char *>rec)[:n]


def xfer_parse(bytes rec):
    """Testing: the bytes a record of ``rec`` takes (0: cut short or malformed)."""
    return rs_xfer_parse_check(<const uint8_t *><const char *>rec, len(rec))
