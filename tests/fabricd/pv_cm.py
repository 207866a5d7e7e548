"""rdma_cm between a program and its forked child on the fabric daemon (rdmasim.pyverbs.cmid).

``python pv_cm.py MODE`` under ``rdmasim exec``: the parent is the passive side on h0, the child
the active side on h1 (bound to h1's address). MODE ``async``: event channels, bind/listen,
resolve, connect/accept with private data, SEND both ways, RDMA WRITE and READ through the
identifiers' QPs, disconnect (both see DISCONNECTED). ``reject``: the passive side rejects with
private data. ``nobody``: a connect to a port nobody listens on is REJECTED. ``sync``: identifiers
from AddrInfo (rdma_create_ep), get_request, blocking connect/accept. Prints ``OK <side>``.
Run by tests/fabricd/test_pyverbs_cm.py."""

import json
import os
import sys
import traceback

import rdmasim.pyverbs as ns

ns.install()
import pyverbs.enums as e  # noqa: E402
from pyverbs.cmid import CMID, AddrInfo, CMEvent, CMEventChannel, ConnParam  # noqa: E402
from pyverbs.librdmacm_enums import RAI_PASSIVE  # noqa: E402
from pyverbs.librdmacm_enums import rdma_cm_event_type as ev  # noqa: E402
from pyverbs.mr import MR  # noqa: E402
from pyverbs.qp import QPCap, QPInitAttr  # noqa: E402

from rdmasim.pyverbs import _devices  # noqa: E402

HOSTS = list(_devices.simulation().hosts.values())
SRV, CLI = HOSTS[0].ip, HOSTS[1].ip
PORT = "7471"
SIZE = 256


def event(channel, want):
    got = CMEvent(channel)
    assert got.event_type == want, f"expected {want}, got {got.event_str()}"
    got.ack_cm_event()
    return got


