"""incast-8 in SimPy: a plain queueing model, no RDMA semantics.

Eight senders pace 1000-byte packets at line rate (one per frame serialisation time) over a 1 us
link into one switch egress FIFO that serialises them at 100 Gb/s onto a 1 us link to the receiver,
which counts deliveries. There is no transport: no PSNs, ACKs, retransmission, PFC or congestion
control, no packet contents, and the queue is unbounded (nothing is dropped). Each propagation delay
is one SimPy timeout event; the egress is one SimPy process.

The FIFO is ``simpy.Store`` (the plain choice). Its items are a Python list and every get is
``list.pop(0)``, O(queue length): with 8 senders into 1 the queue grows to ~7/8 of all packets,
so the cost per packet grows with the run. ``--fifo deque`` swaps in a deque-backed Store to show
that this, not SimPy's event loop, is what collapses at 800k packets.

Counted by the model itself: deliveries at the receiver (nothing is retransmitted), frames put on a
"link" (each hop) and SimPy events (the environment's event ids handed out over the run).

Timed: ``run_s`` is ``env.run()`` only; ``import_s`` (importing simpy: paid by a process's first
run only) and ``setup_s`` (building the model, negligible) are reported apart; ``whole_s`` is all
three.
"""

from __future__ import annotations

import collections
import gc
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from incast_common import DELAY_S, PAYLOAD, RATE_BPS, emit, finish, parser  # noqa: E402

SIMULATES = ("plain queueing model (no transport, no packet contents): paced senders, one unbounded "
             "FIFO egress, a delivery counter")

# On-wire bytes of one frame as ns-3/rdmasim would count them is not modelled exactly here: the plain
# model serialises payload + Ethernet/IPv4/UDP headers (14+20+8) + FCS (4) + preamble/IFG (20).
FRAME_WIRE_BYTES = PAYLOAD + 14 + 20 + 8 + 4 + 20


def run(senders: int, packets_per_sender: int, fifo: str = "store") -> dict:
    t_import = time.perf_counter()
    import simpy

    import_s = time.perf_counter() - t_import  # ~0 after the process's first run

    t0 = time.perf_counter()
    ser = FRAME_WIRE_BYTES * 8 / RATE_BPS  # seconds on the wire per frame
    env = simpy.Environment()

    if fifo == "deque":
        class DequeStore(simpy.Store):
            def __init__(self, env: simpy.Environment) -> None:
                super().__init__(env)
                self.items = collections.deque()

            def _do_get(self, event):  # type: ignore[override]
                if self.items:
                    event.succeed(self.items.popleft())
                return None

        queue: simpy.Store = DequeStore(env)
    else:
        queue = simpy.Store(env)

    delivered = [0]
    frames = [0]  # frames put on a link: one per hop
    last_delivery = [0.0]

    def arrive_at_switch(ev: simpy.events.Event) -> None:
        queue.put(ev.value)

    def arrive_at_receiver(ev: simpy.events.Event) -> None:
        delivered[0] += 1
        last_delivery[0] = env.now

    def sender(sid: int):
        for seq in range(packets_per_sender):
            yield env.timeout(ser)  # the frame leaves the sender's port after its serialisation
            frames[0] += 1
            prop = env.timeout(DELAY_S, value=(sid, seq))
            prop.callbacks.append(arrive_at_switch)

    def egress():
        while True:
            pkt = yield queue.get()
            yield env.timeout(ser)
            frames[0] += 1
            prop = env.timeout(DELAY_S, value=pkt)
            prop.callbacks.append(arrive_at_receiver)

    for s in range(senders):
        env.process(sender(s))
    env.process(egress())
    eid0 = next(env._eid)  # SimPy numbers every event it schedules (a private counter, no cost)
    setup_s = time.perf_counter() - t0
    t_run = time.perf_counter()
    env.run()
    run_s = time.perf_counter() - t_run
    events = next(env._eid) - eid0 - 1
    total = senders * packets_per_sender
    return finish({
        "simulator": "simpy",
        "label": f"SimPy {simpy.__version__}: plain queueing model, {fifo} FIFO",
        "simulates": SIMULATES,
        "scenario": f"incast-{senders}",
        "mode": f"plain-{fifo}",
        "placeholder": False,
        "packets": delivered[0],
        "packets_expected": total,
        "packets_retx": 0,
        "payload_bytes": PAYLOAD,
        "events": events,
        "frames": frames[0],
        "ecn_marks": None,
        "cnps": None,
        "qps_per_sender": None,
        "counted": "the model's delivery counter",
        "run_s": run_s,
        "setup_s": setup_s,
        "import_s": import_s,
        "timed_run": "env.run()",
        "timed_whole": "import + model construction + env.run()",
        "sim_time_s": last_delivery[0],
        "notes": "no RDMA semantics: paced senders, one unbounded FIFO egress, delivery counter",
    })


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--fifo", choices=["store", "deque"], default="store",
                   help="switch FIFO: simpy.Store (list, default) or a deque-backed Store")
    a = p.parse_args()
    for i in range(a.repeat):
        gc.collect()  # free the previous run's reference cycles before timing the next
        r = run(a.senders, a.packets_per_sender, a.fifo)
        r["repeat_index"] = i
        emit(r)


if __name__ == "__main__":
    main()
