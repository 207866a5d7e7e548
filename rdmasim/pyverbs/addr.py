"""``pyverbs.addr``: GID, GlobalRoute, AHAttr and AH, with pyverbs' defaults."""

from __future__ import annotations

import errno
import ipaddress
from typing import Any

from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.verbs import ah as _ah
from rdmasim.verbs._checks import U8, U16, instance, int_in

__all__ = ["AH", "AHAttr", "GID", "GlobalRoute"]


class GID:
    """A 16-byte GID (``union ibv_gid``); ``gid`` is its text, eight groups of four hex digits."""

    def __init__(self, val: str | None = None) -> None:
        self._addr = ipaddress.IPv6Address(0)
        if val is not None:
            self.gid = val

    @property
    def gid(self) -> str:
        """The GID as pyverbs prints it (``0000:0000:0000:0000:0000:ffff:0a00:0001``)."""
        p = self._addr.packed
        return ":".join(p[i:i + 2].hex() for i in range(0, 16, 2))

    @gid.setter
    def gid(self, val: str) -> None:
        if not isinstance(val, str):
            raise PyverbsUserError(f"GID must be a str, got {val!r} ({type(val).__name__})")
        try:
            self._addr = ipaddress.IPv6Address(val)
        except ValueError as exc:
            raise PyverbsUserError(f"GID {val!r}: {exc}") from None

    def _roce(self) -> str:
        """The form rdmasim's hosts use (``::ffff:10.0.0.1``) for IPv4-mapped GIDs."""
        v4 = self._addr.ipv4_mapped
        return f"::ffff:{v4}" if v4 is not None else str(self._addr)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, GID):
            return self._addr == other._addr
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._addr)

    def __str__(self) -> str:
        return self.gid

    def __repr__(self) -> str:
        return f"GID({self.gid})"


def _dgid_text(dgid: Any) -> str:
    if isinstance(dgid, GID):
        return dgid._roce()
    if isinstance(dgid, str):
        return GID(dgid)._roce() if dgid else ""
    raise PyverbsUserError(f"GlobalRoute dgid must be a GID, got {dgid!r} ({type(dgid).__name__})")


class GlobalRoute(_ah.GlobalRoute):
    """GRH fields of an address vector; ``dgid`` is a :class:`GID` (or its text)."""

    def __init__(self, dgid: GID | str | None = None, flow_label: int = 0, sgid_index: int = 0,
                 hop_limit: int = 1, traffic_class: int = 0) -> None:
        super().__init__(dgid=_dgid_text(dgid) if dgid is not None else "", flow_label=flow_label,
                         sgid_index=sgid_index, hop_limit=hop_limit, traffic_class=traffic_class)


class AHAttr(_ah.AHAttr):
    """Address vector with pyverbs' defaults: not global unless ``gr`` is given."""

    def __init__(self, dlid: int = 0, sl: int = 0, src_path_bits: int = 0, static_rate: int = 0,
                 is_global: int = 0, port_num: int = 1, gr: GlobalRoute | None = None) -> None:
        if gr is not None:
            instance("AHAttr gr", gr, _ah.GlobalRoute)
            is_global = 1  # pyverbs sets is_global when a GlobalRoute is given
        super().__init__(gr=gr, is_global=is_global, port_num=port_num, dlid=dlid, sl=sl)
        self.src_path_bits = int_in("AHAttr src_path_bits", src_path_bits, 0, U8)
        self.static_rate = int_in("AHAttr static_rate", static_rate, 0, U8)
        int_in("AHAttr dlid", dlid, 0, U16)


class AH(_ah.AH):
    """An address handle (``ibv_create_ah``) on a PD; ``attr`` is the address it holds.

    rdmasim.verbs' AH with pyverbs' rule on RoCE: without a global route creating it fails with
    EINVAL. The destination GID is resolved when the AH is made, so an unknown GID fails here
    (as on RoCE, where the neighbour must resolve), not at send time."""

    def __init__(self, pd: Any, attr: AHAttr | None = None, wc: Any = None, port_num: int = 1,
                 grh: int | None = None) -> None:
        if wc is not None:  # ibv_create_ah_from_wc: the sender of a UD receive, from its GRH
            if grh is None:
                raise PyverbsUserError("AH(pd, wc=...) needs grh= (the address of the receive buffer's "
                                       "first 40 bytes)")
            attr = AHAttr(gr=GlobalRoute(dgid=_grh_source(pd, int(grh)), sgid_index=0), is_global=1,
                          port_num=port_num)
        if attr is None:
            raise PyverbsUserError("AH needs attr= (an AHAttr) or wc= and grh=")
        instance("AH attr", attr, _ah.AHAttr)
        if attr.dest is None and (attr.gr is None or not attr.gr.dgid):
            raise PyverbsRDMAError("Failed to create AH: a RoCE port needs a global route "
                                   "(gr=GlobalRoute(dgid=...)), as ib_core's rdma_check_ah_attr",
                                   errno.EINVAL)
        group = _multicast_group(attr)
        if group is not None:  # a multicast group (rdma_cm's): sent to its members one by one
            if not getattr(pd.ctx.host.sim._core, "remote", False):
                raise PyverbsRDMAError("Failed to create AH: multicast groups exist on the fabric daemon's "
                                       "fabric (rdmasim exec), through rdma_cm's join_multicast",
                                       errno.EOPNOTSUPP)
            own = AHAttr(gr=GlobalRoute(dgid=pd.ctx.host.gid, sgid_index=0), is_global=1,
                         port_num=attr.port_num)
            super().__init__(pd, own)
        else:
            super().__init__(pd, attr)
        self._mcast_group = group
        self.ah_attr = attr


def _grh_source(pd: Any, addr: int) -> str:
    """The source GID of the GRH area at ``addr`` (in a registered region of ``pd``): RoCEv2 over
    IPv4 puts the IPv4 header in its last 20 bytes (rxe's layout), else the GRH's SGID."""
    for mr in list(getattr(pd, "_children", ())):
        buf, length = getattr(mr, "buf", None), getattr(mr, "length", 0)
        if isinstance(buf, int) and buf <= addr and addr + 40 <= buf + length and not mr._closed:
            raw = bytes(mr._array[addr - buf:addr - buf + 40])
            if raw[:20] == bytes(20):
                return "::ffff:" + ".".join(str(b) for b in raw[32:36])
            return ":".join(raw[8 + i:10 + i].hex() for i in range(0, 16, 2))
    raise PyverbsRDMAError(f"Failed to create AH from WC: grh=0x{addr:x} is not in a registered region "
                           "of the PD", errno.EINVAL)


def _multicast_group(attr: Any) -> str | None:
    """The IPv4 multicast group an address vector names (its dgid IPv4-mapped, as rdma_cm makes a
    RoCEv2 group's GID), or None."""
    gr = getattr(attr, "gr", None)
    dgid = getattr(gr, "dgid", None) if gr is not None else None
    if not dgid or attr.dest is not None:
        return None
    try:
        v4 = ipaddress.IPv6Address(str(dgid)).ipv4_mapped
    except ValueError:
        return None
    return str(v4) if v4 is not None and v4.is_multicast else None