def passive(mode, rd, wr):
    if mode == "sync":
        lid = CMID(creator=AddrInfo(src=SRV, src_service=PORT, flags=RAI_PASSIVE),
                   qp_init_attr=QPInitAttr(qp_type=e.IBV_QPT_RC, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
        lid.listen()
        os.write(wr, b"L")
        cid = lid.get_request()
        mr = cid.reg_msgs(SIZE)
        cid.post_recv(mr)
        cid.accept()
    else:
        ch = CMEventChannel()
        lid = CMID(creator=ch)
        lid.bind_addr(AddrInfo(src=SRV, src_service=PORT, flags=RAI_PASSIVE))
        lid.listen()
        os.write(wr, b"L")
        if mode == "nobody":
            assert os.read(rd, 1) == b"D"
            print("OK passive", flush=True)
            return
        req = event(ch, ev.RDMA_CM_EVENT_CONNECT_REQUEST)
        assert req.private_data[:5] == b"hello", req.private_data
        cid = CMID(creator=req, listen_id=lid)
        cid.create_qp(QPInitAttr(qp_type=e.IBV_QPT_RC, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
        if mode == "reject":
            cid.reject(b"go away")
            print("OK passive", flush=True)
            return
        mr = MR(cid.pd, SIZE, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ)
        cid.post_recv(mr)
        param = ConnParam()
        param.set_private_data(b"welcome")
        cid.accept(param)
        event(ch, ev.RDMA_CM_EVENT_ESTABLISHED)
        if mode == "killed":  # the peer is killed: its identifier goes with it, DISCONNECTED here
            event(ch, ev.RDMA_CM_EVENT_DISCONNECTED)
            assert cid.query_qp(e.IBV_QP_STATE)[0].qp_state == e.IBV_QPS_ERR
            wc = cid.get_recv_comp()  # the receive posted before is flushed
            assert wc.status == e.IBV_WC_WR_FLUSH_ERR, wc
            lid2 = CMID(creator=ch)  # the daemon serves on
            lid2.bind_addr(AddrInfo(src=SRV, src_service="7473", flags=RAI_PASSIVE))
            print("OK passive", flush=True)
            return
    wc = cid.get_recv_comp()
    assert wc.status == e.IBV_WC_SUCCESS and wc.byte_len == SIZE, wc
    assert mr.read(SIZE, 0) == b"c" * SIZE
    mr.write(b"s" * SIZE, SIZE)
    cid.post_send(mr)
    assert cid.get_send_comp().status == e.IBV_WC_SUCCESS
    if mode == "async":
        os.write(wr, json.dumps({"rkey": int(mr.rkey), "addr": mr.buf}).encode())
        assert os.read(rd, 1) == b"W"  # the peer WROTE and READ
        assert mr.read(SIZE, 0) == b"w" * SIZE
        cid.disconnect()
        event(ch, ev.RDMA_CM_EVENT_DISCONNECTED)
    else:
        assert os.read(rd, 1) == b"D"
        cid.disconnect()
    print("OK passive", flush=True)


def active(mode, rd, wr):
    assert os.read(rd, 1) == b"L"
    if mode == "sync":
        cid = CMID(creator=AddrInfo(src=CLI, dst=SRV, dst_service=PORT),
                   qp_init_attr=QPInitAttr(qp_type=e.IBV_QPT_RC, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
        mr = cid.reg_msgs(SIZE)
        cid.connect()
    else:
        ch = CMEventChannel()
        cid = CMID(creator=ch)
        port = "7472" if mode == "nobody" else PORT
        cid.resolve_addr(AddrInfo(src=CLI, dst=SRV, dst_service=port))
        event(ch, ev.RDMA_CM_EVENT_ADDR_RESOLVED)
        cid.resolve_route()
        event(ch, ev.RDMA_CM_EVENT_ROUTE_RESOLVED)
        cid.create_qp(QPInitAttr(qp_type=e.IBV_QPT_RC, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
        param = ConnParam()
        param.set_private_data(b"hello")
        cid.connect(param)
        if mode in ("reject", "nobody"):
            got = event(ch, ev.RDMA_CM_EVENT_REJECTED)
            if mode == "reject":
                assert got.private_data[:7] == b"go away", got.private_data
            os.write(wr, b"D")
            print("OK active", flush=True)
            return
        got = event(ch, ev.RDMA_CM_EVENT_ESTABLISHED)
        assert got.private_data[:7] == b"welcome", got.private_data
        if mode == "killed":
            print("OK active", flush=True)
            import signal

            os.kill(os.getpid(), signal.SIGKILL)
        mr = cid.reg_read(SIZE)
    mr.write(b"c" * SIZE, SIZE)
    cid.post_recv(mr) if mode == "sync" else None
    cid.post_send(mr)
    assert cid.get_send_comp().status == e.IBV_WC_SUCCESS
    if mode != "sync":
        cid.post_recv(mr)
    wc = cid.get_recv_comp()
    assert wc.status == e.IBV_WC_SUCCESS and mr.read(SIZE, 0) == b"s" * SIZE
    if mode == "async":
        peer = json.loads(os.read(rd, 4096))
        mr.write(b"w" * SIZE, SIZE)
        cid.post_write(mr, SIZE, peer["addr"], peer["rkey"], flags=e.IBV_SEND_SIGNALED)
        assert cid.get_send_comp().status == e.IBV_WC_SUCCESS
        mr.write(b"x" * SIZE, SIZE)
        cid.post_read(mr, SIZE, peer["addr"], peer["rkey"], flags=e.IBV_SEND_SIGNALED)
        assert cid.get_send_comp().status == e.IBV_WC_SUCCESS
        assert mr.read(SIZE, 0) == b"w" * SIZE
        os.write(wr, b"W")
        event(ch, ev.RDMA_CM_EVENT_DISCONNECTED)
        cid.disconnect()
        assert cid.query_qp(e.IBV_QP_STATE)[0].qp_state == e.IBV_QPS_ERR
    else:
        os.write(wr, b"D")
    print("OK active", flush=True)


def errors():
    """Refusals: an address no host has, a port in use, connect before resolving."""
    import errno

    from pyverbs.pyverbs_error import PyverbsRDMAError

    ch = CMEventChannel()
    cid = CMID(creator=ch)
    try:
        cid.bind_addr(AddrInfo(src="192.0.2.7", src_service=PORT, flags=RAI_PASSIVE))
        raise AssertionError("bound to an address no host has")
    except PyverbsRDMAError as exc:
        assert exc.error_code == errno.EADDRNOTAVAIL and "192.0.2.7" in str(exc), exc
    cid.bind_addr(AddrInfo(src=SRV, src_service=PORT, flags=RAI_PASSIVE))
    other = CMID(creator=ch)
    try:
        other.bind_addr(AddrInfo(src=SRV, src_service=PORT, flags=RAI_PASSIVE))
        raise AssertionError("bound a port in use")
    except PyverbsRDMAError as exc:
        assert exc.error_code == errno.EADDRINUSE, exc
    try:
        other.connect()
        raise AssertionError("connected without resolving")
    except PyverbsRDMAError as exc:
        assert exc.error_code == errno.EINVAL, exc
    other.resolve_addr(AddrInfo(dst="192.0.2.7", dst_service=PORT))
    event(ch, ev.RDMA_CM_EVENT_ADDR_ERROR)
    print("OK errors", flush=True)


def multicast(side, rd, wr):
    """Both sides join 239.1.2.3 on UD identifiers; the active side sends to the group, the passive
    side receives (the GRH first, as UD); after leaving, a send reaches nobody."""
    from pyverbs.addr import AH
    from pyverbs.cmid import UDParam

    ch = CMEventChannel()
    cid = CMID(creator=ch, port_space=0x0111)  # RDMA_PS_UDP
    me = SRV if side == "passive" else CLI
    cid.bind_addr(AddrInfo(src=me, port_space=0x0111))
    cid.resolve_addr(AddrInfo(src=me, dst="239.1.2.3", port_space=0x0111))
    event(ch, ev.RDMA_CM_EVENT_ADDR_RESOLVED)
    cid.create_qp(QPInitAttr(qp_type=e.IBV_QPT_UD, cap=QPCap(max_send_wr=2, max_recv_wr=2)))
    cid.join_multicast(AddrInfo(src="239.1.2.3"))
    ud = UDParam(event(ch, ev.RDMA_CM_EVENT_MULTICAST_JOIN))
    assert ud.qp_num == 0xFFFFFF, ud.qp_num
    mr = cid.reg_msgs(SIZE + 40)
    if side == "passive":
        cid.post_recv(mr)
        os.write(wr, b"J")
        wc = cid.get_recv_comp()
        assert wc.status == e.IBV_WC_SUCCESS and wc.byte_len == SIZE + 40, wc
        assert mr.read(SIZE, 40) == b"m" * SIZE
        cid.leave_multicast(AddrInfo(src="239.1.2.3"))
        cid.post_recv(mr)  # a receive waits, but the group no longer includes this QP
        os.write(wr, b"L")
        assert os.read(rd, 1) == b"S"
        n, _ = cid.qp.recv_cq.poll()
        assert n == 0  # nothing came after leaving
    else:
        assert os.read(rd, 1) == b"J"
        mr.write(b"m" * SIZE, SIZE)
        ah = AH(cid.pd, attr=ud.ah_attr)
        cid.post_ud_send(mr, ah, rqpn=ud.qp_num, length=SIZE)
        assert cid.get_send_comp().status == e.IBV_WC_SUCCESS
        assert os.read(rd, 1) == b"L"
        cid.post_ud_send(mr, ah, rqpn=ud.qp_num, length=SIZE)
        assert cid.get_send_comp().status == e.IBV_WC_SUCCESS
        os.write(wr, b"S")
    print(f"OK {side}", flush=True)


def main():
    mode = sys.argv[1]
    if mode == "errors":
        errors()
        return
    if mode == "multicast":
        global passive, active
        passive = lambda m, rd, wr: multicast("passive", rd, wr)  # noqa: E731
        active = lambda m, rd, wr: multicast("active", rd, wr)  # noqa: E731
    p2c_r, p2c_w = os.pipe()
    c2p_r, c2p_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            active(mode, p2c_r, c2p_w)
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    try:
        passive(mode, c2p_r, p2c_w)
    finally:
        _, status = os.waitpid(pid, 0)
    sys.exit(0 if mode == "killed" else os.waitstatus_to_exitcode(status))


main()
