"""A finalizer's verbs call made while the same thread waits for the daemon's answer to another
request: the garbage collector can run anywhere, also inside a request, and a CompChannel left in
a reference cycle (as rdma-core's tests leave theirs) is then destroyed from its ``__del__``. The
program runs the collector inside requests, with such channels pending; it must
neither hang nor mix the two requests' bytes. Prints ``OK``. Run by
tests/fabricd/test_pyverbs_daemon.py under ``rdmasim exec``."""

import gc

import rdmasim.pyverbs as ns

ns.install()
from pyverbs.cq import CQ, CompChannel  # noqa: E402
from pyverbs.device import Context  # noqa: E402
from pyverbs.pd import PD  # noqa: E402

ctx = Context(name="rxe0")


class Holder:
    """A reference cycle holding an open channel: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self
        self.channel = CompChannel(ctx)


from rdmasim.pyverbs import _remote  # noqa: E402

_recv = _remote._recv
pending: list[Holder] = []


def recv_collecting(sock, n):
    """The collector runs while the request waits for its answer (as it may at any allocation)."""
    if pending:
        pending.clear()  # the cycle is garbage now
        gc.collect()
    return _recv(sock, n)


_remote._recv = recv_collecting
for _ in range(20):
    pending.append(Holder())
    pd = PD(ctx)
    cq = CQ(ctx, 8)
    assert cq.poll(1) == (0, [])
    cq.close()
    pd.close()
_remote._recv = _recv
print("OK")
