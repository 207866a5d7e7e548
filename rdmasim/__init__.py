"""rdmasim: a packet-level RDMA (RoCEv2) transport emulator with a compiled C core.

Quick start::

    import rdmasim
    from rdmasim.verbs import *
    topo = rdmasim.back_to_back(rate="100Gbps", delay="1us", mtu=1024, loss_ab=0.01)
"""

__version__ = "0.1.0"

from rdmasim.fabric import Switch  # noqa: E402
from rdmasim.sim import Host, Link, Simulator  # noqa: E402
from rdmasim.topology import (  # noqa: E402
    BackToBack,
    back_to_back,
    dumbbell,
    fat_tree,
    incast,
    leaf_spine,
    ring,
    star,
)

__all__ = ["BackToBack", "Host", "Link", "Simulator", "Switch", "back_to_back", "dumbbell", "fat_tree",
           "incast", "leaf_spine", "ring", "star", "__version__"]
