"""A target asks the initiator to close a PDC that has been idle for `idle_close` with its message
whole (control packet REQ_CLOSE), without PDC pressure; 0 (the default) never does
(csrc/uet/endpoint.c)."""

from __future__ import annotations

import pytest

from rdmasim import fabric, topology, uet
from rdmasim.flows import describe_status


def _lost_close(idle_close: str | None) -> tuple[dict[str, int], dict[str, int]]:
    """One 4-packet flow whose CLOSE is dropped; the initiator's own timeout is 1 ms. Stats at 300 us."""
    t = topology.back_to_back(rate="100Gbps", delay="1us", mtu=4096)
    fabric.add_drop_rule(t.link.direction(t.a), nth=4)  # the CLOSE (after the 4 data packets)
    opts: dict[str, object] = {"rto": "1ms"}
    if idle_close is not None:
        opts["idle_close"] = idle_close
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [4 * 4096]}, transport="uet", uet=opts)
    t.sim.run_flows()
    assert describe_status(int(fs.results()["status"][0])) == "ok"
    t.sim.run(until="300us")
    return uet.endpoint_stats(t.sim, 0), uet.endpoint_stats(t.sim, 1)


def test_an_idle_pdc_is_asked_to_close_and_closes_before_the_timeout() -> None:
    ini, tgt = _lost_close("20us")
    assert tgt["close_reqs_sent"] == 1 and tgt["pdcs_closed"] == 1 and tgt["pdcs_live"] == 0
    assert ini["closes_sent"] == 2 and ini["pdcs_released"] == 1 and ini["pdcs_live"] == 0


@pytest.mark.parametrize("idle_close", [None, 0, "0us"])
def test_off_by_default_the_target_waits_for_the_initiators_timeout(idle_close: object) -> None:
    ini, tgt = _lost_close(idle_close)  # type: ignore[arg-type]
    assert tgt["close_reqs_sent"] == 0 and tgt["pdcs_closed"] == 0 and tgt["pdcs_live"] == 1
    assert ini["closes_sent"] == 1 and ini["pdcs_released"] == 0


def test_a_busy_pdc_is_not_asked_to_close() -> None:
    # idle_close (20 us) well below the flow's duration (about 84 us) and above a round trip: packets
    # keep the PDC busy, then the initiator's own CLOSE comes first and no request goes
    t = topology.back_to_back(rate="100Gbps", delay="1us", mtu=4096)
    t.sim.add_flows({"src": [0], "dst": [1], "size": [256 * 4096]}, transport="uet",
                    uet={"idle_close": "20us"})
    t.sim.run_flows()
    t.sim.run()
    tgt = uet.endpoint_stats(t.sim, 1)
    assert tgt["close_reqs_sent"] == 0 and tgt["pdcs_closed"] == 1 and tgt["pdcs_live"] == 0


@pytest.mark.parametrize("value", ["-1us", "2s", "soon"])
def test_idle_close_is_checked(value: str) -> None:
    t = topology.back_to_back()
    with pytest.raises(ValueError, match="idle_close"):
        t.sim.add_flows({"src": [0], "dst": [1], "size": [1000]}, transport="uet", uet={"idle_close": value})
