"""Packet and event traces recorded by the C core.

Tracing is off by default. ``sim.trace()`` starts it and returns a :class:`Trace`; the C core
appends one fixed-layout record (64 bytes, csrc/include/rdmasim/trace.h) per event into a buffer
that Python drains in bulk into a numpy structured array. Python never runs per packet.

Event kinds:

* ``TX``: a frame put on a link (transmit start, the same instant pcap captures it);
* ``DROP``: a frame lost (``reason``: ``loss``, ``drop-list``, ``unknown-qp``, ...), at ``node``;
* ``RX``: a frame delivered to ``node`` (its last bit arrived) from ``peer``;
* ``POST_SEND`` / ``POST_RECV``: a work request accepted (``wr_id``, ``len``, ``verb_op``);
* ``COMPLETE``: a work request retired (``status``, ``verb_op`` = WC opcode, flag ``CQE``);
* ``TIMEOUT``: the retransmit timer fired (``psn`` = oldest unacknowledged PSN);
* ``RETRY``: the requester went back to ``psn`` (``reason``: timeout / NAK / RNR;
  ``aux``: retries left, of ``rnr_retry`` after an RNR NAK (7: forever), else of ``retry_cnt``);
* ``ACCEPT``: the responder accepted request ``psn`` in order (``aux``: the PSN it expects next);
* ``PFC``: a switch decided to pause (``flags`` 1, XOFF) or resume (0, XON) ingress port ``msn``,
  ``priority``; ``len`` = shared bytes of that queue, ``psn`` = its headroom bytes, ``aux`` = the
  XOFF threshold at that moment.

Memory is bounded by ``max_records`` (default :data:`DEFAULT_MAX_RECORDS`, 64 bytes each): the
first ``max_records`` records are kept, the events after them are counted
(:attr:`Trace.not_recorded`) and a :class:`TraceRecordsNotKept` warning says how many. Pass
``max_records=None`` for no cap, or stream: ``drain(keep=False)`` returns each chunk without
keeping it (the cap still counts every record since the trace started).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rdmasim import _core
from rdmasim.codec import OPCODE_NAMES

if TYPE_CHECKING:
    from rdmasim._protocols import CoreSim as Simulator  # what a trace needs of a simulation

#: numpy dtype of one record
TRACE_DTYPE: np.dtype = _core.TRACE_DTYPE

#: Records a trace keeps unless told otherwise (``sim.trace(max_records=...)``): 2 million, 128 MB.
DEFAULT_MAX_RECORDS = 2_000_000


class TraceRecordsNotKept(UserWarning):
    """A trace reached its ``max_records`` cap (or ran out of memory): later events were counted,
    not kept."""

TX, DROP, RX, POST_SEND, POST_RECV, COMPLETE, TIMEOUT, RETRY, ACCEPT, PFC = range(1, 11)

#: event kind -> name
KIND_NAMES: dict[int, str] = {
    TX: "TX", DROP: "DROP", RX: "RX", POST_SEND: "POST_SEND", POST_RECV: "POST_RECV",
    COMPLETE: "COMPLETE", TIMEOUT: "TIMEOUT", RETRY: "RETRY", ACCEPT: "ACCEPT", PFC: "PFC",
}
#: DROP reason code -> name
DROP_REASONS: dict[int, str] = {
    0: "", 1: "loss", 2: "drop-list", 3: "unknown-qp", 4: "buffer-full", 5: "no-route", 6: "link-down",
}
#: DROP reason name -> code
DROP_REASON_CODES: dict[str, int] = {name: code for code, name in DROP_REASONS.items() if name}
#: RETRY cause code -> name
RETRY_CAUSES: dict[int, str] = {0: "", 1: "timeout", 2: "NAK", 3: "RNR", 4: "implied NAK"}
#: `node`/`peer` values of switches are this base | the switch index (hosts: their index)
SWITCH_NODE_BASE = 0x8000
#: node kind code -> name
NODE_KINDS: dict[int, str] = {0: "host", 1: "switch", 255: ""}

FLAG_ACKREQ = 0x01
FLAG_SE = 0x02
FLAG_CQE = 0x04
FLAG_RECV = 0x08
FLAG_SIGNALED = 0x10
FLAG_SELECTIVE = 0x20  # RETRY of an IRN QP: only the lost PSNs are resent

NO_NODE = 0xFFFF
ECN_CE = 3


def kind_name(kind: int) -> str:
    """Name of an event kind code (``"TX"``, ``"DROP"``, ...)."""
    return KIND_NAMES.get(int(kind), f"KIND_{int(kind)}")


def opcode_name(opcode: int) -> str:
    """Full BTH opcode name (rdmasim.codec.OPCODE_NAMES), e.g. ``RDMA_WRITE_FIRST``."""
    return OPCODE_NAMES.get(int(opcode), f"OPCODE_0x{int(opcode):02x}")


def _table(names: dict[int, str], other: Any) -> np.ndarray:
    """``names`` as an object array over every uint8 code (``other(code)`` where it has none)."""
    return np.array([names[c] if c in names else other(c) for c in range(256)], dtype=object)


class Trace:
    """Records of one simulation since tracing was enabled.

    Create with :meth:`rdmasim.Simulator.trace`. Records stay in the C buffer until drained;
    :meth:`to_numpy` drains and returns everything kept so far. Use as a context manager to stop
    recording at the end of a block.
    """

    def __init__(self, sim: Simulator | None, max_records: int | None = None,
                 records: np.ndarray | None = None, node_names: dict[int, str] | None = None) -> None:
        self.sim = sim
        self.max_records = max_records
        self._chunks: list[np.ndarray] = [] if records is None else [np.asarray(records, TRACE_DTYPE)]
        self._names = dict(node_names or {})
        self._active = False
        self._counts = (0 if records is None else len(records), 0, max_records or 0)
        self._warned = 0  # not_recorded count the last warning reported
        if sim is not None:
            if max_records is not None and max_records < 1:
                raise ValueError(f"max_records must be >= 1 or None (no cap), got {max_records}")
            _core.trace_enable(sim._core, max_records or 0)
            self._active = True

    # ---- recording ----
    @property
    def active(self) -> bool:
        """True while the C core is recording into this trace."""
        return self._active

    def drain(self, keep: bool = True) -> np.ndarray:
        """Move the records waiting in the C buffer into this trace and return just those.

        ``keep=False`` returns them without keeping them in the trace: a long run streaming its
        records elsewhere (to a file, or reduced as it goes) then holds only one chunk at a time."""
        if not self._active or self.sim is None:
            return np.empty(0, TRACE_DTYPE)
        new = _core.trace_drain(self.sim._core)
        self._counts = _core.trace_counts(self.sim._core)
        if len(new) and keep:
            self._chunks.append(new)
        if self._counts[1] and not self._warned:
            self._warn()
        return new

    def _warn(self) -> None:
        lost = int(self._counts[1])
        cap = f"its cap of max_records={self.max_records}" if self.max_records else "no memory left"
        warnings.warn(
            f"trace: {lost} event(s) so far were not recorded: {cap} was reached after "
            f"{int(self._counts[0])} records (the first ones are kept; Trace.not_recorded counts the "
            f"rest). Pass a larger max_records, or max_records=None and drain(keep=False) to stream.",
            TraceRecordsNotKept, stacklevel=3)
        self._warned = lost

    def stop(self) -> None:
        """Drain what is left and stop recording (the C buffer is freed)."""
        if self._active and self.sim is not None:
            self.drain()
            self._names.update(self.node_names)
            _core.trace_disable(self.sim._core)
            self._active = False
            if self._counts[1] > self._warned:  # the final count, if more were lost since the warning
                self._warn()

    def __enter__(self) -> Trace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def recorded(self) -> int:
        """Records kept since tracing was enabled."""
        self.drain()
        return int(self._counts[0])

    @property
    def not_recorded(self) -> int:
        """Events that happened but were not kept: the cap was reached (or memory ran out)."""
        self.drain()
        return int(self._counts[1])

    # ---- reading ----
    def to_numpy(self) -> np.ndarray:
        """Every record kept so far, in time order, as a numpy structured array (TRACE_DTYPE)."""
        self.drain()
        if not self._chunks:
            return np.empty(0, TRACE_DTYPE)
        if len(self._chunks) > 1:
            self._chunks = [np.concatenate(self._chunks)]
        return self._chunks[0]

    def __len__(self) -> int:
        return len(self.to_numpy())

    @property
    def node_names(self) -> dict[int, str]:
        """Node index -> name (host names of the simulation)."""
        names = dict(self._names)
        if self.sim is not None:
            names.update({h.index: h.name for h in self.sim.hosts.values()})
            names.update({SWITCH_NODE_BASE | sw.index: sw.name
                          for sw in getattr(self.sim, "switches", {}).values()})
        return names

    def node_name(self, index: int) -> str:
        """The name of node ``index`` (``h<index>`` when unknown)."""
        return self.node_names.get(int(index), f"h{int(index)}")

    def to_pandas(self) -> Any:
        """A pandas DataFrame of the records with readable name columns added
        (``kind_name``, ``opcode_name``, ``node_name``, ``peer_name``, ``reason_name``).

        Needs pandas (not a dependency of rdmasim); raises ImportError naming it otherwise.
        """
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Trace.to_pandas() needs pandas: pip install pandas "
                              "(or use Trace.to_numpy())") from None
        a = self.to_numpy()
        df = pd.DataFrame({name: a[name] for name in TRACE_DTYPE.names if name != "reserved"})
        # name columns by table lookup (numpy take), not a Python call per record: a capped trace
        # has 2 million records
        kind = a["kind"]
        df.insert(1, "kind_name", _table(KIND_NAMES, lambda k: f"KIND_{k}")[kind])
        framed = np.isin(kind, (TX, DROP, RX))
        opcodes = _table(OPCODE_NAMES, lambda o: f"OPCODE_0x{o:02x}")
        df["opcode_name"] = np.where(framed, opcodes[a["opcode"]], "")
        nodes = np.full(1 << 16, "", dtype=object)
        for i, n in self.node_names.items():
            if 0 <= i < 1 << 16:
                nodes[i] = n
        df["node_name"] = nodes[a["node"]]
        df["peer_name"] = nodes[a["peer"]]
        reason = a["reason"]
        df["reason_name"] = np.where(kind == DROP, _table(DROP_REASONS, str)[reason],
                                     np.where(kind == RETRY, _table(RETRY_CAUSES, str)[reason], ""))
        return df

    # ---- files ----
    def save(self, path: str | Path) -> Path:
        """Write the records and node names to a ``.npz`` file (read back with :func:`load`)."""
        path = Path(path)
        names = self.node_names
        idx = np.array(sorted(names), dtype=np.int64)
        np.savez_compressed(path, records=self.to_numpy(), node_index=idx,
                            node_name=np.array([names[i] for i in idx], dtype=str))
        return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")

    def __repr__(self) -> str:
        state = "recording" if self._active else "stopped"
        lost = f", {self.not_recorded} not recorded" if self._counts[1] else ""
        return f"Trace({len(self)} records, {state}, cap={self.max_records}{lost})"


def load(path: str | Path) -> Trace:
    """Read a trace written by :meth:`Trace.save`."""
    with np.load(path, allow_pickle=False) as z:
        recs = z["records"]
        if recs.dtype != TRACE_DTYPE:
            recs = recs.astype(TRACE_DTYPE)
        names = {int(i): str(n) for i, n in zip(z["node_index"], z["node_name"], strict=True)}
    return Trace(None, records=recs, node_names=names)
