"""``pyverbs.device``: the emulated devices, ``get_device_list()`` and ``Context(name=...)``."""

from __future__ import annotations

import errno
import os
import sys
import time
from typing import Any

from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.pyverbs import _devices, libibverbs_enums
from rdmasim.pyverbs._devices import DeviceAttr, DeviceAttrEx, PortAttr
from rdmasim.pyverbs._unsupported import unsupported
from rdmasim.pyverbs.addr import GID
from rdmasim.verbs import device as _device
from rdmasim.verbs._checks import U16, int_in
from rdmasim.verbs._threads import another_thread_may_act

__all__ = ["DM", "AllocDmAttr", "AsyncEvent", "Context", "Device", "DeviceAttr", "DeviceAttrEx", "FdArr",
           "GIDEntry", "PortAttr", "get_device_list", "guid_format", "guid_to_hex", "phys_state_to_str",
           "port_state_to_str", "rdma_get_devices", "speed_to_str", "str_from_flags",
           "translate_device_caps", "translate_event_type", "translate_gid_type", "translate_link_layer",
           "translate_mtu", "translate_node_type", "translate_port_cap_flags", "translate_port_cap_flags2",
           "translate_transport_type", "width_to_str"]

DM = unsupported("DM", "device memory is not supported (max_dm_size 0, as on rxe)", __name__)
AllocDmAttr = unsupported("AllocDmAttr", "device memory is not supported (max_dm_size 0, as on rxe)",
                          __name__)
FdArr = unsupported("FdArr", "file-descriptor arrays serve mlx5 DEVX, which the device lacks", __name__)


class AsyncEvent:
    """An asynchronous event (``struct ibv_async_event``) from ``Context.get_async_event()``:
    ``event_type`` (``ibv_event_type``), ``element`` (the SRQ, QP or CQ it concerns; None for
    a device event) and ``ack()`` (``ibv_ack_async_event``)."""

    def __init__(self, event_type: int = 0, element: object = None) -> None:
        self.event_type = int_in("AsyncEvent event_type", event_type, 0, 0xFFFFFFFF)
        self.element = element
        self.acked = False

    def ack(self) -> None:
        """Acknowledge the event (``ibv_ack_async_event``); acknowledging twice is refused."""
        if self.acked:
            raise PyverbsUserError(f"AsyncEvent.ack: {self!r} is already acknowledged")
        self.acked = True

    def __repr__(self) -> str:
        return f"AsyncEvent(event_type={self.event_type}, element={self.element!r})"


class Device:
    """One entry of ``get_device_list()`` (``struct ibv_device``); ``name`` is bytes, as in pyverbs."""

    def __init__(self, name: str, guid: int) -> None:
        self.name = name.encode()
        self.node_type = _devices.IBV_NODE_CA
        self.transport_type = _devices.IBV_TRANSPORT_IB
        self.guid = guid

    def __repr__(self) -> str:
        return f"Device({self.name.decode()}, guid=0x{self.guid:016x})"


def get_device_list() -> list[Device]:
    """The emulated devices: ``rxe0``, ``rxe1``, ... one per host of the simulation."""
    sim = _devices.simulation()
    names = _devices.device_names(sim)
    devs = [Device(n, _devices.node_guid(h)) for n, h in zip(names, sim.hosts.values(), strict=True)]
    if getattr(sim._core, "remote", False):  # under `rdmasim exec --host NAME`: that host's device first
        devs = [devs[i] for i in sim._core.device_order()]
    return devs


def rdma_get_devices() -> list[Device]:
    """``rdma_get_devices`` (librdmacm): the devices the connection manager can use, i.e. the
    same as :func:`get_device_list`."""
    return get_device_list()


