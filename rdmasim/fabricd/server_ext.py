"""The fabric daemon's requests beyond the core verbs (rdmasim/fabricd/proto.h, ops from 64 on):
``ibv_query_device_ex``, ``ibv_resize_cq``, memory windows and asynchronous events.

``OPS`` maps a request's name to its handler ``(daemon, client, words, bytes, fds)``; the daemon
looks there first. ``fire`` runs after each stretch of simulated time (it queues the asynchronous
events that became due) and ``release`` when a process goes.

Asynchronous events, as Linux rxe raises them: ``IBV_EVENT_SRQ_LIMIT_REACHED`` when an armed SRQ
falls below its limit, ``IBV_EVENT_QP_LAST_WQE_REACHED`` when a QP attached to an SRQ enters the
error state. A device's events go to the process's first open context of that device; each
context's queue is a channel of the daemon (waited on as ``ibv_get_cq_event`` is) whose eventfd
is the context's ``async_fd``.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from typing import Any

from rdmasim.fabricd import proto
from rdmasim.fabricd.objects import Channel, Client, VerbsError
from rdmasim.fabricd.objects import DaemonLike as Daemon

P = proto.C
_MASK64 = (1 << 64) - 1
_IBV_ACCESS_ZERO_BASED = 1 << 5
_IBV_QPS_ERR = 6
_IBV_EVENT_SRQ_LIMIT_REACHED = 15
_IBV_EVENT_QP_LAST_WQE_REACHED = 16


@dataclass
class ExtState:
    """What one process holds of this module's objects."""

    mws: dict[tuple[int, int], int] = field(default_factory=dict)  # (host, index) -> current rkey
    queues: dict[int, int] = field(default_factory=dict)  # async queue (channel id) -> host
    qp_srq: dict[tuple[int, int], int] = field(default_factory=dict)  # (host, qpn) -> srq, QPs on an SRQ
    last_wqe_sent: set[tuple[int, int]] = field(default_factory=set)


def state(c: Client) -> ExtState:
    st = c.ext.get("verbs_ext")
    if st is None:
        st = c.ext["verbs_ext"] = ExtState()
    return st


def _host(d: Daemon, h: int) -> int:
    return d._host(h)


