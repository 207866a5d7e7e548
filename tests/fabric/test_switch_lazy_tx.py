"""Switch ports without a transmit-done event when nothing is queued behind a frame (link/port.c).

The event is skipped, its sequence number reserved; a kick before the frame's end arms it with
that number.  Every result must be what the eager path (``set_switch_tx_eager``: every frame
gets its event) gives, to the picosecond and byte, with fewer events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rdmasim import topology


def _run(path: Path, eager: bool, chunk_events: int, pfc: bool) -> dict[str, Any]:
    """A 3:1 incast over a 4:1 slower bottleneck (PFC pauses when ``pfc``) and a reverse flow."""
    cfg = {"threshold": "30KB"} if pfc else {"lossless": ()}
    t = topology.dumbbell(3, 2, bottleneck_rate="25Gbps", mtu=1024, seed=11, switch_config=cfg)
    t.sim._fabric_core().set_switch_tx_eager(eager)
    t.sim.capture(str(path))
    flows = t.sim.add_flows({"src": np.array([0, 1, 2, 4, 3]), "dst": np.array([3, 3, 4, 0, 1]),
                             "size": np.array([300_000, 200_000, 150_000, 80_000, 1_000])})
    t.sim.run_flows(chunk_events=chunk_events)
    t.sim.close_capture()
    ports = [sw.stats() for sw in (t.s_left, t.s_right)]
    return {"results": flows.results(), "ports": ports, "now": t.sim.now, "events": t.sim.events,
            "pcap": path.read_bytes()}


@pytest.mark.parametrize("pfc", [True, False])
@pytest.mark.parametrize("chunk_events", [200_000, 7])
def test_lazy_switch_tx_done_changes_nothing_but_the_event_count(tmp_path: Path, pfc: bool,
                                                                  chunk_events: int) -> None:
    """Same flow results, switch counters, end time and capture bytes (frame order and
    picosecond timestamps) as the eager path; runs stopped every few events resume exactly."""
    lazy = _run(tmp_path / "lazy.pcap", False, chunk_events, pfc)
    eager = _run(tmp_path / "eager.pcap", True, chunk_events, pfc)
    assert (lazy["results"]["fct_ps"] > 0).all()
    assert np.array_equal(lazy["results"], eager["results"])
    assert lazy["ports"] == eager["ports"]
    assert lazy["now"] == eager["now"]
    assert len(lazy["pcap"]) > 100_000 and lazy["pcap"] == eager["pcap"]
    if pfc:  # the incast pauses the left switch's senders
        assert any(p.get("pfc_xoff_sent", 0) for s in lazy["ports"] for p in s)
    # the switch ports toward the senders carry ACKs one at a time: one event fewer each
    assert lazy["events"] < eager["events"] - 100


def _stream(eager: bool, seed: int = 5) -> tuple[Any, int, int]:
    """One SEND stream through one switch: every frame (the same size) reaches the switch as the
    one ahead of it leaves, so each arrival ties with the frame's end; (results, events, frames
    the switch sent)."""
    t = topology.incast(1, mtu=1024, seed=seed)
    t.sim._fabric_core().set_switch_tx_eager(eager)
    flows = t.sim.add_flows({"src": np.array([0]), "dst": np.array([1]), "size": np.array([400 * 1024]),
                             "verb": np.array(["SEND"])})
    t.sim.run_flows()
    sent = sum(p["tx_pkts"] for p in t.switch.stats())
    return flows.results(), t.sim.events, sent


def test_a_frame_arriving_as_the_port_frees_takes_no_transmit_done() -> None:
    """A switch port is free from the picosecond its frame ends: the arrival that refills it then
    sends at once, whichever way the tie with the port's transmit-done falls (the seed draws that
    order for the sender's and the switch's events), so the lazy run costs no transmit-done for
    these frames and the same events for every seed; the eager run has the events that came
    first in the tie, a number that changes with the seed."""
    runs = [(_stream(False, seed), _stream(True, seed)) for seed in (1, 2, 3)]
    assert len({lazy[1] for lazy, _ in runs}) == 1
    for (lazy, lazy_events, sent), (eager, eager_events, _) in runs:
        assert np.array_equal(lazy, eager) and (lazy["fct_ps"] > 0).all()
        assert sent > 400
        assert 0 < eager_events - lazy_events <= sent
    assert len({eager[1] for _, eager in runs}) > 1  # the ties did fall differently
