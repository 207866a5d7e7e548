"""Address handles (``ibv_create_ah``): where a UD send work request goes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rdmasim.errors import PyverbsUserError
from rdmasim.verbs._checks import U8, instance, int_in, same_sim
from rdmasim.verbs.device import PD
from rdmasim.verbs.qp import AHAttr, GlobalRoute

if TYPE_CHECKING:
    from rdmasim.sim import Host


class AH:
    """An address handle of a PD: ``AH(pd, attr=AHAttr(gr=GlobalRoute(dgid=peer_gid)))`` (or
    ``AHAttr(dest=host)``).  Give it to ``SendWR.set_wr_ud(ah, rqpn, rqkey)``."""

    def __init__(self, pd: PD, attr: AHAttr | None = None) -> None:
        from rdmasim.sim import Host

        instance("AH pd", pd, PD)
        pd._check_open("AH")
        if attr is None:
            raise PyverbsUserError("AH needs attr=AHAttr(gr=GlobalRoute(dgid=<peer GID>)) or "
                                   "AHAttr(dest=<Host>)")
        attr = instance("AH attr", attr, AHAttr)
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
