"""The fabric daemon: one simulation, served over a Unix socket to the processes of a run.

Each process (a C program through ``librdmasim_ibverbs.so``) sends its verbs calls as requests
(layout: ``rdmasim/fabricd/proto.h``). The daemon runs them on the host the call names, against the
simulation's C core, and answers. Registered memory arrives as a memfd (the program's own pages),
mapped here too, so the emulated NICs read and write the program's bytes.

Simulated time advances only while every attached process waits in a verbs call: polling an empty
CQ, ``ibv_get_cq_event`` without an event, or an explicit idle. Then the daemon runs the simulation
until some waiting process has what it waits for (a completion on its CQ, an event on its channel)
and answers it; a poll on an idle simulation is answered empty. A process that is computing,
or talking to its peer over TCP, holds the clock still. So the same programs give the same
simulated run (and pcap bytes) whatever the host's speed.
"""

from __future__ import annotations

import errno
import ipaddress
import mmap
import os
import select
import selectors
import socket
import struct
import sys
import time
from typing import Any

from rdmasim import _core
from rdmasim.fabricd import extra_ops, proto, server_ext
from rdmasim.fabricd.objects import CQ, MR, Channel, Client, InlineSlots, VerbsError
from rdmasim.sim import Simulator

P = proto.C
_HDR = struct.Struct("<IIII")
_REPLY = struct.Struct("<iIII")
_MASK64 = (1 << 64) - 1
_SWR = P["RSD_SWR_WORDS"]
_QPA = P["RSD_QPA_WORDS"]
_IBV_QP_AV = 1 << 7
_IBV_QP_STATE = 1
_IBV_SEND_INLINE = 1 << 3
_IBV_WR_BIND_MW = 8
_NO_BIND = (0, 0, 0, 0)

#: ibv_device_attr fields in the order librdmasim_ibverbs.so reads them (ibv_query_device)
DEVICE_ATTR_ORDER = (
    "max_mr_size", "page_size_cap", "vendor_id", "vendor_part_id", "hw_ver", "max_qp", "max_qp_wr",
    "device_cap_flags", "max_sge", "max_sge_rd", "max_cq", "max_cqe", "max_mr", "max_pd", "max_qp_rd_atom",
    "max_ee_rd_atom", "max_res_rd_atom", "max_qp_init_rd_atom", "max_ee_init_rd_atom", "atomic_cap", "max_ee",
    "max_rdd", "max_mw", "max_raw_ipv6_qp", "max_raw_ethy_qp", "max_mcast_grp", "max_mcast_qp_attach",
    "max_total_mcast_qp_attach", "max_ah", "max_fmr", "max_map_per_fmr", "max_srq", "max_srq_wr",
    "max_srq_sge",
    "max_pkeys", "local_ca_ack_delay", "phys_port_cnt",
)
#: ibv_port_attr fields in the order librdmasim_ibverbs.so reads them (ibv_query_port)
PORT_ATTR_ORDER = (
    "state", "max_mtu", "active_mtu", "gid_tbl_len", "port_cap_flags", "max_msg_sz", "bad_pkey_cntr",
    "qkey_viol_cntr", "pkey_tbl_len", "lid", "sm_lid", "lmc", "max_vl_num", "sm_sl", "subnet_timeout",
    "init_type_reply", "active_width", "active_speed", "phys_state", "link_layer",
)


