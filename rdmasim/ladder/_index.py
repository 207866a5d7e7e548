"""Whole-trace facts a window needs, computed with numpy over every record at once.

A capped trace has 2 million records and a window shows a few dozen frames. Which frames there
are, which of them were lost, where the first NAK or timeout is and how many frames come after the
window are all found here without a Python step per record; the ladder model
(:mod:`rdmasim.ladder._model`) then builds rows only for the records the window draws.

Frames are matched with what ended them as a link does it: each link is a FIFO, so the frames put
on a link and not lost on it arrive in the order they were sent; a frame lost on a link has its
DROP record right after its TX record (the link decides at transmit time); a frame a host threw
away after delivery (unknown QP) has a DROP record at that host right after its RX.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rdmasim import trace as tr

_OP_ACK = 0x11
_OP_ATOMIC_ACK = 0x12
_OP_CNP = 0x81


def request_mask(opcode: np.ndarray) -> np.ndarray:
    """Vector form of :func:`rdmasim.ladder._model.is_request`."""
    op = opcode.astype(np.int64)
    low = np.where(op < 0x40, op & 0x1F, -1)
    return ((low >= 0) & (low <= 0x0C)) | np.isin(low, (0x13, 0x14, 0x16, 0x17, 0x1C, 0x1D))


def response_mask(opcode: np.ndarray) -> np.ndarray:
    """Vector form of :func:`rdmasim.ladder._model.is_response`."""
    return (opcode >= 0x0D) & (opcode <= 0x12)


@dataclass
class Index:
    """Per-record facts of a trace's records (invariant-checker records removed).

    ``end[i]``: for a TX record, the RX or DROP record that ended the frame (-1: still in flight
    when the trace ended). ``tx_of[i]``: for an RX or DROP record, the TX record of its frame
    (-1: none, e.g. the frame was sent before the trace started). ``event``: the record is a row
    of the ladder (a frame or a local event). ``nak``/``data``: frame styles the anchors look for.
    ``retx``: a data frame whose PSN its QP had sent before.
    """

    records: np.ndarray
    end: np.ndarray
    tx_of: np.ndarray
    event: np.ndarray
    frame: np.ndarray
    dropped: np.ndarray
    nak: np.ndarray
    data: np.ndarray
    retx: np.ndarray

    @property
    def t(self) -> np.ndarray:
        return self.records["t_ps"]


def _fifo_match(pushes: np.ndarray, pops: np.ndarray, link: np.ndarray, n: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per link, the k-th frame received matches the oldest sent one not yet received; a receive
    when nothing is in flight matches nothing. Returns (matched pops, their pushes)."""
    if not len(pushes) or not len(pops):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    ops = np.concatenate([pushes, pops])
    is_pop = np.concatenate([np.zeros(len(pushes), bool), np.ones(len(pops), bool)])
    key = (link[ops] + 1) * (n + 1) + ops
    order = np.argsort(key, kind="stable")
    ops, is_pop, lk = ops[order], is_pop[order], link[ops[order]]
    new_group = np.ones(len(ops), bool)
    new_group[1:] = lk[1:] != lk[:-1]
    group = np.cumsum(new_group) - 1
    starts = np.flatnonzero(new_group)

    def seg_cumsum(x: np.ndarray) -> np.ndarray:
        c = np.cumsum(x)
        base = np.concatenate([[0], c])[starts]
        return c - base[group]

    pushed = seg_cumsum(~is_pop)       # pushes up to and including this op, in its link
    popped = seg_cumsum(is_pop)        # pops up to and including this op
    pk = np.flatnonzero(is_pop)
    p_before, k = pushed[pk], popped[pk]
    g = group[pk]
    big = 4 * (n + 2)
    # successful pops so far: S_k = min(S_(k-1) + 1, P_k) = k + min(0, min_(j<=k) (P_j - j))
    running = np.minimum.accumulate((p_before - k) - g * big) + g * big
    s = k + np.minimum(0, running)
    s_prev = np.concatenate([[0], s[:-1]])
    s_prev[np.concatenate([[True], g[1:] != g[:-1]])] = 0
    ok = s > s_prev
    # the s-th push of the link
    push_pos = np.flatnonzero(~is_pop)
    push_group = group[push_pos]
    first_push = np.searchsorted(push_group, g[ok])
    return ops[pk[ok]], ops[push_pos[first_push + s[ok] - 1]]


def build_index(recs: np.ndarray) -> Index:
    """The :class:`Index` of ``recs`` (records without invariant-checker kinds, in time order)."""
    n = len(recs)
    kind = recs["kind"]
    link = recs["link"].astype(np.int64)
    end = np.full(n, -1, np.int64)
    tx_of = np.full(n, -1, np.int64)
    frame = kind == tr.TX
    tx = np.flatnonzero(frame)
    # lost on a link: the latest frame put on that link before the DROP record
    dl = np.flatnonzero((kind == tr.DROP) & (link >= 0))
    dropped = np.zeros(n, bool)
    if len(tx) and len(dl):
        key_tx = (link[tx] + 1) * (n + 1) + tx
        s = np.argsort(key_tx, kind="stable")
        ks, txs = key_tx[s], tx[s]
        p = np.searchsorted(ks, (link[dl] + 1) * (n + 1) + dl) - 1
        ok = p >= 0
        ok[ok] = link[txs[p[ok]]] == link[dl[ok]]
        lost_tx, by = txs[p[ok]], dl[ok]
        first = np.unique(lost_tx, return_index=True)[1]  # one DROP per frame
        lost_tx, by = lost_tx[first], by[first]
        end[lost_tx] = by
        tx_of[by] = lost_tx
        dropped[lost_tx] = True
    rx = np.flatnonzero(kind == tr.RX)
    pops, pushes = _fifo_match(tx[~dropped[tx]], rx, link, n)
    end[pushes] = pops
    tx_of[pops] = pushes
    # thrown away by a host after delivery: the frame of the latest matched RX at that host
    hd = np.flatnonzero((kind == tr.DROP) & (link < 0))
    if len(hd) and len(pops):
        node = recs["node"].astype(np.int64)
        mr = np.sort(pops)
        key_rx = node[mr] * (n + 1) + mr
        s = np.argsort(key_rx, kind="stable")
        ks, mrs = key_rx[s], mr[s]
        p = np.searchsorted(ks, node[hd] * (n + 1) + hd) - 1
        ok = p >= 0
        ok[ok] = node[mrs[p[ok]]] == node[hd[ok]]
        tx_of[hd[ok]] = tx_of[mrs[p[ok]]]
    event = ~np.isin(kind, (tr.DROP, tr.RX, tr.ACCEPT, tr.PFC))
    op = recs["opcode"]
    control = frame & (recs["pkt_kind"] == 1)
    acks = frame & ~control & ((op == _OP_ACK) | (op == _OP_ATOMIC_ACK))
    syn_kind = recs["syndrome"] & 0xE0
    nak = acks & ((syn_kind == 0x60) | (syn_kind == 0x20))
    data = frame & ~control & ~acks & (op != _OP_CNP)
    retx = np.zeros(n, bool)
    di = np.flatnonzero(data)
    if len(di):
        key = ((recs["node"][di].astype(np.uint64) << np.uint64(48))
               | (recs["qpn"][di].astype(np.uint64) << np.uint64(24)) | recs["psn"][di].astype(np.uint64))
        first = np.unique(key, return_index=True)[1]
        retx[di] = True
        retx[di[first]] = False
    return Index(recs, end, tx_of, event, frame, dropped, nak, data, retx)
