"""A client/server program of rdmasim's own pyverbs in two processes on one fabric daemon.

``python pv_cs.py server PORT`` / ``python pv_cs.py client PORT`` (each under ``rdmasim exec --host
hN``): the two exchange their QP number, GID and buffer over a TCP side channel on localhost; the
client WRITEs 1 KiB into the server's buffer, then SENDs 1 KiB with immediate data; the server
checks both. ``python pv_cs.py fork``: the same, the client a forked child (socketpair side channel).
Prints ``OK <role>`` on success. Run by tests/fabricd/test_pyverbs_daemon.py."""

import json
import os
import socket
import sys
import time

import rdmasim.pyverbs as ns

ns.install()
import pyverbs.enums as e  # noqa: E402
from pv_rc import walk_to_rts  # noqa: E402
from pyverbs.addr import GlobalRoute  # noqa: E402
from pyverbs.cq import CQ  # noqa: E402
from pyverbs.device import Context, get_device_list  # noqa: E402
from pyverbs.mr import MR  # noqa: E402
from pyverbs.pd import PD  # noqa: E402
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr  # noqa: E402
from pyverbs.wr import SGE, RecvWR, SendWR  # noqa: E402

ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
SIZE = 1024
WRITE_DATA = bytes((i * 7 + 3) & 0xFF for i in range(SIZE))
SEND_DATA = bytes((i * 13 + 5) & 0xFF for i in range(SIZE))
IMM = 0x12345678


def resources():
    ctx = Context(name=get_device_list()[0].name)
    pd = PD(ctx)
    mr = MR(pd, 4 * SIZE, ACCESS)
    cq = CQ(ctx, 16)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    attr = QPAttr(qp_state=e.IBV_QPS_INIT, port_num=1)
    attr.qp_access_flags = ACCESS
    qp.to_init(attr)
    return ctx, pd, mr, cq, qp


def connect(res, peer):
    gr = GlobalRoute(dgid=peer["gid"], sgid_index=0)
    walk_to_rts(res[4], gr, peer["qpn"], 100 if peer["psn"] == 200 else 200, peer["psn"])


def me(res, psn):
    ctx, _, mr, _, qp = res
    return {"qpn": qp.qp_num, "gid": str(ctx.query_gid(1, 0)), "rkey": int(mr.rkey), "addr": mr.buf,
            "psn": psn}


def exchange(sock, mine):
    sock.sendall(json.dumps(mine).encode() + b"\n")
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = sock.recv(4096)
        if not chunk:
            raise SystemExit("side channel closed")
        buf += chunk
    return json.loads(buf)


def poll(cq):
    while True:
        n, wcs = cq.poll()
        if n:
            assert wcs[0].status == e.IBV_WC_SUCCESS, wcs[0]
            return wcs[0]


def server(sock):
    res = resources()
    _, _, mr, cq, qp = res
    qp.post_recv(RecvWR(wr_id=7, num_sge=1, sg=[SGE(mr.buf, SIZE, mr.lkey)]))
    peer = exchange(sock, me(res, 100))
    connect(res, peer)
    wc = poll(cq)
    assert wc.opcode == e.IBV_WC_RECV_RDMA_WITH_IMM or wc.opcode == e.IBV_WC_RECV, wc
    assert wc.wr_id == 7 and wc.byte_len == SIZE and wc.imm_data == IMM, wc
    assert mr.read(SIZE, 0) == SEND_DATA, "SEND data differ"
    assert mr.read(SIZE, 2 * SIZE) == WRITE_DATA, "WRITE data differ"
    exchange(sock, {"done": 1})
    print("OK server", flush=True)


def client(sock):
    res = resources()
    _, _, mr, cq, qp = res
    peer = exchange(sock, me(res, 200))
    connect(res, peer)
    mr.write(WRITE_DATA, SIZE, 0)
    mr.write(SEND_DATA, SIZE, SIZE)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(mr.buf, SIZE, mr.lkey)])
    wr.set_wr_rdma(peer["rkey"], peer["addr"] + 2 * SIZE)
    qp.post_send(wr)
    wr2 = SendWR(wr_id=2, opcode=e.IBV_WR_SEND_WITH_IMM, imm_data=IMM, num_sge=1,
                 sg=[SGE(mr.buf + SIZE, SIZE, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
    qp.post_send(wr2)
    assert poll(cq).wr_id == 1  # sq_sig_all: every WR completes
    assert poll(cq).wr_id == 2
    exchange(sock, {"done": 1})
    print("OK client", flush=True)


def main():
    role = sys.argv[1]
    if role == "fork":
        a, b = socket.socketpair()
        get_device_list()  # the parent talks to the daemon before it forks
        pid = os.fork()
        if pid == 0:
            a.close()
            code = 1
            try:
                client(b)
                code = 0
            except BaseException:
                import traceback

                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        b.close()
        server(a)
        _, status = os.waitpid(pid, 0)
        sys.exit(os.waitstatus_to_exitcode(status))
    port = int(sys.argv[2])
    if role == "server":
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", port))
        ls.listen(1)
        conn, _ = ls.accept()
        server(conn)
    else:
        for _ in range(600):
            try:
                s = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit("no server")
        client(s)


main()
