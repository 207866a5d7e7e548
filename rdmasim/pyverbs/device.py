"""``pyverbs.device``: the emulated devices, ``get_device_list()`` and ``Context(name=...)``."""

from __future__ import annotations

import errno
from typing import Any

from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.pyverbs import _devices
from rdmasim.pyverbs._devices import DeviceAttr, DeviceAttrEx, PortAttr
from rdmasim.pyverbs._unsupported import unsupported
from rdmasim.pyverbs.addr import GID
from rdmasim.verbs import device as _device
from rdmasim.verbs._checks import U16, int_in

__all__ = ["DM", "AllocDmAttr", "Context", "Device", "DeviceAttr", "DeviceAttrEx", "FdArr", "PortAttr",
           "get_device_list"]

DM = unsupported("DM", "device memory is not supported (max_dm_size 0, as on rxe)", __name__)
AllocDmAttr = unsupported("AllocDmAttr", "device memory is not supported (max_dm_size 0, as on rxe)",
                          __name__)
FdArr = unsupported("FdArr", "file-descriptor arrays serve mlx5 DEVX, which the device lacks", __name__)


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
    return [Device(n, _devices.node_guid(h)) for n, h in zip(names, sim.hosts.values(), strict=True)]


class Context(_device.Context):
    """An opened emulated device: ``Context(name="rxe0")`` (the name may be bytes, as a
    ``Device.name``). ``Context(host)`` opens the device of a host directly."""

    def __init__(self, host: Any = None, name: str | bytes | None = None, **kwargs: Any) -> None:
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

    def query_device(self) -> DeviceAttr:
        """``ibv_query_device``: Linux rxe's capabilities (see rdmasim.pyverbs._devices)."""
        self._check_open("query_device")
        return _devices.device_attr(self.host)

    def query_device_ex(self) -> DeviceAttrEx:
        """``ibv_query_device_ex``: ``orig_attr`` is ``query_device()``; no extended capabilities."""
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

    def __enter__(self) -> Context:
        return self


def _check_port(what: str, port_num: Any) -> None:
    if int_in(f"{what} port_num", port_num, 0, 255) != 1:
        raise PyverbsRDMAError(f"{what}: port_num={port_num}: the device has one port, 1", errno.EINVAL)


def _check_gid_index(what: str, index: Any) -> int:
    index = int_in(f"{what} index", index, 0, U16)
    tbl = _devices.RXE_PORT_ATTR["gid_tbl_len"]
    if index >= tbl:
        raise PyverbsRDMAError(f"{what}: index={index}: the GID table has {tbl} entries (0..{tbl - 1})",
                               errno.EINVAL)
    return index
