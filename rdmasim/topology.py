"""Topology builders. Each returns the objects a user needs to start posting work."""

from __future__ import annotations

from dataclasses import dataclass

from rdmasim.sim import Host, Link, Simulator


@dataclass
class BackToBack:
    """Two hosts joined by one link."""

    sim: Simulator
    a: Host
    b: Host
    link: Link


def back_to_back(rate: str | int = "100Gbps", delay: str | int = "1us", mtu: int = 4096,
                 loss_ab: float = 0.0, loss_ba: float = 0.0, seed: int = 1,
                 sim: Simulator | None = None, names: tuple[str, str] = ("a", "b")) -> BackToBack:
    """Two hosts ``a`` and ``b`` back to back.

    ``loss_ab``/``loss_ba``: i.i.d. frame loss probability in each direction. Explicit drops:
    ``topo.link.ab.drop(nth=5)`` or ``topo.link.ab.drop(psn=100)``.
    """
    sim = sim if sim is not None else Simulator(seed)
    a = sim.add_host(names[0])
    b = sim.add_host(names[1])
    link = sim.connect(a, b, rate=rate, delay=delay, mtu=mtu)
    if loss_ab:
        link.ab.set_loss(loss_ab)
    if loss_ba:
        link.ba.set_loss(loss_ba)
    return BackToBack(sim, a, b, link)
