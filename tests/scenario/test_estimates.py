"""What `validate` estimates is within 3x of what a run does (events, files), counts timer
events, respects the trace's record cap, and the flow checks of `validate` and `run` agree."""

from __future__ import annotations

from pathlib import Path

import pytest

from rdmasim.cli import main
from rdmasim.scenario import ScenarioError, loads, run_scenario
from rdmasim.scenario.check import estimate, validate
from rdmasim.trace import DEFAULT_MAX_RECORDS

NOPLOT = "[outputs]\nplots = false\n[simulation]\nprogress = false\n"


def _within_3x(est: float, real: float) -> bool:
    return real / 3 <= est <= 3 * real


def test_watchdog_polls_are_counted_as_events() -> None:
    # a 1 ns poll: about 27,000 polls in a run of 27 us, against ~1,000 packet events
    sc = loads(NOPLOT + '[topology]\nkind = "star"\nn = 4\n[switch.watchdog]\nenabled = true\n'
               'poll = "1ns"\ndetect = "1ns"\n[[flows]]\nsrc = "h0"\ndst = "h1"\nsize = "256KiB"\n')
    est = estimate(sc)
    res = run_scenario(sc, "", progress=False)
    assert _within_3x(est.events, res.events), (est.events, res.events)
    # and its cost: every poll looks at every queue, so a 1 ps poll is no "~0.0 s"
    slow = loads(NOPLOT + '[topology]\nkind = "star"\nn = 4\n[switch.watchdog]\nenabled = true\n'
                 'poll = "1ps"\ndetect = "1ps"\n[[flows]]\nsrc = "h0"\ndst = "h1"\nsize = "256KiB"\n')
    e2 = estimate(slow)
    assert e2.events > 20_000_000 and e2.wall_s > 1.0


@pytest.mark.parametrize("text", [
    '[topology]\nkind = "fat_tree"\nk = 4\n[traffic.permutation]\nsize = "256KiB"\n',
    '[topology]\nkind = "dragonfly"\nrouters_per_group = 4\nhosts_per_router = 2\n'
    'global_per_router = 2\n[traffic.permutation]\nsize = "64KiB"\n',
    '[topology]\nkind = "leaf_spine"\nleaves = 4\nspines = 2\nhosts_per_leaf = 4\n'
    '[traffic.all_to_all]\nsize = "16KiB"\n',
    '[topology]\nkind = "incast"\nn_senders = 8\n[traffic.incast]\nsize = "256KiB"\n',
    # every left-right flow crosses the slow middle link
    '[topology]\nkind = "dumbbell"\nn_left = 3\nn_right = 3\nbottleneck_rate = "25Gbps"\n'
    '[traffic.all_to_all]\nsize = "64KiB"\n',
])
def test_events_and_simulated_time_within_3x(text: str) -> None:
    sc = loads(NOPLOT + text)
    est = estimate(sc)
    res = run_scenario(sc, "", progress=False)
    assert _within_3x(est.events, res.events), (est.events, res.events)
    assert _within_3x(est.sim_time_ps, res.sim_time_ps), (est.sim_time_ps, res.sim_time_ps)


def test_time_per_event_grows_with_the_fabric() -> None:
    # measured: ~0.1-0.4 us per event with a few hosts, ~3 us with a thousand (the fabric's
    # state outgrows the caches); a large dragonfly is no "~6 s" when it takes minutes
    small = estimate(loads('[topology]\nkind = "star"\nn = 4\n[traffic.permutation]\nsize = "64MiB"\n'))
    big = estimate(loads('[topology]\nkind = "dragonfly"\nrouters_per_group = 8\nhosts_per_router = 4\n'
                         'global_per_router = 4\n[traffic.permutation]\nsize = "1MiB"\n'))
    assert big.wall_s / big.events > 10 * small.wall_s / small.events


