"""A capture is readable while the simulation runs: every run / wait_for return leaves the file
holding every frame so far (a notebook can open it before close_capture)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from support.verbs_pair import VerbsPair

from rdmasim.capture import read_records
from rdmasim.verbs import CQ, MR, QP, SGE, QPCap, SendWR
from rdmasim.verbs import enums as e

TSHARK = shutil.which("tshark")


def _pair(path: Path) -> tuple[object, QP, CQ, MR, MR]:
    p = VerbsPair(mtu=1024, seed=1, pcap=path, cqe=8, cap=(QPCap(max_send_wr=8), QPCap(max_recv_wr=8)))
    src = p.mr_a(64 * 1024, e.IBV_ACCESS_LOCAL_WRITE)
    dst = p.mr_b(64 * 1024, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    return p.t, p.qa, p.cq_a, src, dst


def _write(qp: QP, src: MR, dst: MR, n: int, wr_id: int) -> None:
    wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, n, src.lkey)])
    wr.set_wr_rdma(dst.rkey, dst.buf)
    qp.post_send(wr)


def _frames_on_links(topo: object) -> int:
    return topo.link.ab.stats()["frames"] + topo.link.ba.stats()["frames"]  # type: ignore[attr-defined]


def _scapy_count(path: Path) -> int:
    from scapy.utils import rdpcap

    return len(rdpcap(str(path)))


def test_capture_is_complete_after_each_wait_for_and_run(tmp_path: Path) -> None:
    pcap = tmp_path / "live.pcap"
    topo, qp, cq, src, dst = _pair(pcap)
    sim = topo.sim  # type: ignore[attr-defined]
    _write(qp, src, dst, 16 * 1024, 1)
    assert sim.wait_for(cq, 1)[0].ok
    first = _frames_on_links(topo)
    assert first >= 17  # 16 data packets and an ACK
    # read by an independent reader while the capture is still open
    assert _scapy_count(pcap) == len(read_records(pcap)[1]) == first
    _write(qp, src, dst, 32 * 1024, 2)
    sim.run_until_idle()
    second = _frames_on_links(topo)
    assert second > first and _scapy_count(pcap) == second
    # a short run(until=...) in the middle of a transfer: the frames so far
    _write(qp, src, dst, 64 * 1024, 3)
    sim.run(sim.now + 2_000_000)  # 2 µs
    mid = _frames_on_links(topo)
    assert second < mid and _scapy_count(pcap) == mid
    sim.run_until_idle()
    sim.close_capture()
    assert _scapy_count(pcap) == _frames_on_links(topo)


@pytest.mark.tshark
@pytest.mark.skipif(TSHARK is None, reason="needs tshark")
def test_tshark_reads_the_capture_before_close(tmp_path: Path) -> None:
    pcap = tmp_path / "live.pcap"
    topo, qp, cq, src, dst = _pair(pcap)
    _write(qp, src, dst, 8 * 1024, 1)
    assert topo.sim.wait_for(cq, 1)[0].ok  # type: ignore[attr-defined]
    out = subprocess.run(
        [TSHARK, "-r", str(pcap), "-d", "udp.port==4791,infiniband", "-T", "fields",
         "-e", "infiniband.bth.psn"], capture_output=True, text=True, check=True).stdout.split()
    assert len(out) == _frames_on_links(topo) and len(out) >= 9  # 8 WRITE packets + the ACK
    topo.sim.close_capture()  # type: ignore[attr-defined]
