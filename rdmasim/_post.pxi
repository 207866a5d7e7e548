# Fast data path of rdmasim.verbs: posting send work requests and polling completions.
#
# SendPoster.post takes a SendWR (or a next_wr chain) straight from its slots (_wr.pxi): a work request
# whose every field is a plain int in range (and whose keys are plain ints or keys of this
# simulation's MRs) is converted here, in C. Anything else - another type, a value out of range,
# a bind or UD work request - is handed to the Python checks (rdmasim/verbs/qp.py QP._send_args),
# which accept it or refuse it with their own messages. So this file only decides the cases the
# Python checks would accept unchanged, and every refusal still comes from one place.
cdef enum:
    _MAX_SGE = 32
    _WR_BIND_MW = 8
    _WR_LOCAL_INV = 7
    _WR_SEND_WITH_INV = 9
    _WR_FLUSH = 14
    _WC_WITH_IMM = 2


cdef inline uint32_t _bswap32(uint32_t v) noexcept nogil:
    return ((v >> 24) & 0xFF) | ((v >> 8) & 0xFF00) | ((v << 8) & 0xFF0000) | ((v << 24) & 0xFF000000U)


cdef class _Poster:
    """What posting send and receive work requests share: the QP, the classes of the verbs
    objects, the Python checks to fall back on, the MR keys seen to be of this simulation, and
    the work request that made the last ``post`` fail (``failed``; None when the chain itself
    was refused)."""

    cdef SimCore core
    cdef int host
    cdef uint32_t qpn
    cdef object sim
    cdef object wr_cls
    cdef object sge_cls
    cdef object key_cls
    cdef object slow
    cdef object chain_fn
    cdef object key_ok0
    cdef object key_ok1
    cdef Py_ssize_t o_wr_id, o_sg, o_num_sge, o_next, o_addr, o_length, o_lkey
    cdef public object failed
    # set by the owner (rdmasim/verbs): once `closed`, `post` calls `dead()` (which raises the
    # owner's "destroyed" error) and never reaches the core; `report(bad_wr, wr)` hands a failed
    # work request to the caller's bad_wr
    cdef public bint closed
    cdef public object dead
    cdef public object report

    def __init__(self, SimCore core, int host, uint32_t qpn, sim, wr_cls, sge_cls, key_cls, slow, chain_fn):
        """``slow(i, wr)``: the checked core form of work request ``i``, or its error;
        ``chain_fn(first)``: the list of work requests of a chain, or the error refusing it."""
        self.core = core
        self.host = host
        self.qpn = qpn
        self.sim = sim
        self.wr_cls = wr_cls
        self.sge_cls = sge_cls
        self.key_cls = key_cls
        self.slow = slow
        self.chain_fn = chain_fn
        self.failed = None
        # the slots of the classes' layouts (_wr.pxi); a send and a receive WR share the first four
        cdef WRLayout wl = _layout_of_class(wr_cls, self._wr_kind())
        cdef WRLayout sl = _layout_of_class(sge_cls, _K_SGE)
        self.o_wr_id = wl.off[_F_WR_ID]
        self.o_sg = wl.off[_F_SG]
        self.o_num_sge = wl.off[_F_NUM_SGE]
        self.o_next = wl.off[_F_NEXT_WR]
        self.o_addr = sl.off[_F_ADDR]
        self.o_length = sl.off[_F_LENGTH]
        self.o_lkey = sl.off[_F_LKEY]

    cdef bint _key(self, object v, uint32_t *out):
        """A key: a plain int, or an MR's key of this simulation (remembered once seen)."""
        if type(v) is int:
            return _as_u32(v, out)
        if v is self.key_ok0 or v is self.key_ok1:
            return _as_u32(v, out)
        if not isinstance(v, self.key_cls):
            return _as_u32(v, out)
        if v._sim_ref() is not self.sim or not _as_u32(v, out):
            return False
        self.key_ok1 = self.key_ok0
        self.key_ok0 = v
        return True

    cdef bint _sges(self, object wr, rs_sge *sg, uint32_t *num):
        """The SGEs of ``wr`` (an exact ``wr_cls``; its first ``num_sge``) into sg[], if all are
        plain."""
        cdef Py_ssize_t k, n
        cdef uint64_t nsge
        sgl = _slot(wr, self.o_sg)
        if type(sgl) is not list and type(sgl) is not tuple:
            return False
        if not _as_u64(_slot(wr, self.o_num_sge), &nsge) or nsge > <uint64_t> len(sgl) or nsge > _MAX_SGE:
            return False
        n = <Py_ssize_t> nsge
        for k in range(n):
            s = sgl[k]
            if type(s) is not self.sge_cls:
                return False
            if not _as_u64(_slot(s, self.o_addr), &sg[k].addr):
                return False
            if not _as_u32(_slot(s, self.o_length), &sg[k].length):
                return False
            if not self._key(_slot(s, self.o_lkey), &sg[k].lkey):
                return False
        num[0] = <uint32_t> n
        return True

    cdef list _chain(self, object first):
        """The work requests from ``first`` along ``next_wr``; anything odd (another type, a loop)
        goes to ``chain_fn``, whose error is the one raised."""
        cdef list out = []
        cdef Py_ssize_t n = 0
        wr = first
        tort = first
        while wr is not None:
            if not isinstance(wr, self.wr_cls):
                return self.chain_fn(first)
            out.append(wr)
            wr = wr.next_wr
            n += 1
            if n % 2 == 0:
                tort = tort.next_wr
            if wr is not None and wr is tort:  # one object at two places: the chain loops
                return self.chain_fn(first)
        return out

    cdef int _wr_kind(self):
        """Which work-request layout the posted class has (_wr.pxi _K_*)."""
        return -1

    cdef int _post_one(self, Py_ssize_t i, object wr) except -1:
        raise NotImplementedError

    def post(self, first, bad_wr=None):
        """Post ``first`` and the work requests chained after it, in order. Each is checked
        before it is posted; those before a bad one stay posted (as ``ibv_post_send``), and the
        failing one goes to ``bad_wr`` (``report``). The owner's post method is this one: a
        Python method around it was half of the cost of posting one work request."""
        if self.closed:
            self.dead()
            return
        if bad_wr is None:
            self._post_all(first)
            return
        try:
            self._post_all(first)
        except Exception:
            if self.failed is not None and self.report is not None:
                self.report(bad_wr, self.failed)
            raise

    cdef int _post_all(self, object first) except -1:
        cdef Py_ssize_t i
        cdef list chain
        self.failed = None
        if type(first) is self.wr_cls and _slot(first, self.o_next) is None:  # one WR: no list to build
            return self._post_one(0, first)
        chain = self._chain(first)
        for i in range(len(chain)):
            self._post_one(i, chain[i])
        return 0


