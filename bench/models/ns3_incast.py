"""incast-8 in stock ns-3 from PyPI (``pip install ns3``, Python bindings through cppyy).

UDP over point-to-point links: N senders -> one router node -> one receiver, every link 100 Gb/s with
1 us delay. Each sender runs a UdpClient sending 1000-byte UDP payloads (ns-3's 12-byte SeqTs header
is inside those 1000 bytes) at line rate: interval = serialisation time of one frame on the
point-to-point device (1000 + UDP 8 + IPv4 20 + PPP 2 = 1030 bytes = 82.4 ns; time resolution is
set to picoseconds). The router's egress queue (DropTail on the device, traffic-control queue discs
removed) holds up to ``--queue`` packets, enough for the whole burst by default; the UdpServer on the
receiver counts received (and lost) packets, and device drops are reported.

Counted from ns-3's own counters: data packets delivered once are the UdpServer's received packets
(UDP has no retransmission; ``packets_retx`` is 0); events are ``Simulator::GetEventCount()`` over
the run; frames are the packets every point-to-point device queued for transmission (each hop).

Timed: ``run_s`` is ``Simulator::Run()`` only; ``import_s`` (importing the bindings: cppyy/cling
start-up, which JIT-compiles the ns-3 headers; paid by a process's first run only) and ``setup_s``
(building the topology from Python) are reported apart; ``whole_s`` is all three.
"""

from __future__ import annotations

import gc
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from incast_common import DELAY_S, PAYLOAD, RATE_BPS, emit, finish, parser  # noqa: E402

PPP_FRAME = PAYLOAD + 8 + 20 + 2  # UDP + IPv4 + PPP header; ns-3 p2p serialises exactly this
SIMULATES = ("UDP over point-to-point links (no transport: no ACKs, retransmission, PFC or CC); "
             "1000-byte UDP payloads, the 12-byte SeqTs header inside them")
_RESOLUTION_SET = False


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ns3")
    except PackageNotFoundError:
        return "?"


