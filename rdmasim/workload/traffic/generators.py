"""Synthetic traffic patterns (incast, permutation, all-to-all, Poisson arrivals), vectorised numpy.

Every function returns a :class:`~rdmasim.traffic.table.FlowTable` whose ``src``/``dst`` are host indices.
``hosts`` is an int ``n`` (hosts ``0..n-1``) or the host indices to use. Sizes are bytes (or strings such as
``"64KiB"``), times ps (or strings such as ``"2us"``). Random generators take ``seed`` or ``rng`` and are
deterministic for a seed.
"""

from __future__ import annotations

import numpy as np

from rdmasim.checks import check_int
from rdmasim.workload.traffic._common import (
    Hosts,
    build,
    flow_size,
    host_array,
    last_time_ps,
    make_rng,
    rate_bps,
    time_ps,
)
from rdmasim.workload.traffic.cdfs import WEB_SEARCH, SizeCDF
from rdmasim.workload.traffic.table import FlowTable

PS_PER_S = 10**12

POISSON_MAX_FLOWS = 10_000_000
"""Default cap on the expected number of flows of one :func:`poisson` call (about 2 GB to generate)."""
_BYTES_PER_FLOW = 200


def incast(
    senders: Hosts,
    receiver: int,
    size: int | str,
    *,
    start: int | str = 0,
    stagger_ps: int | str = 0,
    verb: str | int = "WRITE",
    priority: int = 3,
    group: str | None = "incast",
) -> FlowTable:
    """Every sender sends ``size`` bytes to ``receiver``; sender ``k`` (in order) starts at
    ``start + k * stagger_ps``. ``senders`` must not include ``receiver``.
    """
    src = host_array(senders, "senders", minimum=1)
    if isinstance(receiver, bool) or not isinstance(receiver, (int, np.integer)) or receiver < 0:
        raise ValueError(f"receiver = {receiver!r} must be a non-negative host index")
    if (src == receiver).any():
        raise ValueError(f"receiver {receiver} is also one of the senders")
    t0, step = time_ps(start, "start"), time_ps(stagger_ps, "stagger_ps")
    last_time_ps("incast: start + stagger_ps", t0, step, src.size)  # so the int64 arithmetic cannot wrap
    starts = t0 + step * np.arange(src.size, dtype=np.int64)
    return build(src, int(receiver), flow_size(size), starts, verb, priority, group)


def permutation(
    hosts: Hosts,
    size: int | str,
    seed: int | None = None,
    *,
    rng: np.random.Generator | None = None,
    start: int | str = 0,
    verb: str | int = "WRITE",
    priority: int = 3,
    group: str | None = "permutation",
) -> FlowTable:
    """A uniformly random derangement: each host sends ``size`` bytes to exactly one other host and
    receives from exactly one. Flow ``k`` is sent by the ``k``-th host.
    """
    h = host_array(hosts)
    gen = make_rng(seed, rng)
    ident = np.arange(h.size)
    while True:  # rejection: a random permutation has no fixed point with probability ~1/e
        perm = gen.permutation(h.size)
        if not (perm == ident).any():
            break
    return build(h, h[perm], flow_size(size), time_ps(start, "start"), verb, priority, group)


def all_to_all(
    hosts: Hosts,
    size: int | str,
    *,
    start: int | str = 0,
    stagger_ps: int | str = 0,
    verb: str | int = "WRITE",
    priority: int = 3,
    group: str | None = "all-to-all",
) -> FlowTable:
    """Every ordered pair of distinct hosts exchanges ``size`` bytes: n(n-1) flows.

    Flows are ordered in n-1 rounds: in round ``k`` (1..n-1) the host at position ``i`` sends to the one
    at ``(i + k) % n``, starting at ``start + (k - 1) * stagger_ps`` (so each host sends to and receives from
    one peer per round when staggered).
    """
    h = host_array(hosts)
    n = h.size
    k = np.repeat(np.arange(1, n, dtype=np.int64), n)
    i = np.tile(np.arange(n, dtype=np.int64), n - 1)
    t0, step = time_ps(start, "start"), time_ps(stagger_ps, "stagger_ps")
    last_time_ps("all_to_all: start + stagger_ps per round", t0, step, n - 1)  # int64 below cannot wrap
    return build(h[i], h[(i + k) % n], flow_size(size), t0 + (k - 1) * step, verb, priority, group)


