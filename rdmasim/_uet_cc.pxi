# UET load balancing (csrc/uet/lb.c) and receiver-credit CC (csrc/uet/rccc.c) driven by hand for
# tests: event sequences in, state out (no fabric).  NSCC's handle is in _cc_nscc.pxi.

cdef extern from "uet/lb.h" nogil:
    enum: RS_UET_LB_OBLIVIOUS
    enum: RS_UET_LB_REPS
    enum: RS_UET_LB_BUF_MAX
    ctypedef struct rs_uet_lb_cfg:
        int kind
        uint32_t ev_count
        uint32_t buffer_size
        uint32_t reuse
        int freezing
        uint32_t freeze_packets
        uint32_t explore_after_freeze
    ctypedef struct rs_uet_lb_stats:
        uint64_t sent
        uint64_t recycled
        uint64_t explored
        uint64_t acks_good
        uint64_t acks_marked
        uint64_t losses
        uint64_t timeouts
        uint64_t freezes
    ctypedef struct rs_uet_lb:
        rs_uet_lb_cfg cfg
        uint32_t head
        uint32_t filled
        uint32_t fresh
        uint32_t frozen_pos
        int frozen
        uint32_t frozen_left
        uint32_t explore_left
        rs_uet_lb_stats stats
    void rs_uet_lb_cfg_default(rs_uet_lb_cfg *cfg, int kind)
    int rs_uet_lb_cfg_check(const rs_uet_lb_cfg *cfg)
    void rs_uet_lb_init(rs_uet_lb *lb, const rs_uet_lb_cfg *cfg, uint64_t seed)
    uint16_t rs_uet_lb_next(rs_uet_lb *lb)
    void rs_uet_lb_on_ack(rs_uet_lb *lb, uint16_t entropy, int ecn)
    void rs_uet_lb_on_loss(rs_uet_lb *lb, uint16_t entropy)
    void rs_uet_lb_on_timeout(rs_uet_lb *lb)

cdef extern from "uet/rccc.h" nogil:
    ctypedef struct rs_rccc_rx_params:
        double link_bps
        double rate_modifier
        uint32_t quantum
    ctypedef struct rs_rccc_rx:
        int64_t next_ps
        int64_t free_ps
        uint32_t nused
        uint64_t grants
        uint64_t granted_bytes
        uint64_t refused
    ctypedef struct rs_rccc_tx:
        int64_t credit
        uint64_t max_credit
        uint64_t granted
        uint64_t requested
        uint32_t mtu
        int speculating
        uint64_t sent
        uint64_t credit_received
    void rs_rccc_rx_params_default(rs_rccc_rx_params *p, double link_bps, uint32_t mss)
    int rs_rccc_rx_params_check(const rs_rccc_rx_params *p)
    void rs_rccc_rx_init(rs_rccc_rx *rx, const rs_rccc_rx_params *p)
    int rs_rccc_rx_on_request(rs_rccc_rx *rx, int64_t now_ps, uint32_t key, uint64_t requested)
    int64_t rs_rccc_rx_next_ps(const rs_rccc_rx *rx)
    int rs_rccc_rx_pull(rs_rccc_rx *rx, int64_t now_ps, uint32_t *key, uint64_t *granted)
    uint64_t rs_rccc_rx_granted(const rs_rccc_rx *rx, uint32_t key)
    void rs_rccc_rx_remove(rs_rccc_rx *rx, uint32_t key)
    void rs_rccc_tx_init(rs_rccc_tx *tx, uint64_t initial_credit, uint64_t max_credit, uint32_t mtu)
    uint64_t rs_rccc_tx_request(rs_rccc_tx *tx, uint64_t backlog, uint32_t active_sources)
    void rs_rccc_tx_on_credit(rs_rccc_tx *tx, uint64_t granted)
    void rs_rccc_tx_on_feedback(rs_rccc_tx *tx)
    int rs_rccc_tx_may_send(const rs_rccc_tx *tx)
    void rs_rccc_tx_on_sent(rs_rccc_tx *tx, uint32_t bytes)

#: load-balancing kinds by name (enum rs_uet_lb_kind)
UET_LB_KINDS = {"oblivious": RS_UET_LB_OBLIVIOUS, "reps": RS_UET_LB_REPS}
UET_LB_BUF_MAX = RS_UET_LB_BUF_MAX