def run(senders: int, packets_per_sender: int, queue_pkts: int | None = None) -> dict:
    total = senders * packets_per_sender
    queue_pkts = queue_pkts if queue_pkts is not None else max(total, 100)

    t_import = time.perf_counter()
    from ns import ns  # cppyy + cling: the expensive part

    global _RESOLUTION_SET
    if not _RESOLUTION_SET:  # ns-3 allows this once per process
        ns.Time.SetResolution(ns.Time.PS)
        _RESOLUTION_SET = True
    # Touch the classes used below so their lazy JIT cost lands in import_s, not in setup/run.
    _ = (ns.NodeContainer, ns.PointToPointHelper, ns.InternetStackHelper, ns.Ipv4AddressHelper,
         ns.TrafficControlHelper, ns.UdpServerHelper, ns.UdpClientHelper, ns.Ipv4GlobalRoutingHelper,
         ns.UdpServer, ns.PointToPointNetDevice)
    import_s = time.perf_counter() - t_import  # ~0 after the process's first run

    t_setup = time.perf_counter()
    ns.Ipv4AddressGenerator.Reset()  # repeated runs in one process reuse the same addresses
    rate = f"{RATE_BPS // 1_000_000_000}Gbps"
    delay = f"{round(DELAY_S * 1e9)}ns"
    snd = ns.NodeContainer()
    snd.Create(senders)
    router = ns.NodeContainer()
    router.Create(1)
    rcv = ns.NodeContainer()
    rcv.Create(1)

    p2p = ns.PointToPointHelper()
    p2p.SetDeviceAttribute("DataRate", ns.StringValue(rate))
    p2p.SetChannelAttribute("Delay", ns.StringValue(delay))
    p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns.StringValue(f"{queue_pkts}p"))
    ns.InternetStackHelper().InstallAll()
    addr = ns.Ipv4AddressHelper()
    tch = ns.TrafficControlHelper()
    devices = []
    for i in range(senders):
        d = p2p.Install(snd.Get(i), router.Get(0))
        addr.SetBase(ns.Ipv4Address(f"10.{1 + i // 250}.{1 + i % 250}.0"), ns.Ipv4Mask("255.255.255.0"))
        addr.Assign(d)
        devices.append(d)
    bottleneck = p2p.Install(router.Get(0), rcv.Get(0))
    addr.SetBase(ns.Ipv4Address("10.250.0.0"), ns.Ipv4Mask("255.255.255.0"))
    ifs = addr.Assign(bottleneck)
    devices.append(bottleneck)
    for d in devices:  # no queue discs: packets queue (or drop) in the device's DropTail queue
        tch.Uninstall(d)
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    server_apps = ns.UdpServerHelper(9).Install(rcv.Get(0))
    server_apps.Start(ns.Seconds(0))
    dst = ifs.GetAddress(1).ConvertTo()
    ser_ps = PPP_FRAME * 8 * 10**12 // RATE_BPS  # 82400 ps at 100 Gb/s
    for i in range(senders):
        c = ns.UdpClientHelper(dst, 9)
        c.SetAttribute("MaxPackets", ns.UintegerValue(packets_per_sender))
        c.SetAttribute("Interval", ns.TimeValue(ns.PicoSeconds(ser_ps)))
        c.SetAttribute("PacketSize", ns.UintegerValue(PAYLOAD))
        c.Install(snd.Get(i)).Start(ns.Seconds(0))
    setup_s = time.perf_counter() - t_setup

    events0 = int(ns.Simulator.GetEventCount())
    t_run = time.perf_counter()
    ns.Simulator.Run()
    run_s = time.perf_counter() - t_run
    events = int(ns.Simulator.GetEventCount()) - events0

    server = server_apps.Get(0).GetObject[ns.UdpServer]()
    received = int(server.GetReceived())
    lost = int(server.GetLost())
    egress = bottleneck.Get(0).GetObject[ns.PointToPointNetDevice]()
    q = egress.GetQueue()
    drops = int(q.GetTotalDroppedPackets())
    frames = 0  # packets each device queued for transmission (all were sent: the run went idle)
    for dc in devices:
        for j in range(dc.GetN()):
            dev = dc.Get(j).GetObject[ns.PointToPointNetDevice]()
            frames += int(dev.GetQueue().GetTotalReceivedPackets())
    sim_time_s = ns.Simulator.Now().GetSeconds()
    ns.Simulator.Destroy()
    return finish({
        "simulator": "ns3",
        "label": f"ns-3 {_version()} (PyPI): UDP over point-to-point",
        "simulates": SIMULATES,
        "scenario": f"incast-{senders}",
        "mode": "udp",
        "placeholder": False,
        "packets": received,
        "packets_expected": total,
        "packets_retx": 0,
        "packets_lost": lost,
        "router_queue_drops": drops,
        "router_queue_limit": queue_pkts,
        "payload_bytes": PAYLOAD,
        "events": events,
        "frames": frames,
        "ecn_marks": None,
        "cnps": None,
        "qps_per_sender": None,
        "counted": "UdpServer::GetReceived()",
        "run_s": run_s,
        "setup_s": setup_s,
        "import_s": import_s,
        "timed_run": "Simulator::Run()",
        "timed_whole": "import (cppyy/cling) + topology from Python + Simulator::Run()",
        "sim_time_s": sim_time_s,
        "notes": "UdpClient at line rate (interval = 1030-byte PPP frame time), DropTail device queues",
    })


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--queue", type=int, default=None,
                   help="device queue limit in packets (default: the whole burst, so nothing drops)")
    a = p.parse_args()
    for i in range(a.repeat):
        gc.collect()  # free the previous run's reference cycles before timing the next
        r = run(a.senders, a.packets_per_sender, a.queue)
        r["repeat_index"] = i
        emit(r)


if __name__ == "__main__":
    main()
