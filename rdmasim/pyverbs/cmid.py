"""``pyverbs.cmid``: the RDMA connection manager (librdmacm's ``rdma_cm``).

The connection manager is not emulated. Its use is between two processes (a passive side that
listens and an active side that resolves an IP address and connects), each with an IP interface
on the RDMA device, and rdmasim's devices in one process have neither a second process on the same
fabric nor a network interface. Creating an event channel, resolving an address (``AddrInfo``) or
making a ``CMID`` therefore raises ``PyverbsRDMAError`` with EOPNOTSUPP and says so. The parameter
classes (``ConnParam``, ``JoinMCAttrEx``) hold values, so that code importing them loads.
"""

from __future__ import annotations

from rdmasim.pyverbs._attrs import attr_class
from rdmasim.pyverbs._unsupported import unsupported

__all__ = ["AddrInfo", "CMEvent", "CMEventChannel", "CMID", "ConnParam", "JoinMCAttrEx", "UDParam"]

_WHY = ("the RDMA connection manager (rdma_cm) is not emulated: it connects two processes over IP "
        "interfaces of the RDMA devices, and the emulated devices have no IP interface and no second "
        "process on their fabric")

ConnParam = attr_class("ConnParam", __name__, "``rdma_conn_param``.",
                       [("resources", 1), ("depth", 1), ("flow_control", 0), ("retry", 5), ("rnr_retry", 5),
                        ("srq", 0), ("qp_num", 0), ("data_len", 0)])
JoinMCAttrEx = attr_class("JoinMCAttrEx", __name__, "``rdma_cm_join_mc_attr_ex``.",
                          [("addr", None), ("comp_mask", 0), ("join_flags", 0)])
AddrInfo = unsupported("AddrInfo", _WHY, __name__)
CMEvent = unsupported("CMEvent", _WHY, __name__)
CMEventChannel = unsupported("CMEventChannel", _WHY, __name__)
CMID = unsupported("CMID", _WHY, __name__)
UDParam = unsupported("UDParam", _WHY, __name__)