class Context(_device.Context):
    """An opened emulated device: ``Context(name="rxe0")`` (the name may be bytes, as a
    ``Device.name``). ``Context(host)`` opens the device of a host directly."""

    def __init__(self, host: Any = None, name: str | bytes | None = None, cmd_fd: int | None = None,
                 **kwargs: Any) -> None:
        if cmd_fd is not None:
            raise PyverbsRDMAError("Context(cmd_fd=...): importing a device context "
                                   "(ibv_import_device) is not emulated", errno.EOPNOTSUPP)
        self._cmd_fd: int | None = None
        if kwargs:
            raise PyverbsUserError(f"Context: unsupported arguments {sorted(kwargs)}; give name=")
        if isinstance(host, (str, bytes)):  # Context("rxe0"): the name given positionally
            host, name = None, host if name is None else name
        if host is None:
            if name is None:
                raise PyverbsUserError(f"Context needs name=, one of {_devices.device_names()}")
            host = _devices.host_of(name)
            name = None
        super().__init__(host, name)
        self.name = _devices.device_name(self.host)

    def get_async_event(self) -> AsyncEvent:
        """``ibv_get_async_event``: the next asynchronous event of the device. The one emulated is
        ``IBV_EVENT_SRQ_LIMIT_REACHED`` (an SRQ of this context fell below its armed limit).
        When none is pending it runs the simulation, event by event, until one is raised; if the
        simulation goes idle first it keeps waiting while another thread of the program is alive,
        and raises PyverbsRDMAError (EIO) instead of blocking forever when none is. Pending
        events of several SRQs are returned SRQ by SRQ (in order of
        creation), not in the order they were raised."""
        from rdmasim import _core

        self._check_open("get_async_event")
        if getattr(self.sim._core, "remote", False):
            return self._remote_async_event()
        sim = self.sim
        while True:
            ev = self._pending_async_event()
            if ev is not None:
                return ev
            if not sim.auto_advance:
                raise PyverbsRDMAError("get_async_event: no event is pending and sim.auto_advance is "
                                       "off (run the simulation first)", errno.EAGAIN)
            reason = sim._core.run(_core.INT64_MAX, 1)
            if reason == _core.RUN_IDLE and self._pending_async_event_count() == 0:
                if another_thread_may_act():  # another thread may act: block, as libibverbs
                    time.sleep(0.001)
                    continue
                raise PyverbsRDMAError(
                    f"get_async_event: no asynchronous event on {self.name} and the simulation is "
                    "idle: nothing is in flight and no other thread is running, so none can come (was an "
                    "SRQ limit armed?)", errno.EIO)

    def _remote_async_event(self) -> AsyncEvent:
        """On the fabric daemon: the next SRQ limit event of this context's SRQs, waiting for one
        (this process says it is idle between looks, so simulated time passes)."""
        core = self.sim._core
        while True:
            ev = self._pending_async_event()
            if ev is not None:
                return ev
            core.call("IDLE")
            time.sleep(0.001)

    def _srqs(self) -> list[Any]:
        from rdmasim.verbs.srq import SRQ

        found = [c for pd in list(self._children) for c in list(getattr(pd, "_children", ()))
                 if isinstance(c, SRQ) and not c._closed]
        return sorted(found, key=lambda s: s.handle)

    def _pending_async_event(self) -> AsyncEvent | None:
        for srq in self._srqs():
            if srq._take_limit_event():
                return AsyncEvent(int(libibverbs_enums.ibv_event_type.IBV_EVENT_SRQ_LIMIT_REACHED), srq)
        return None

    def _pending_async_event_count(self) -> int:
        return sum(int(self.sim._core.srq_query(s._host.index, s.handle)["limit_events"])
                   for s in self._srqs())

    def query_device(self) -> DeviceAttr:
        """``ibv_query_device``: Linux rxe's capabilities (see rdmasim.pyverbs._devices)."""
        self._check_open("query_device")
        return _devices.device_attr(self.host)

    def query_rt_values_ex(self, comp_mask: int = 1) -> tuple[int, int]:
        """``ibv_query_rt_values_ex``: EOPNOTSUPP. rxe's provider does not implement it, and
        libibverbs then answers EOPNOTSUPP; the emulated device has no hardware clock to read."""
        raise PyverbsRDMAError("Failed to query real time values: not supported by the device (as rxe)",
                               errno.EOPNOTSUPP)

    def query_device_ex(self) -> DeviceAttrEx:
        """``ibv_query_device_ex``: ``orig_attr`` is ``query_device()``; ``device_cap_flags_ex`` adds
        rxe's FLUSH and ATOMIC WRITE bits."""
        self._check_open("query_device_ex")
        return _devices.device_attr_ex(self.host)

    def query_port(self, port_num: int = 1) -> PortAttr:
        """``ibv_query_port``: the device has one port, 1."""
        self._check_open("query_port")
        _check_port("query_port", port_num)
        return _devices.port_attr(self.host)

    def query_gid(self, port_num: int = 1, index: int = 0) -> GID:  # type: ignore[override]
        """``ibv_query_gid``: the RoCEv2 GID (IPv4-mapped) at ``index`` 0; other indices of the
        table (``gid_tbl_len`` = 1024) are empty (all zeros), as on a port with one address."""
        self._check_open("query_gid")
        _check_port("query_gid", port_num)
        index = _check_gid_index("query_gid", index)
        return GID(self.host.gid if index == 0 else "::")

    def query_gid_type(self, port_num: int, index: int) -> int:
        """``ibv_query_gid_type``: IBV_GID_TYPE_SYSFS_ROCE_V2 for the port's GID (index 0)."""
        self._check_open("query_gid_type")
        _check_port("query_gid_type", port_num)
        if _check_gid_index("query_gid_type", index) != 0:
            raise PyverbsRDMAError(f"query_gid_type: index {index} holds no GID", errno.ENODATA)
        return 1

    @property
    def cmd_fd(self) -> int:
        """The context's command file descriptor: a real descriptor (of ``/dev/null``; no
        command goes through it), so that ``os.dup`` works on it; closed with the Context.
        Importing it into another Context is EOPNOTSUPP."""
        self._check_open("cmd_fd")
        if self._cmd_fd is None:
            self._cmd_fd = os.open(os.devnull, os.O_RDONLY)
        return self._cmd_fd

    def close(self) -> None:
        """Close the device (its PDs, CQs and their objects first, as pyverbs)."""
        super().close()
        if self._cmd_fd is not None:
            os.close(self._cmd_fd)
            self._cmd_fd = None


    @property
    def num_comp_vectors(self) -> int:
        """Completion vectors of the device: 1 (events are not spread over CPUs here)."""
        return 1

    def query_gid_ex(self, port_num: int, gid_index: int, flags: int = 0) -> GIDEntry:
        """``ibv_query_gid_ex``: the entry at ``gid_index``; ENODATA for an empty index."""
        self._check_open("query_gid_ex")
        _check_port("query_gid_ex", port_num)
        index = _check_gid_index("query_gid_ex", gid_index)
        if index != 0:
            raise PyverbsRDMAError(f"Failed to query gid table of port {port_num} in index {index}: "
                                   "the entry is empty", errno.ENODATA)
        return GIDEntry(GID(self.host.gid), 0, 1)

    def query_gid_table(self, max_entries: int, flags: int = 0) -> list[GIDEntry]:
        """``ibv_query_gid_table``: the valid GID entries (one: index 0 of port 1). A
        ``max_entries`` too small for them is refused with -EINVAL, as libibverbs returns it."""
        self._check_open("query_gid_table")
        n = int_in("query_gid_table max_entries", max_entries, 0, (1 << 64) - 1)
        if n < 1:
            raise PyverbsRDMAError(f"Failed to query gid tables of the device: max_entries={n}, the "
                                   "table holds 1 valid entry", -errno.EINVAL)
        return [GIDEntry(GID(self.host.gid), 0, 1)]

    def query_pkey(self, port_num: int, index: int) -> int:
        """``ibv_query_pkey``: the default P_Key 0xffff at index 0 (rxe's only P_Key); other
        indices of the table (``pkey_tbl_len``) are 0."""
        self._check_open("query_pkey")
        _check_port("query_pkey", port_num)
        tbl = _devices.RXE_PORT_ATTR["pkey_tbl_len"]
        idx = int_in("query_pkey index", index, 0, U16)
        if idx >= tbl:
            raise PyverbsRDMAError(f"Failed to query pkey {idx} of port {port_num}: the table has "
                                   f"{tbl} entries", errno.EINVAL)
        return _DEFAULT_PKEY if idx == 0 else 0

    def get_pkey_index(self, port_num: int, pkey: int) -> int:
        """``ibv_get_pkey_index``: the index of ``pkey`` (0 for the default 0xffff)."""
        self._check_open("get_pkey_index")
        _check_port("get_pkey_index", port_num)
        if int_in("get_pkey_index pkey", pkey, 0, U16) != _DEFAULT_PKEY:
            raise PyverbsRDMAError(f"Failed to get pkey index of pkey = {pkey} of port {port_num}",
                                   errno.ENOENT)
        return 0

    def __enter__(self) -> Context:
        return self


