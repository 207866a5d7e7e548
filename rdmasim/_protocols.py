"""What the lower layers need of a simulation, a node and a link: structural types (Protocols).

A module below :mod:`rdmasim.sim` (the fabric, traces, bulk flows) annotates the objects it is
handed with these instead of importing ``Simulator``, ``Host`` or ``Link`` from the layer above
it, so no import, not even one for annotations, points up (``.ci/check_py_layers.py``).  A
:class:`rdmasim.Simulator`, its hosts, switches and links satisfy them; nothing checks them at
run time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol


class CoreSim(Protocol):
    """A simulation as its core handle: the C core, hosts by name, time and the layer cores."""

    _core: Any

    @property
    def hosts(self) -> Mapping[str, Any]: ...

    @property
    def now(self) -> int: ...

    @property
    def events(self) -> int: ...

    def _fabric_core(self) -> Any: ...

    def _flows_core(self) -> Any: ...


class NetSim(CoreSim, Protocol):
    """A simulation with its network: links in creation order and switches by name."""

    @property
    def links(self) -> Sequence[Any]: ...

    @property
    def switches(self) -> Mapping[str, Any]: ...


class NodeLike(Protocol):
    """A host or a switch: the simulation it is in, its C index within its kind and its name."""

    @property
    def sim(self) -> Any: ...

    @property
    def index(self) -> int: ...

    @property
    def name(self) -> str: ...


class LinkLike(Protocol):
    """A full-duplex link: its simulation, its two ends and its line rate, delay and MTU."""

    @property
    def sim(self) -> Any: ...

    @property
    def a(self) -> Any: ...

    @property
    def b(self) -> Any: ...

    @property
    def rate_bps(self) -> int: ...

    @property
    def delay_ps(self) -> int: ...

    @property
    def mtu(self) -> int: ...


class DirectionLike(Protocol):
    """One direction of a link: the link, the C link-direction id and its ends."""

    @property
    def link(self) -> LinkLike: ...

    @property
    def link_id(self) -> int: ...

    @property
    def src(self) -> Any: ...

    @property
    def dst(self) -> Any: ...


class WatchedCQ(Protocol):
    """A completion queue as the core handle runs until it holds completions: its host and the
    C handle of the CQ."""

    _host: Any
    _handle: Any