def uet_lb_default_cfg(str kind):
    """The C defaults of a load-balancing kind ("oblivious" or "reps") as a dict."""
    cdef rs_uet_lb_cfg c
    rs_uet_lb_cfg_default(&c, UET_LB_KINDS[kind])
    return c


def uet_lb_cfg_check(dict cfg):
    """rs_uet_lb_cfg_check: 0, or the 1-based index of the first bad field."""
    cdef rs_uet_lb_cfg c
    c = cfg
    return rs_uet_lb_cfg_check(&c)


def uet_lb_run(dict cfg, uint64_t seed, events):
    """Drive one rs_uet_lb from `seed` through `events` and return (entropies, state):
    ("next",) hands out an entropy (appended to the list), ("ack", ev, ecn), ("loss", ev),
    ("timeout",), and ("next_ack", n, ecn) sends n packets each acknowledged at once with that ECN.
    The state is the struct's counters and mode."""
    cdef rs_uet_lb lb
    cdef rs_uet_lb_cfg c
    cdef uint16_t ev
    c = cfg
    if rs_uet_lb_cfg_check(&c):
        raise ValueError(f"load-balancing configuration field {rs_uet_lb_cfg_check(&c)} is invalid: {cfg}")
    rs_uet_lb_init(&lb, &c, seed)
    out = []
    for e in events:
        op = e[0]
        if op == "next":
            out.append(rs_uet_lb_next(&lb))
        elif op == "ack":
            rs_uet_lb_on_ack(&lb, e[1], e[2])
        elif op == "loss":
            rs_uet_lb_on_loss(&lb, e[1])
        elif op == "timeout":
            rs_uet_lb_on_timeout(&lb)
        elif op == "next_ack":
            for _ in range(e[1]):
                ev = rs_uet_lb_next(&lb)
                out.append(ev)
                rs_uet_lb_on_ack(&lb, ev, e[2])
        else:
            raise ValueError(f"unknown load-balancing event {e!r}")
    state = dict(head=lb.head, filled=lb.filled, fresh=lb.fresh, frozen=lb.frozen, frozen_left=lb.frozen_left,
                 explore_left=lb.explore_left, stats=lb.stats)
    return out, state


def uet_lb_paths(dict cfg, uint64_t seed, int npaths, bad, int packets, double mark_prob=1.0):
    """A closed loop of `packets` sends with an ACK each: entropy e takes path e % npaths; packets
    on a path in `bad` come back ECN-marked with probability mark_prob (a seeded stream), others
    unmarked.  Returns the number of packets sent on each path and the lb counters."""
    cdef rs_uet_lb lb
    cdef rs_uet_lb_cfg c
    cdef rs_rng r
    cdef uint16_t ev
    cdef int path, i, ecn
    c = cfg
    rs_uet_lb_init(&lb, &c, seed)
    rs_rng_seed(&r, seed, 0x5445)
    per_path = [0] * npaths
    badset = set(bad)
    for i in range(packets):
        ev = rs_uet_lb_next(&lb)
        path = ev % npaths
        per_path[path] += 1
        ecn = path in badset and rs_rng_uniform(&r) < mark_prob
        rs_uet_lb_on_ack(&lb, ev, ecn)
    return per_path, lb.stats


def rccc_rx_default_params(double link_bps, uint32_t mss):
    """rs_rccc_rx_params_default as a dict."""
    cdef rs_rccc_rx_params p
    rs_rccc_rx_params_default(&p, link_bps, mss)
    return p