_DEFAULT_PKEY = 0xFFFF


class GIDEntry:
    """``struct ibv_gid_entry``: a GID with its index, port and type (RoCEv2)."""

    def __init__(self, gid: GID, gid_index: int, port_num: int, gid_type: int = 2,
                 ndev_ifindex: int = 0) -> None:
        self._gid = gid
        raw = int(gid._addr)
        self.gid_subnet_prefix = int.from_bytes((raw >> 64).to_bytes(8, "little"), "big")
        self.gid_interface_id = int.from_bytes((raw & ((1 << 64) - 1)).to_bytes(8, "little"), "big")
        self.gid_index = gid_index
        self.port_num = port_num
        self.gid_type = gid_type  # IBV_GID_TYPE_ROCE_V2
        self.ndev_ifindex = ndev_ifindex

    def gid_str(self) -> str:
        """The GID's text, as ``GID.gid``."""
        return self._gid.gid

    def __str__(self) -> str:
        return f"GID: {self.gid_str()} index {self.gid_index} port {self.port_num}"


def translate_mtu(mtu: int) -> str:
    """``'1024 (3)'`` for an IBV_MTU_* value."""
    sizes = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}
    return f"{sizes[mtu]} ({mtu})" if mtu in sizes else f"Invalid MTU ({mtu})"


