"""PFC: lossless incast with real pause frames, lossy incast recovered by Go-Back-N, pause timing
(quanta x 512 bit times at the port rate) and XOFF/XON hysteresis."""

from __future__ import annotations

import ipaddress

import pytest
from fabric_util import assert_buffers_empty, flow, run_all

import rdmasim
from rdmasim import fabric
from rdmasim.capture import read_pcap
from rdmasim.fabric import inject_pfc

N_SENDERS = 16
SIZE = 256 * 1024


def _incast(switch_config, tmp_path=None, size=SIZE):
    topo = rdmasim.incast(N_SENDERS, rate="100Gbps", delay="1us", seed=5, switch_config=switch_config)
    if tmp_path is not None:
        topo.sim.capture(tmp_path / "incast.pcap")
    flows = [flow(h, topo.receiver, size, seed=i) for i, h in enumerate(topo.senders)]
    run_all(topo.sim, flows, timeout="1s")
    if tmp_path is not None:
        topo.sim.close_capture()
    return topo, flows


def test_incast_16_to_1_pfc_on_is_lossless(tmp_path):
    topo, flows = _incast({"buffer": "2MB", "headroom": "64KB"}, tmp_path)
    assert all(f.delivered() for f in flows)
    t = topo.switch.totals()
    assert t["drops"] == 0, t
    assert t["pfc_xoff_sent"] > 0
    assert sum(f.qp.stats()["pkts_retx"] for f in flows) == 0
    # the senders obeyed: each one received pause frames and spent time paused
    paused = [h.pause_stats() for h in topo.senders]
    assert sum(p["pfc_rx_xoff"] for p in paused) == t["pfc_xoff_sent"]
    assert all(p["paused_ps"][3] > 0 for p in paused)
    # the pause frames are real 802.1Qbb frames on the wire
    pfc = [fr.fields for fr in read_pcap(tmp_path / "incast.pcap") if fr.fields.get("kind") == 1]
    assert len(pfc) == t["pfc_xoff_sent"] + t["pfc_xon_sent"]
    assert {f["pfc_class_enable"] for f in pfc} == {1 << 3}
    assert {f["pfc_quanta"][3] for f in pfc} == {0, 0xFFFF}
    topo.sim.run()  # drain the last ACKs and XONs
    assert_buffers_empty(topo.sim)
    print(f"\nincast PFC on: {t['pfc_xoff_sent']} XOFF, {t['pfc_xon_sent']} XON, "
          f"finished at {topo.sim.now / 1e6:.1f} us")


def test_incast_pfc_off_small_buffer_drops_and_gbn_recovers():
    topo, flows = _incast({"buffer": "2MB", "lossless": (), "lossy_limit": "100KB"})
    assert all(f.delivered() for f in flows)
    t = topo.switch.totals()
    assert t["drops_lossy_threshold"] > 0 and t["pfc_xoff_sent"] == 0
    assert sum(f.qp.stats()["pkts_retx"] for f in flows) > 0
    topo.sim.run()
    assert_buffers_empty(topo.sim)
    print(f"\nincast PFC off: {t['drops']} drops, finished at {topo.sim.now / 1e6:.1f} us")


