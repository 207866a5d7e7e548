"""SES return codes a target produces, and the work-completion status each ends a flow with (as
rdma-core reports the matching remote error): an address beyond the buffer or an access the buffer
does not grant is a remote access error, a SEND longer than its receive buffer a remote invalid
request; a READ is checked at the data holder, which answers an error on the request's ACK and
sends no data (csrc/uet/ses.c, csrc/uet/ses_read.c)."""

from __future__ import annotations

import struct

import pytest

from rdmasim import codec, topology
from rdmasim.capture import read_records
from rdmasim.flows import describe_status

PDS = 14 + 20 + 8
ACK_CC, RUD_REQ = 8, 2
NH_RSP, NH_RSP_DATA = 4, 5
RC_OK, RC_OP_VIOLATION, RC_BAD_ADDR, RC_TOO_LONG = 0x01, 0x18, 0x1D, 0x22


def _run(tmp_path, verb: str, size: int, **uet):
    t = topology.back_to_back(rate="100Gbps", delay="1us", mtu=4096)
    path = tmp_path / "rc.pcap"
    t.sim.capture(str(path))
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [size], "verb": [verb]}, transport="uet", uet=uet)
    t.sim.run_flows()
    t.sim.run()
    t.sim.close_capture()
    frames = [(r.data, codec.decode(r.data)) for r in read_records(path)[1]]
    return fs.results(), frames


def _response_rcs(frames) -> set[int]:
    """The return codes of the SES responses on ACKs."""
    out = set()
    for raw, f in frames:
        if f["uet"]["type"] == ACK_CC and f["uet"]["next_hdr"] == NH_RSP:
            out.add(struct.unpack_from("!B", raw, PDS + 32 + 1)[0] & 0x3F)
    return out


def test_send_longer_than_the_receive_buffer_is_too_long(tmp_path) -> None:
    r, frames = _run(tmp_path, "SEND", 50_000, target_buffer=10_000)
    assert _response_rcs(frames) == {RC_TOO_LONG}
    assert describe_status(int(r["status"][0])) == "IBV_WC_REM_INV_REQ_ERR"
    assert int(r["bytes_delivered"][0]) == 0


def test_write_beyond_the_buffer_stays_bad_addr(tmp_path) -> None:
    r, frames = _run(tmp_path, "WRITE", 50_000, target_buffer=10_000)
    assert _response_rcs(frames) == {RC_BAD_ADDR}
    assert describe_status(int(r["status"][0])) == "IBV_WC_REM_ACCESS_ERR"


def test_write_to_a_read_only_buffer_is_an_op_violation(tmp_path) -> None:
    r, frames = _run(tmp_path, "WRITE", 50_000, target_access="read")
    assert _response_rcs(frames) == {RC_OP_VIOLATION}
    assert describe_status(int(r["status"][0])) == "IBV_WC_REM_ACCESS_ERR"
    assert int(r["bytes_delivered"][0]) == 0
    r, frames = _run(tmp_path, "WRITE", 50_000, target_access="write")
    assert _response_rcs(frames) == {RC_OK} and describe_status(int(r["status"][0])) == "ok"


@pytest.mark.parametrize("opts,rc", [({"target_buffer": 10_000}, RC_BAD_ADDR),
                                     ({"target_access": "write"}, RC_OP_VIOLATION)])
def test_read_is_checked_at_the_data_holder(tmp_path, opts, rc) -> None:
    r, frames = _run(tmp_path, "READ", 50_000, **opts)
    # the data holder (host 0) answers the READ request's ACK with the error and sends no data
    assert _response_rcs(frames) == {rc}
    assert not [f for _, f in frames if f["uet"]["type"] == RUD_REQ and f["uet"]["next_hdr"] == NH_RSP_DATA]
    assert describe_status(int(r["status"][0])) == "IBV_WC_REM_ACCESS_ERR"
    assert int(r["bytes_delivered"][0]) == 0


def test_read_of_a_read_only_buffer_is_fine(tmp_path) -> None:
    r, _ = _run(tmp_path, "READ", 50_000, target_access="read")
    assert describe_status(int(r["status"][0])) == "ok" and int(r["bytes_delivered"][0]) == 50_000


def test_target_access_is_checked() -> None:
    t = topology.back_to_back()
    with pytest.raises(ValueError, match="target_access"):
        t.sim.add_flows({"src": [0], "dst": [1], "size": [1000]}, transport="uet", uet={"target_access": "x"})
