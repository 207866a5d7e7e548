"""The checks validate makes without building the fabric agree with the fabric built."""

from __future__ import annotations

import pytest

from rdmasim.scenario import build, loads
from rdmasim.scenario.load import has_link, switch_ports

TOPOLOGIES = {
    "back_to_back": "",
    "star": "n = 5",
    "incast": "n_senders = 3",
    "dumbbell": "n_left = 2\nn_right = 3",
    "leaf_spine": "leaves = 3\nspines = 2\nhosts_per_leaf = 2",
    "fat_tree": "k = 4",
    "explicit": 'hosts = ["x", "y", "z"]\nswitches = ["s", "t"]\n'
    '[[topology.links]]\na = "x"\nb = "s"\n[[topology.links]]\na = "s"\nb = "t"\n'
    '[[topology.links]]\na = "t"\nb = "y"\n[[topology.links]]\na = "z"\nb = "t"',
}


def _scenario(kind: str):  # type: ignore[no-untyped-def]
    src, dst = {"back_to_back": ("a", "b"), "dumbbell": ("l0", "r0"), "fat_tree": ("h0_0_0", "h1_0_0"),
                "explicit": ("x", "y")}.get(kind, ("h0", "h1"))
    flows = f'[[flows]]\nsrc = "{src}"\ndst = "{dst}"\nsize = "4KiB"\n'
    return loads(f'{flows}[topology]\nkind = "{kind}"\n{TOPOLOGIES[kind]}\n', f"{kind}.toml")


@pytest.mark.parametrize("kind", sorted(TOPOLOGIES))
def test_links_and_ports_known_without_building(kind: str) -> None:
    sc = _scenario(kind)
    sim = build(sc)
    built = {frozenset((lk.a.name, lk.b.name)) for lk in sim.links}
    names = sorted(set(sim.hosts) | set(sim.switches))
    for a in names:
        for b in names:
            if a != b:
                assert has_link(sc, a, b) == (frozenset((a, b)) in built), (a, b)
    assert sorted(switch_ports(sc)) == sorted(len(sw.ports) for sw in sim.switches.values())


def test_an_impairment_on_a_missing_link_is_reported_with_the_other_problems() -> None:
    text = ('[topology]\nkind = "star"\nn = 3\n[link]\nloss = 2.0\n[[flows]]\nsrc = "h0"\ndst = "h1"\n'
            '[[impairments.loss]]\nlink = ["h0", "h1"]\nprobability = 0.1\n')
    with pytest.raises(ValueError) as err:
        loads(text, "s.toml")
    shown = [str(p) for p in err.value.problems]  # type: ignore[attr-defined]
    assert shown[0].startswith("s.toml: link.loss = 2.0: out of range")
    assert shown[1].startswith("s.toml: impairments.loss[0].link = ['h0', 'h1']: no such link")
