"""rdmasim: a packet-level RDMA (RoCEv2) transport emulator with a compiled C core.

Quick start::

    import rdmasim
    from rdmasim.verbs import *
    topo = rdmasim.back_to_back(rate="100Gbps", delay="1us", mtu=1024, loss_ab=0.01)
"""

__version__ = "0.1.0"

from rdmasim.sim import Host, Link, Simulator  # noqa: E402
from rdmasim.topology import BackToBack, back_to_back  # noqa: E402

__all__ = ["BackToBack", "Host", "Link", "Simulator", "back_to_back", "__version__"]
