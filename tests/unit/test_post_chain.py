"""A next_wr chain goes to the core in one call (QP.post_send -> rdmasim/_post.pxi SendPoster): it must
post, fail and report bad_wr exactly as posting the same WRs one at a time."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_verbs_api import Conn, drain, make_conn, write_wr  # noqa: E402

from rdmasim.verbs import SendWR  # noqa: E402


def _break_opcode(w: SendWR) -> None:
    w.opcode = 99  # the core's EINVAL


def _break_wr_id(w: SendWR) -> None:
    w.wr_id = -1  # a Python check


def _break_flags(w: SendWR) -> None:
    w.send_flags = 1 << 20  # unknown bit: a Python check


def _break_rkey(w: SendWR) -> None:
    w.rkey = 1.5  # type: ignore[assignment]


def _post(c: Conn, wrs: list[SendWR], chained: bool) -> tuple[str, str, list[SendWR], list[int], bytes]:
    """Post ``wrs`` as one chain or one by one (stopping at the first error, as a caller would);
    returns the error type, its message, bad_wr, completed wr_ids and the receiver's memory."""
    bad: list[SendWR] = []
    err: Exception | None = None
    if chained:
        for a, b in zip(wrs, wrs[1:], strict=False):
            a.next_wr = b
        try:
            c.qa.post_send(wrs[0], bad)
        except Exception as exc:
            err = exc
    else:
        for w in wrs:
            try:
                c.qa.post_send(w, bad)
            except Exception as exc:
                err = exc
                break
    c.sim.run_until_idle()
    assert err is not None
    # one by one, each WR is "work request 0" of its own post: compare the rest of the message
    msg = str(err).replace(f"work request {len(bad) and wrs.index(bad[0])}", "work request 0")
    return type(err).__name__, msg, bad, [w.wr_id for w in drain(c.cq_a)], c.dst.read(2000)


@pytest.mark.parametrize("breaker", [_break_opcode, _break_wr_id, _break_flags, _break_rkey])
@pytest.mark.parametrize("at", [0, 3, 7])
def test_chain_fails_as_one_by_one(breaker: Callable[[SendWR], None], at: int) -> None:
    out = []
    for chained in (False, True):
        c = make_conn()
        wrs = [write_wr(c, i, 100, off=i * 100) for i in range(8)]
        breaker(wrs[at])
        kind, msg, bad, done, mem = _post(c, wrs, chained)
        assert bad == [wrs[at]]
        assert done == list(range(at))  # the WRs before the bad one were posted and completed
        out.append((kind, msg, done, mem))
    assert out[0] == out[1]


def test_chain_past_a_full_send_queue_posts_as_many_as_fit() -> None:
    out = []
    for chained in (False, True):
        c = make_conn()  # max_send_wr=16
        wrs = [write_wr(c, i, 10, off=i * 10) for i in range(20)]
        kind, msg, bad, done, mem = _post(c, wrs, chained)
        assert kind == "PyverbsRDMAError" and "full" in msg
        assert bad == [wrs[16]]
        out.append((done, mem))
    assert out[0] == out[1] and out[0][0] == list(range(16))
