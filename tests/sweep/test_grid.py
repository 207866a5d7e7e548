"""Grid expansion, parameter parsing and run keys."""

from __future__ import annotations

import pytest

from rdmasim.sweep.grid import expand, normalize_params, parse_param, plan, run_key, split_values


def test_cartesian_product_in_given_order_first_key_slowest() -> None:
    runs = expand({"a.x": [1, 2], "b.y": ["p", "q", "r"]})
    assert runs == [
        {"a.x": 1, "b.y": "p"}, {"a.x": 1, "b.y": "q"}, {"a.x": 1, "b.y": "r"},
        {"a.x": 2, "b.y": "p"}, {"a.x": 2, "b.y": "q"}, {"a.x": 2, "b.y": "r"},
    ]
    assert expand(["a.x=1,2", "b.y=p,q,r"]) == runs


def test_seeds_are_innermost_replicates_and_exclusive_with_a_seed_param() -> None:
    assert expand({"link.loss": [0, 0.1]}, seeds=2) == [
        {"link.loss": 0, "simulation.seed": 1}, {"link.loss": 0, "simulation.seed": 2},
        {"link.loss": 0.1, "simulation.seed": 1}, {"link.loss": 0.1, "simulation.seed": 2},
    ]
    assert expand(None) == [{}]
    with pytest.raises(ValueError, match="not both"):
        expand({"simulation.seed": [1]}, seeds=2)
    with pytest.raises(ValueError, match=r"out of range \(allowed: 1\.\."):
        expand(None, seeds=0)


def test_duplicate_combinations_run_once() -> None:
    assert expand({"link.loss": [0.1, 0.1, 0.2]}) == [{"link.loss": 0.1}, {"link.loss": 0.2}]


def test_values_are_toml_values_or_bare_strings() -> None:
    assert parse_param("link.loss=0,0.01") == ("link.loss", [0, 0.01])
    assert parse_param("link.delay=1us, 2us") == ("link.delay", ["1us", "2us"])
    assert parse_param("switch.lossless=[3],[3, 4]") == ("switch.lossless", [[3], [3, 4]])
    assert parse_param("switch.ecn.enabled=true,false") == ("switch.ecn.enabled", [True, False])
    assert parse_param('simulation.name="a,b",c') == ("simulation.name", ["a,b", "c"])
    # a string option keeps the text: name 3 is "3"
    assert parse_param("simulation.name=3") == ("simulation.name", ["3"])
    assert split_values("[1,2],{a=1,b=2},'x,y'") == ["[1,2]", "{a=1,b=2}", "'x,y'"]


@pytest.mark.parametrize("spec", ["link.loss", "=1", "link.loss=", "link.loss=1,,2"])
def test_malformed_params_are_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="--param"):
        parse_param(spec)


def test_a_key_given_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        normalize_params(["link.loss=0", "link.loss=1"])


def test_run_keys_are_stable_short_and_depend_on_overrides_and_text() -> None:
    k = run_key("[x]\n", {"b": 2, "a": [1, "s"]}, version="0.1.0")
    assert k == run_key("[x]\n", {"a": [1, "s"], "b": 2}, version="0.1.0")  # order does not matter
    assert len(k) == 16 and int(k, 16) >= 0
    # the same in every process (resume relies on it): sha256 of the canonical JSON of the
    # overrides, the scenario text and the rdmasim version
    assert k == "49c2ce3ae1fb0056"
    assert run_key("[y]\n", {"b": 2, "a": [1, "s"]}, version="0.1.0") != k
    assert run_key("[x]\n", {"b": 3, "a": [1, "s"]}, version="0.1.0") != k
    specs = plan("t", {"link.loss": [0, 0.1]}, seeds=2)
    assert [s.index for s in specs] == [0, 1, 2, 3]
    assert len({s.run_key for s in specs}) == 4
    assert [s.run_key for s in plan("t", {"link.loss": [0, 0.1]}, seeds=2)] == [s.run_key for s in specs]
