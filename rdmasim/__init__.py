"""rdmasim: a packet-level RDMA (RoCEv2) transport emulator with a compiled C core.

Quick start::

    import rdmasim
    from rdmasim.verbs import *
    topo = rdmasim.back_to_back(rate="100Gbps", delay="1us", mtu=1024, loss_ab=0.01)
"""

__version__ = "0.1.0"

import os as _os
import sys as _sys

# rdmasim does no linear algebra, but numpy's OpenBLAS starts a thread per core that spins after
# import and competes with the simulation for the CPU (measured: 7 % of samples on 2 cores, up to
# 20 % slower runs under load; docs/performance.md). Only when numpy is not imported yet and the
# variable is unset: set OPENBLAS_NUM_THREADS yourself (or import numpy first) to keep your own.
if "numpy" not in _sys.modules:
    _os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _core_missing_message() -> str:
    """Say what to do when the package is imported from a source tree whose core is not built."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    return (
        f"rdmasim's compiled core is not built in {here} (this is the source tree, not the installed "
        "package). Build it in place with `pip install -e .` (or "
        "`python setup.py build_ext --inplace`) in the clone, or run from outside the clone to use "
        "the installed rdmasim."
    )


try:
    from rdmasim import _core as _core_check  # noqa: E402,F401
except ImportError as _err:  # an extension that is absent, not one that fails to load its symbols
    if "_core" not in str(_err) or "undefined symbol" in str(_err):
        raise
    raise ImportError(_core_missing_message()) from _err

from rdmasim.fabric import Switch  # noqa: E402
from rdmasim.sim import Host, Link, Simulator  # noqa: E402
from rdmasim.topology import (  # noqa: E402
    BackToBack,
    back_to_back,
    dragonfly,
    dumbbell,
    fat_tree,
    incast,
    leaf_spine,
    rail_optimized,
    ring,
    star,
)

__all__ = ["BackToBack", "Host", "Link", "Simulator", "Switch", "back_to_back", "dragonfly", "dumbbell",
           "fat_tree", "incast", "leaf_spine", "rail_optimized", "ring", "star", "__version__"]
