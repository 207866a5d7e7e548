"""PFC response time: a port acts on a received PFC frame only after its response time (NIC
profile ``pfc_response``, switch ``pfc_response``), keeps sending meanwhile, and the headroom a
switch needs grows by what the sender puts on the wire in that time (fabric.pfc_headroom)."""

from __future__ import annotations

import ipaddress

import pytest
from fabric_util import flow

import rdmasim
from rdmasim import fabric
from rdmasim.capture import read_pcap
from rdmasim.fabric import inject_pfc
from rdmasim.units import parse_rate

RESPONSE_PS = 2_017_280  # 802.3 Annex 31D bound at 100 Gb/s: 394 quanta x 512 bit times


@pytest.mark.parametrize("response_ps", [0, 700_000, RESPONSE_PS])
def test_pause_starts_one_response_time_after_the_frame_arrived(tmp_path, response_ps):
    topo = rdmasim.back_to_back(rate="100Gbps", delay="1us")
    topo.a.set_nic_profile("rxe", pfc_response=response_ps)
    f = flow(topo.a, topo.b, 256 * 1024)
    topo.sim.capture(tmp_path / "p.pcap")
    f.post()
    topo.sim.run("2us")
    quanta = 1000
    inject_pfc(topo.a, {3: quanta})
    t_rx = topo.sim.now
    topo.sim.wait_for(f.cq, 1)
    topo.sim.close_capture()
    pause_ps = -(-quanta * 512 * 10**12 // parse_rate("100Gbps"))
    assert topo.a.pause_stats()["paused_ps"][3] == pause_ps
    a_ip = int(ipaddress.IPv4Address(topo.a.ip))
    sent_ps = sorted(fr.t_ns * 1000 for fr in read_pcap(tmp_path / "p.pcap")
                     if fr.fields["kind"] == 0 and fr.fields["src_ip"] == a_ip)
    gap_start = max(t for t in sent_ps if t <= t_rx + response_ps)  # last frame started before the pause
    resumed = min(t for t in sent_ps if t > t_rx + response_ps)
    # a goes on sending at line rate through the response time, then stops for exactly the pause
    before = [t for t in sent_ps if t <= t_rx]
    frame_ps = (before[-1] - before[1]) / (len(before) - 2)  # line-rate spacing of a's frames
    during = [t for t in sent_ps if t_rx < t <= t_rx + response_ps]
    assert len(during) == pytest.approx(response_ps / frame_ps, abs=1)
    assert gap_start <= t_rx + response_ps
    assert resumed == pytest.approx(t_rx + response_ps + pause_ps, abs=1000)


def test_frames_waiting_for_the_response_act_in_arrival_order():
    topo = rdmasim.back_to_back()
    topo.a.set_nic_profile("rxe", pfc_response="1us")
    f = flow(topo.a, topo.b, 256 * 1024)
    f.post()
    topo.sim.run("1us")
    inject_pfc(topo.a, {3: 0xFFFF})
    topo.sim.run(topo.sim.now + 500_000)
    inject_pfc(topo.a, {3: 0})                # XON 0.5 us later: acts 1 us after it arrived
    assert topo.a.pause_stats()["paused_mask"] == 0  # neither has acted yet
    t_xon = topo.sim.now
    topo.sim.run(t_xon + 600_000)             # the XOFF acted 1 us after it arrived; the XON not yet
    assert topo.a.pause_stats()["paused_mask"] == 1 << 3
    topo.sim.run(t_xon + 1_100_000)           # the XON acted 1 us after it arrived
    st = topo.a.pause_stats()
    assert st["paused_mask"] == 0 and st["paused_ps"][3] == 500_000
    topo.sim.wait_for(f.cq, 1)
    assert f.delivered()


def _headroom_used(response_ps: int, delay: str) -> tuple[int, int]:
    """A sender into a switch whose egress is stopped (the receiver is stuck and pauses it): the
    sender's ingress queue crosses XOFF and everything after that goes to headroom.  Returns
    (headroom bytes used, headroom_overflow drops)."""
    headroom = fabric.pfc_headroom("100Gbps", delay, 1024, response_ps)
    topo = rdmasim.incast(1, rate="100Gbps", delay=delay, mtu=1024, seed=1,
                          switch_config={"buffer": "2MB", "threshold": "64KB",
                                         "headroom": headroom + 8192})
    # a PSN window that never binds: the sender keeps the link full until PFC stops it
    topo.senders[0].set_nic_profile("rxe", pfc_response=response_ps, max_unacked_psns=1 << 22)
    fabric.slow_receiver(topo.receiver, 0, buffer="64KB", xoff="16KB", xon="8KB")
    f = flow(topo.senders[0], topo.receiver, 2 * 1024 * 1024)
    f.post()
    topo.sim.run("200us")
    port = next(s for s in topo.switch.stats() if s["pfc_xoff_sent"])
    used = port["ingress_peak_bytes"][3] - port["ingress_bytes_at_first_xoff"][3]
    return used, topo.switch.totals()["drops_headroom_overflow"]


@pytest.mark.parametrize("delay", ["1us", "5us"])
def test_headroom_needed_grows_by_the_response_time(delay):
    used0, drops0 = _headroom_used(0, delay)
    used, drops = _headroom_used(RESPONSE_PS, delay)
    assert drops0 == drops == 0
    extra = RESPONSE_PS * 100 // 8 // 1000  # bytes at 100 Gb/s in the response time: 25,216
    # the formula covers what was used, and the response time adds its bytes (within 2 frames)
    assert used0 <= fabric.pfc_headroom("100Gbps", delay, 1024, 0)
    assert used <= fabric.pfc_headroom("100Gbps", delay, 1024, RESPONSE_PS)
    assert used - used0 == pytest.approx(extra, abs=2 * 1122)
    # a headroom sized without the response time overflows (drops, counted) once it is there
    topo = rdmasim.incast(1, rate="100Gbps", delay=delay, mtu=1024, seed=1,
                          switch_config={"buffer": "2MB", "threshold": "64KB",
                                         "headroom": fabric.pfc_headroom("100Gbps", delay, 1024, 0)})
    topo.senders[0].set_nic_profile("rxe", pfc_response=RESPONSE_PS, max_unacked_psns=1 << 22)
    fabric.slow_receiver(topo.receiver, 0, buffer="64KB", xoff="16KB", xon="8KB")
    f = flow(topo.senders[0], topo.receiver, 2 * 1024 * 1024)
    f.post()
    topo.sim.run("200us")
    assert topo.switch.totals()["drops_headroom_overflow"] > 0


def test_switch_ports_take_the_configured_response_time():
    cfg = fabric.switch_config(pfc_response="1.5us")
    assert cfg["pfc_response_ps"] == 1_500_000
    with pytest.raises(ValueError, match="pfc_response"):
        fabric.switch_config(pfc_response=-1)
    with pytest.raises(ValueError, match="pfc_response"):
        rdmasim.back_to_back().a.set_nic_profile("rxe", pfc_response="-1us")
    # a switch port paused by an injected frame acts after 1.5 us
    topo = rdmasim.incast(1, seed=1, switch_config={"pfc_response": "1.5us"})
    inject_pfc(topo.switch, {3: 1000}, port=0)
    assert topo.switch.stats()[0]["paused_mask"] == 0
    topo.sim.run(topo.sim.now + 1_500_000)
    assert topo.switch.stats()[0]["paused_mask"] == 1 << 3


def test_profiles_state_their_response_time():
    from rdmasim import nic
    assert nic.get_profile("rxe").pfc_response == 0
    cx6 = nic.get_profile("cx6")
    assert rdmasim.units.parse_time(cx6.pfc_response) == RESPONSE_PS
    assert RESPONSE_PS == 394 * 512 * 10**12 // parse_rate("100Gbps")