cdef class SendPoster(_Poster):
    """Posts the send work requests of one QP (``QP.post_send``): a ``next_wr`` chain in one call,
    each work request exactly as the Python checks (``slow``: the checked tuple ``_wr_from_tuple``
    takes) would pass it to the core."""

    cdef bint ud
    cdef bint swap_imm
    cdef uint32_t flags_mask
    cdef Py_ssize_t o_opcode, o_send_flags, o_imm_data, o_remote_addr, o_rkey, o_compare_add, o_swap

    def __init__(self, SimCore core, int host, uint32_t qpn, bint ud, bint swap_imm, uint32_t flags_mask,
                 sim, wr_cls, sge_cls, key_cls, slow, chain_fn):
        _Poster.__init__(self, core, host, qpn, sim, wr_cls, sge_cls, key_cls, slow, chain_fn)
        self.ud = ud
        self.swap_imm = swap_imm
        self.flags_mask = flags_mask
        cdef WRLayout wl = _layout_of_class(wr_cls, _K_SEND_WR)
        self.o_opcode = wl.off[_F_OPCODE]
        self.o_send_flags = wl.off[_F_SEND_FLAGS]
        self.o_imm_data = wl.off[_F_IMM_DATA]
        self.o_remote_addr = wl.off[_F_REMOTE_ADDR]
        self.o_rkey = wl.off[_F_RKEY]
        self.o_compare_add = wl.off[_F_COMPARE_ADD]
        self.o_swap = wl.off[_F_SWAP]

    cdef int _wr_kind(self):
        return _K_SEND_WR

    cdef bint _fast(self, object wr, rs_send_wr *w, rs_sge *sg):
        """Fill *w from ``wr`` if every field is one the Python checks pass unchanged."""
        cdef uint32_t opcode, imm
        if self.ud or type(wr) is not self.wr_cls:  # a subclass may keep its fields elsewhere
            return False
        if not _as_u32(_slot(wr, self.o_opcode), &opcode) or opcode == _WR_BIND_MW:
            return False
        if not _as_u64(_slot(wr, self.o_wr_id), &w.wr_id):
            return False
        if not _as_u32(_slot(wr, self.o_send_flags), &w.send_flags) or w.send_flags & ~self.flags_mask:
            return False
        if not _as_u32(_slot(wr, self.o_imm_data), &imm):
            return False
        if not self._sges(wr, sg, &w.num_sge):
            return False
        if not _as_u64(_slot(wr, self.o_remote_addr), &w.remote_addr):
            return False
        if not self._key(_slot(wr, self.o_rkey), &w.rkey):
            return False
        if not _as_u64(_slot(wr, self.o_compare_add), &w.compare_add):
            return False
        if not _as_u64(_slot(wr, self.o_swap), &w.swap):
            return False
        w.opcode = opcode
        if self.swap_imm and opcode != _WR_LOCAL_INV and opcode != _WR_SEND_WITH_INV and opcode != _WR_FLUSH:
            imm = _bswap32(imm)
        w.imm_data = imm
        w.sg_list = sg
        w.ud_dest_host = -1
        return True

    cdef int _post_one(self, Py_ssize_t i, object wr) except -1:
        cdef rs_send_wr w
        cdef rs_sge sg[_MAX_SGE]
        cdef int rc
        memset(&w, 0, sizeof(w))
        if not self._fast(wr, &w, sg):
            try:
                t = self.slow(i, wr)
            except BaseException:
                self.failed = wr
                raise
            _wr_from_tuple(<tuple> t, &w, sg)
        rc = rs_post_send(self.core.sim, self.host, self.qpn, &w)
        if rc < 0:
            self.failed = wr
            self.core._check(rc)
        return 0


