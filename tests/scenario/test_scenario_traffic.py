"""Scenario traffic generators: each runs end to end with the expected flows and conserved bytes,
and each kind of bad argument is reported with the table it belongs to."""

from __future__ import annotations

from pathlib import Path

import pytest

from rdmasim.results import read_table
from rdmasim.scenario import ScenarioError, loads, run_scenario

STAR = """
[simulation]
seed = 3
duration = "50ms"
progress = false
[topology]
kind = "star"
n = {n}
[link]
rate = "100Gbps"
delay = "1us"
[qp]
mtu = 1024
timeout = 8
"""


def _run(text: str, n: int = 4):
    res = run_scenario(loads(STAR.format(n=n) + text, "gen.toml"), out_dir="", progress=False)
    for f in res.flows:
        assert f.status == "ok", f
        assert f.bytes_delivered == f.size_bytes  # conservation: every byte sent arrived once
        assert f.fct_ps >= f.ideal_fct_ps > 0
    return res


def test_permutation_is_a_derangement() -> None:
    res = _run('[traffic.permutation]\nsize = "64KiB"\n', n=6)
    assert len(res.flows) == 6
    assert sorted(f.src for f in res.flows) == sorted(f.dst for f in res.flows) == [f"h{i}" for i in range(6)]
    assert all(f.src != f.dst and f.group == "permutation" for f in res.flows)


def test_all_to_all_covers_every_ordered_pair() -> None:
    res = _run('[traffic.all_to_all]\nsize = "16KiB"\nhosts = ["h0", "h1", "h2"]\n', n=4)
    assert sorted((f.src, f.dst) for f in res.flows) == sorted(
        (a, b) for a in ("h0", "h1", "h2") for b in ("h0", "h1", "h2") if a != b
    )


def test_poisson_with_a_csv_size_distribution(tmp_path: Path) -> None:
    (tmp_path / "sizes.csv").write_text("size,cdf\n1000,0\n20000,0.5\n100000,1\n")
    path = tmp_path / "p.toml"
    gen = '[traffic.poisson]\nload = 0.3\ncdf = "sizes.csv"\nduration = "200us"\n'
    path.write_text(STAR.format(n=4) + gen)
    from rdmasim.scenario import load

    res = run_scenario(load(path), out_dir="", progress=False)
    assert len(res.flows) > 10
    assert all(1000 <= f.size_bytes <= 100_000 and f.status == "ok" for f in res.flows)
    assert max(f.start_ps for f in res.flows) < 200 * 10**6


@pytest.mark.parametrize(
    ("kind", "flows"),
    [("ring_allreduce", 2 * 4 * 3), ("halving_doubling_allreduce", 16), ("moe_all_to_all", 12)],
)
def test_collectives_run_and_their_steps_wait_for_each_other(kind: str, flows: int) -> None:
    res = _run(f'[traffic.collective]\nkind = "{kind}"\nsize = "1MiB"\n', n=4)
    assert len(res.flows) == flows
    if kind != "moe_all_to_all":  # later steps start only after earlier ones finished
        first = min(f.finish_ps for f in res.flows)
        assert sum(f.start_ps >= first for f in res.flows) >= flows // 2


@pytest.mark.parametrize(
    ("text", "where", "says"),
    [
        ('[traffic.permutation]\nhosts = ["h0", "h9"]\n', "traffic.permutation.hosts[1]", "unknown host"),
        ('[traffic.poisson]\nload = 1.5\n', "traffic.poisson.load", "out of range"),
        ('[traffic.poisson]\ncdf = "nope.csv"\n', "traffic.poisson.cdf", "cannot use as a size distribution"),
        ('[traffic.collective]\nkind = "halving_doubling_allreduce"\nhosts = ["h0", "h1", "h2"]\n',
         "traffic.collective", "power-of-two"),
        ('[traffic.collective]\nkind = "tree"\n', "traffic.collective.kind", "ring_allreduce"),
        ('[traffic.all_to_all]\nsizee = 1\n', "traffic.all_to_all.sizee", "did you mean 'size'"),
    ],
)
def test_generator_problems_name_their_table(text: str, where: str, says: str) -> None:
    with pytest.raises(ScenarioError) as info:
        loads(STAR.format(n=4) + text, "bad.toml")
    msgs = [str(p) for p in info.value.problems]
    assert any(m.startswith(f"bad.toml: {where}") and says in m for m in msgs), msgs


