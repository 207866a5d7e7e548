"""The emulated RDMA devices behind ``rdmasim.pyverbs``: one device per simulated host.

Device ``rxe<i>`` is the i-th host of the simulation (in the order the hosts were added). The
simulation is a default one (two hosts back to back) until :func:`use` replaces it.

Capabilities are Linux rxe's defaults (``drivers/infiniband/sw/rxe/rxe_param.h``, enum
``rxe_device_param`` and ``rxe_port_param``), so that a program sees what it would see on a
soft-RoCE device.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rdmasim.errors import PyverbsUserError

if TYPE_CHECKING:
    from rdmasim.sim import Host, Simulator

_MAX_VALUE = 1 << 20

#: ``ibv_device_attr`` values of Linux rxe (rxe_param.h). ``max_cqe`` is ``(1 << RXE_MAX_LOG_CQE) - 1``
#: as rxe_init_device_param reports it.
RXE_DEVICE_ATTR: dict[str, int] = {
    "max_mr_size": (1 << 64) - 1,
    "page_size_cap": 0xFFFFF000,
    "vendor_id": 0xFFFFFF,  # RXE_VENDOR_ID
    "vendor_part_id": 0,
    "hw_ver": 0,
    "max_qp": 0x10000,
    "max_qp_wr": 0x4000,
    "max_sge": 32,
    "max_sge_rd": 32,
    "max_cq": 16384,
    "max_cqe": (1 << 15) - 1,
    "max_mr": 256 * 1024,
    "max_pd": 0x7FFC,
    "max_qp_rd_atom": 128,
    "max_ee_rd_atom": 0,
    "max_res_rd_atom": 0x3F000,
    "max_qp_init_rd_atom": 128,
    "max_ee_init_rd_atom": 0,
    "max_ee": 0,
    "max_rdd": 0,
    "max_mw": 0x1000,  # RXE_MAX_MW
    "max_raw_ipv6_qp": 0,
    "max_raw_ethy_qp": 0,
    "max_mcast_grp": 8192,
    "max_mcast_qp_attach": 56,
    "max_total_mcast_qp_attach": 0x70000,
    "max_ah": 100,
    "max_fmr": 0,
    "max_map_per_fmr": 0,
    "max_srq": 960,
    "max_srq_wr": 0x4000,
    "max_srq_sge": 27,
    "max_pkeys": 64,
    "local_ca_ack_delay": 15,
    "phys_port_cnt": 1,
}

#: ``ibv_port_attr`` values of Linux rxe (rxe_param.h, rxe_port_param) that do not depend on the link.
RXE_PORT_ATTR: dict[str, int] = {
    "gid_tbl_len": 1024,
    "max_msg_sz": 0x800000,
    "bad_pkey_cntr": 0,
    "qkey_viol_cntr": 0,
    "pkey_tbl_len": 64,
    "lid": 0,
    "sm_lid": 0,
    "lmc": 0,
    "max_vl_num": 1,
    "sm_sl": 0,
    "subnet_timeout": 0,
    "init_type_reply": 0,
    "active_width": 1,   # IB_WIDTH_1X
    "active_speed": 1,
    "active_speed_ex": 0,  # 0: active_speed holds the speed
    "port_cap_flags2": 0,
    "flags": 0,
}

IBV_PORT_ACTIVE = 4
IBV_LINK_LAYER_INFINIBAND = 1
IBV_LINK_LAYER_ETHERNET = 2
IBV_PORT_PHYS_STATE_LINK_UP = 5
IBV_ATOMIC_HCA = 1
# rxe's RXE_DEVICE_CAP_FLAGS (rxe_param.h): the counters and port bits (BAD_PKEY_CNTR,
# BAD_QKEY_CNTR, AUTO_PATH_MIG, CHANGE_PHY_PORT, UD_AV_PORT_ENFORCE, PORT_ACTIVE_EVENT,
# MEM_MGT_EXTENSIONS), RNR NAKs, a system image GUID and SRQ resize
IBV_DEVICE_BAD_PKEY_CNTR = 1 << 1
IBV_DEVICE_BAD_QKEY_CNTR = 1 << 2
IBV_DEVICE_AUTO_PATH_MIG = 1 << 4
IBV_DEVICE_CHANGE_PHY_PORT = 1 << 5
IBV_DEVICE_UD_AV_PORT_ENFORCE = 1 << 6
IBV_DEVICE_PORT_ACTIVE_EVENT = 1 << 10
IBV_DEVICE_MEM_MGT_EXTENSIONS = 1 << 21
_RXE_PORT_CAPS = (IBV_DEVICE_BAD_PKEY_CNTR | IBV_DEVICE_BAD_QKEY_CNTR | IBV_DEVICE_AUTO_PATH_MIG
                  | IBV_DEVICE_CHANGE_PHY_PORT | IBV_DEVICE_UD_AV_PORT_ENFORCE
                  | IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_MEM_MGT_EXTENSIONS)
IBV_DEVICE_SRQ_RESIZE = 8192
IBV_DEVICE_SYS_IMAGE_GUID = 2048
IBV_DEVICE_RC_RNR_NAK_GEN = 4096
# memory windows: rxe's IB_DEVICE_MEM_WINDOW | IB_DEVICE_MEM_WINDOW_TYPE_2B (type 1 and type 2B)
IBV_DEVICE_MEM_WINDOW = 1 << 17
IBV_DEVICE_MEM_WINDOW_TYPE_2B = 1 << 24
_MW_CAPS = IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B
# rxe's IB_DEVICE_FLUSH_GLOBAL | IB_DEVICE_FLUSH_PERSISTENT | IB_DEVICE_ATOMIC_WRITE (uverbs bits 38-40),
# reported in device_cap_flags_ex only
IBV_DEVICE_FLUSH_GLOBAL = 1 << 38
IBV_DEVICE_FLUSH_PERSISTENT = 1 << 39
IBV_DEVICE_ATOMIC_WRITE = 1 << 40
_EX_CAPS = IBV_DEVICE_FLUSH_GLOBAL | IBV_DEVICE_FLUSH_PERSISTENT | IBV_DEVICE_ATOMIC_WRITE
IBV_NODE_CA = 1
IBV_TRANSPORT_IB = 0
_MTU_ENUM = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}


@dataclass(frozen=True)
class DeviceAttr:
    """``struct ibv_device_attr`` of an emulated device (``Context.query_device()``)."""

    fw_version: str
    node_guid: int
    sys_image_guid: int
    atomic_caps: int
    device_cap_flags: int
    values: dict[str, int] = field(repr=False)

    def __getattr__(self, name: str) -> int:
        values = self.__dict__.get("values", {})
        if name in values:
            return values[name]
        raise AttributeError(f"DeviceAttr has no attribute {name!r}")


# rxe's ODP capabilities (rxe_init_device_param with CONFIG_INFINIBAND_ON_DEMAND_PAGING): ODP
# without implicit MRs; RC: SEND, RECV, WRITE, READ, ATOMIC, SRQ_RECV, FLUSH, ATOMIC_WRITE;
# UD: SEND, RECV, SRQ_RECV; none for UC
IBV_ODP_SUPPORT = 1
_ODP_SEND, _ODP_RECV, _ODP_WRITE, _ODP_READ, _ODP_ATOMIC, _ODP_SRQ_RECV = 1, 2, 4, 8, 16, 32
_ODP_FLUSH, _ODP_ATOMIC_WRITE = 64, 128
RXE_RC_ODP_CAPS = (_ODP_SEND | _ODP_RECV | _ODP_WRITE | _ODP_READ | _ODP_ATOMIC | _ODP_SRQ_RECV
                   | _ODP_FLUSH | _ODP_ATOMIC_WRITE)
RXE_UD_ODP_CAPS = _ODP_SEND | _ODP_RECV | _ODP_SRQ_RECV


@dataclass(frozen=True)
class OdpCaps:
    """``struct ibv_odp_caps``: on-demand paging as rxe has it. The emulated NIC reads and writes
    the registered memory itself, so an ODP MR (``IBV_ACCESS_ON_DEMAND``) is served like any
    other, whatever pages the process has dropped."""

    general_caps: int = IBV_ODP_SUPPORT
    rc_odp_caps: int = RXE_RC_ODP_CAPS
    uc_odp_caps: int = 0
    ud_odp_caps: int = RXE_UD_ODP_CAPS


@dataclass(frozen=True)
class TSOCaps:
    """``struct ibv_tso_caps``: no TSO."""

    max_tso: int = 0
    supported_qpts: int = 0


@dataclass(frozen=True)
class DeviceAttrEx:
    """``struct ibv_device_attr_ex`` (``Context.query_device_ex()``): ``orig_attr`` plus the
    extended capabilities, all absent (0) as on rxe except ``phys_port_cnt_ex``."""

    orig_attr: DeviceAttr
    odp_caps: OdpCaps = field(default_factory=OdpCaps)
    tso_caps: TSOCaps = field(default_factory=TSOCaps)
    xrc_odp_caps: int = 0
    completion_timestamp_mask: int = 0
    hca_core_clock: int = 0
    device_cap_flags_ex: int = 0
    raw_packet_caps: int = 0
    max_wq_type_rq: int = 0
    max_dm_size: int = 0
    phys_port_cnt_ex: int = 1


@dataclass(frozen=True)
class PortAttr:
    """``struct ibv_port_attr`` of an emulated device's port 1 (``Context.query_port(1)``)."""

    state: int
    max_mtu: int
    active_mtu: int
    link_layer: int
    phys_state: int
    port_cap_flags: int
    values: dict[str, int] = field(repr=False)

    def __getattr__(self, name: str) -> int:
        values = self.__dict__.get("values", {})
        if name in values:
            return values[name]
        raise AttributeError(f"PortAttr has no attribute {name!r}")