def poisson(
    hosts: Hosts,
    load: float,
    link_rate_bps: int | float | str,
    duration_ps: int | str,
    size_cdf: SizeCDF = WEB_SEARCH,
    seed: int | None = None,
    *,
    rng: np.random.Generator | None = None,
    start: int | str = 0,
    verb: str | int = "WRITE",
    priority: int = 3,
    group: str | None = "poisson",
    max_flows: int = POISSON_MAX_FLOWS,
) -> FlowTable:
    """Open-loop Poisson flow arrivals at every host for ``duration_ps``, sizes from ``size_cdf``.

    Each host starts flows at rate ``load * link_rate_bps / (8 * size_cdf.mean())`` per second, so the
    offered load on its link is ``load`` (0 < load <= 1) of the link rate; each flow goes to a host drawn
    uniformly from the others. Flows are sorted by start time (``start`` + arrival time).

    The expected number of flows (``load * link_rate_bps / (8 * mean size) * duration`` per host) is
    computed first and refused above ``max_flows`` (default :data:`POISSON_MAX_FLOWS`), since
    generating takes about 200 bytes per flow. ``start + duration_ps`` must not pass
    :data:`rdmasim.checks.MAX_TIME_PS`.

    Vectorised: per host a Poisson count, then that many uniform arrival times (the order statistics of
    uniforms are exactly a Poisson process's arrival times given the count).
    """
    h = host_array(hosts)
    if not 0.0 < float(load) <= 1.0:
        raise ValueError(f"load = {load!r} must be in (0, 1]")
    rate = rate_bps(link_rate_bps)
    duration = time_ps(duration_ps, "duration_ps")
    if duration <= 0:
        raise ValueError(f"duration_ps = {duration} must be positive")
    t0 = time_ps(start, "start")
    last_time_ps("poisson: start + duration_ps", t0, duration, 2)  # arrivals are < start + duration
    max_flows = check_int("poisson: max_flows", max_flows, 1, 2**40)
    n = h.size
    mean_size = max(size_cdf.mean(), 1.0)  # sample() never draws below 1 byte
    flows_per_ps = float(load) * rate / (8.0 * mean_size) / PS_PER_S
    expected = flows_per_ps * duration * n  # the mean number of flows: refuse before allocating any
    if expected > max_flows:
        raise ValueError(
            f"poisson: load = {load}, link_rate_bps = {rate}, duration_ps = {duration} over {n} hosts with "
            f"mean flow size {mean_size:.0f} B is about {expected:.3g} flows (rate x duration), over "
            f"max_flows = {max_flows} (about {_BYTES_PER_FLOW} bytes each while generating): shorten the "
            f"duration, lower the load, or raise max_flows")
    gen = make_rng(seed, rng)
    counts = gen.poisson(flows_per_ps * duration, size=n)
    src_pos = np.repeat(np.arange(n, dtype=np.int64), counts)
    arrival = np.floor(gen.random(src_pos.size) * duration).astype(np.int64)
    offset = gen.integers(0, n - 1, size=src_pos.size)
    dst_pos = offset + (offset >= src_pos)  # uniform over the n-1 other positions
    sizes = size_cdf.sample(gen, src_pos.size)
    order = np.argsort(arrival, kind="stable")
    return build(h[src_pos[order]], h[dst_pos[order]], sizes[order], t0 + arrival[order],
                 verb, priority, group)