def test_the_trace_estimate_respects_the_record_cap() -> None:
    # 400 MiB: 400,000 packets, far more trace records than the 2 M the trace keeps
    sc = loads(NOPLOT.replace("[outputs]\n", "[outputs]\ntrace = true\n")
               + '[topology]\nkind = "star"\nn = 4\n[[flows]]\nsrc = "h0"\ndst = "h1"\nsize = "400MiB"\n')
    est = estimate(sc)
    assert est.parts["trace"] <= DEFAULT_MAX_RECORDS * 3 * 64
    # the run needs about 400 MB (measured); it is not refused at 1 GB
    validate(sc, max_memory=1_000_000_000, build=False)


def test_capture_and_trace_files_estimated_within_3x(tmp_path: Path) -> None:
    sc = loads(NOPLOT.replace("[outputs]\n", "[outputs]\npcap = true\ntrace = true\n")
               + '[topology]\nkind = "star"\nn = 4\n[traffic.permutation]\nsize = "2MiB"\n')
    est = estimate(sc)
    run_scenario(sc, str(tmp_path / "out"), progress=False)
    for key, name in (("capture", "capture.pcap"), ("trace", "trace.npz")):
        real = (tmp_path / "out" / name).stat().st_size
        assert _within_3x(est.disk_parts[key], real), (key, est.disk_parts[key], real)


def test_a_flow_start_past_the_core_limit_is_refused_by_validate_as_by_run(tmp_path: Path) -> None:
    text = '[[flows]]\nsrc = "a"\ndst = "b"\nsize = "4KiB"\nstart = "4611686018427387909ps"\n'
    with pytest.raises(ScenarioError) as by_validate:
        validate(loads(text, "f.toml"))
    with pytest.raises(ScenarioError) as by_run:
        run_scenario(loads(text, "f.toml"), "", progress=False)
    (p,) = by_validate.value.problems
    assert str(p) == str(by_run.value.problems[0])
    assert str(p).startswith("f.toml: flows[0]: ") and "4611686018427387909" in str(p)
    assert "allowed [0, 4611686018427387904]" in str(p)
    # a generator's flows: the generator is named
    gen = ('[topology]\nkind = "incast"\nn_senders = 2\n[traffic.incast]\nsize = "4KiB"\n'
           'start = "4611686018427387905ps"\n')
    with pytest.raises(ScenarioError) as err:
        validate(loads(gen, "g.toml"))
    assert str(err.value.problems[0]).startswith("g.toml: traffic.incast: ")


def test_cli_validate_and_run_agree_on_a_flow_start(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "f.toml"
    f.write_text('[[flows]]\nsrc = "a"\ndst = "b"\nsize = "4KiB"\nstart = "4611686018427387909ps"\n')
    assert main(["validate", str(f)]) == 2
    v = capsys.readouterr().err
    assert main(["run", str(f), "--out", str(tmp_path / "o"), "-q"]) == 2
    assert capsys.readouterr().err == v


def test_routing_tables_and_packets_in_flight_estimated_within_2x() -> None:
    """The routing tables' part follows the core's layout (a row index per host, a row per leaf),
    and the packets a permutation keeps in flight (a NIC window per flow) are counted."""
    from rdmasim import nic
    from rdmasim.scenario.run import build

    sc = loads(NOPLOT + '[topology]\nkind = "fat_tree"\nk = 8\n[traffic.permutation]\nsize = "1MiB"\n')
    est = estimate(sc)
    sim = build(sc)
    real = sum(sw.route_table_bytes() for sw in sim.switches.values())
    assert real / 2 <= est.parts["routing tables"] <= 2 * real, (est.parts["routing tables"], real)
    window = nic.get_profile(sc.values["nic.profile"]).max_unacked_psns + 1
    assert est.parts["packets in flight"] >= 128 * window * 368  # 128 flows, a window each


def test_time_per_event_stops_growing_once_the_fabric_is_out_of_the_caches() -> None:
    # measured: an 8,192-host fat tree (k = 32) takes about as long per event as a 1,024-host one
    # (214 s of CPU for its 89.7 M events), not 8x as long
    def per_event(k: int) -> float:
        text = f'[topology]\nkind = "fat_tree"\nk = {k}\n[traffic.permutation]\nsize = "1MiB"\n'
        est = estimate(loads(text))
        return est.wall_s / est.events

    assert per_event(32) <= 1.5 * per_event(16)