cdef class RecvPoster(_Poster):
    """Posts the receive work requests of one QP (``QP.post_recv``) or, with ``srq``, of one SRQ
    (``SRQ.post_recv``; ``qpn`` is then the SRQ's handle), a chain in one call; ``slow(i, wr)``
    gives the checked ``(wr_id, [(addr, length, lkey), ...])``."""

    cdef bint srq

    def __init__(self, SimCore core, int host, uint32_t qpn, sim, wr_cls, sge_cls, key_cls, slow, chain_fn,
                 bint srq=False):
        _Poster.__init__(self, core, host, qpn, sim, wr_cls, sge_cls, key_cls, slow, chain_fn)
        self.srq = srq

    cdef int _wr_kind(self):
        return _K_RECV_WR

    cdef int _post_one(self, Py_ssize_t i, object wr) except -1:
        cdef rs_recv_wr w
        cdef rs_sge sg[_MAX_SGE]
        cdef Py_ssize_t k
        cdef int rc
        w.num_sge = 0
        if not (type(wr) is self.wr_cls and _as_u64(_slot(wr, self.o_wr_id), &w.wr_id)
                and self._sges(wr, sg, &w.num_sge)):
            try:
                wr_id, sges = self.slow(i, wr)
            except BaseException:
                self.failed = wr
                raise
            if len(sges) > _MAX_SGE:
                raise ValueError(f"{len(sges)} SGEs: at most {_MAX_SGE} per work request")
            for k in range(len(sges)):
                addr, length, lkey = sges[k]
                sg[k].addr = addr
                sg[k].length = length
                sg[k].lkey = lkey
            w.wr_id = wr_id
            w.num_sge = len(sges)
        w.sg_list = sg
        if self.srq:
            rc = rs_post_srq_recv(self.core.sim, self.host, self.qpn, &w)
        else:
            rc = rs_post_recv(self.core.sim, self.host, self.qpn, &w)
        if rc < 0:
            self.failed = wr
            self.core._check(rc)
        return 0


