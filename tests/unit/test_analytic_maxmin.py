"""The models of bench/multipath.py on cases checked by hand (rdmasim.analytic_maxmin)."""

from __future__ import annotations

import pytest

from rdmasim.analytic_maxmin import maxmin_fcts, maxmin_rates, window_fcts, window_rates


def test_plain_maxmin_shares() -> None:
    # two flows on one link get half each; a flow alone gets all of its link
    assert maxmin_rates([["a"], ["a"], ["b"]]) == [0.5, 0.5, 1.0]
    # a flow held to 1/3 on a link of three leaves 2/3 of its other link to the flow beside it
    assert maxmin_rates([["a", "b"], ["a", "c"], ["a", "d"], ["b"]]) == pytest.approx(
        [1 / 3, 1 / 3, 1 / 3, 2 / 3])
    assert maxmin_rates([["a"], ["a"]], {"a": 3.0}) == [1.5, 1.5]


def test_maxmin_fcts_recompute_shares_as_flows_finish() -> None:
    # sizes 1 and 2 on one link: half each until t = 2, then the second alone at 1: done at 3
    assert maxmin_fcts([["a"], ["a"]], [1, 2]) == pytest.approx([2.0, 3.0])
    # B at 2/3 finishes at 1.5; A, C1, C2 at 1/3 each, held by d, finish together at 3
    paths = [["u", "d"], ["x", "d"], ["y", "d"], ["u", "e"]]
    assert maxmin_fcts(paths, [1, 1, 1, 1]) == pytest.approx([3.0, 3.0, 3.0, 1.5])


def test_window_flows_share_a_bottleneck_and_its_queue() -> None:
    # window 2, base RTT 1, two flows on link u: each 1/2, so 2 / (1 + q) = 1/2: queue q = 3
    assert window_rates([["u"], ["u"]], [["r"], ["r"]], 2.0, [1.0, 1.0]) == pytest.approx([0.5, 0.5])
    # a window below the bandwidth-delay product leaves the link idle part of the time
    assert window_rates([["u"]], [["r"]], 0.5, [1.0]) == pytest.approx([0.5])


def test_acks_through_a_standing_queue_slow_a_flow_on_a_free_path() -> None:
    # C's data crosses the free link e; its acknowledgements cross u, where A and B keep a queue
    # of 3: C runs at 2 / (1 + 3) = 1/2.  With its acknowledgements elsewhere it runs at 1.
    data = [["u"], ["u"], ["e"]]
    assert window_rates(data, [["r"], ["r"], ["u"]], 2.0, [1.0] * 3) == pytest.approx([0.5] * 3)
    assert window_rates(data, [["r"], ["r"], ["s"]], 2.0, [1.0] * 3) == pytest.approx([0.5, 0.5, 1.0])
    # max-min fairness, which ignores acknowledgements, gives C all of e
    assert maxmin_rates(data) == [0.5, 0.5, 1.0]


def test_a_no_queue_link_caps_without_delaying() -> None:
    # host link h holds no queue: flow A at its cap of 1; B's acknowledgements cross h undelayed
    assert window_rates([["h", "x"], ["y"]], [["r"], ["h"]], 2.0, [1.0, 1.0],
                        no_queue={"h"}) == pytest.approx([1.0, 1.0])
    # a queued link at capacity 1 with one flow: the window beyond the BDP waits there, but the
    # flow's own rate is its link's
    assert window_rates([["x"]], [["r"]], 2.0, [1.0]) == pytest.approx([1.0])


def test_window_fcts_recompute_as_flows_finish() -> None:
    # 1/2 each until the first (size 1) ends at 2; the second then runs alone at 1: done at 3
    assert window_fcts([["u"], ["u"]], [["r"], ["r"]], [1, 2], 2.0, [1.0, 1.0]) == pytest.approx([2.0, 3.0])


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="sizes"):
        maxmin_fcts([["a"]], [1, 2])
    with pytest.raises(ValueError, match="capacity"):
        maxmin_rates([["a"]], {"a": 0.0})
    with pytest.raises(ValueError, match="base_rtt"):
        window_rates([["a"]], [["b"]], 1.0, [])
    with pytest.raises(ValueError, match="window"):
        window_rates([["a"]], [["b"]], 0.0, [1.0])
