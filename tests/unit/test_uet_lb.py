"""UET load balancing by entropy (csrc/uet/lb.c through rdmasim._core.uet_lb_run): oblivious
spraying and REPS (Bonato et al., arXiv 2407.21625; UEC htsim uec_mp.cpp / buffer_reps.cpp)."""

from __future__ import annotations

from collections import Counter

import pytest

from rdmasim import _core


def cfg(kind: str = "reps", **kw) -> dict:
    c = _core.uet_lb_default_cfg(kind)
    c.update(kw)
    return c


def test_defaults_are_htsims():
    c = cfg()
    got = (c["ev_count"], c["buffer_size"], c["reuse"], c["freezing"], c["explore_after_freeze"])
    assert got == (256, 8, 1, 1, 16)
    assert _core.uet_lb_cfg_check(c) == 0


@pytest.mark.parametrize("kind", ["oblivious", "reps"])
def test_same_seed_same_entropies_other_seed_others(kind):
    events = [("next",)] * 50 + [("next_ack", 200, 0)]
    a, _ = _core.uet_lb_run(cfg(kind), 7, events)
    b, _ = _core.uet_lb_run(cfg(kind), 7, events)
    c, _ = _core.uet_lb_run(cfg(kind), 8, events)
    assert a == b
    assert a != c


def test_oblivious_sprays_uniformly_over_the_ev_space():
    evs, st = _core.uet_lb_run(cfg("oblivious", ev_count=16), 3, [("next_ack", 16_000, 0)])
    n = Counter(evs)
    assert set(n) == set(range(16))
    assert max(n.values()) < 1.15 * 1000 and min(n.values()) > 0.85 * 1000
    assert st["stats"]["recycled"] == 0 and st["stats"]["explored"] == 16_000


def test_reps_recycles_the_entropy_of_an_unmarked_ack_once():
    evs, st = _core.uet_lb_run(cfg(), 1, [("ack", 77, 0), ("ack", 5, 0), ("next",), ("next",), ("next",)])
    assert evs[:2] == [77, 5]       # oldest first
    assert st["stats"]["recycled"] == 2 and st["stats"]["explored"] == 1  # then explores: buffer used up
    assert st["fresh"] == 0


def test_reps_does_not_recycle_marked_or_lost_entropies():
    _, st = _core.uet_lb_run(cfg(ev_count=65536), 1, [("ack", 77, 1), ("loss", 78), ("next",)])
    assert st["stats"]["recycled"] == 0 and st["stats"]["explored"] == 1
    assert st["stats"]["acks_marked"] == 1 and st["stats"]["losses"] == 1


def test_reps_reuse_sends_one_entropy_that_many_times():
    evs, _ = _core.uet_lb_run(cfg(reuse=3), 1, [("ack", 9, 0)] + [("next",)] * 3)
    assert evs == [9, 9, 9]


def test_reps_buffer_keeps_the_newest_buffer_size_entropies():
    events = [("ack", e, 0) for e in range(10)] + [("next",)] * 8
    evs, _ = _core.uet_lb_run(cfg(buffer_size=8), 1, events)
    assert evs == list(range(2, 10))


def test_reps_moves_traffic_off_marked_paths():
    # 8 paths (entropy % 8); paths 0 and 1 always mark
    obl, _ = _core.uet_lb_paths(cfg("oblivious"), 5, 8, [0, 1], 20_000)
    reps, st = _core.uet_lb_paths(cfg(), 5, 8, [0, 1], 20_000)
    share = lambda c: (c[0] + c[1]) / sum(c)  # noqa: E731
    assert share(obl) == pytest.approx(0.25, abs=0.02)
    assert share(reps) < 0.05
    assert st["recycled"] > 0.9 * 20_000


def test_reps_freezes_on_timeout_and_cycles_the_last_good_entropies():
    c = cfg(freeze_packets=12, explore_after_freeze=4)
    events = [("ack", e, 0) for e in (10, 11, 12)] + [("next",), ("timeout",)] + [("next",)] * 11
    evs, st = _core.uet_lb_run(c, 1, events)
    assert evs[0] == 10
    # frozen: round robin over the written slots, used or not, no exploration
    assert evs[1:] == [10, 11, 12] * 3 + [10, 11]
    assert st["frozen"] == 1 and st["stats"]["freezes"] == 1 and st["stats"]["explored"] == 0
    # a second timeout while frozen does not restart it; the 12th packet ends it, then 4 random ones
    evs2, st2 = _core.uet_lb_run(c, 1, events + [("timeout",), ("next",)] + [("next",)] * 4
                                 + [("ack", 99, 0), ("next",)])
    assert st2["frozen"] == 0 and st2["stats"]["freezes"] == 1
    assert st2["stats"]["explored"] == 4 and evs2[-1] == 99


def test_freezing_off_and_oblivious_ignore_timeouts():
    for c in (cfg(freezing=0), cfg("oblivious")):
        _, st = _core.uet_lb_run(c, 1, [("ack", 1, 0), ("timeout",), ("next",)])
        assert st["frozen"] == 0 and st["stats"]["timeouts"] == 1


def test_frozen_with_an_empty_buffer_explores():
    evs, st = _core.uet_lb_run(cfg(), 1, [("timeout",), ("next",), ("next",)])
    assert st["frozen"] == 1 and st["stats"]["explored"] == 2


@pytest.mark.parametrize(("field", "value", "index"), [
    ("kind", 2, 1), ("ev_count", 0, 2), ("ev_count", 65537, 2), ("buffer_size", 0, 3),
    ("buffer_size", 65, 3), ("reuse", 0, 4), ("freezing", 2, 5), ("freeze_packets", 0, 6)])
def test_bad_configuration_names_the_field(field, value, index):
    c = cfg()
    c[field] = value
    assert _core.uet_lb_cfg_check(c) == index
    with pytest.raises(ValueError, match=f"field {index}"):
        _core.uet_lb_run(c, 1, [])