def translate_link_layer(ll: int) -> str:
    """The name of an IBV_LINK_LAYER_* value."""
    return {0: "Unspecified", 1: "InfiniBand", 2: "Ethernet"}.get(ll, f"Invalid link layer ({ll})")


def phys_state_to_str(phys: int) -> str:
    """The name of a port physical state."""
    names = {1: "Sleep", 2: "Polling", 3: "Disabled", 4: "Port configuration training", 5: "Link up",
             6: "Link error recovery", 7: "Phy test"}
    return f"{names[phys]} ({phys})" if phys in names else "Invalid physical state"


def width_to_str(width: int) -> str:
    """The name of an active width."""
    names = {1: "1X", 2: "4X", 4: "8X", 8: "12X", 16: "2X"}
    return f"{names[width]} ({width})" if width in names else "Invalid width"


def speed_to_str(active_speed: int, active_speed_ex: int = 0) -> str:
    """The name of an active speed (``active_speed_ex`` when nonzero)."""
    s = active_speed_ex or active_speed
    names = {0: "0.0 Gbps", 1: "2.5 Gbps", 2: "5.0 Gbps", 4: "5.0 Gbps", 8: "10.0 Gbps",
             16: "14.0 Gbps", 32: "25.0 Gbps", 64: "50.0 Gbps", 128: "100.0 Gbps", 256: "200.0 Gbps"}
    return f"{names[s]} ({s})" if s in names else "Invalid speed"


