"""Shares of flows over links: max-min fair (static and as flows finish), and the equilibrium of
window-limited flows whose data and acknowledgements wait in FIFO queues (docs/multipath.md,
"ECMP against the models").  Pure Python; none of it calls the simulator.

A flow is the ordered list of the links it crosses, source first; a link is any hashable key and
has capacity 1 (a fraction of the line rate) unless ``capacity`` names it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Mapping, Sequence

Path = Sequence[Hashable]


def maxmin_rates(paths: Sequence[Path], capacity: Mapping[Hashable, float] | None = None) -> list[float]:
    """Max-min fair rate of each flow (progressive filling: every unfrozen flow's rate rises
    together; a link that fills freezes the flows crossing it)."""
    cap = capacity or {}
    n = len(paths)
    rate = [0.0] * n
    left = {lk: float(cap.get(lk, 1.0)) for p in paths for lk in p}
    for lk, c in left.items():
        if c <= 0:
            raise ValueError(f"capacity of link {lk!r} must be > 0, got {c}")
    users: dict[Hashable, set[int]] = {}
    for i, p in enumerate(paths):
        if not p:
            raise ValueError(f"flow {i} crosses no link")
        for lk in p:
            users.setdefault(lk, set()).add(i)
    live = set(range(n))
    level = 0.0
    while live:
        live_users = {lk: [i for i in us if i in live] for lk, us in users.items()}
        # the next link to fill as every live flow's rate rises by the same amount
        lk_min = min((lk for lk, us in live_users.items() if us), key=lambda k: left[k] / len(live_users[k]))
        step = left[lk_min] / len(live_users[lk_min])
        level += step
        for lk, us in live_users.items():
            left[lk] -= step * len(us)
        full = [lk for lk, us in live_users.items() if us and left[lk] <= 1e-12]
        frozen = {i for lk in full for i in live_users[lk]}
        for i in frozen:
            rate[i] = level
        live -= frozen
    return rate


def maxmin_fcts(paths: Sequence[Path], sizes: Sequence[float],
                capacity: Mapping[Hashable, float] | None = None) -> list[float]:
    """Completion times of flows that all start at 0 and share the links max-min fairly
    (:func:`maxmin_rates`), the shares recomputed each time a flow finishes.  ``sizes`` in the
    unit of capacity x time (a size of 1 at capacity 1 takes time 1)."""
    return _fcts(lambda act: maxmin_rates([paths[i] for i in act], capacity), len(paths), sizes)


def _fcts(rates_of: Callable[[list[int]], list[float]], n: int, sizes: Sequence[float]) -> list[float]:
    """Completion times of ``n`` flows started at 0, each running at the rate ``rates_of`` gives
    it among the flows still running, recomputed as each finishes."""
    if len(sizes) != n:
        raise ValueError(f"sizes has {len(sizes)} entries for {n} flows")
    left = [float(s) for s in sizes]
    if any(s <= 0 for s in left):
        raise ValueError("every size must be > 0")
    fct = [0.0] * n
    active = list(range(n))
    now = 0.0
    while active:
        r = rates_of(active)
        dt = min(left[i] / ri for i, ri in zip(active, r, strict=True))
        now += dt
        still = []
        for i, ri in zip(active, r, strict=True):
            left[i] -= ri * dt
            if left[i] <= 1e-9 * sizes[i]:
                fct[i] = now
            else:
                still.append(i)
        active = still
    return fct


def window_rates(data: Sequence[Path], acks: Sequence[Path], window: float, base_rtt: Sequence[float],
                 capacity: Mapping[Hashable, float] | None = None, *,
                 no_queue: Collection[Hashable] = (), tol: float = 1e-10) -> list[float]:
    """Rates of flows that each keep at most ``window`` in flight (a fixed window: Go-Back-N's
    unacknowledged-PSN limit, no congestion control), their data on the links ``data[i]`` and their
    acknowledgements on ``acks[i]``, every queue FIFO.

    A link carrying more than its capacity holds a standing queue; its delay ``q`` is the same
    for every packet through it, data or acknowledgement.  Flow i runs at
    ``min(c_i, window / (base_rtt[i] + sum of q over data[i] and acks[i]))`` where ``c_i`` is the
    least capacity on ``data[i]``, and each link's queue is the least that keeps the data through
    it within its capacity (zero when it is not full).  Acknowledgements take no capacity.  Links
    in ``no_queue`` cap the rate of the data through them but hold no queue (a host's NIC sends
    only what its link takes: a host sending at line rate does not delay the acknowledgements it
    sends).  ``window`` and ``base_rtt`` in time at capacity 1 (``window`` = bytes in flight over
    the line rate).  This is the equilibrium of the fluid model of window flow control (Low,
    Peterson, Wang, *Understanding Vegas*, J. ACM 2002): a queue delay per link, found here link by
    link (Gauss-Seidel), each by bisection.
    """
    cap = capacity or {}
    n = len(data)
    if len(acks) != n or len(base_rtt) != n:
        raise ValueError(f"data, acks and base_rtt need one entry per flow: {n}, {len(acks)}, "
                         f"{len(base_rtt)}")
    if window <= 0 or any(d <= 0 for d in base_rtt):
        raise ValueError("window and every base_rtt must be > 0")
    top = [min(float(cap.get(lk, 1.0)) for lk in p) for p in data]
    queued = [lk for lk in dict.fromkeys(lk for p in data for lk in p) if lk not in set(no_queue)]
    through = {lk: [i for i in range(n) if lk in data[i]] for lk in queued}
    seen = [set(data[i]) | set(acks[i]) for i in range(n)]
    q = {lk: 0.0 for lk in queued}

    def rate(i: int) -> float:
        return min(top[i], window / (base_rtt[i] + sum(q[lk] for lk in seen[i] if lk in q)))

    for _ in range(10_000):
        moved = 0.0
        for lk in queued:
            c = float(cap.get(lk, 1.0))
            old = q[lk]
            q[lk] = 0.0
            if sum(rate(i) for i in through[lk]) > c:
                lo, hi = 0.0, window * len(through[lk]) / c
                while hi - lo > tol:
                    q[lk] = (lo + hi) / 2
                    if sum(rate(i) for i in through[lk]) > c:
                        lo = q[lk]
                    else:
                        hi = q[lk]
                q[lk] = hi
            moved = max(moved, abs(q[lk] - old))
        if moved <= tol * 10:
            break
    return [rate(i) for i in range(n)]


def window_fcts(data: Sequence[Path], acks: Sequence[Path], sizes: Sequence[float], window: float,
                base_rtt: Sequence[float], capacity: Mapping[Hashable, float] | None = None, *,
                no_queue: Collection[Hashable] = ()) -> list[float]:
    """Completion times of window-limited flows (:func:`window_rates`) that all start at 0, the
    rates recomputed each time a flow finishes."""
    return _fcts(lambda act: window_rates([data[i] for i in act], [acks[i] for i in act], window,
                                          [base_rtt[i] for i in act], capacity, no_queue=no_queue),
                 len(data), sizes)
