"""The fabric daemon's per-process objects: what a connected process owns (its registered memory,
CQs, QPs, completion channels) and the error a refused verbs call raises.  The daemon (server.py)
and the modules that add requests beside it (server_ext.py, ...) share them; none of them imports
the daemon itself, which types itself to them as ``DaemonLike``."""

from __future__ import annotations

import mmap
import socket
from dataclasses import dataclass, field
from typing import Any, Protocol


class DaemonLike(Protocol):
    """What the request modules beside the daemon reach of it."""

    core: Any
    hosts: Any
    clients: Any
    channels: Any
    mr_by_key: Any
    next_channel: int

    def _host(self, *args: Any) -> Any: ...
    def _wait(self, *args: Any) -> Any: ...
    def _op_create_qp(self, *args: Any) -> Any: ...
    def _op_destroy_qp(self, *args: Any) -> Any: ...


class VerbsError(Exception):
    """A verbs call the daemon refuses: answered with ``-errno`` and this message."""

    def __init__(self, err: int, msg: str) -> None:
        super().__init__(msg)
        self.err = err


@dataclass
class MR:
    host: int
    index: int
    key: int
    addr: int  # the program's address of the region
    iova: int  # the core's address of it (what goes on the wire)
    length: int
    view: memoryview


@dataclass
class CQ:
    host: int
    handle: int
    channel: int  # 0: none
    cookie: int  # the program's struct ibv_cq address, returned with its events
    armed: bool = False
    seen: int = 0  # completions the CQ held when it was armed, less those polled since


@dataclass
class Channel:
    id: int
    efd: int
    events: list[tuple[int, int, int]] = field(default_factory=list)  # (host, cq, cookie)


@dataclass
class InlineSlots:
    """Daemon memory that IBV_SEND_INLINE bytes are copied to: the NIC reads a WR's bytes when it
    builds the packets, after the program may have reused its buffer. Slot i of n is reused n posts
    later, when the send queue (at most n entries) has retired the WR that used it."""

    mr_index: int
    lkey: int
    iova: int
    buf: bytearray
    slot: int
    n: int
    next: int = 0


@dataclass
class Client:
    """One connected process and what it owns (released when it goes)."""

    sock: socket.socket
    pid: int = 0
    holder: bool = False  # rdmasim exec holding the daemon open: never waits, never blocks time
    # ("poll", host, cq, n) | ("event", channel) | ("fds", [descriptors]) | ("idle",): what the process
    # waits for (None: it runs, and simulated time stands still)
    wait: tuple[Any, ...] | None = None
    last_call: float = 0.0  # time.monotonic() of its last request or answer
    wait_seq: int = 0  # when its wait began, in the daemon's count of waits (the oldest wakes first)
    maps: dict[tuple[int, int], mmap.mmap] = field(default_factory=dict)
    pds: set[tuple[int, int]] = field(default_factory=set)
    mrs: dict[tuple[int, int], MR] = field(default_factory=dict)  # (host, index)
    cqs: dict[tuple[int, int], CQ] = field(default_factory=dict)
    qps: dict[tuple[int, int], int] = field(default_factory=dict)  # (host, qpn) -> dest host (-1: none yet)
    qp_caps: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict)  # as ibv_create_qp answered
    qp_pd: dict[tuple[int, int], int] = field(default_factory=dict)
    # a QP's memory for inline data: one slot of max_inline_data bytes per send queue entry
    inline: dict[tuple[int, int], InlineSlots] = field(default_factory=dict)
    srqs: set[tuple[int, int]] = field(default_factory=set)
    channels: dict[int, Channel] = field(default_factory=dict)
    ext: dict[str, Any] = field(default_factory=dict)  # what modules beside this one hold (server_ext)
