"""Flows the NIC profile's PSN window holds below line rate: a cap no error would show.

A Go-Back-N requester may run ``max_unacked_psns`` PSNs ahead of its oldest unacknowledged one and
asks for an ACK on every ``ack_req_interval``-th packet, so to keep a path busy it needs about
``round trip / frame time + ack_req_interval - 1`` PSNs in flight. The round trip is that of one
full packet and its ACK on the idle path (rdmasim.scenario.ideal, definition ``wire``); the frame
time is one full data frame at the slower NIC's line rate. A message no longer than the window is
never held back. The default ``rxe`` profile (128) holds a 100 Gb/s k = 4 fat tree at MTU 1024 to
about half its rate (a 4 MiB WRITE: slowdown 2.12; with 208, 1.00).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rdmasim.scenario.model import Problem, Scenario
from rdmasim.sim import Simulator

#: most distinct host pairs looked at (each costs a few microseconds; an all-to-all of 4,096 hosts
#: has 16 M): beyond it a random sample, drawn from the seed, stands for them
MAX_PAIRS = 200_000


def window_caps(sc: Scenario, sim: Simulator, table: Any, names: list[str]) -> list[Problem]:
    """The warning (at most one) that the NIC profile's window keeps some WRITE or SEND flows of
    ``table`` below line rate on the fabric ``sim``, naming the profile key that lifts it
    (``nic.overrides.max_unacked_psns``) and the value needed; [] when none is held back."""
    from rdmasim.scenario.ideal import ideal_fct_ps, wire_bytes
    from rdmasim.scenario.traffic import sim_host_indices
    from rdmasim.transport import nic
    from rdmasim.units import format_rate, format_time
    from rdmasim.workload.traffic.table import VERB_CODES

    v = sc.values
    profile = nic.get_profile(v["nic.profile"], **v["nic.overrides"])
    recovery = v["qp.recovery"]
    if recovery == "nic":  # the profile's own: out-of-order placement or Go-Back-N
        recovery = "ooo" if profile.ooo_placement else "gbn"
    if recovery != "gbn":  # IRN's and out-of-order placement's window is qp.irn_window
        return []
    mtu, window = v["qp.mtu"], profile.max_unacked_psns
    flows = table.flows
    code = {VERB_CODES["WRITE"], VERB_CODES["SEND"]}
    long = np.isin(flows["verb"], list(code)) & (flows["size"] > (window + 1) * mtu)
    if not long.any():
        return []
    to_sim = sim_host_indices(names, sim.hosts)
    pairs = np.unique(np.stack([to_sim[flows["src"][long]], to_sim[flows["dst"][long]]], axis=1), axis=0)
    if len(pairs) > MAX_PAIRS:
        pick = np.random.default_rng(v["simulation.seed"]).choice(len(pairs), MAX_PAIRS, replace=False)
        pairs = pairs[np.sort(pick)]
    layer = int(v["link.layer"] == "ib")
    rtt = ideal_fct_ps(sim, pairs[:, 0], pairs[:, 1], np.full(len(pairs), mtu), mtu=mtu, link_layer=layer)
    hosts = sorted(sim.hosts.values(), key=lambda h: h.index)
    rate = np.array([h.link.rate_bps if h.link else 1 for h in hosts], dtype=np.float64)
    line = np.minimum(rate[pairs[:, 0]], rate[pairs[:, 1]])
    two_three = wire_bytes("WRITE", np.array([2 * mtu, 3 * mtu]), mtu, layer)[0]
    frame_bytes = int(two_three[1] - two_three[0])  # a middle packet's frame
    needed = np.ceil(rtt / (frame_bytes * 8e12 / line)).astype(np.int64) + profile.ack_req_interval - 1
    held = needed > window
    if not held.any():
        return []
    worst = int(np.argmax(needed))
    name = {h.index: h.name for h in hosts}
    src, dst = name[int(pairs[worst, 0])], name[int(pairs[worst, 1])]
    bdp = math.ceil(line[worst] * rtt[worst] / 8e12)
    sent = f"{window + 1} packets ({(window + 1) * mtu:,} bytes at MTU {mtu})"
    how_many = f"{int(held.sum()):,} of {len(pairs):,} host pairs" if len(pairs) > 1 else "its host pair"
    return [Problem(
        sc.file, "nic.overrides.max_unacked_psns",
        f"the {profile.name!r} NIC profile lets a QP have {sent} in flight, less than the "
        f"bandwidth-delay product of the paths of its long WRITE/SEND flows ({how_many}; the longest, "
        f"{src} -> {dst}: {format_rate(line[worst])} x {format_time(int(rtt[worst]))} = {bdp:,} bytes, "
        f"with an ACK asked every {profile.ack_req_interval} packets): they run below line rate; "
        f"[nic.overrides] max_unacked_psns = {int(needed[worst])} lifts the cap", window)]


__all__ = ["window_caps"]