# ---- ibv_query_device_ex ----
def op_query_device_ex(d: Daemon, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
    from rdmasim.pyverbs._devices import device_attr_ex

    a = device_attr_ex(d.hosts[_host(d, w[0])])
    vals = {
        "CAP_FLAGS_EX": a.device_cap_flags_ex, "PHYS_PORT_CNT_EX": a.phys_port_cnt_ex,
        "ODP_GENERAL": a.odp_caps.general_caps, "ODP_RC": a.odp_caps.rc_odp_caps,
        "ODP_UC": a.odp_caps.uc_odp_caps, "ODP_UD": a.odp_caps.ud_odp_caps, "XRC_ODP": a.xrc_odp_caps,
        "TS_MASK": a.completion_timestamp_mask, "CORE_CLOCK": a.hca_core_clock,
        "RAW_PACKET_CAPS": a.raw_packet_caps, "MAX_WQ_TYPE_RQ": a.max_wq_type_rq,
        "MAX_DM_SIZE": a.max_dm_size, "MAX_TSO": a.tso_caps.max_tso, "TSO_QPTS": a.tso_caps.supported_qpts,
    }
    out = [0] * P["RSD_DEVX_WORDS"]
    for k, v in vals.items():
        out[P["RSD_DEVX_" + k]] = v
    return 0, out


# ---- ibv_resize_cq ----
def op_resize_cq(d: Daemon, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:

    h, cq = _host(d, w[0]), w[1]
    cqe = w[2] - (1 << 64) if w[2] >> 63 else w[2]
    if (h, cq) not in c.cqs:
        raise VerbsError(errno.EINVAL, f"ibv_resize_cq: no CQ {cq}")
    if cqe < 1:
        raise VerbsError(errno.EINVAL, f"ibv_resize_cq: cqe {cqe}; at least 1")
    d.core.cq_resize(h, cq, cqe)  # the core refuses fewer than the CQ holds, or above max_cqe
    return 0, (cqe,)


# ---- memory windows ----
def op_alloc_mw(d: Daemon, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:

    h, pd, mw_type = _host(d, w[0]), w[1], w[2]
    if (h, pd) not in c.pds:
        raise VerbsError(errno.EINVAL, f"ibv_alloc_mw: no PD {pd}")
    idx, rkey = d.core.mw_alloc(h, pd, mw_type)
    state(c).mws[(h, idx)] = rkey
    return idx, (rkey,)


def op_dealloc_mw(d: Daemon, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:

    key = (_host(d, w[0]), w[1])
    st = state(c)
    if key not in st.mws:
        raise VerbsError(errno.EINVAL, f"ibv_dealloc_mw: no memory window {w[1]}")
    d.core.mw_dealloc(*key)
    d.mr_by_key.pop((key[0], st.mws.pop(key)), None)
    return 0, ()


def bind_args(d: Daemon, c: Client, h: int, addr: int, new_rkey: int, length: int, access_lkey: int,
              old_rkey: int) -> tuple[int, tuple[int, int, int, int]]:
    """An IBV_WR_BIND_MW's words (proto.h): the core's address of the window's start and the core's
    bind arguments. The program's addresses under the window's new key translate as its region's
    (a zero-based window is addressed by offset: nothing to translate)."""
    lkey, access = access_lkey & 0xFFFFFFFF, access_lkey >> 32
    mr = d.mr_by_key.get((h, lkey))
    iova = (mr.iova + addr - mr.addr) & _MASK64 if mr is not None else addr
    old_rkey &= 0xFFFFFFFF
    st = state(c)
    for k, v in st.mws.items():
        # the window of that index, under the key the daemon last gave it: a type 2 window's
        # ibv_mw.rkey keeps its first key in the program (the bind's new key is the work request's)
        if k[0] == h and v >> 8 == old_rkey >> 8:
            old_rkey = v
            d.mr_by_key.pop((h, v), None)
            if mr is not None and not access & _IBV_ACCESS_ZERO_BASED and length:
                d.mr_by_key[(h, new_rkey & 0xFFFFFFFF)] = mr
            st.mws[k] = (v & ~0xFF) | (new_rkey & 0xFF)
            break
    return iova, (old_rkey, lkey, access, length)


# ---- asynchronous events ----
def op_open_async(d: Daemon, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:

    h = _host(d, w[0])
    if len(fds) != 1:
        raise VerbsError(errno.EINVAL, "ibv_open_device: the async eventfd did not arrive")
    ch = Channel(d.next_channel, os.dup(fds[0]))
    d.next_channel += 1
    d.channels[ch.id] = ch
    c.channels[ch.id] = ch  # closed with the process's channels when it goes
    state(c).queues[ch.id] = h
    return ch.id, ()


def op_close_async(d: Daemon, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:

    st = state(c)
    if w[0] not in st.queues:
        raise VerbsError(errno.EINVAL, f"no async event queue {w[0]}")
    del st.queues[w[0]]
    ch = c.channels.pop(w[0])
    d.channels.pop(ch.id, None)
    os.close(ch.efd)
    return 0, ()


def op_get_async_event(d: Daemon, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:

    if w[0] not in state(c).queues:
        raise VerbsError(errno.EINVAL, f"no async event queue {w[0]}")
    ch = c.channels[w[0]]
    if ch.events:
        return 0, ch.events.pop(0)
    d._wait(c, ("event", ch.id))  # answered by the daemon's loop when fire() queues one
    return None


def op_memwait(d: Daemon, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
    """The process spins on ``length`` bytes at ``addr`` of its registered memory: it waits until they
    change (answered 1) or the fabric goes quiet (0), as a poll of an empty CQ does."""
    addr = w[0]
    for mr in c.mrs.values():
        if mr.addr <= addr < mr.addr + mr.length:
            off = addr - mr.addr
            d._wait(c, ("ext", _changed(mr.view, off, min(w[1], 64, mr.length - off))))
            return None
    return 0, ()  # not registered memory: nothing the fabric writes


def _changed(view: memoryview, off: int, length: int) -> Any:
    """A condition: the bytes ``view[off:off + length]`` differ from what they are now."""
    old = bytes(view[off:off + length])
    return lambda: bytes(view[off:off + length]) != old


def op_create_qp(d: Daemon, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
    """ibv_create_qp as the daemon has it, remembering a QP's SRQ (its LAST_WQE_REACHED event)."""
    out = d._op_create_qp(c, w, data, fds)
    if w[4]:
        state(c).qp_srq[(_host(d, w[0]), out[1][0])] = w[4]
    return out


def op_destroy_qp(d: Daemon, c: Client, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
    out = d._op_destroy_qp(c, w, data, fds)
    st = state(c)
    key = (_host(d, w[0]), w[1])
    st.qp_srq.pop(key, None)
    st.last_wqe_sent.discard(key)
    return out


def _queue_event(d: Daemon, c: Client, h: int, ev: tuple[int, int, int]) -> None:
    st = state(c)
    for qid, qh in st.queues.items():
        if qh == h:
            ch = d.channels.get(qid)
            if ch is not None:
                ch.events.append(ev)
                try:
                    os.write(ch.efd, (1).to_bytes(8, "little"))
                except OSError:
                    pass
            return


def fire(d: Daemon) -> None:
    """Queue the asynchronous events that became due since the last look."""
    for c in list(d.clients.values()):
        st = c.ext.get("verbs_ext")
        if st is None or not st.queues:
            continue
        for (h, srq) in sorted(c.srqs):
            while d.core.srq_take_limit_event(h, srq):
                _queue_event(d, c, h, (_IBV_EVENT_SRQ_LIMIT_REACHED, P["RSD_ELEM_SRQ"], srq))
        for (h, qpn) in sorted(st.qp_srq):
            if (h, qpn) in st.last_wqe_sent:
                continue
            if d.core.qp_inspect(h, qpn)["state"] == _IBV_QPS_ERR:
                st.last_wqe_sent.add((h, qpn))
                _queue_event(d, c, h, (_IBV_EVENT_QP_LAST_WQE_REACHED, P["RSD_ELEM_QP"], qpn))


def release(d: Daemon, c: Client) -> None:
    """A process went: deallocate its windows (its channels close with the rest)."""
    st = c.ext.get("verbs_ext")
    if st is None:
        return
    for (h, idx), rkey in sorted(st.mws.items()):
        try:
            d.core.mw_dealloc(h, idx)
        except Exception:  # noqa: BLE001 - best effort, as the daemon's own release
            pass
        d.mr_by_key.pop((h, rkey), None)
    st.mws.clear()


OPS = {
    "query_device_ex": op_query_device_ex,
    "resize_cq": op_resize_cq,
    "alloc_mw": op_alloc_mw,
    "dealloc_mw": op_dealloc_mw,
    "open_async": op_open_async,
    "close_async": op_close_async,
    "get_async_event": op_get_async_event,
    "memwait": op_memwait,
    "create_qp": op_create_qp,
    "destroy_qp": op_destroy_qp,
}