class _Registry:
    sim: Simulator | None = None


_REG = _Registry()


def use(topo_or_sim: Any) -> Simulator:
    """Make the hosts of ``topo_or_sim`` (a Simulator, or a topology with a ``.sim``) the devices
    ``rxe0``, ``rxe1``, ... that ``get_device_list()`` and ``Context(name=...)`` see. Returns the
    simulation. Contexts opened before keep their hosts."""
    from rdmasim.sim import Simulator

    sim = getattr(topo_or_sim, "sim", topo_or_sim)
    if not isinstance(sim, Simulator):
        raise PyverbsUserError(f"use() needs a Simulator or a topology with .sim, got {topo_or_sim!r}")
    if not sim.hosts:
        raise PyverbsUserError("use(): the simulation has no hosts, so it would have no devices")
    _REG.sim = sim
    return sim


def simulation() -> Simulator:
    """The simulation behind the devices: the one given to :func:`use`, else a default one made on
    first use (two hosts ``host0`` and ``host1`` back to back at 100 Gb/s, 1 us, MTU 4096)."""
    if _REG.sim is None:
        from rdmasim.pyverbs import _remote

        if _remote.active():  # under `rdmasim exec`: the fabric daemon's hosts, shared with other processes
            return _remote.simulation()  # type: ignore[return-value]
        from rdmasim.topology import back_to_back

        _REG.sim = back_to_back(rate="100Gbps", delay="1us", mtu=4096, names=("host0", "host1")).sim
    return _REG.sim