cdef int _wr_from_tuple(tuple t, rs_send_wr *wr, rs_sge *sg) except -1:
    """A checked work request ``(wr_id, opcode, send_flags, imm_data, sges, remote_addr, rkey,
    compare_add, swap, ud_dest_host, ud_traffic_class, ud_remote_qpn, ud_remote_qkey, bind_mw_rkey,
    bind_lkey, bind_access, bind_len)`` (``QP._send_args``) into *wr (zeroed by the caller)."""
    cdef Py_ssize_t k
    sges = <list> t[4]
    if len(sges) > _MAX_SGE:
        raise ValueError(f"{len(sges)} SGEs: at most {_MAX_SGE} per work request")
    for k in range(len(sges)):
        addr, length, lkey = sges[k]
        sg[k].addr = addr
        sg[k].length = length
        sg[k].lkey = lkey
    wr.wr_id = t[0]
    wr.opcode = t[1]
    wr.send_flags = t[2]
    wr.imm_data = t[3]
    wr.num_sge = len(sges)
    wr.sg_list = sg
    wr.remote_addr = t[5]
    wr.rkey = t[6]
    wr.compare_add = t[7]
    wr.swap = t[8]
    wr.ud_dest_host = t[9]
    wr.ud_traffic_class = t[10]
    wr.ud_remote_qpn = t[11]
    wr.ud_remote_qkey = t[12]
    wr.bind_mw_rkey = t[13]
    wr.bind_lkey = t[14]
    wr.bind_access = t[15]
    wr.bind_len = t[16]
    return 0


def post_send_arrays(SimCore core, int host, uint32_t qpn, const uint64_t[:] wr_id,
                     const uint32_t[:] opcode, const uint32_t[:] send_flags, const uint32_t[:] imm_data,
                     const uint64_t[:] local_addr, const uint32_t[:] length, const uint32_t[:] lkey,
                     const uint64_t[:] remote_addr, const uint32_t[:] rkey, Py_ssize_t n):
    """Post ``n`` checked send work requests of one SGE each from columns (any may be a
    broadcast view), in order, in one call. ``imm_data`` is as the wire reads it. Stops at the
    first one the core refuses and raises its error; ``core.last_posted`` is then its row, else
    ``n``."""
    cdef rs_send_wr w
    cdef rs_sge sg
    cdef Py_ssize_t i
    cdef int rc = 0
    cdef Py_ssize_t rows = min(wr_id.shape[0], opcode.shape[0], send_flags.shape[0], imm_data.shape[0],
                               local_addr.shape[0], length.shape[0], lkey.shape[0], remote_addr.shape[0],
                               rkey.shape[0])
    if n < 0 or rows < n:
        raise ValueError(f"post_send_arrays: n={n}, but a column has only {rows} rows")
    core.last_posted = 0
    memset(&w, 0, sizeof(w))
    w.num_sge = 1
    w.sg_list = &sg
    w.ud_dest_host = -1
    with nogil:
        for i in range(n):
            w.wr_id = wr_id[i]
            w.opcode = opcode[i]
            w.send_flags = send_flags[i]
            w.imm_data = imm_data[i]
            sg.addr = local_addr[i]
            sg.length = length[i]
            sg.lkey = lkey[i]
            w.remote_addr = remote_addr[i]
            w.rkey = rkey[i]
            rc = rs_post_send(core.sim, host, qpn, &w)
            if rc < 0:
                break
    if rc < 0:
        core.last_posted = i
        core._check(rc)
    core.last_posted = n


