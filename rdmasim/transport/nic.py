"""NIC profiles: transport constants that depend on the NIC, chosen per host with one name.

``"rxe"`` (the default) is Linux's soft-RoCE driver and is what every host did before profiles
existed.  ``"cx6"`` is a ConnectX-6-like hardware NIC.  ``"cx7-ar"`` (ConnectX-7 / BlueField-3 on a
Spectrum-X-like RoCE fabric with adaptive routing) and ``"ib-ar"`` (a ConnectX-7 InfiniBand HCA
under adaptive routing) place packets out of order (docs/multipath.md).  Each constant names its
source; values that no public source fixes are marked as modelled assumptions.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from rdmasim.cc import DcqcnParams
from rdmasim.checks import MAX_TIME_PS, UINT32_MAX
from rdmasim.units import parse_time


class NicProfileError(ValueError):
    """A NIC constant is refused; ``keys`` names the profile fields involved (the one at fault
    first), the message their values and what is allowed."""

    def __init__(self, keys: tuple[str, ...], message: str) -> None:
        super().__init__(message)
        self.keys = keys


#: Largest requester window accepted (half the 24-bit PSN space; csrc/transport/nic_params.h).
MAX_UNACKED_PSNS_LIMIT = 1 << 22


@dataclass(frozen=True)
class NicProfile:
    """NIC-dependent constants of one host.

    ``max_unacked_psns``: PSNs a QP may have in flight beyond the oldest unacknowledged one; the
    window must hold the packets up to the next AckReq (``max_unacked_psns + 1 >=
    ack_req_interval``), as the requester never asks for an ACK because the window is full.
    ``ack_coalesce_pkts``: the responder acknowledges an AckReq packet at once only when it
    completes a group of this many accepted packets since the last ACK (1 = every AckReq packet).
    ``ack_timeout``: longest a coalesced ACK waits (a time string or ps; needed when coalescing).
    ``ack_req_interval``: the requester sets AckReq on a message's last packet and on the n-th
    packet since the last one that had it (1 = every packet, as ns-3 HPCC's L2_ACK_INTERVAL 1).
    ``cnp_interval``: at most one CNP per QP per interval at the notification point (0 = every
    CE-marked packet); applied with the host's congestion control.
    ``dcqcn``: name of the DCQCN preset that goes with the NIC (``DcqcnParams.paper`` / ``nvidia``).
    ``pfc_response``: PFC response time: a PFC frame the NIC receives stops (or restarts) its
    sending this long after it arrived (0 = at once); the switch's headroom must cover it.
    ``ooo_placement``: the NIC places SEND/WRITE packets that arrive out of order where their
    headers say and completes messages in order; QPs between two such NICs use the recovery
    ``"ooo"`` by default (reorder-tolerant selective repeat, docs/multipath.md).  A profile
    without it cannot be given it by an override.
    ``reorder_time``: with ``ooo_placement``, a gap in the PSNs counts as lost (and is reported to
    the sender) once a later PSN has been held this long; shorter reordering costs nothing.
    """

    name: str
    max_unacked_psns: int
    ack_coalesce_pkts: int
    ack_timeout: str | int
    cnp_interval: str | int
    dcqcn: str
    pfc_response: str | int = 0
    ack_req_interval: int = 66
    ooo_placement: bool = False
    reorder_time: str | int = 0

    def __post_init__(self) -> None:
        self._integer("max_unacked_psns", 1, MAX_UNACKED_PSNS_LIMIT)
        self._integer("ack_coalesce_pkts", 1, UINT32_MAX)
        self._integer("ack_req_interval", 1, UINT32_MAX, "allowed >= 1 (an integer up to 2**32 - 1)")
        if self.max_unacked_psns + 1 < self.ack_req_interval:
            # rxe_req.c sets AckReq only on a message's last packet and every RXE_MAX_PKT_PER_ACK + 1
            # packets, never because the window is full (its 129 packets in flight hold 66)
            raise NicProfileError(
                ("max_unacked_psns", "ack_req_interval"),
                f"nic.max_unacked_psns = {self.max_unacked_psns} with nic.ack_req_interval = "
                f"{self.ack_req_interval}: the requester may run max_unacked_psns PSNs ahead of the "
                "oldest unacknowledged one and asks for an ACK only on every ack_req_interval-th "
                "packet (and a message's last), so a longer message would stall until the "
                "retransmit timeout each time the window fills; allowed max_unacked_psns + 1 >= "
                f"ack_req_interval (max_unacked_psns >= {self.ack_req_interval - 1}, or "
                f"ack_req_interval <= {self.max_unacked_psns + 1})")
        t = self._time("ack_timeout")
        if self.ack_coalesce_pkts > 1 and t == 0:
            raise NicProfileError(("ack_timeout", "ack_coalesce_pkts"),
                                  f"nic.ack_timeout = {self.ack_timeout!r}: must be > 0 when "
                                  f"ack_coalesce_pkts > 1 (it is {self.ack_coalesce_pkts})")
        self._time("cnp_interval")
        self._time("pfc_response")
        if not isinstance(self.ooo_placement, bool):
            raise NicProfileError(("ooo_placement",), f"nic.ooo_placement = {self.ooo_placement!r}: "
                                  "allowed true or false")
        reorder = self._time("reorder_time")
        if self.ooo_placement and reorder == 0:
            raise NicProfileError(("reorder_time",), f"nic.reorder_time = {self.reorder_time!r}: must be > 0 "
                                  "with ooo_placement (a gap is reported lost once a later PSN has been "
                                  "held this long)")
        if self.dcqcn not in ("paper", "nvidia"):
            raise NicProfileError(("dcqcn",), f"nic.dcqcn = {self.dcqcn!r}: allowed 'paper', 'nvidia'")

    def _integer(self, name: str, lo: int, hi: int, allowed: str = "") -> None:
        v = getattr(self, name)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise NicProfileError((name,), f"nic.{name} = {v!r}: "
                                  f"{allowed or f'allowed an integer in {lo}..{hi}'}")

    def _time(self, name: str) -> int:
        v = getattr(self, name)
        try:
            t = parse_time(v)
        except (TypeError, ValueError) as exc:
            raise NicProfileError((name,), f"nic.{name} = {v!r}: {exc}; allowed a time "
                                  f"('2us') or an integer of picoseconds in 0..{MAX_TIME_PS}") from None
        if not 0 <= t <= MAX_TIME_PS:
            raise NicProfileError((name,), f"nic.{name} = {v!r}: allowed 0..{MAX_TIME_PS} ps")
        return t

    def with_overrides(self, **kw: Any) -> NicProfile:
        """A copy with some constants changed (unknown names raise, naming the allowed ones)."""
        allowed = {f.name for f in fields(self)} - {"name"}
        bad = set(kw) - allowed
        if bad:
            raise ValueError(f"nic: unknown key(s) {sorted(bad)}; allowed {sorted(allowed)}")
        if kw.get("ooo_placement") is True and not self.ooo_placement:
            with_ooo = ", ".join(n for n, p in PROFILES.items() if p.ooo_placement)
            raise NicProfileError(("ooo_placement",), f"nic.ooo_placement = True: profile {self.name!r} "
                                  "places packets in order only; the profiles with out-of-order "
                                  f"placement are {with_ooo}")
        return replace(self, **kw)

    @property
    def reorder_ps(self) -> int:
        """``reorder_time`` in picoseconds."""
        return parse_time(self.reorder_time)

    def dcqcn_params(self, **overrides: Any) -> DcqcnParams:
        """The DCQCN preset that goes with this NIC, with this profile's CNP interval.

        ``overrides`` are in the preset's own names: ``DcqcnParams`` field names for ``"paper"``,
        mlxconfig names for ``"nvidia"``; a CNP interval among them (``cnp_interval`` or
        ``min_time_between_cnps``) wins over the profile's."""
        if self.dcqcn == "nvidia":
            base, own_interval = DcqcnParams.nvidia(**overrides), "min_time_between_cnps" in overrides
        else:
            base, own_interval = DcqcnParams.paper(**overrides), "cnp_interval" in overrides
        return base if own_interval else replace(base, cnp_interval=self.cnp_interval)


PROFILES: dict[str, NicProfile] = {
    # Linux soft-RoCE (drivers/infiniband/sw/rxe): RXE_MAX_UNACKED_PSNS = 128 (rxe_param.h); the
    # requester sets AckReq at a message's last packet and when `noack_pkts++ > RXE_MAX_PKT_PER_ACK`
    # (64): on the 66th packet since the last AckReq (rxe_req.c, ack_req_interval = 66); the
    # responder ACKs every AckReq packet (rxe_resp.c): no coalescing.  rxe has
    # no DCQCN; the paper's parameters (Zhu et al., SIGCOMM 2015) and its 50 us CNP interval are used.
    # PFC is the Ethernet NIC's under rxe; an ideal response (0) is kept as the reference.
    "rxe": NicProfile("rxe", max_unacked_psns=128, ack_coalesce_pkts=1, ack_timeout=0,
                      cnp_interval="50us", dcqcn="paper", pfc_response=0),
    # ConnectX-6-like.  The PSN window of hardware NICs is not published; modelled assumption:
    # 2^22 (half the PSN space: never the binding limit).  ACK coalescing is done in hardware but
    # its constants are not published; modelled assumption: one ACK per 4 packets, at most 2 us
    # late.  CNP interval: NVIDIA's min_time_between_cnps default 4 us (mlxconfig / NVIDIA RoCE
    # congestion control documentation); DCQCN: DcqcnParams.nvidia().  PFC response time: the
    # upper bound IEEE 802.3 Annex 31D allows a 100 Gb/s MAC, 394 pause quanta = 201,728 bit times
    # = 2.01728 us (the NIC's own figure is not published: the worst case a headroom must cover).
    # AckReq cadence: not published; modelled assumption: as rxe (66), coalescing then applies.
    "cx6": NicProfile("cx6", max_unacked_psns=MAX_UNACKED_PSNS_LIMIT, ack_coalesce_pkts=4,
                      ack_timeout="2us", cnp_interval="4us", dcqcn="nvidia", pfc_response="2017280ps"),
    # ConnectX-7 / BlueField-3 SuperNIC on a Spectrum-X-like RoCE fabric with adaptive routing.
    # Out-of-order data placement: NVIDIA MLNX_OFED / DOCA "Out-of-Order (OOO) Data Placement"
    # (ConnectX-5 and later, RC/XRC/DC: packets of one QP that took different paths are placed in
    # host memory as they arrive instead of being dropped and retransmitted); rdma-core
    # mlx5dv_create_qp(3) MLX5DV_QP_CREATE_OOO_DP; NVIDIA's Spectrum-X material: the SuperNIC takes
    # care of the out-of-order packets at the RoCE transport and hands data to the application in
    # order.  How the NIC finds the address of a MIDDLE/LAST packet and when it calls a gap lost are
    # not published: modelled assumptions, IRN's placement header on every packet (Mittal et al.,
    # SIGCOMM 2018) and a RACK-like reorder time of 50 us (docs/multipath.md).  The other constants
    # are cx6's.
    "cx7-ar": NicProfile("cx7-ar", max_unacked_psns=MAX_UNACKED_PSNS_LIMIT, ack_coalesce_pkts=4,
                         ack_timeout="2us", cnp_interval="4us", dcqcn="nvidia", pfc_response="2017280ps",
                         ooo_placement=True, reorder_time="50us"),
    # ConnectX-7 InfiniBand HCA with adaptive routing (the same OOO data placement documentation;
    # NVIDIA "HowTo Configure Adaptive Routing and SHIELD": AR needs the HCA's out-of-order
    # support).  InfiniBand has no PFC (credits): pfc_response 0.  The rest as cx7-ar.
    "ib-ar": NicProfile("ib-ar", max_unacked_psns=MAX_UNACKED_PSNS_LIMIT, ack_coalesce_pkts=4,
                        ack_timeout="2us", cnp_interval="4us", dcqcn="nvidia", pfc_response=0,
                        ooo_placement=True, reorder_time="50us"),
}


#: the constants a scenario's ``[nic.overrides]`` may set (the CNP interval and the DCQCN preset
#: are set with ``[congestion_control]``)
SCENARIO_OVERRIDES = ("max_unacked_psns", "ack_coalesce_pkts", "ack_timeout", "ack_req_interval",
                      "pfc_response", "ooo_placement", "reorder_time")


def get_profile(name: str | NicProfile, **overrides: Any) -> NicProfile:
    """The named profile (``"rxe"``, ``"cx6"``/``"connectx"``, ``"cx7-ar"``, ``"ib-ar"``) with optional
    per-field overrides."""
    if isinstance(name, NicProfile):
        p = name
    else:
        key = "cx6" if name == "connectx" else name
        if key not in PROFILES:
            raise ValueError(f"nic.profile = {name!r}: allowed {sorted([*PROFILES, 'connectx'])}")
        p = PROFILES[key]
    return p.with_overrides(**overrides) if overrides else p


def apply(sim: Any, host_index: int, profile: NicProfile) -> None:
    """Set the host's NIC constants in the simulation ``sim`` (an ``rdmasim.Simulator``)."""
    from rdmasim.fabric import NODE_HOST

    sim._core.host_set_nic(host_index, profile.max_unacked_psns, profile.ack_coalesce_pkts,
                           parse_time(profile.ack_timeout), profile.ack_req_interval)
    sim._fabric_core().set_pfc_response(NODE_HOST, host_index, 0, parse_time(profile.pfc_response))