def test_same_seed_same_results_different_seed_different_traffic() -> None:
    text = '[traffic.poisson]\nload = 0.3\ncdf = "web_search"\nduration = "300us"\n'
    a = _run(text).rows()
    b = _run(text).rows()
    assert a == b
    other = loads(STAR.format(n=4).replace("seed = 3", "seed = 4") + text)
    c = run_scenario(other, out_dir="", progress=False)
    assert [r["size_bytes"] for r in c.rows()] != [r["size_bytes"] for r in a]


def test_results_as_dataframes_and_port_counters(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    text = '[traffic.incast]\nsize = "256KiB"\nsenders = ["h0", "h1", "h2"]\nreceiver = "h3"\n'
    text += '[outputs]\nsample_interval = "2us"\nplots = false\n'
    res = run_scenario(loads(STAR.format(n=4) + text, "df.toml"), out_dir=str(tmp_path), progress=False)
    frames = res.frames()
    assert isinstance(frames["flows"], pd.DataFrame) and len(frames["flows"]) == 3
    ports = frames["ports"]
    # every byte a sender NIC sent crossed the switch: switch rx bytes = host tx bytes, per link
    hosts = ports[ports.kind == "host"].set_index("node")
    sw = ports[ports.kind == "switch"]
    assert sw.rx_bytes.sum() == hosts.tx_bytes.sum()
    assert hosts.loc["h3", "rx_pkts"] == sw.tx_pkts.sum() - hosts.loc[["h0", "h1", "h2"], "rx_pkts"].sum()
    assert set(frames["flow_samples"].columns) == {"t_ps", "flow_id", "bytes_acked", "rate_bps"}
    q = frames["queue_samples"]
    assert q.egress_bytes.max() > 0 and q.probe.nunique() == 4
    assert list(read_table(tmp_path, "ports").columns[:3]) == ["node", "kind", "port"]
    assert (tmp_path / "timeseries.npz").stat().st_size > 0


def test_irn_recovery_resends_less_than_go_back_n_under_loss() -> None:
    text = ('[traffic.permutation]\nsize = "2MiB"\n[[impairments.loss]]\nlink = ["h0", "s0"]\n'
            'probability = 0.01\n[[impairments.loss]]\nlink = ["h1", "s0"]\nprobability = 0.01\n')
    retx = {}
    for mode in ("gbn", "irn"):
        star = STAR.format(n=4).replace("timeout = 8", f'timeout = 8\nrecovery = "{mode}"')
        res = run_scenario(loads(star + text, f"{mode}.toml"), out_dir="", progress=False)
        assert all(f.status == "ok" and f.bytes_delivered == f.size_bytes for f in res.flows)
        retx[mode] = sum(f.retx_pkts for f in res.flows)
    assert 0 < retx["irn"] < retx["gbn"], retx


def test_deadlock_is_reported_and_the_watchdog_breaks_it() -> None:
    from rdmasim.scenario import load

    path = Path(__file__).resolve().parents[2] / "examples" / "pfc_deadlock.toml"
    stuck = run_scenario(load(path), out_dir="", progress=False)
    assert stuck.deadlock is not None and len(stuck.deadlock[1]) >= 2
    assert all(f.status == "incomplete" for f in stuck.flows)
    assert "PFC DEADLOCK" in stuck.summary()
    freed = run_scenario(load(path, overrides={"switch.watchdog.enabled": True,
                                               "switch.watchdog.poll": "10us",
                                               "switch.watchdog.detect": "50us",
                                               "switch.watchdog.restore": "50us"}),
                         out_dir="", progress=False)
    assert all(f.status == "ok" for f in freed.flows)
    assert sum(sw["totals"]["drops_watchdog"] for sw in freed.switches.values()) > 0
