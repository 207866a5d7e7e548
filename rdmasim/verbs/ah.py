"""Address vectors (``AHAttr``, ``GlobalRoute``: where a QP's or a UD work request's packets go) and
address handles (``ibv_create_ah``)."""

from __future__ import annotations

import errno

from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.transport.handle import Host
from rdmasim.verbs._checks import U8, U16, instance, int_in, same_sim
from rdmasim.verbs.device import PD

# The NIC's ports: one, port 1 (``phys_port_cnt`` 1, as an rxe device on one netdev).
NIC_PORTS = (1,)


def check_av_port(what: str, attr: AHAttr) -> None:
    """An address vector names a port of the NIC, else EINVAL: the kernel checks the port of
    ``ibv_create_ah`` (ib_uverbs_create_ah) and of ``ibv_modify_qp`` with IBV_QP_AV
    (rdma_check_ah_attr) with rdma_is_port_valid."""
    port = int_in("AHAttr port_num", attr.port_num, 0, U8)
    if port not in NIC_PORTS:
        raise PyverbsRDMAError(f"{what}: AHAttr port_num={port} is not a port of the NIC (allowed: 1, "
                               "one port per NIC)", errno.EINVAL)


class GlobalRoute:
    """GRH part of an address vector: for RoCEv2 the destination GID and traffic class."""

    def __init__(self, dgid: str = "", flow_label: int = 0, sgid_index: int = 0,
                 hop_limit: int = 64, traffic_class: int = 0) -> None:
        self.dgid = instance("GlobalRoute dgid", dgid, str)
        self.flow_label = int_in("GlobalRoute flow_label", flow_label, 0, (1 << 20) - 1)
        self.sgid_index = int_in("GlobalRoute sgid_index", sgid_index, 0, U8)
        self.hop_limit = int_in("GlobalRoute hop_limit", hop_limit, 0, U8)
        self.traffic_class = int_in("GlobalRoute traffic_class", traffic_class, 0, U8)


class AHAttr:
    """Address vector (``struct ibv_ah_attr``): where the QP's packets go.

    As in pyverbs, ``is_global`` is 0 by default and ``gr`` counts only with ``is_global=1``:
    RoCE addresses by GID, so modifying a QP to RTR with a non-global address is EINVAL (as
    rdma-core's kernel check). Give ``AHAttr(is_global=1, gr=GlobalRoute(dgid=peer_gid))``, or
    ``dest=host`` (rdmasim's shortcut, needs no GRH). The destination may be the QP's own
    host (loopback through its own port, docs/pyverbs.md "Loopback").
    """

    __slots__ = ("gr", "is_global", "port_num", "dlid", "sl", "src_path_bits", "static_rate", "dest")

    def __init__(self, gr: GlobalRoute | None = None, is_global: int = 0, port_num: int = 1,
                 dlid: int = 0, sl: int = 0, dest: Host | None = None, src_path_bits: int = 0,
                 static_rate: int = 0) -> None:
        self.gr = None if gr is None else instance("AHAttr gr", gr, GlobalRoute)
        self.is_global = int_in("AHAttr is_global", is_global, 0, 1)
        if self.is_global and self.gr is None:
            raise PyverbsUserError("AHAttr is_global=1 needs gr=GlobalRoute(dgid=...)")
        self.port_num = int_in("AHAttr port_num", port_num, 0, U8)
        self.dlid = int_in("AHAttr dlid", dlid, 0, U16)
        self.sl = int_in("AHAttr sl", sl, 0, 15)
        self.src_path_bits = int_in("AHAttr src_path_bits", src_path_bits, 0, U8)
        self.static_rate = int_in("AHAttr static_rate", static_rate, 0, U8)
        self.dest = dest


class AH:
    """An address handle of a PD: ``AH(pd, attr=AHAttr(gr=GlobalRoute(dgid=peer_gid)))`` (or
    ``AHAttr(dest=host)``).  Give it to ``SendWR.set_wr_ud(ah, rqpn, rqkey)``. ``port_num``
    must name the NIC's port, 1: another is EINVAL, as ``ibv_create_ah``."""

    def __init__(self, pd: PD, attr: AHAttr | None = None) -> None:
        instance("AH pd", pd, PD)
        pd._check_open("AH")
        if attr is None:
            raise PyverbsUserError("AH needs attr=AHAttr(gr=GlobalRoute(dgid=<peer GID>)) or "
                                   "AHAttr(dest=<Host>)")
        attr = instance("AH attr", attr, AHAttr)
        check_av_port("Failed to create AH", attr)
        sim = pd.ctx.host.sim
        gr = None if attr.gr is None else instance("AHAttr gr", attr.gr, GlobalRoute)
        dest: Host
        if attr.dest is not None:
            dest = instance("AHAttr dest", attr.dest, Host)
            same_sim(f"AHAttr dest {dest.name}", dest.sim, sim)
        elif gr is not None and gr.dgid:
            instance("GlobalRoute dgid", gr.dgid, str)
            try:
                dest = sim.host_by_gid(gr.dgid)
            except (KeyError, ValueError) as exc:
                raise PyverbsUserError(f"GlobalRoute dgid {gr.dgid!r}: {exc}") from None
        else:
            raise PyverbsUserError("AHAttr needs gr=GlobalRoute(dgid=<peer GID>) or dest=<Host>")
        self.pd = pd
        self.attr = attr
        self.dest = dest
        self.traffic_class = int_in("GlobalRoute traffic_class", gr.traffic_class, 0, U8) if gr else 0
        self._closed = False

    def close(self) -> None:
        """``ibv_destroy_ah`` (work requests already posted keep their destination)."""
        self._closed = True

    def __enter__(self) -> AH:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AH(dest={self.dest.name}, traffic_class={self.traffic_class})"
