"""Protection domains across Contexts and the byte order of immediate data on the wire."""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import numpy as np
import pytest
from support.verbs_pair import VerbsPair

import rdmasim
from rdmasim.capture import read_pcap
from rdmasim.verbs import MR, PD, SGE, Context, QPCap, RecvWR, SendWR
from rdmasim.verbs import enums as e

RW = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE


def pair(tmp_path: Path | None = None):
    p = VerbsPair(mtu=1024, seed=3, pcap=None if tmp_path is None else tmp_path / "cap.pcap", cqe=16,
                  cap=QPCap(max_send_wr=4, max_recv_wr=4))
    return p.t, p.pd_a, p.pd_b, p.cq_a, p.cq_b, p.qa, p.qb


def test_lkey_of_a_pd_of_a_second_context_is_loc_prot_err() -> None:
    t, pd_a, pd_b, cq_a, cq_b, qa, qb = pair()
    other_pd = PD(Context(t.a))  # first PD of a second Context on the same host
    assert other_pd.handle != pd_a.handle
    foreign = MR(other_pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    foreign.write(b"\x42" * 64)
    dst = MR(pd_b, 64, RW)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(foreign.buf, 64, foreign.lkey)])
    wr.set_wr_rdma(dst.rkey, dst.buf)
    qa.post_send(wr)
    t.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in cq_a.poll(4)[1]] == [(1, e.IBV_WC_LOC_PROT_ERR)]
    assert dst.read(64) == bytes(64)


def test_rkey_of_a_pd_of_a_second_context_is_rem_access_err() -> None:
    t, pd_a, pd_b, cq_a, cq_b, qa, qb = pair()
    src = MR(pd_a, 64, e.IBV_ACCESS_LOCAL_WRITE)
    src.write(b"\x42" * 64)
    foreign = MR(PD(Context(t.b)), 64, RW)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, 64, src.lkey)])
    wr.set_wr_rdma(foreign.rkey, foreign.buf)
    qa.post_send(wr)
    t.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in cq_a.poll(4)[1]] == [(1, e.IBV_WC_REM_ACCESS_ERR)]
    assert foreign.read(64) == bytes(64)


def test_qp_of_a_second_context_is_its_own_pd() -> None:
    """A QP and an MR each from the first PD of two Contexts on one host do not share a PD."""
    t = rdmasim.back_to_back()
    c1, c2 = Context(t.a), Context(t.a)
    p1, p2 = PD(c1), PD(c2)
    assert p1.handle != p2.handle


IMM = 1234


def imm_exchange(tmp_path: Path, opcode: int) -> tuple[list, list]:
    t, pd_a, pd_b, cq_a, cq_b, qa, qb = pair(tmp_path)
    src = MR(pd_a, 64, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pd_b, 64, RW)
    qb.post_recv(RecvWR(wr_id=9, sg=[SGE(dst.buf, 64, dst.lkey)]))
    wr = SendWR(wr_id=1, opcode=opcode, imm_data=socket.htonl(IMM), sg=[SGE(src.buf, 16, src.lkey)])
    wr.set_wr_rdma(dst.rkey, dst.buf)
    qa.post_send(wr)
    t.sim.run_until_idle()
    t.sim.close_capture()
    return cq_b.poll(4)[1], list(read_pcap(tmp_path / "cap.pcap"))


@pytest.mark.parametrize("opcode", [e.IBV_WR_SEND_WITH_IMM, e.IBV_WR_RDMA_WRITE_WITH_IMM])
def test_imm_data_goes_on_the_wire_as_the_application_laid_it_out(tmp_path: Path, opcode: int) -> None:
    wcs, frames = imm_exchange(tmp_path, opcode)
    # the receiver gets back exactly the __be32 value that was posted
    assert [(w.wr_id, w.status, w.imm_data, bool(w.wc_flags & e.IBV_WC_WITH_IMM)) for w in wcs] == [
        (9, e.IBV_WC_SUCCESS, socket.htonl(IMM), True)]
    with_imm = [f.fields for f in frames if f.fields["opcode"] in (0x05, 0x0B)]
    assert len(with_imm) == 1
    assert with_imm[0]["imm"] == IMM  # ImmDt read big-endian off the wire: 0x000004d2
    raw = (tmp_path / "cap.pcap").read_bytes()
    assert (IMM).to_bytes(4, "big") in raw
    if shutil.which("tshark"):  # a decoder we did not write
        out = subprocess.run(["tshark", "-r", str(tmp_path / "cap.pcap"), "-d", "udp.port==4791,infiniband",
                              "-T", "fields", "-E", "occurrence=f", "-e", "infiniband.immdt", "-Y",
                              "infiniband.immdt"],
                             capture_output=True, text=True, check=True)
        assert out.stdout.split() == ["000004d2"]


def test_imm_data_round_trips_every_byte_pattern(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    for value in [0, 1, 0xFFFFFFFF, 0x80000000, *map(int, rng.integers(0, 2**32, 4))]:
        t, pd_a, pd_b, cq_a, cq_b, qa, qb = pair()
        src = MR(pd_a, 8, e.IBV_ACCESS_LOCAL_WRITE)
        dst = MR(pd_b, 8, RW)
        qb.post_recv(RecvWR(wr_id=2, sg=[SGE(dst.buf, 8, dst.lkey)]))
        qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND_WITH_IMM, imm_data=value,
                            sg=[SGE(src.buf, 8, src.lkey)]))
        t.sim.run_until_idle()
        assert [w.imm_data for w in cq_b.poll(2)[1]] == [value]