def reset() -> None:
    """Forget the simulation; the next use makes a fresh default one."""
    _REG.sim = None


def device_names(sim: Simulator | None = None) -> list[str]:
    """``rxe0``, ``rxe1``, ...: one per host, in the order the hosts were added."""
    sim = sim if sim is not None else simulation()
    return [f"rxe{i}" for i in range(len(sim.hosts))]


def host_of(name: Any) -> Host:
    """The host behind device ``name`` (str or bytes, as pyverbs accepts)."""
    if isinstance(name, bytes):
        name = name.decode()
    sim = simulation()
    names = device_names(sim)
    if not isinstance(name, str) or name not in names:
        raise PyverbsUserError(f"Context name={name!r}: no such device; devices: {names}")
    return list(sim.hosts.values())[names.index(name)]


def device_name(host: Host) -> str:
    """The device name of ``host`` in its simulation."""
    return f"rxe{list(host.sim.hosts.values()).index(host)}"


def node_guid(host: Host) -> int:
    """An EUI-64 from the host's MAC (ff:fe in the middle, universal/local bit flipped), as rxe
    derives its node GUID from the netdev's address."""
    mac = bytes(int(x, 16) for x in str(host.mac).split(":"))
    eui = bytes([mac[0] ^ 2]) + mac[1:3] + b"\xff\xfe" + mac[3:6]
    return int.from_bytes(eui, "big")


def device_attr(host: Host) -> DeviceAttr:
    """``ibv_device_attr`` of the device on ``host``."""
    guid = node_guid(host)
    return DeviceAttr(fw_version="0.0.0", node_guid=guid, sys_image_guid=guid,
                      atomic_caps=IBV_ATOMIC_HCA,
                      device_cap_flags=(IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_RC_RNR_NAK_GEN
                                        | IBV_DEVICE_SRQ_RESIZE | _MW_CAPS | _RXE_PORT_CAPS),
                      values=dict(RXE_DEVICE_ATTR))


def device_attr_ex(host: Host) -> DeviceAttrEx:
    """``ibv_device_attr_ex`` of the device on ``host``: ``device_cap_flags_ex`` is the 32-bit
    flags plus rxe's FLUSH and ATOMIC WRITE bits (both emulated)."""
    orig = device_attr(host)
    return DeviceAttrEx(orig_attr=orig, device_cap_flags_ex=orig.device_cap_flags | _EX_CAPS)


def port_attr(host: Host) -> PortAttr:
    """``ibv_port_attr`` of port 1 on ``host``: ACTIVE, Ethernet (InfiniBand with its LID on an IB
    fabric), the active MTU of its link."""
    link = host.link
    mtu = link.mtu if link is not None else 4096
    # as rxe: the largest IB MTU that fits the link's
    active = max((v for b, v in _MTU_ENUM.items() if b <= mtu), default=_MTU_ENUM[256])
    ib = getattr(host.sim, "link_layer", "roce") == "ib"
    values = dict(RXE_PORT_ATTR, lid=host.lid) if ib else dict(RXE_PORT_ATTR)
    return PortAttr(state=IBV_PORT_ACTIVE, max_mtu=_MTU_ENUM[4096], active_mtu=active,
                    link_layer=IBV_LINK_LAYER_INFINIBAND if ib else IBV_LINK_LAYER_ETHERNET,
                    phys_state=IBV_PORT_PHYS_STATE_LINK_UP, port_cap_flags=0, values=values)


def gid_text(host: Host) -> str:
    """The port's RoCEv2 GID in pyverbs' spelling: eight groups of four hex digits."""
    packed = ipaddress.IPv6Address(host.gid).packed
    return ":".join(packed[i:i + 2].hex() for i in range(0, 16, 2))