class Daemon:
    """Serve ``sim`` on the Unix socket ``path`` until the last process has gone."""

    def __init__(self, sim: Simulator, path: str, *, idle_ms: float = 50.0, log: Any = None) -> None:
        self.sim = sim
        self.core = sim._core
        self.path = path
        self.log = log
        self.clients: dict[int, Client] = {}
        self.ever_attached = False
        self.mr_by_key: dict[tuple[int, int], MR] = {}
        self.next_pd: dict[int, int] = {}
        self.next_channel = 1
        self.channels: dict[int, Channel] = {}
        self.hosts = list(sim.hosts.values())
        self.sel = selectors.DefaultSelector()
        self.calls = 0
        self.waits = 0
        self.epoch_ns = time.time_ns()  # what CLOCK_REALTIME reads at simulated time 0 (RDMASIM_CLOCK=sim)
        # a process out of verbs calls this long counts as waiting (0: never; see docs/c-programs.md)
        self.idle_s = idle_ms / 1000.0
        self.first_client_s = 60.0  # a daemon nobody attaches to within this long exits
        # events run between two looks at the sockets (a fabric that never goes quiet, e.g. a
        # scenario's periodic timers, must not keep a new process from attaching). A budget of events,
        # not of time: running to a time would move the clock of a quiet fabric to it.
        self.slice_events = 200_000
        self.more = False  # the last _advance stopped at the end of a slice: continue after a look

    # ---- the loop ----
    def serve(self, listener: socket.socket) -> None:
        """Accept processes and answer them until every one has gone (after the first came)."""
        listener.setblocking(False)
        self.sel.register(listener, selectors.EVENT_READ, None)
        started = time.monotonic()
        while not (self.ever_attached and not self.clients):
            if not self.ever_attached and time.monotonic() - started > self.first_client_s:
                return  # started for a program that never came (it failed first): do not linger
            running = self.idle_s > 0 and any(c.wait is None and not c.holder for c in self.clients.values())
            timeout = 0 if self.more else self.idle_s if running else None if self.ever_attached else 1.0
            for key, _ in self.sel.select(timeout):
                if key.data is None:
                    try:
                        conn, _ = listener.accept()
                    except BlockingIOError:
                        continue
                    conn.setblocking(True)
                    c = Client(conn)
                    self.clients[conn.fileno()] = c  # attached once it says hello (a probe is not)
                    self.sel.register(conn, selectors.EVENT_READ, c)
                elif isinstance(key.data, Client):
                    self._readable(key.data)
                # else a descriptor a process waits on became readable: _advance wakes it in its turn
            self.more = self._advance()
            if self.ever_attached and not self.clients and _pending(listener):
                self.ever_attached = False  # a process is connecting as the last one left: serve it
        self.sel.close()

    def _readable(self, c: Client) -> None:
        try:
            msg, fds, _, _ = socket.recv_fds(c.sock, _HDR.size, 4)
        except OSError:
            msg, fds = b"", []
        if len(msg) < _HDR.size:
            if msg:
                msg += proto.recv_exact(c.sock, _HDR.size - len(msg))
            if len(msg) < _HDR.size:
                self._drop(c)
                return
        op, nw, nb, _ = _HDR.unpack(msg)
        c.last_call = time.monotonic()
        if c.wait is not None and c.wait[0] == "idle":
            c.wait = None  # an explicit idle lasts until the process's next call
        try:
            words = struct.unpack(f"<{nw}Q", proto.recv_exact(c.sock, nw * 8)) if nw else ()
            data = proto.recv_exact(c.sock, nb) if nb else b""
        except ConnectionError:
            for fd in fds:
                os.close(fd)
            self._drop(c)
            return
        self.calls += 1
        try:
            out = self._dispatch(c, op, words, data, fds)
        except VerbsError as exc:
            self._reply(c, -exc.err, (), str(exc).encode())
            return
        except Exception as exc:  # the core refused: its errno and message
            err = getattr(exc, "error_code", errno.EINVAL)
            self._reply(c, -int(err), (), str(exc).encode())
            return
        finally:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
        if out is not None:
            self._reply(c, *out)

    def _reply(self, c: Client, status: int, words: Any = (), data: bytes = b"") -> None:
        words = tuple(int(w) & _MASK64 for w in words)
        try:
            c.sock.sendall(_REPLY.pack(status, len(words), len(data), 0)
                           + (struct.pack(f"<{len(words)}Q", *words) if words else b"") + data)
        except OSError:
            self._drop(c)

    def _drop(self, c: Client) -> None:
        """A process went (exited, crashed or was killed): release what it held."""
        self._release_fds(c)
        fd = c.sock.fileno()
        if fd in self.clients:
            del self.clients[fd]
        try:
            self.sel.unregister(c.sock)
        except (KeyError, ValueError):
            pass
        c.sock.close()
        core = self.core
        server_ext.release(self, c)
        for (host, qpn) in sorted(c.qps):
            _quiet(core.qp_destroy, host, qpn)
        for (host, _), slots in sorted(c.inline.items()):
            _quiet(core.mr_dereg, host, slots.mr_index)
        for (host, srq) in sorted(c.srqs):
            _quiet(core.srq_destroy, host, srq)
        for (host, idx), mr in sorted(c.mrs.items()):
            _quiet(core.mr_dereg, host, idx)
            self.mr_by_key.pop((host, mr.key), None)
        for (host, cq) in sorted(c.cqs):
            _quiet(core.cq_destroy, host, cq)
        for ch in c.channels.values():
            self.channels.pop(ch.id, None)
            _quiet(os.close, ch.efd)
        extra_ops.client_gone(self, c)
        c.mrs.clear()
        for m in c.maps.values():
            _quiet(m.close)

    # ---- time ----
    def _advance(self) -> bool:
        """While every attached process waits, run the simulation until one of them has what it
        waits for, and answer it. True: the slice's events ran out first (call again after looking at
        the sockets)."""
        budget = self.slice_events
        while True:
            active = [c for c in self.clients.values() if not c.holder]
            if self.idle_s > 0:
                now = time.monotonic()
                for c in active:
                    if c.wait is None and now - c.last_call > self.idle_s:
                        c.wait = ("idle",)  # e.g. spinning on memory a peer WRITEs (ib_write_lat)
            if not active or any(c.wait is None for c in active):
                return False
            if self._wake_ready(active):
                return False
            watch = []
            for c in active:
                w = c.wait
                assert w is not None
                if w[0] == "poll":
                    watch.append((w[1], w[2]))
                elif w[0] == "ext":  # a condition of server_ext's (memory): looked at after every event
                    watch += [("ext", 0), ("ext", 1)]
            for ch in self.channels.values():
                for cq in self._armed_cqs(ch.id):
                    watch.append((cq.host, cq.handle))
            if budget <= 0:
                return True
            before = self.sim.events
            if not watch:  # nobody can see the fabric until it goes quiet: run it (a slice at a time)
                reason = self.core.run(_core.INT64_MAX, budget)
            elif len(set(watch)) == 1:
                host, cq = watch[0]
                reason = self.core.run(_core.INT64_MAX, budget, host, cq, 1)
            else:
                reason = self.core.run(_core.INT64_MAX, 1)
            budget -= max(1, self.sim.events - before)
            self._fire_events()
            if reason == _core.RUN_IDLE and not self._wake_ready(active):
                # nothing in flight: the longest-waiting poller sees an empty CQ, as on hardware; event
                # waiters keep waiting (if all wait for events that cannot come, they hang, as on hardware)
                pollers = [c for c in active if c.wait is not None and c.wait[0] in ("poll", "ext")]
                if pollers:
                    self._finish_wait(min(pollers, key=lambda c: c.wait_seq), empty=True)
                return False

    def _wait(self, c: Client, what: tuple[Any, ...]) -> None:
        self.waits += 1
        c.wait, c.wait_seq = what, self.waits

    def _release_fds(self, c: Client) -> None:
        if c.wait is not None and c.wait[0] == "fds":
            for fd in c.wait[1]:
                try:
                    self.sel.unregister(fd)
                except (KeyError, ValueError):
                    pass
                _quiet(os.close, fd)

    def _armed_cqs(self, channel: int) -> list[CQ]:
        out = []
        for c in self.clients.values():
            for cq in c.cqs.values():
                if cq.channel == channel and cq.armed:
                    out.append(cq)
        return out

    def _fire_events(self) -> None:
        """An armed CQ that received a completion since it was armed raises one event on its channel."""
        for c in list(self.clients.values()):
            for cq in c.cqs.values():
                if cq.armed and cq.channel and self.core.cq_count(cq.host, cq.handle) > cq.seen:
                    cq.armed = False
                    ch = self.channels.get(cq.channel)
                    if ch is not None:
                        ch.events.append((cq.host, cq.handle, cq.cookie))
                        _quiet(os.write, ch.efd, (1).to_bytes(8, sys.byteorder))
        server_ext.fire(self)

    def _wake_ready(self, active: list[Client]) -> bool:
        """Answer the process that has waited longest among those whose wait is over. One at a time:
        only one process runs while simulated time stands still, so the order of their calls (and
        of what they put on the fabric at one instant) is the same in every run."""
        ready = []
        for c in active:
            w = c.wait
            if w is None:
                continue
            if ((w[0] == "poll" and self.core.cq_count(w[1], w[2]) > 0)
                    or (w[0] == "event" and self.channels.get(w[1]) and self.channels[w[1]].events)
                    or (w[0] == "fds" and select.select(w[1], [], [], 0)[0])
                    or (w[0] == "ext" and w[1]())):
                ready.append(c)
        if not ready:
            return False
        self._finish_wait(min(ready, key=lambda c: c.wait_seq))
        return True

    def _finish_wait(self, c: Client, empty: bool = False) -> None:
        w = c.wait
        assert w is not None
        if w[0] == "idle":
            return  # not blocked in a call: nothing to answer
        if w[0] == "fds":
            self._release_fds(c)
        c.wait = None
        c.last_call = time.monotonic()
        if w[0] == "poll":
            self._reply(c, *self._poll(c, w[1], w[2], 0 if empty else w[3]))
        elif w[0] == "event":
            host, cq, cookie = self.channels[w[1]].events.pop(0)
            self._reply(c, 0, (host, cq, cookie))
        else:
            self._reply(c, int(w[0] == "ext" and not empty))  # ext: 1 when its condition came true

    # ---- calls ----
    def _host(self, h: int) -> int:
        if not 0 <= h < len(self.hosts):
            raise VerbsError(errno.ENODEV, f"no host {h} (the fabric has {len(self.hosts)})")
        return self.hosts[h].index

    def _dispatch(self, c: Client, op: int, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        extra = extra_ops.HANDLERS.get(op)  # the Python clients' requests and rdma_cm (fabricd/extra_ops.py)
        if extra is not None:
            return extra(self, c, w, data, fds)
        name = _OP_NAMES.get(op)
        if name is None:
            raise VerbsError(errno.EOPNOTSUPP, f"unknown request {op}")
        ext = server_ext.OPS.get(name)
        if ext is not None:
            return ext(self, c, w, data, fds)
        return getattr(self, "_op_" + name)(c, w, data, fds)

    def _op_hello(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        if w[0] != proto.VERSION:
            raise VerbsError(errno.EPROTO, f"librdmasim_ibverbs.so speaks protocol {w[0]}, the daemon "
                             f"{proto.VERSION}: reinstall rdmasim")
        c.pid, c.holder = w[1], bool(w[2])
        self.ever_attached = True
        order = list(range(len(self.hosts)))
        first = data.decode()
        if first:
            names = [h.name for h in self.hosts]
            if first not in names:
                raise VerbsError(errno.ENODEV, f"--host {first!r}: the fabric's hosts are {names}")
            i = names.index(first)
            order = [i] + [j for j in order if j != i]
        from rdmasim.pyverbs._devices import node_guid

        out: list[int] = []
        for i in order:
            out += [i, node_guid(self.hosts[i])]
        return 0, out

    def _op_query_device(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        from rdmasim.pyverbs._devices import device_attr

        a = device_attr(self.hosts[self._host(w[0])])
        vals = dict(a.values, device_cap_flags=a.device_cap_flags, atomic_cap=a.atomic_caps)
        return 0, [vals[k] for k in DEVICE_ATTR_ORDER]

    def _op_query_port(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        from rdmasim.pyverbs._devices import port_attr

        if w[1] != 1:
            raise VerbsError(errno.EINVAL, f"port {w[1]}: the NIC has one port, 1")
        a = port_attr(self.hosts[self._host(w[0])])
        vals = dict(a.values, state=a.state, max_mtu=a.max_mtu, active_mtu=a.active_mtu,
                    phys_state=a.phys_state, link_layer=a.link_layer, port_cap_flags=a.port_cap_flags)
        return 0, [vals[k] for k in PORT_ATTR_ORDER]

    def _gids(self, h: int) -> list[bytes]:
        host = self.hosts[h]
        first = host.ib_gid if self.sim.link_layer == "ib" else _link_local(host.mac)
        return [ipaddress.IPv6Address(first).packed,
                ipaddress.IPv6Address(host.gid).packed]

    def _op_query_gid(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        h = self._host(w[0])
        index = w[2] - (1 << 64) if w[2] >> 63 else w[2]
        if w[1] != 1 or not 0 <= index < 1024:
            raise VerbsError(errno.EINVAL, f"GID index {index} of port {w[1]}: port 1 has indexes 0..1023")
        gids = self._gids(h)
        return 0, (), gids[index] if index < len(gids) else bytes(16)

    def _dest_of_gid(self, gid: bytes) -> int:
        for i in range(len(self.hosts)):
            if gid in self._gids(i):
                return i
        raise VerbsError(errno.EINVAL, f"no host has GID {ipaddress.IPv6Address(gid)}")

    def _op_alloc_pd(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        h = self._host(w[0])
        pd = self.next_pd.get(h, 1)
        self.next_pd[h] = pd + 1
        c.pds.add((h, pd))
        return pd, ()

    def _op_dealloc_pd(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        key = (self._host(w[0]), w[1])
        if key not in c.pds:
            raise VerbsError(errno.EINVAL, f"no PD {w[1]}")
        c.pds.discard(key)
        return 0, ()

    def _op_reg_mr(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        h, pd, addr, length, access, offset, map_len = w
        h = self._host(h)
        if (h, pd) not in c.pds:
            raise VerbsError(errno.EINVAL, f"ibv_reg_mr: no PD {pd}")
        if len(fds) != 1:
            raise VerbsError(errno.EINVAL, "ibv_reg_mr: the region's memory did not arrive")
        st = os.fstat(fds[0])
        mkey = (st.st_dev, st.st_ino)
        m = c.maps.get(mkey)
        if m is None or len(m) < map_len:
            m = mmap.mmap(fds[0], map_len, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            c.maps[mkey] = m
        view = memoryview(m)[offset:offset + length]
        idx, iova, lkey, rkey = self.core.mr_reg(h, pd, view, access)
        mr = MR(h, idx, lkey, addr, iova, length, view)
        c.mrs[(h, idx)] = mr
        self.mr_by_key[(h, lkey)] = mr
        return 0, (idx, lkey, rkey)

    def _op_dereg_mr(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        key = (self._host(w[0]), w[1])
        mr = c.mrs.get(key)
        if mr is None:
            raise VerbsError(errno.EINVAL, f"no MR {w[1]}")
        self.core.mr_dereg(*key)
        del c.mrs[key]
        self.mr_by_key.pop((mr.host, mr.key), None)
        return 0, ()

    def _op_create_channel(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        if len(fds) != 1:
            raise VerbsError(errno.EINVAL, "ibv_create_comp_channel: the channel's eventfd did not arrive")
        ch = Channel(self.next_channel, os.dup(fds[0]))
        self.next_channel += 1
        self.channels[ch.id] = ch
        c.channels[ch.id] = ch
        return ch.id, ()

    def _op_destroy_channel(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        ch = c.channels.pop(w[0], None)
        if ch is None:
            raise VerbsError(errno.EINVAL, f"no channel {w[0]}")
        if any(cq.channel == ch.id for cq in c.cqs.values()):
            c.channels[ch.id] = ch
            raise VerbsError(errno.EBUSY, "ibv_destroy_comp_channel: CQs still use the channel")
        self.channels.pop(ch.id, None)
        os.close(ch.efd)
        return 0, ()

    def _op_create_cq(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        h, cqe, channel, cookie = self._host(w[0]), w[1], w[2], w[3]
        if channel and channel not in c.channels:
            raise VerbsError(errno.EINVAL, f"no completion channel {channel}")
        handle = self.core.cq_create(h, cqe)
        c.cqs[(h, handle)] = CQ(h, handle, channel, cookie)
        return 0, (handle, cqe)

    def _op_destroy_cq(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        key = (self._host(w[0]), w[1])
        if key not in c.cqs:
            raise VerbsError(errno.EINVAL, f"no CQ {w[1]}")
        self.core.cq_destroy(*key)
        del c.cqs[key]
        return 0, ()

    def _op_create_qp(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        h, pd, scq, rcq, srq, qp_type, sig_all, msw, mrw, mss, mrs, inline = w
        h = self._host(h)
        if (h, pd) not in c.pds:
            raise VerbsError(errno.EINVAL, f"ibv_create_qp: no PD {pd}")
        if srq:  # the SRQ holds the receives: the QP's own receive queue is unused (at least 1 for the core)
            mrw, mrs = max(mrw, 1), max(mrs, 1)
        qpn = self.core.qp_create(h, pd, scq, rcq, msw, mrw, mss, mrs, bool(sig_all), qp_type, srq)
        c.qps[(h, qpn)] = -1
        c.qp_caps[(h, qpn)] = (msw, mrw, mss, mrs, inline)
        c.qp_pd[(h, qpn)] = pd
        return 0, (qpn, *c.qp_caps[(h, qpn)])

    def _op_modify_qp(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        h, qpn, mask = self._host(w[0]), w[1], w[2]
        v = w[3:3 + _QPA]
        if (h, qpn) not in c.qps:
            raise VerbsError(errno.EINVAL, f"no QP 0x{qpn:x}")
        d = {"qp_state": v[P["RSD_QPA_STATE"]], "cur_qp_state": v[P["RSD_QPA_CUR_STATE"]],
             "path_mtu": v[P["RSD_QPA_PATH_MTU"]], "qp_access_flags": v[P["RSD_QPA_ACCESS"]],
             "pkey_index": v[P["RSD_QPA_PKEY_INDEX"]], "port_num": v[P["RSD_QPA_PORT"]],
             "qkey": v[P["RSD_QPA_QKEY"]], "dest_qp_num": v[P["RSD_QPA_DEST_QP"]],
             "rq_psn": v[P["RSD_QPA_RQ_PSN"]], "sq_psn": v[P["RSD_QPA_SQ_PSN"]],
             "max_rd_atomic": v[P["RSD_QPA_MAX_RD_ATOMIC"]],
             "max_dest_rd_atomic": v[P["RSD_QPA_MAX_DEST_RD_ATOMIC"]],
             "min_rnr_timer": v[P["RSD_QPA_MIN_RNR_TIMER"]], "timeout": v[P["RSD_QPA_TIMEOUT"]],
             "retry_cnt": v[P["RSD_QPA_RETRY_CNT"]], "rnr_retry": v[P["RSD_QPA_RNR_RETRY"]]}
        if mask & _IBV_QP_AV:
            d["dest_host"] = self._av_dest(v[P["RSD_QPA_AH_IS_GLOBAL"]], v[P["RSD_QPA_AH_DLID"]], data)
            d["traffic_class"] = v[P["RSD_QPA_AH_TRAFFIC_CLASS"]]
        self.core.qp_modify(h, qpn, d, mask)
        if mask & _IBV_QP_AV:
            c.qps[(h, qpn)] = d["dest_host"]
        return 0, ()

    def _av_dest(self, is_global: int, dlid: int, dgid: bytes) -> int:
        if is_global:
            return self._dest_of_gid(dgid)
        if self.sim.link_layer == "ib":
            for i, host in enumerate(self.hosts):
                if host.lid == dlid:
                    return i
            raise VerbsError(errno.EINVAL, f"no host has LID {dlid}")
        raise VerbsError(errno.EINVAL, "ah_attr.is_global=0 on RoCE: the address needs the GRH (give the "
                         "peer's GID, e.g. ibv_rc_pingpong -g 1)")

    def _op_query_qp(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        h, qpn = self._host(w[0]), w[1]
        if (h, qpn) not in c.qps:
            raise VerbsError(errno.EINVAL, f"no QP 0x{qpn:x}")
        a = self.core.qp_query(h, qpn)
        out = [0] * _QPA
        for k, name in (("qp_state", "STATE"), ("cur_qp_state", "CUR_STATE"), ("path_mtu", "PATH_MTU"),
                        ("qp_access_flags", "ACCESS"), ("pkey_index", "PKEY_INDEX"), ("port_num", "PORT"),
                        ("qkey", "QKEY"), ("dest_qp_num", "DEST_QP"), ("rq_psn", "RQ_PSN"),
                        ("sq_psn", "SQ_PSN"),
                        ("max_rd_atomic", "MAX_RD_ATOMIC"), ("max_dest_rd_atomic", "MAX_DEST_RD_ATOMIC"),
                        ("min_rnr_timer", "MIN_RNR_TIMER"), ("timeout", "TIMEOUT"),
                        ("retry_cnt", "RETRY_CNT"),
                        ("rnr_retry", "RNR_RETRY")):
            out[P["RSD_QPA_" + name]] = a[k]
        return 0, out + list(c.qp_caps[(h, qpn)])

    def _op_destroy_qp(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        key = (self._host(w[0]), w[1])
        if key not in c.qps:
            raise VerbsError(errno.EINVAL, f"no QP 0x{w[1]:x}")
        self.core.qp_destroy(*key)
        del c.qps[key]
        del c.qp_caps[key]
        del c.qp_pd[key]
        slots = c.inline.pop(key, None)
        if slots is not None:
            self.core.mr_dereg(key[0], slots.mr_index)
        return 0, ()

    def _local(self, h: int, addr: int, lkey: int) -> int:
        """The core's address of the program's ``addr`` in the region of ``lkey`` on host ``h`` (an
        unknown key passes through: the NIC completes the work with a protection error)."""
        mr = self.mr_by_key.get((h, lkey))
        return addr if mr is None else (mr.iova + addr - mr.addr) & _MASK64

    def _op_post_send(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        h, qpn, n = self._host(w[0]), w[1], w[2]
        dest = c.qps.get((h, qpn))
        if dest is None:
            raise VerbsError(errno.EINVAL, f"no QP 0x{qpn:x}")
        i = 3
        at = 0  # next inline byte in data
        post = self.core.post_send
        for k in range(n):
            (wr_id, opcode, flags, imm, raddr, rkey, cmp_add, swap, ah, tc_qpn, qkey, nsge) = w[i:i + _SWR]
            i += _SWR
            if flags & _IBV_SEND_INLINE:
                total = sum(w[j + 1] for j in range(i, i + 3 * nsge, 3))
                try:
                    sges = [self._inline_sge(c, h, qpn, data[at:at + total])] if total else []
                except VerbsError as exc:
                    return -exc.err, (k,), str(exc).encode()
                at += total
            else:
                sges = [(self._local(h, w[j], w[j + 2]), w[j + 1], w[j + 2])
                        for j in range(i, i + 3 * nsge, 3)]
            i += 3 * nsge
            if dest >= 0:
                mr = self.mr_by_key.get((dest, rkey))
                if mr is not None:
                    raddr = (mr.iova + raddr - mr.addr) & _MASK64
            ah_host = ah - (1 << 64) if ah >> 63 else ah
            bind = _NO_BIND
            if opcode == _IBV_WR_BIND_MW:
                raddr, bind = server_ext.bind_args(self, c, h, raddr, rkey, cmp_add, swap, tc_qpn)
                cmp_add = swap = tc_qpn = 0
            try:
                post(h, qpn, wr_id, opcode, flags & ~_IBV_SEND_INLINE, imm, sges, raddr, rkey, cmp_add, swap,
                     ah_host, tc_qpn >> 32, tc_qpn & 0xFFFFFFFF, qkey, *bind)
            except Exception as exc:
                err = getattr(exc, "error_code", errno.EINVAL)
                return -int(err), (k,), str(exc).encode()
        return 0, ()

    def _inline_sge(self, c: Client, h: int, qpn: int, data: bytes) -> tuple[int, int, int]:
        cap = c.qp_caps[(h, qpn)][4]
        if len(data) > cap:
            raise VerbsError(errno.EINVAL, f"IBV_SEND_INLINE of {len(data)} bytes on QP 0x{qpn:x}, whose "
                             f"max_inline_data is {cap}")
        slots = c.inline.get((h, qpn))
        if slots is None:
            n = max(1, c.qp_caps[(h, qpn)][0])
            buf = bytearray(n * cap)
            idx, iova, lkey, _ = self.core.mr_reg(h, c.qp_pd[(h, qpn)], buf, 1)  # IBV_ACCESS_LOCAL_WRITE
            slots = c.inline[(h, qpn)] = InlineSlots(idx, lkey, iova, buf, cap, n)
        if self.core.qp_inspect(h, qpn)["sq_outstanding"] >= slots.n:
            raise VerbsError(errno.ENOMEM, f"QP 0x{qpn:x}: the send queue is full ({slots.n} work requests)")
        off = slots.next * slots.slot
        slots.next = (slots.next + 1) % slots.n
        slots.buf[off:off + len(data)] = data
        return slots.iova + off, len(data), slots.lkey

    def _op_post_recv(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        h, qpn, srq, n = self._host(w[0]), w[1], w[2], w[3]
        if srq == 0 and (h, qpn) not in c.qps:
            raise VerbsError(errno.EINVAL, f"no QP 0x{qpn:x}")
        i = 4
        for k in range(n):
            wr_id, nsge = w[i], w[i + 1]
            i += 2
            sges = [(self._local(h, w[j], w[j + 2]), w[j + 1], w[j + 2]) for j in range(i, i + 3 * nsge, 3)]
            i += 3 * nsge
            try:
                if srq:
                    self.core.post_srq_recv(h, srq, wr_id, sges)
                else:
                    self.core.post_recv(h, qpn, wr_id, sges)
            except Exception as exc:
                err = getattr(exc, "error_code", errno.EINVAL)
                return -int(err), (k,), str(exc).encode()
        return 0, ()

    def _poll(self, c: Client, h: int, cq: int, n: int) -> tuple[int, list[int]]:
        wcs = self.core.cq_poll(h, cq, n) if n else []
        rec = c.cqs.get((h, cq))
        if rec is not None and rec.armed:
            rec.seen = max(0, rec.seen - len(wcs))
        out: list[int] = []
        for x in wcs:
            out += [x["wr_id"], x["status"], x["opcode"], x["vendor_err"], x["byte_len"], x["imm_data"],
                    x["qp_num"], x["src_qp"], x["wc_flags"], x["pkey_index"], 0, x["sl"], 0]
        return len(wcs), out

    def _op_poll_cq(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        h, cq, n = self._host(w[0]), w[1], w[2]
        if (h, cq) not in c.cqs:
            raise VerbsError(errno.EINVAL, f"no CQ {cq}")
        if n == 0 or self.core.cq_count(h, cq) > 0:
            return self._poll(c, h, cq, n)
        self._wait(c, ("poll", h, cq, n))
        return None

    def _op_req_notify(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        key = (self._host(w[0]), w[1])
        cq = c.cqs.get(key)
        if cq is None:
            raise VerbsError(errno.EINVAL, f"no CQ {w[1]}")
        if not cq.armed:
            cq.armed = True
            cq.seen = self.core.cq_count(*key)
        return 0, ()

    def _op_get_cq_event(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        ch = c.channels.get(w[0])
        if ch is None:
            raise VerbsError(errno.EINVAL, f"no channel {w[0]}")
        if ch.events:
            return 0, ch.events.pop(0)
        self._wait(c, ("event", ch.id))
        return None

    def _op_idle(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        """Without descriptors: the process is idle until its next call (answered at once). With
        them: it waits until one is readable (its own socket to a peer process)."""
        if not fds:
            c.wait = ("idle",)
            return 0, ()
        mine = [os.dup(fd) for fd in fds]
        for fd in mine:
            self.sel.register(fd, selectors.EVENT_READ, ("fd", c))
        self._wait(c, ("fds", mine))
        return None

    def _op_now(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        return 0, (self.sim.now, self.epoch_ns)

    def _op_create_srq(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        h, pd, max_wr, max_sge, limit = self._host(w[0]), w[1], w[2], w[3], w[4]
        handle = self.core.srq_create(h, pd, max_wr, max_sge, limit)
        c.srqs.add((h, handle))
        return handle, ()

    def _op_modify_srq(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        self.core.srq_modify(self._host(w[0]), w[1], w[2], w[3], w[4])
        return 0, ()

    def _op_query_srq(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        a = self.core.srq_query(self._host(w[0]), w[1])
        return 0, (a["max_wr"], a["max_sge"], a["limit"])

    def _op_destroy_srq(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        key = (self._host(w[0]), w[1])
        self.core.srq_destroy(*key)
        c.srqs.discard(key)
        return 0, ()

    def _op_create_ah(self, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
        return self._av_dest(w[2], w[3], data), ()


_OP_NAMES = {v: k[4:].lower() for k, v in P.items()
             if k.startswith("RSD_")
             and not k.startswith(("RSD_QPA_", "RSD_PROTO", "RSD_SWR", "RSD_WC", "RSD_ELEM_", "RSD_DEVX_"))}


def _link_local(mac: str) -> str:
    b = bytes(int(x, 16) for x in mac.split(":"))
    eui = bytes([b[0] ^ 2]) + b[1:3] + b"\xff\xfe" + b[3:6]
    return str(ipaddress.IPv6Address(b"\xfe\x80" + bytes(6) + eui))


def _pending(listener: socket.socket) -> bool:
    """A connection waits in the listener's backlog."""
    with selectors.DefaultSelector() as sel:
        sel.register(listener, selectors.EVENT_READ)
        return bool(sel.select(0))


def _quiet(fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 - releasing a crashed process's objects: best effort, each one
        pass
