"""The daemon's requests beyond the C library's: what Python clients (``rdmasim.pyverbs`` attached to
the daemon, rdmasim/pyverbs/_remote.py) ask, and the emulated rdma_cm (rdmasim/fabricd/cm.py).

``HANDLERS`` maps a request number (``RSD_PY_*``, ``RSD_CM_*`` in proto.h) to its handler, called as
``handler(daemon, client, words, data, fds)`` and answering as the daemon's own ``_op_*`` methods do;
``client_gone`` releases what a process that went held here.
"""

from __future__ import annotations

import errno
import json
from collections.abc import Callable
from typing import Any

from rdmasim.fabricd import cm, proto

P = proto.C


def _host_info(d: Any, c: Any, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
    """Every host's name, index, MAC, IPv4 address, LID, IB GID and link MTU (what a client needs to
    present the hosts as devices)."""
    out = []
    for h in d.hosts:
        mtu = h.link.mtu if h.link is not None else 4096
        out.append({"name": h.name, "index": h.index, "mac": h.mac, "ip": h.ip, "lid": h.lid,
                    "ib_gid": h.ib_gid, "mtu": mtu})
    return 0, (), json.dumps({"hosts": out, "link_layer": d.sim.link_layer}).encode()


def _cq_count(d: Any, c: Any, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
    from rdmasim.fabricd.objects import VerbsError

    key = (d._host(w[0]), w[1])
    if key not in c.cqs:
        raise VerbsError(errno.EINVAL, f"no CQ {w[1]}")
    return int(d.core.cq_count(*key)), ()


def _srq_limit_event(d: Any, c: Any, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
    """Take an SRQ's pending limit event (a Python client's ``get_async_event`` asks; it opens no
    event queue, so the daemon does not take them for it)."""
    from rdmasim.fabricd.objects import VerbsError

    key = (d._host(w[0]), w[1])
    if key not in c.srqs:
        raise VerbsError(errno.EINVAL, f"no SRQ {w[1]}")
    return int(bool(d.core.srq_take_limit_event(*key))), ()


def _rereg_mr(d: Any, c: Any, w: tuple[int, ...], data: bytes, fds: list[int]) -> Any:
    """``ibv_rereg_mr`` changing the PD and/or access of a region in place (the memory stays)."""
    from rdmasim.fabricd.objects import VerbsError

    h, idx, pd, access = d._host(w[0]), w[1], w[2], w[3]
    if (h, idx) not in c.mrs:
        raise VerbsError(errno.EINVAL, f"ibv_rereg_mr: no MR {idx}")
    if (h, pd) not in c.pds:
        raise VerbsError(errno.EINVAL, f"ibv_rereg_mr: no PD {pd}")
    return 0, (int(d.core.mr_rereg(h, idx, pd, access)),)


HANDLERS: dict[int, Callable[..., Any]] = {
    P["RSD_PY_HOST_INFO"]: _host_info,
    P["RSD_PY_CQ_COUNT"]: _cq_count,
    P["RSD_PY_SRQ_LIMIT_EVENT"]: _srq_limit_event,
    P["RSD_PY_REREG_MR"]: _rereg_mr,
    P["RSD_CM_CREATE_CHANNEL"]: cm.create_channel,
    P["RSD_CM_DESTROY_CHANNEL"]: cm.destroy_channel,
    P["RSD_CM_GET_EVENT"]: cm.get_event,
    P["RSD_CM_CALL"]: cm.call,
}


def client_gone(d: Any, c: Any) -> None:
    """A process went: its rdma_cm identifiers and channels go (peers see DISCONNECTED)."""
    cm.client_gone(d, c)

