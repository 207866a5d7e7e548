"""``rdmasim.pyverbs`` served by the fabric daemon: the devices of a process started with
``rdmasim exec`` (``RDMASIM_FABRIC_SOCKET`` set) are the daemon's hosts, shared with every other
process attached to it.

The verbs objects stay rdmasim.verbs' own; what changes is the core they call: :class:`RemoteCore`
answers the core calls they make by the daemon's requests (rdmasim/fabricd/proto.h: the same
requests librdmasim_ibverbs.so sends for a C program), and :class:`RemoteSim` stands for the
simulation (its hosts, as the daemon describes them). Registered memory is shared as the C path
shares it: an MR's pages live in a memfd that the daemon maps too (``MR(pd, length)`` allocates
there; a buffer of the program's own has its pages moved into one, contents kept). A poll of an
empty CQ waits in the daemon, which lets simulated time pass only while every attached process
waits. A forked child talks to the daemon on a connection of its own (its parent's objects stay the
parent's).
"""

from __future__ import annotations

import ctypes
import errno
import json
import mmap
import os
import platform
import socket
import struct
import sys
import threading
import types
from collections.abc import Sequence
from typing import Any

import numpy as np

from rdmasim.errors import PyverbsRDMAError
from rdmasim.fabricd import proto

P = proto.C
_HDR = struct.Struct("<IIII")
_REPLY = struct.Struct("<iIII")
_MASK64 = (1 << 64) - 1
_IBV_QP_AV = 1 << 7
_IBV_SEND_INLINE = 1 << 3
_IBV_WC_WITH_IMM = 1 << 1
_IBV_QPT_UD = 4
_IBV_WR_BIND_MW = 8
_INLINE_CAP = 256  # max_inline_data of a QP (the daemon copies inline bytes into slots this size)
# the core's QP attribute names and their word (RSD_QPA_*) in MODIFY_QP / QUERY_QP
_QPA = (("qp_state", "STATE"), ("cur_qp_state", "CUR_STATE"), ("path_mtu", "PATH_MTU"),
        ("qp_access_flags", "ACCESS"), ("pkey_index", "PKEY_INDEX"), ("port_num", "PORT"), ("qkey", "QKEY"),
        ("dest_qp_num", "DEST_QP"), ("rq_psn", "RQ_PSN"), ("sq_psn", "SQ_PSN"),
        ("max_rd_atomic", "MAX_RD_ATOMIC"), ("max_dest_rd_atomic", "MAX_DEST_RD_ATOMIC"),
        ("min_rnr_timer", "MIN_RNR_TIMER"), ("timeout", "TIMEOUT"), ("retry_cnt", "RETRY_CNT"),
        ("rnr_retry", "RNR_RETRY"))


def active() -> bool:
    """True when this process runs under ``rdmasim exec`` (its devices are the daemon's)."""
    return bool(os.environ.get("RDMASIM_FABRIC_SOCKET"))


def is_remote(sim: Any) -> bool:
    """True for the simulation of a process attached to the daemon."""
    return isinstance(sim, RemoteSim)