def cq_poll_wcs(SimCore core, int host, int cq, int n, wc_new, wc_cls, bint swap_imm):
    """Up to ``n`` completions as ``wc_new(wc_cls, (wr_id, status, opcode, vendor_err, byte_len,
    imm_data, qp_num, src_qp, wc_flags, pkey_index, sl, slid, dlid_path_bits))`` objects
    (``imm_data`` as verbs holds it; ``slid`` and ``dlid_path_bits`` 0, as on RoCE), in one
    call."""
    cdef rs_wc *out
    cdef int got, i
    cdef uint32_t imm
    if n <= 0:
        return []
    out = <rs_wc *> malloc(n * sizeof(rs_wc))
    if out == NULL:
        raise MemoryError()
    try:
        got = core._check(rs_cq_poll(core.sim, host, cq, out, n))
        res = [None] * got
        for i in range(got):
            imm = out[i].imm_data
            if swap_imm and out[i].wc_flags & _WC_WITH_IMM:
                imm = _bswap32(imm)
            res[i] = wc_new(wc_cls, (out[i].wr_id, out[i].status, out[i].opcode, out[i].vendor_err,
                                     out[i].byte_len, imm, out[i].qp_num, out[i].src_qp,
                                     out[i].wc_flags, out[i].pkey_index, out[i].sl, 0, 0))
        return res
    finally:
        free(out)


WC_DTYPE = _np.dtype([("wr_id", "u8"), ("status", "u4"), ("opcode", "u4"), ("vendor_err", "u4"),
                      ("byte_len", "u4"), ("imm_data", "u4"), ("qp_num", "u4"), ("src_qp", "u4"),
                      ("wc_flags", "u4"), ("pkey_index", "u4"), ("sl", "u4")])


def cq_poll_array(SimCore core, int host, int cq, int n, bint swap_imm):
    """Up to ``n`` completions as a numpy array of ``WC_DTYPE`` (``imm_data`` as verbs holds it),
    in one call."""
    cdef rs_wc *out
    cdef int got, i
    cdef uint32_t imm
    if n < 0:
        n = 0
    arr = _np.zeros(n, dtype=WC_DTYPE)
    if n == 0:
        return arr
    out = <rs_wc *> malloc(n * sizeof(rs_wc))
    if out == NULL:
        raise MemoryError()
    cdef uint64_t[:] c_id
    cdef uint32_t[:] c_st, c_op, c_ve, c_bl, c_im, c_qp, c_sq, c_fl, c_pk, c_sl
    try:
        got = core._check(rs_cq_poll(core.sim, host, cq, out, n))
        arr = arr[:got]
        c_id = arr["wr_id"]
        c_st, c_op, c_ve, c_bl = arr["status"], arr["opcode"], arr["vendor_err"], arr["byte_len"]
        c_im, c_qp, c_sq, c_fl = arr["imm_data"], arr["qp_num"], arr["src_qp"], arr["wc_flags"]
        c_pk, c_sl = arr["pkey_index"], arr["sl"]
        for i in range(got):
            imm = out[i].imm_data
            if swap_imm and out[i].wc_flags & _WC_WITH_IMM:
                imm = _bswap32(imm)
            c_id[i] = out[i].wr_id
            c_st[i] = out[i].status
            c_op[i] = out[i].opcode
            c_ve[i] = out[i].vendor_err
            c_bl[i] = out[i].byte_len
            c_im[i] = imm
            c_qp[i] = out[i].qp_num
            c_sq[i] = out[i].src_qp
            c_fl[i] = out[i].wc_flags
            c_pk[i] = out[i].pkey_index
            c_sl[i] = out[i].sl
        return arr
    finally:
        free(out)