@pytest.mark.parametrize("rate,quanta", [("100Gbps", 1000), ("25Gbps", 300), ("100Gbps", 65535)])
def test_pause_duration_is_quanta_times_512_bit_times(tmp_path, rate, quanta):
    topo = rdmasim.back_to_back(rate=rate, delay="1us")
    f = flow(topo.a, topo.b, 64 * 1024)
    topo.sim.capture(tmp_path / "p.pcap")
    f.post()
    topo.sim.run("2us")
    inject_pfc(topo.a, {3: quanta})
    t_pause = topo.sim.now
    topo.sim.wait_for(f.cq, 1)
    topo.sim.close_capture()
    expect_ps = -(-quanta * 512 * 10**12 // rdmasim.units.parse_rate(rate))
    assert topo.a.pause_stats()["paused_ps"][3] == expect_ps
    # on the wire: a's data stops after the frame in progress and restarts exactly at the expiry
    a_ip = int(ipaddress.IPv4Address(topo.a.ip))
    sent = [fr.t_ns for fr in read_pcap(tmp_path / "p.pcap") if fr.fields["kind"] == 0
            and fr.fields["src_ip"] == a_ip]
    resumed = min(t for t in sent if t * 1000 > t_pause)
    assert resumed * 1000 == pytest.approx(t_pause + expect_ps, abs=1000)


def test_xon_resumes_and_new_pause_restarts_timer():
    topo = rdmasim.back_to_back()
    f = flow(topo.a, topo.b, 64 * 1024)
    f.post()
    topo.sim.run("1us")
    inject_pfc(topo.a, {3: 1000})           # 5.12 us at 100G
    topo.sim.run(topo.sim.now + 2_000_000)  # 2 us later: restart the timer
    inject_pfc(topo.a, {3: 1000})
    topo.sim.run(topo.sim.now + 3_000_000)
    inject_pfc(topo.a, {3: 0})              # XON after 3 us of the second pause
    assert topo.a.pause_stats()["paused_ps"][3] == 5_000_000
    assert topo.a.pause_stats()["paused_mask"] == 0
    inject_pfc(topo.a, {4: 0xFFFF})         # another priority does not stop the QP's traffic
    topo.sim.wait_for(f.cq, 1)
    assert f.delivered()


def test_no_pause_below_xoff_and_hysteresis(tmp_path):
    cfg = {"buffer": "4MB", "threshold": "100KB", "reserve": "4KB", "resume_offset": "20KB"}
    # light load: 2 senders of 20 KB never reach reserve + XOFF at any ingress queue
    topo = rdmasim.incast(2, seed=2, switch_config=cfg)
    flows = [flow(h, topo.receiver, 20 * 1024, seed=i) for i, h in enumerate(topo.senders)]
    run_all(topo.sim, flows)
    for s in topo.switch.stats():
        assert s["ingress_peak_bytes"][3] < 4096 + 100 * 1024
        assert s["pfc_xoff_sent"] == 0
    # heavy load: whenever a queue paused, its occupancy had reached reserve + XOFF
    topo = rdmasim.incast(8, seed=2, switch_config=cfg)
    topo.sim.capture(tmp_path / "h.pcap")
    flows = [flow(h, topo.receiver, 512 * 1024, seed=i) for i, h in enumerate(topo.senders)]
    run_all(topo.sim, flows)
    topo.sim.close_capture()
    assert all(f.delivered() for f in flows)
    paused_ports = [s for s in topo.switch.stats() if s["pfc_xoff_sent"]]
    assert paused_ports
    for s in paused_ports:
        assert s["ingress_bytes_at_first_xoff"][3] >= 4096 + 100 * 1024
        assert s["pfc_xon_sent"] <= s["pfc_xoff_sent"]
    # per switch port: XON never follows XON (each XON ends one XOFF episode)
    last: dict[str, int] = {}
    for fr in read_pcap(tmp_path / "h.pcap"):
        if fr.fields.get("kind") == 1:
            q = fr.fields["pfc_quanta"][3]
            assert not (q == 0 and last.get(fr.fields["src_mac"]) == 0)
            last[fr.fields["src_mac"]] = q
    assert topo.switch.totals()["drops"] == 0


def test_slow_receiver_nic_pauses_its_sender():
    """A NIC that drains at 10 Gb/s pauses a 100 Gb/s sender: lossless, at the receiver's pace."""
    topo = rdmasim.back_to_back(rate="100Gbps", delay="1us")
    fabric.slow_receiver(topo.b, "10Gbps", buffer="256KB", xoff="128KB", xon="64KB")
    f = flow(topo.a, topo.b, 2 << 20)
    run_all(topo.sim, [f])
    assert f.delivered()
    rx = fabric.receiver_stats(topo.b)
    assert rx["dropped"] == 0 and rx["pfc_xoff_sent"] > 0 and rx["pfc_xon_sent"] > 0
    assert rx["peak_bytes"] <= 256 * 1024
    assert topo.a.pause_stats()["pfc_rx_xoff"] == rx["pfc_xoff_sent"]
    # 2 MiB of frames at 10 Gb/s: about 1.7 ms (within 10 %)
    assert 1.6e9 < topo.sim.now < 1.9e9
    with pytest.raises(ValueError, match="xon <= xoff <= buffer"):
        fabric.slow_receiver(topo.b, "10Gbps", buffer="64KB", xoff="128KB")


def test_sampled_queue_time_series():
    topo = rdmasim.incast(4, seed=8, switch_config={"buffer": "1MB"})
    sw, rx = topo.switch, topo.receiver
    out = sw.port_to(rx)
    ins = [sw.port_to(h) for h in topo.senders]
    sampler = fabric.QueueSampler(topo.sim, [(sw, out, 3)] + [(sw, p, 3) for p in ins], period="1us",
                                  max_samples=2000)
    flows = [flow(h, rx, 512 * 1024, seed=i) for i, h in enumerate(topo.senders)]
    run_all(topo.sim, flows)
    a = sampler.arrays()
    n = len(a["t_ps"])
    assert n > 100 and a["egress_bytes"].shape == (n, 5) and a["paused"].dtype == bool
    assert (a["t_ps"][1:] - a["t_ps"][:-1] == 1_000_000).all()
    assert a["egress_bytes"][:, 0].max() <= sw.port_stats(out)["egress_peak_bytes"][3]
    assert a["egress_bytes"][:, 0].max() > 100_000  # the incast queue built up
    assert a["ingress_bytes"][:, 1:].max() > 0
    # the network went idle: sampling stopped with it (no endless timer)
    assert a["missed"] == 0 and topo.sim.run() == topo.sim.now


def test_undersized_headroom_drops_are_counted_by_reason():
    """Lossless, but the headroom (2 KB) cannot absorb what a 10 us cable holds after XOFF: the
    overflow is dropped and counted as headroom_overflow (never silent); Go-Back-N still delivers."""
    topo = rdmasim.incast(4, delay="10us", seed=4,
                          switch_config={"buffer": "1MB", "headroom": "2KB", "threshold": "32KB"})
    flows = [flow(h, topo.receiver, 512 * 1024, seed=i, timeout=10) for i, h in enumerate(topo.senders)]
    run_all(topo.sim, flows)
    assert all(f.delivered() for f in flows)
    t = topo.switch.totals()
    assert t["drops_headroom_overflow"] > 0 and t["drops"] == t["drops_headroom_overflow"]
    assert sum(f.qp.stats()["pkts_retx"] for f in flows) > 0
    topo.sim.run()
    assert_buffers_empty(topo.sim)
