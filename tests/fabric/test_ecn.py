"""ECN: RED marking on the instantaneous egress queue, on enqueue or on dequeue, compared with the
configured curve p(q) = 0 (q <= Kmin), Pmax (q - Kmin) / (Kmax - Kmin) (Kmin < q <= Kmax), 1 above.

The queue is held by pausing the switch egress (a PFC frame acted on at that port) while 16 QPs
fill it (each QP stops after its 128-packet window), then released: the k-th packet in the FIFO saw
exactly the bytes of the packets before it at enqueue (after it, at dequeue). The capture of the
released frames gives each packet's CE bit and size, hence its queue depth and its RED probability.
"""

from __future__ import annotations

import ipaddress
import math

import pytest
from fabric_util import flow

import rdmasim
from rdmasim import codec
from rdmasim.capture import read_pcap
from rdmasim.fabric import inject_pfc

KMIN, KMAX, PMAX = 200_000, 1_600_000, 0.6
N_QPS = 16


def red(q: int) -> float:
    if q <= KMIN:
        return 0.0
    if q <= KMAX:
        return PMAX * (q - KMIN) / (KMAX - KMIN)
    return 1.0


@pytest.mark.parametrize("mode", ["enqueue", "dequeue"])
def test_marking_matches_red_curve(tmp_path, mode):
    cfg = {"buffer": "32MB", "lossless": (), "lossy_limit": "16MB", "ecn_mark": mode,
           "ecn": {"kmin": KMIN, "kmax": KMAX, "pmax": PMAX, "priorities": (3,)}}
    topo = rdmasim.star(2, seed=11, switch_config=cfg)
    sim, sw = topo.sim, topo.switch
    src, dst = topo.hosts
    egress = sw.port_to(dst)
    flows = [flow(src, dst, 128 * 1024, seed=i, mtu=1024) for i in range(N_QPS)]
    sim.capture(tmp_path / "ecn.pcap")
    sim.run("1us")
    inject_pfc(sw, {3: 0xFFFF}, port=egress)  # hold the queue
    for f in flows:
        f.post()
    sim.run("250us")  # 2 MB at 100 Gb/s: 168 us; the pause (65535 quanta) lasts 335 us
    held, _ = sw.queue_bytes(egress)
    t_release = sim.now
    inject_pfc(sw, {3: 0}, port=egress)
    for f in flows:
        assert sim.wait_for(f.cq, 1)[0].status == 0
    sim.close_capture()
    assert all(f.delivered() for f in flows)

    src_ip = int(ipaddress.IPv4Address(src.ip))
    released = [fr.fields for fr in read_pcap(tmp_path / "ecn.pcap")
                if fr.t_ns * 1000 >= t_release and fr.fields["kind"] == 0 and fr.fields["src_ip"] == src_ip]
    sizes = [codec.frame_len(f) for f in released]
    assert len(released) == N_QPS * 128 and sum(sizes) == held
    marks = sw.port_stats(egress)["ecn_marked"]
    assert sw.port_stats(egress)["queue_ecn_marked"][3] == marks
    ce = [f["tos"] & 3 == 3 for f in released]
    assert sum(ce) == marks > 0

    # queue depth each packet saw
    depth, before = [], 0
    for s in sizes:
        depth.append(before if mode == "enqueue" else held - before - s)
        before += s
    p = [red(q) for q in depth]
    assert not any(c for c, pk in zip(ce, p, strict=True) if pk == 0.0), "marked at or below Kmin"
    assert all(c for c, pk in zip(ce, p, strict=True) if pk == 1.0), "unmarked above Kmax"
    # linear part, overall and in 4 bins: within 4 standard deviations of the binomial expectation
    lin = [(c, pk) for c, pk in zip(ce, p, strict=True) if 0.0 < pk < 1.0]
    assert len(lin) > 1000
    lin.sort(key=lambda x: x[1])
    for part in [lin] + [lin[i::4] for i in range(4)]:
        got = sum(c for c, _ in part)
        exp = sum(pk for _, pk in part)
        sd = math.sqrt(sum(pk * (1 - pk) for _, pk in part))
        assert abs(got - exp) <= 4 * sd, (mode, got, exp, sd)
    print(f"\nECN {mode}: {len(lin)} packets in (Kmin, Kmax], {sum(c for c, _ in lin)} marked, "
          f"expected {sum(pk for _, pk in lin):.1f}")
