"""The semantic sublayer of UET flows (csrc/uet/ses.c): the target answers a message with the SES
response header on its ACKs (return code, message id, modified length), the initiator completes
on it, a semantic error comes back as a return code and ends the flow with an error status, and
a flow may wait on another's receipt at its target."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import numpy as np

from rdmasim import codec, topology
from rdmasim.capture import read_records
from rdmasim.flows import describe_status

PDS = 14 + 20 + 8


def _pair():
    return topology.back_to_back(rate="100Gbps", delay="1us", mtu=4096)


def _acks(path) -> list[bytes]:
    frames = [r.data for r in read_records(path)[1]]
    return [f for f in frames if codec.decode(f)["uet"]["type"] == 8]


def _rsp(frame: bytes) -> tuple[int, int, int, int, int]:
    """(opcode, return code, message id, job id, modified length) of an ACK_CC's SES response."""
    assert (struct.unpack_from("!H", frame, PDS)[0] >> 7) & 0xF == 4  # next header: SES response
    op, rc, msg_id = struct.unpack_from("!BBH", frame, PDS + 32)
    job = int.from_bytes(frame[PDS + 32 + 5:PDS + 32 + 8], "big")
    (mod_len,) = struct.unpack_from("!I", frame, PDS + 32 + 8)
    return op & 0x3F, rc & 0x3F, msg_id, job, mod_len


def test_last_ack_carries_the_ses_response_and_completes_the_message(tmp_path) -> None:
    t = _pair()
    pcap = tmp_path / "ses.pcap"
    t.sim.capture(str(pcap))
    size = 100 * 4096 + 5
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [size]}, transport="uet")
    t.sim.run_flows()
    t.sim.close_capture()
    r = fs.results()
    assert describe_status(int(r["status"][0])) == "ok" and int(r["bytes_delivered"][0]) == size
    acks = _acks(pcap)
    with_rsp = [a for a in acks if (struct.unpack_from("!H", a, PDS)[0] >> 7) & 0xF == 4]
    # only the ACK sent once every byte arrived carries it (no duplicate was needed here)
    assert len(with_rsp) == 1 and with_rsp[0] == acks[-1]
    assert all((struct.unpack_from("!H", a, PDS)[0] >> 7) & 0xF == 0 for a in acks[:-1])
    msg_id = codec.decode(read_records(pcap)[1][0].data)["uet"]["msg_id"]
    assert _rsp(with_rsp[0]) == (1, 1, msg_id, 0, size)  # UET_RESPONSE, RC_OK, modified length


def test_write_beyond_the_target_buffer_ends_in_a_remote_access_error(tmp_path) -> None:
    t = _pair()
    pcap = tmp_path / "err.pcap"
    t.sim.capture(str(pcap))
    fs = t.sim.add_flows({"src": [0, 0], "dst": [1, 1], "size": [64 * 4096, 8 * 4096]}, transport="uet",
                         uet={"target_buffer": 16 * 4096})
    t.sim.run_flows()
    t.sim.close_capture()
    r = fs.results()
    # the large WRITE overruns its 64 KiB buffer: the flow ends (not hangs) with the remote error
    # a verbs provider reports; the small one fits
    assert [describe_status(int(s)) for s in r["status"]] == ["IBV_WC_REM_ACCESS_ERR", "ok"]
    assert int(r["bytes_delivered"][0]) == 0 and int(r["bytes_delivered"][1]) == 8 * 4096
    rcs = sorted({_rsp(a)[1] for a in _acks(pcap) if (struct.unpack_from("!H", a, PDS)[0] >> 7) & 0xF == 4})
    assert rcs == [0x01, 0x1D]  # OK and BAD_ADDR


def _table(dep_on: int) -> SimpleNamespace:
    flows = {"src": np.array([0, 0]), "dst": np.array([1, 1]), "size": np.array([256 * 4096, 4096])}
    return SimpleNamespace(flows=flows, dep_ptr=np.array([0, 0, 1]), deps=np.array([0]),
                           dep_on=np.array([dep_on], np.uint8), need=None)


def test_a_flow_waits_for_a_uet_flows_receipt_at_its_target() -> None:
    done, got = _pair(), _pair()
    after_done = done.sim.add_flows(_table(0), transport="uet")
    done.sim.run_flows()
    after_recv = got.sim.add_flows(_table(1), transport="uet")
    got.sim.run_flows()
    rd, rr = after_done.results(), after_recv.results()
    assert [describe_status(int(x)) for x in [*rd["status"], *rr["status"]]] == ["ok"] * 4
    assert int(rd["started_ps"][1]) == int(rd["finish_ps"][0])
    # on receipt: once the target has every byte, before the response reaches the initiator
    # (half a round trip earlier: a 1 us link and the ACK's serialisation)
    assert int(rr["finish_ps"][0]) == int(rd["finish_ps"][0])
    gap = int(rd["finish_ps"][0]) - int(rr["started_ps"][1])
    assert 1_000_000 <= gap < 1_100_000


def test_after_chain_sends_a_connections_messages_one_after_the_other() -> None:
    t = _pair()
    size = 64 * 4096
    fs = t.sim.add_flows({"src": [0, 0, 0], "dst": [1, 1, 1], "size": [size] * 3, "after": [0, 1, 1]},
                         transport="uet")
    t.sim.run_flows()
    r = fs.results()
    assert [describe_status(int(x)) for x in r["status"]] == ["ok"] * 3
    assert (r["bytes_delivered"] == size).all()
    pkt = (4096 + 98 + 24) * 8 * 10**12 // 100_000_000_000  # one packet's time on the wire
    wire = 64 * pkt  # one message at line rate
    for i in (1, 2):
        # each starts once the one before it handed its last packet to the wire: after the time of
        # its other packets, before its completion (the last packet and the response still travel)
        start, prev_start, prev_end = (int(r[k][j]) for k, j in
                                       (("started_ps", i), ("started_ps", i - 1), ("finish_ps", i - 1)))
        assert prev_start + wire - pkt <= start < prev_end
    # back to back: the three take about three messages' wire time
    assert int(r["finish_ps"][2]) - int(r["started_ps"][0]) < 3 * wire + 5_000_000
