"""Flows chained by ``after`` on the Ultra Ethernet transport, as collectives build them: every flow
of a long chain starts, and a one-packet flow's successor starts once that packet went."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np

from rdmasim import topology


def _chain(k: int, size: int) -> dict[str, list[int]]:
    return {"src": [0] * k, "dst": [1] * k, "size": [size] * k, "after": [0] + [1] * (k - 1)}


def test_a_chain_of_one_packet_flows_runs_to_the_end() -> None:
    # a one-packet message leaves as its PDC starts (the port was idle): the next flow of the
    # connection may start then, as for a longer one when its last packet goes
    t = topology.back_to_back(rate="100Gbps", delay="1us", mtu=4096)
    fs = t.sim.add_flows(_chain(10, 4096), mtu=4096, transport="uet")
    t.sim.run_flows(until="1ms")
    r = fs.results()
    assert (r["status"] == 0).all(), r["status"]
    assert (r["bytes_delivered"] == 4096).all()
    # each starts once the one before it sent its packet (the second as the first leaves the idle
    # port): at most one packet time apart, not a round trip (4 us here)
    gaps = np.diff(r["started_ps"])
    assert (gaps >= 0).all() and (gaps < 400_000).all(), gaps
    assert (np.diff(r["finish_ps"]) > 0).all()


def test_more_flows_one_after_another_than_the_pdc_id_table_holds() -> None:
    # 200 PDCs created and released one after the other on one host pair: the released ids must not
    # fill the id table (a full table of released entries made the next id search loop forever;
    # run in a subprocess so that such a loop fails the test rather than hangs the session)
    code = textwrap.dedent("""
        from rdmasim import topology
        t = topology.back_to_back(rate="100Gbps", delay="1us", mtu=4096)
        k = 200
        fs = t.sim.add_flows({"src": [0] * k, "dst": [1] * k, "size": [32768] * k,
                              "after": [0] + [1] * (k - 1)}, mtu=4096, transport="uet")
        t.sim.run_flows(until="10ms")
        r = fs.results()
        print(int((r["status"] == 0).sum()), int(r["bytes_delivered"].sum()))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["200", str(200 * 32768)]