class Conn:
    """One connection to the daemon (made at the first request), one request at a time."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.sock: socket.socket | None = None
        self.lock = threading.Lock()
        self.order: list[int] = []  # device order: the hosts' positions, RDMASIM_HOST's first
        self._owner: int | None = None  # the thread whose request is on the socket
        self._deferred: list[tuple[int, Sequence[int], bytes]] = []

    def _connect(self) -> socket.socket:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(self.path)
        except OSError as exc:
            s.close()
            raise PyverbsRDMAError(f"no fabric daemon answers at {self.path} ({exc}): start the program "
                                   "with `rdmasim exec -- python PROGRAM`", errno.ENODEV) from None
        self.sock = s
        first = os.environ.get("RDMASIM_HOST", "").encode()
        _, words, _ = self._call(P["RSD_HELLO"], (proto.VERSION, os.getpid(), 0), first, ())
        self.order = [words[i] for i in range(0, len(words), 2)]
        return s

    def call(self, op: int, words: Sequence[int] = (), data: bytes = b"",
             fds: Sequence[int] = ()) -> tuple[int, tuple[int, ...], bytes]:
        """Send one request; its status (>= 0), words and bytes. A refusal raises
        PyverbsRDMAError with the daemon's errno and message.

        A request made by the thread whose own request is on the socket comes from a finalizer
        (``__del__`` of an object the garbage collector freed mid-request: a destroy): it is sent
        once that request is answered, its answer unread by the caller (status 0)."""
        me = threading.get_ident()
        if self._owner == me:
            if fds:
                raise PyverbsRDMAError("a request passing descriptors made inside another request",
                                       errno.EDEADLK)
            self._deferred.append((op, tuple(words), bytes(data)))
            return 0, (), b""
        with self.lock:
            self._owner = me
            try:
                if self.sock is None:
                    self._connect()
                return self._call(op, words, data, fds)
            finally:
                while self._deferred and self.sock is not None:
                    d_op, d_words, d_data = self._deferred.pop(0)
                    try:
                        self._call(d_op, d_words, d_data, ())
                    except PyverbsRDMAError:  # a destroy the daemon refuses: freed with the process
                        pass
                self._owner = None

    def _call(self, op: int, words: Sequence[int], data: bytes,
              fds: Sequence[int]) -> tuple[int, tuple[int, ...], bytes]:
        s = self.sock
        assert s is not None
        msg = (_HDR.pack(op, len(words), len(data), 0)
               + struct.pack(f"<{len(words)}Q", *(int(w) & _MASK64 for w in words)) + data)
        try:
            if fds:
                socket.send_fds(s, [msg[:_HDR.size]], list(fds))
                s.sendall(msg[_HDR.size:])
            else:
                s.sendall(msg)
            status, nw, nb, _ = _REPLY.unpack(_recv(s, _REPLY.size))
            out = struct.unpack(f"<{nw}Q", _recv(s, 8 * nw)) if nw else ()
            body = _recv(s, nb) if nb else b""
        except OSError as exc:
            raise PyverbsRDMAError(f"the fabric daemon closed the connection ({exc})", errno.EIO) from None
        if status < 0:
            raise PyverbsRDMAError(body.decode(errors="replace") or os.strerror(-status), -status)
        return status, out, body

    def forget(self) -> None:
        """In a forked child: drop the parent's connection (this process makes its own)."""
        if self.sock is not None:
            try:
                self.sock.close()  # this process's copy of the descriptor only
            except OSError:
                pass
        self.sock = None
        self.lock = threading.Lock()
        self._owner = None
        self._deferred = []


def _recv(s: socket.socket, n: int) -> bytes:
    """The reply bytes (one name, so tests can wrap the wait for an answer)."""
    return proto.recv_exact(s, n, closed="the daemon closed the connection")


# ---- shared memory ----
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                       ctypes.c_long)
_PAGE = mmap.PAGESIZE
_libc.syscall.restype = ctypes.c_long
# pwrite64's system call number, by machine: the kernel reads the pages whatever they hold (heap
# neighbours of a buffer included), as the C library's copy does; libc's pwrite would do the same, but
# a sanitizer's interceptor of it checks that the bytes belong to one object
_SYS_PWRITE64 = {"x86_64": 18, "aarch64": 68}.get(platform.machine())


def _copy_pages(fd: int, start: int, length: int) -> None:
    """Copy ``length`` bytes of this process's memory at ``start`` (whole pages) into ``fd``."""
    if _SYS_PWRITE64 is None:
        os.pwrite(fd, ctypes.string_at(start, length), 0)
        return
    n = _libc.syscall(ctypes.c_long(_SYS_PWRITE64), ctypes.c_long(fd), ctypes.c_void_p(start),
                      ctypes.c_size_t(length), ctypes.c_long(0))
    if n != length:
        e = ctypes.get_errno()
        raise PyverbsRDMAError(f"MR at 0x{start:x}: its pages could not be copied to shared memory "
                               f"({os.strerror(e) if e else 'short write'})", e or errno.EIO)