def rccc_incast(dict rx_params, int senders, uint64_t bytes_each, uint32_t mtu, int64_t one_way_ps,
                uint64_t initial_credit, uint64_t max_credit, int64_t until_ps):
    """A closed loop of `senders` RCCC senders with `bytes_each` to send to one receiver: each
    packet of `mtu` bytes reaches the receiver one_way_ps after it is sent (no queue: the link is
    not modelled) with the sender's cumulative request; grants travel back one_way_ps; a sender
    sends whenever it may.  Returns per-sender (bytes sent, credit received, time of its last
    send) and the receiver's counters: the credit schedule's fairness and rate."""
    cdef rs_rccc_rx rx
    cdef rs_rccc_rx_params p
    cdef rs_rccc_tx tx[64]
    cdef uint32_t key
    cdef uint64_t granted
    cdef int64_t now = 0
    cdef int i
    if senders < 1 or senders > 64:
        raise ValueError(f"senders {senders}: 1 .. 64")
    p = rx_params
    rs_rccc_rx_init(&rx, &p)
    left = [bytes_each] * senders
    last_send = [0] * senders
    arrivals = []   # (time, kind, sender, value): 0 = request at receiver, 1 = grant at sender
    for i in range(senders):
        rs_rccc_tx_init(&tx[i], initial_credit, max_credit, mtu)
    import heapq
    while now <= until_ps:
        progressed = True
        while progressed:
            progressed = False
            for i in range(senders):
                if left[i] > 0 and rs_rccc_tx_may_send(&tx[i]):
                    sz = min(mtu, left[i])
                    rs_rccc_tx_on_sent(&tx[i], sz)
                    left[i] -= sz
                    req = rs_rccc_tx_request(&tx[i], left[i], 1)
                    heapq.heappush(arrivals, (now + one_way_ps, 0, i, req))
                    last_send[i] = now
                    progressed = True
        nxt = rs_rccc_rx_next_ps(&rx)
        t_arr = arrivals[0][0] if arrivals else None
        cands = [t for t in (nxt if nxt else None, t_arr) if t is not None]
        if not cands:
            break
        now = max(now, min(cands))
        while arrivals and arrivals[0][0] <= now:
            t, kind, i, val = heapq.heappop(arrivals)
            if kind == 0:
                rs_rccc_rx_on_request(&rx, t, i, val)
            else:
                rs_rccc_tx_on_credit(&tx[i], val)
        if rs_rccc_rx_pull(&rx, now, &key, &granted):
            heapq.heappush(arrivals, (now + one_way_ps, 1, key, granted))
    return ([dict(sent=tx[i].sent, credit_received=tx[i].credit_received, last_send_ps=last_send[i])
             for i in range(senders)],
            dict(grants=rx.grants, granted_bytes=rx.granted_bytes, refused=rx.refused, end_ps=now))


cdef class RcccForTest:
    """One RCCC receiver and its senders' accounting driven by hand."""
    cdef rs_rccc_rx rx
    cdef rs_rccc_tx tx[64]

    def __cinit__(self, dict rx_params):
        cdef rs_rccc_rx_params p
        p = rx_params
        if rs_rccc_rx_params_check(&p):
            raise ValueError(f"RCCC receiver parameter {rs_rccc_rx_params_check(&p)} is invalid: {rx_params}")
        rs_rccc_rx_init(&self.rx, &p)

    def request(self, int64_t now_ps, uint32_t key, uint64_t requested):
        return rs_rccc_rx_on_request(&self.rx, now_ps, key, requested)

    def next_ps(self):
        return rs_rccc_rx_next_ps(&self.rx)

    def pull(self, int64_t now_ps):
        """(key, cumulative grant) of the credit due now, or None."""
        cdef uint32_t key
        cdef uint64_t granted
        if rs_rccc_rx_pull(&self.rx, now_ps, &key, &granted):
            return key, granted
        return None

    def granted(self, uint32_t key):
        return rs_rccc_rx_granted(&self.rx, key)

    def remove(self, uint32_t key):
        rs_rccc_rx_remove(&self.rx, key)

    @property
    def rx_state(self):
        return self.rx

    def tx_init(self, int i, uint64_t initial_credit, uint64_t max_credit, uint32_t mtu):
        rs_rccc_tx_init(&self.tx[i], initial_credit, max_credit, mtu)

    def tx_request(self, int i, uint64_t backlog, uint32_t active_sources=1):
        return rs_rccc_tx_request(&self.tx[i], backlog, active_sources)

    def tx_credit(self, int i, uint64_t granted):
        rs_rccc_tx_on_credit(&self.tx[i], granted)

    def tx_feedback(self, int i):
        rs_rccc_tx_on_feedback(&self.tx[i])

    def tx_may_send(self, int i):
        return bool(rs_rccc_tx_may_send(&self.tx[i]))

    def tx_sent(self, int i, uint32_t nbytes):
        rs_rccc_tx_on_sent(&self.tx[i], nbytes)

    def tx_state(self, int i):
        return self.tx[i]
