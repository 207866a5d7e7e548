"""Gilbert-Elliott bursty loss: long-run rate and burst length match the chain's formulas."""

from __future__ import annotations

import numpy as np
import pytest
from support.verbs_pair import VerbsPair, write_wr

import rdmasim
from rdmasim.trace import DROP, TX
from rdmasim.verbs import QPCap
from rdmasim.verbs import enums as e


def test_loss_rate_and_burst_length() -> None:
    p_gb, p_bg = 0.002, 0.25  # bursts of 4 frames on average, 0.8 % of frames lost
    topo = rdmasim.back_to_back(mtu=1024, seed=5)
    topo.link.ab.set_gilbert_elliott(p_gb, p_bg)
    trace = topo.sim.trace()
    p = VerbsPair(topology=topo, cqe=4, cap=QPCap(), timeout=8)
    size = 64 << 20
    src = p.mr_a(size, e.IBV_ACCESS_LOCAL_WRITE)
    dst = p.mr_b(size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    p.qa.post_send(write_wr(1, src, dst, size))
    assert topo.sim.wait_for(p.cq_a, 1, timeout="10s")[0].ok
    rec = trace.to_numpy()
    ab = rec[(rec["link"] == topo.link.ab.link_id) & np.isin(rec["kind"], (TX, DROP))]
    # per transmitted frame: was it dropped? (a DROP record follows its TX record)
    tx_idx = np.flatnonzero(ab["kind"] == TX)
    dropped = np.zeros(len(tx_idx), dtype=bool)
    drop_pos = np.flatnonzero(ab["kind"] == DROP)
    dropped[np.searchsorted(tx_idx, drop_pos) - 1] = True
    rate = dropped.mean()
    assert rate == pytest.approx(p_gb / (p_gb + p_bg), rel=0.15)
    # burst lengths: runs of consecutive drops
    edges = np.diff(np.concatenate(([0], dropped.astype(int), [0])))
    runs = np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)
    assert runs.mean() == pytest.approx(1 / p_bg, rel=0.15)
    assert (dst.array == src.array).all()


def test_bad_probabilities_rejected() -> None:
    topo = rdmasim.back_to_back()
    with pytest.raises(ValueError, match="p_bad_to_good"):
        topo.link.ab.set_gilbert_elliott(0.1, 1.5)