def _check_port(what: str, port_num: Any) -> None:
    if int_in(f"{what} port_num", port_num, 0, 255) != 1:
        raise PyverbsRDMAError(f"Failed to {what.replace('_', ' ')} {port_num}: "
                               f"{os.strerror(errno.EINVAL)} (the device has one port, 1)", errno.EINVAL)


def _check_gid_index(what: str, index: Any) -> int:
    index = int_in(f"{what} index", index, 0, U16)
    tbl = _devices.RXE_PORT_ATTR["gid_tbl_len"]
    if index >= tbl:
        raise PyverbsRDMAError(f"{what}: index={index}: the GID table has {tbl} entries (0..{tbl - 1})",
                               errno.EINVAL)
    return index


def translate_gid_type(gid_type: int) -> str:
    """``'IB'``, ``'RoCEv1'`` or ``'RoCEv2'`` for an ``ibv_gid_type`` value."""
    return {0: "IB", 1: "RoCEv1", 2: "RoCEv2"}.get(gid_type, f"Unknown gid_type ({gid_type})")


def guid_format(num: int) -> str:
    """A GUID held as libibverbs holds it (big-endian bytes in a host integer) printed as
    ``ibv_devinfo`` does: four groups of four hex digits."""
    if sys.byteorder == "little":
        num = int.from_bytes(int(num).to_bytes(8, "little"), "big")
    digits = f"{num:016x}"
    return ":".join(digits[i:i + 4] for i in range(0, 16, 4))


def translate_transport_type(transport_type: int) -> str:
    """The name of an ``ibv_transport_type`` value (``'Unknown'`` for any other)."""
    return {0: "IB", 1: "IWARP", 2: "USNIC", 3: "USNIC UDP"}.get(transport_type, "Unknown")


def translate_node_type(node_type: int) -> str:
    """The name of an ``ibv_node_type`` value (``'Unknown'`` for any other)."""
    names = {1: "CA", 2: "Switch", 3: "Router", 4: "RNIC", 5: "USNIC", 6: "USNIC UDP"}
    return names.get(node_type, "Unknown")


def guid_to_hex(node_guid: int) -> str:
    """A GUID as bare lowercase hex digits (no ``0x``)."""
    return f"{int(node_guid):x}"


def port_state_to_str(port_state: int) -> str:
    """``'Active (4)'`` for an ``ibv_port_state`` value."""
    names = {0: "NOP", 1: "Down", 2: "Init", 3: "Armed", 4: "Active", 5: "Defer"}
    return f"{names[port_state]} ({port_state})" if port_state in names else f"Invalid state ({port_state})"


def str_from_flags(flags: int, dictionary: dict[int, str]) -> str:
    """The names of the bits of ``flags`` that ``dictionary`` names, one per line, each line
    indented by two spaces (pyverbs' layout: a newline first, one after each name)."""
    return "\n  " + "".join(f"{name}\n  " for bit, name in dictionary.items() if flags & bit)


def _named_bits(cls: Any) -> dict[int, str]:
    return {int(m): n for n, m in cls.__members__.items()}


def translate_port_cap_flags(flags: int) -> str:
    """:func:`str_from_flags` over ``ibv_port_cap_flags``."""
    return str_from_flags(flags, _named_bits(libibverbs_enums.ibv_port_cap_flags))


def translate_port_cap_flags2(flags: int) -> str:
    """:func:`str_from_flags` over ``ibv_port_cap_flags2``."""
    return str_from_flags(flags, _named_bits(libibverbs_enums.ibv_port_cap_flags2))


def translate_device_caps(flags: int) -> str:
    """:func:`str_from_flags` over ``ibv_device_cap_flags``."""
    return str_from_flags(flags, _named_bits(libibverbs_enums.ibv_device_cap_flags))


def translate_event_type(event_type: int) -> str:
    """The name of an ``ibv_event_type`` value."""
    for name, member in libibverbs_enums.ibv_event_type.__members__.items():
        if member == event_type:
            return name
    return f"Unknown event_type ({event_type})"