class _Segments:
    """Memory the daemon can map: memfd-backed ranges of this process (start, length, fd)."""

    def __init__(self) -> None:
        self.segs: list[tuple[int, int, int]] = []
        self.keep: list[Any] = []  # mappings made here (kept alive as long as the process)
        self.users: dict[int, int] = {}  # segment start -> registered MRs on it

    def zeros(self, length: int) -> np.ndarray:
        """``length`` zeroed bytes in a memfd of their own (``MR(pd, length)``)."""
        size = -(-length // _PAGE) * _PAGE
        fd = os.memfd_create("rdmasim-mr", os.MFD_CLOEXEC)
        os.ftruncate(fd, size)
        m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.keep.append(m)
        arr = np.frombuffer(m, dtype=np.uint8, count=length)
        self.segs.append((arr.ctypes.data, size, fd))
        return arr

    def find(self, addr: int, length: int) -> tuple[int, int, int]:
        """The segment holding ``[addr, addr+length)``; the pages are moved into a new memfd
        (contents copied, mapped over the same addresses) when none does."""
        start = addr & ~(_PAGE - 1)
        end = -(-(addr + length) // _PAGE) * _PAGE
        for seg in self.segs:
            s, n, _ = seg
            if start >= s and end <= s + n:
                return seg
            if start < s + n and s < end:
                raise PyverbsRDMAError(f"MR at 0x{addr:x} (+{length}) partly overlaps memory registered "
                                       "before: register regions on separate pages", errno.EINVAL)
        fd = os.memfd_create("rdmasim-mr", os.MFD_CLOEXEC)
        os.ftruncate(fd, end - start)
        _copy_pages(fd, start, end - start)
        got = _libc.mmap(start, end - start, mmap.PROT_READ | mmap.PROT_WRITE,
                         mmap.MAP_SHARED | 0x10, fd, 0)  # MAP_FIXED
        if got != start:
            e = ctypes.get_errno()
            os.close(fd)
            raise PyverbsRDMAError(f"MR at 0x{addr:x}: its pages could not be shared with the fabric daemon "
                                   f"({os.strerror(e)})", e or errno.ENOMEM)
        seg = (start, end - start, fd)
        self.segs.append(seg)
        return seg

    def hold(self, seg: tuple[int, int, int]) -> None:
        """An MR registered on ``seg``."""
        self.users[seg[0]] = self.users.get(seg[0], 0) + 1

    def release(self, start: int) -> None:
        """An MR on the segment at ``start`` deregistered. With none left the segment is forgotten:
        the program may unmap or free that memory and map other memory at the same address, so a
        later registration there gives the daemon the pages mapped then (moved into a memfd anew,
        contents kept, when they are not in one)."""
        left = self.users.get(start, 0) - 1
        if left > 0:
            self.users[start] = left
            return
        self.users.pop(start, None)
        for seg in [g for g in self.segs if g[0] == start]:
            self.segs.remove(seg)
            os.close(seg[2])  # the daemon and this process keep their mappings of it


class _Unavailable(PyverbsRDMAError, AttributeError):
    """A core call the daemon does not serve to Python clients."""


class _QPAttrs(dict):  # type: ignore[type-arg]
    """A QP's attributes as the core answers ``qp_query``; fields the daemon does not report are 0."""

    def __missing__(self, key: str) -> int:
        return 0


class RemoteCore:
    """The core calls of rdmasim.verbs, made as requests to the daemon."""

    remote = True

    def __init__(self, path: str) -> None:
        self.conn = Conn(path)
        self.mem = _Segments()
        self._mr_seg: dict[tuple[int, int], int] = {}  # (host, MR index) -> its segment's start
        self._info: dict[str, Any] | None = None
        self._av: dict[tuple[int, int], tuple[int, int]] = {}  # (host, qpn) -> (dest host, traffic class)
        self.last_posted = 0

    def call(self, op: str, words: Sequence[int] = (), data: bytes = b"",
             fds: Sequence[int] = ()) -> tuple[int, tuple[int, ...], bytes]:
        """Request ``RSD_<op>``."""
        return self.conn.call(P["RSD_" + op], words, data, fds)

    @property
    def info(self) -> dict[str, Any]:
        """The daemon's hosts (name, index, mac, ip, lid, ib_gid, mtu) and link layer."""
        if self._info is None:
            self._info = json.loads(self.call("PY_HOST_INFO")[2])
        return self._info

    def device_order(self) -> list[int]:
        """The hosts' positions in device order: ``rdmasim exec --host``'s first, as for C programs."""
        if self.conn.sock is None:
            self.info  # noqa: B018 - connects (the hello answers the order)
        return list(self.conn.order)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise _Unavailable(f"{name}: not available to a process attached to the fabric daemon "
                               "(rdmasim exec); see docs/pyverbs.md", errno.EOPNOTSUPP)

    # hosts
    def host_info(self, index: int) -> tuple[bytes, int]:
        h = self.info["hosts"][index]
        import ipaddress

        return bytes(int(x, 16) for x in h["mac"].split(":")), int(ipaddress.IPv4Address(h["ip"]))

    def host_ib_addr(self, index: int) -> tuple[int, bytes]:
        import ipaddress

        h = self.info["hosts"][index]
        return int(h["lid"]), ipaddress.IPv6Address(h["ib_gid"]).packed

    # protection domains and memory
    def pd_alloc(self, host: int) -> int:
        return self.call("ALLOC_PD", (host,))[0]

    def pd_dealloc(self, host: int, pd: int) -> None:
        self.call("DEALLOC_PD", (host, pd))

    def mr_reg(self, host: int, pd: int, array: np.ndarray, access: int) -> tuple[int, int, int, int]:
        addr, length = int(array.ctypes.data), int(array.nbytes)
        seg = self.mem.find(addr, length)
        start, size, fd = seg
        _, (idx, lkey, rkey), _ = self.call("REG_MR", (host, pd, addr, length, access, addr - start, size),
                                            fds=(fd,))
        self.mem.hold(seg)
        self._mr_seg[(host, idx)] = start
        return idx, addr, lkey, rkey

    def mr_rereg(self, host: int, index: int, pd: int, access: int) -> int:
        return self.call("PY_REREG_MR", (host, index, pd, access))[1][0]

    def mr_dereg(self, host: int, index: int) -> None:
        self.call("DEREG_MR", (host, index))
        start = self._mr_seg.pop((host, index), None)
        if start is not None:
            self.mem.release(start)

    # completion queues
    pending_channel = 0  # the completion channel of the CQ being created (set by pyverbs' CQ)

    def cq_create(self, host: int, cqe: int) -> int:
        channel, self.pending_channel = self.pending_channel, 0
        return self.call("CREATE_CQ", (host, cqe, channel, 0))[1][0]

    def cq_destroy(self, host: int, cq: int) -> None:
        self.call("DESTROY_CQ", (host, cq))

    def mw_alloc(self, host: int, pd: int, mw_type: int) -> tuple[int, int]:
        idx, (rkey,), _ = self.call("ALLOC_MW", (host, pd, mw_type))
        return idx, rkey

    def mw_dealloc(self, host: int, index: int) -> None:
        self.call("DEALLOC_MW", (host, index))

    def cq_resize(self, host: int, cq: int, cqe: int) -> None:
        self.call("RESIZE_CQ", (host, cq, cqe))

    def cq_count(self, host: int, cq: int) -> int:
        return self.call("PY_CQ_COUNT", (host, cq))[0]

    def cq_poll(self, host: int, cq: int, n: int, wc_cls: Any) -> list[Any]:
        """Up to ``n`` completions; on an empty CQ the daemon waits until one is due or the fabric
        is quiet (then none)."""
        count, w, _ = self.call("POLL_CQ", (host, cq, n))
        k = P["RSD_WC_WORDS"]
        out = []
        swap = sys.byteorder == "little"
        for i in range(count):
            (wr_id, status, opcode, vendor_err, byte_len, imm, qp_num, src_qp, wc_flags, pkey_index, slid, sl,
             dlid_path_bits) = w[i * k:(i + 1) * k]
            if swap and wc_flags & _IBV_WC_WITH_IMM:
                imm = int.from_bytes(imm.to_bytes(4, "little"), "big")
            out.append(wc_cls(wr_id, status, opcode, vendor_err, byte_len, imm, qp_num, src_qp, wc_flags,
                              pkey_index, sl, slid, dlid_path_bits))
        return out

    # queue pairs
    def qp_create(self, host: int, pd: int, scq: int, rcq: int, msw: int, mrw: int, mss: int, mrs: int,
                  sig_all: bool, qp_type: int, srq: int) -> int:
        return self.call("CREATE_QP", (host, pd, scq, rcq, srq, qp_type, int(sig_all), msw, mrw, mss, mrs,
                                       _INLINE_CAP))[1][0]

    def qp_modify(self, host: int, qpn: int, d: dict[str, Any], mask: int) -> None:
        import ipaddress

        v = [0] * P["RSD_QPA_WORDS"]
        for k, name in _QPA:
            v[P["RSD_QPA_" + name]] = int(d.get(k) or 0)
        dgid = b""
        if mask & _IBV_QP_AV:
            dest = int(d["dest_host"])
            v[P["RSD_QPA_AH_IS_GLOBAL"]] = 1
            v[P["RSD_QPA_AH_SGID_INDEX"]] = 1
            v[P["RSD_QPA_AH_TRAFFIC_CLASS"]] = int(d.get("traffic_class", 0))
            v[P["RSD_QPA_AH_HOP_LIMIT"]] = 64
            dgid = ipaddress.IPv6Address("::ffff:" + self.info["hosts"][dest]["ip"]).packed
        self.call("MODIFY_QP", (host, qpn, mask, *v), dgid)
        if mask & _IBV_QP_AV:
            self._av[(host, qpn)] = (int(d["dest_host"]), int(d.get("traffic_class", 0)))

    def qp_query(self, host: int, qpn: int) -> dict[str, int]:
        _, w, _ = self.call("QUERY_QP", (host, qpn))
        out = _QPAttrs({k: int(w[P["RSD_QPA_" + name]]) for k, name in _QPA})
        out["dest_host"], out["traffic_class"] = self._av.get((host, qpn), (-1, 0))
        return out

    def qp_destroy(self, host: int, qpn: int) -> None:
        self.call("DESTROY_QP", (host, qpn))
        self._av.pop((host, qpn), None)

    def post_send(self, host: int, qpn: int, wrs: list[tuple[Any, ...]]) -> None:
        """Post checked work requests (``QP._send_args`` tuples) in one request; on a refusal
        ``last_posted`` is the index of the one refused."""
        words: list[int] = [host, qpn, len(wrs)]
        inline = bytearray()
        for (wr_id, opcode, flags, imm, sges, raddr, rkey, cmp_add, swap, dest, tc, rqpn, qkey,
             *bind) in wrs:
            if opcode == _IBV_WR_BIND_MW:  # proto.h: length, access << 32 | lkey, the window's current key
                mw_rkey, lkey, access, length = bind
                cmp_add, swap, tc, rqpn = length, (access << 32) | lkey, 0, mw_rkey
            ah = -1 if dest is None or dest < 0 else dest
            words += [wr_id, opcode, flags, imm, raddr, rkey, cmp_add, swap, ah & _MASK64,
                      (int(tc or 0) << 32) | int(rqpn or 0), int(qkey or 0), len(sges)]
            for addr, length, lkey in sges:
                words += [addr, length, lkey]
                if flags & _IBV_SEND_INLINE:
                    inline += ctypes.string_at(addr, length)
        self.call("POST_SEND", words, bytes(inline))

    def post_recv(self, host: int, qpn: int, srq: int,
                  wrs: list[tuple[int, list[tuple[int, int, int]]]]) -> None:
        """Post checked receive work requests (``(wr_id, sges)``) in one request."""
        words: list[int] = [host, qpn, srq, len(wrs)]
        for wr_id, sges in wrs:
            words += [wr_id, len(sges)]
            for sge in sges:
                words += list(sge)
        self.call("POST_RECV", words)

    def now(self) -> int:
        return self.call("NOW")[1][0]

    # shared receive queues
    def srq_create(self, host: int, pd: int, max_wr: int, max_sge: int, limit: int) -> int:
        return self.call("CREATE_SRQ", (host, pd, max_wr, max_sge, limit))[0]

    def srq_destroy(self, host: int, srq: int) -> None:
        self.call("DESTROY_SRQ", (host, srq))

    def srq_modify(self, host: int, srq: int, mask: int, max_wr: int, limit: int) -> None:
        self.call("MODIFY_SRQ", (host, srq, mask, max_wr, limit))

    def srq_query(self, host: int, srq: int) -> dict[str, int]:
        _, (max_wr, max_sge, limit), _ = self.call("QUERY_SRQ", (host, srq))
        return {"max_wr": max_wr, "max_sge": max_sge, "limit": limit, "limit_events": 0}

    def srq_take_limit_event(self, host: int, srq: int) -> bool:
        """Take the SRQ's pending IBV_EVENT_SRQ_LIMIT_REACHED (True if there was one)."""
        return bool(self.call("PY_SRQ_LIMIT_EVENT", (host, srq))[0])

    def recv_poster(self, owner: Any, srq: int) -> RecvPoster:
        """The post_recv of an SRQ on the daemon (rdmasim.verbs' SRQ asks for it)."""
        return RecvPoster(owner, srq)


class RemoteSim:
    """The simulation as a process attached to the daemon sees it: the hosts (devices) and the
    core calls, all answered by the daemon. Not a Simulator: it cannot be run or built here."""

    def __init__(self, path: str) -> None:
        from rdmasim.transport.handle import Host

        self._core = RemoteCore(path)
        info = self._core.info
        self.link_layer = info["link_layer"]
        self.seed = 0
        self.auto_advance = True
        self.poll_slice: str | int = "10ms"
        self.idle_poll_limit = 1000
        self.hosts: dict[str, Host] = {}
        for i, h in enumerate(info["hosts"]):
            host = Host(self, i, h["name"])  # type: ignore[arg-type]
            host.link = types.SimpleNamespace(mtu=h["mtu"])  # type: ignore[assignment]
            self.hosts[h["name"]] = host

    @property
    def now(self) -> int:
        """The fabric's simulated time (ps)."""
        return self._core.now()

    @property
    def events(self) -> int:
        return 0

    def host_by_index(self, index: int) -> Any:
        from rdmasim.transport.handle import SimHandle

        return SimHandle.host_by_index(self, index)  # type: ignore[arg-type]

    def host_by_gid(self, gid: str) -> Any:
        from rdmasim.transport.handle import SimHandle

        return SimHandle.host_by_gid(self, gid)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"RemoteSim({self._core.conn.path}, hosts={list(self.hosts)})"


_SIM: list[RemoteSim] = []


def simulation() -> RemoteSim:
    """This process's view of the daemon's fabric (made at first use)."""
    if not _SIM:
        _SIM.append(RemoteSim(os.environ["RDMASIM_FABRIC_SOCKET"]))
    return _SIM[0]


def _after_fork_in_child() -> None:
    if _SIM:
        _SIM[0]._core.conn.forget()


os.register_at_fork(after_in_child=_after_fork_in_child)


# ---- the data path of the verbs objects ----
class SendPoster:
    """``QP.post_send`` of a QP on the daemon: the chain checked as rdmasim.verbs checks it, posted
    in one request."""

    def __init__(self, qp: Any) -> None:
        self.qp = qp

    def post(self, wr: Any, bad_wr: Any = None) -> None:
        from rdmasim.verbs.wr import report_bad_wr

        qp = self.qp
        if qp._closed:
            raise PyverbsRDMAError(f"post_send: QP 0x{qp.qp_num:x} is destroyed", errno.EINVAL)
        chain = qp._send_chain(wr)
        args = []
        for i, w in enumerate(chain):
            try:
                a = qp._send_args(i, w)
            except BaseException:
                report_bad_wr(bad_wr, w)
                raise
            ah = getattr(w, "ah", None) if qp.qp_type == _IBV_QPT_UD else None
            group = getattr(ah, "_mcast_group", None)
            args += [a] if group is None else self._copies(a, group)
        try:
            qp._host.sim._core.post_send(qp._host.index, qp.qp_num, args)
        except PyverbsRDMAError:
            report_bad_wr(bad_wr, chain[0])
            raise

    def _copies(self, a: tuple[Any, ...], group: str) -> list[tuple[Any, ...]]:
        """A UD send to multicast ``group``: one copy to each member QP but this one (the
        fabric's switches do not replicate frames); to no QP (QPN 0xFFFFFF on this host, where
        nothing receives it) when this QP is alone in the group."""
        qp = self.qp
        core = qp._host.sim._core
        body = json.dumps({"op": "members", "group": group}).encode()
        members = json.loads(core.call("CM_CALL", data=body)[2])["members"]
        me = (qp._host.index, qp.qp_num)
        dests = [(h, n) for h, n in members if (h, n) != me] or [me[:1] + (0xFFFFFF,)]
        # (wr_id, opcode, flags, imm, sges, raddr, rkey, cmp_add, swap, dest, tc, rqpn, qkey, *bind)
        return [(*a[:9], h, a[10], n, *a[12:]) for h, n in dests]


class RecvPoster:
    """``QP.post_recv`` (or ``SRQ.post_recv``) of an object on the daemon."""

    def __init__(self, owner: Any, srq: int = 0) -> None:
        self.owner = owner
        self.srq = srq
        self.closed = False
        self.dead: Any = None
        self.report: Any = None

    def post(self, wr: Any, bad_wr: Any = None) -> None:
        from rdmasim.verbs.wr import report_bad_wr

        if self.closed and self.dead is not None:
            self.dead()
        o = self.owner
        chain = o._recv_chain(wr)
        args = []
        for i, w in enumerate(chain):
            try:
                args.append(o._recv_args(i, w))
            except BaseException:
                report_bad_wr(bad_wr, w)
                raise
        qpn = 0 if self.srq else o.qp_num
        o._host.sim._core.post_recv(o._host.index, qpn, self.srq, args)
