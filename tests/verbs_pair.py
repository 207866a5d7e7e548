"""A connected RC QP pair a -> b on a captured back-to-back link, with a patterned source region:
the setup the wire-level conformance tests (Go-Back-N, IRN) share. Importable from any test
(tests/ is on sys.path through tests/conftest.py)."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import numpy as np

import rdmasim
from rdmasim.verbs import CQ, MR, PD, QP, Context, QPCap, QPInitAttr, connect_qps
from rdmasim.verbs import enums as e


class CapturedPair:
    """QP ``qa`` on host a sends from ``src`` to ``dst`` through ``qb`` on host b; every frame goes
    to ``pcap``. ``connect`` is passed to connect_qps (timeout, retry_cnt, recovery, IRN knobs)."""

    def __init__(self, tmp_path: Path, *, mtu: int = 1024, psn: int = 0, size: int = 1 << 20,
                 n_wr: int = 64, rate: str = "100Gbps", delay: str = "1us", seed: int = 7,
                 **connect: Any) -> None:
        self.t = rdmasim.back_to_back(rate=rate, delay=delay, mtu=mtu, seed=seed)
        self.sim = self.t.sim
        self.pcap = tmp_path / "cap.pcap"
        self.sim.capture(str(self.pcap))
        ctx_a, ctx_b = Context(self.t.a), Context(self.t.b)
        pd_a, pd_b = PD(ctx_a), PD(ctx_b)
        self.cq_a, self.cq_b = CQ(ctx_a, 4 * n_wr), CQ(ctx_b, 4 * n_wr)
        rng = np.random.default_rng(seed)
        self.src = MR(pd_a, size, e.IBV_ACCESS_LOCAL_WRITE)
        self.src.array[:] = rng.integers(0, 256, size, dtype=np.uint8)
        self.dst = MR(pd_b, size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
        cap = QPCap(max_send_wr=n_wr, max_recv_wr=n_wr)
        self.qa = QP(pd_a, QPInitAttr(scq=self.cq_a, rcq=self.cq_a, cap=cap))
        self.qb = QP(pd_b, QPInitAttr(scq=self.cq_b, rcq=self.cq_b, cap=cap))
        connect_qps(self.qa, self.qb, psn_a=psn, **connect)
        self.psn = psn
        self.a_ip = int(ipaddress.IPv4Address(self.t.a.ip))
        self.b_ip = int(ipaddress.IPv4Address(self.t.b.ip))
        self.n_posted = 0
        self.delay_ns = self.t.link.delay_ps / 1000
