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


# Looked up, not loaded (the core loads on first use, below): a clone imported after `pip install .`
# has no extension beside its sources, and the first use would fail deep inside with a circular-import
# message.
import importlib.util as _importlib_util  # noqa: E402

if _importlib_util.find_spec("rdmasim._core") is None:
    raise ImportError(_core_missing_message())

# the old paths of modules now in packages per layer (rdmasim.cc_dctcp is rdmasim.cc.dctcp)
from rdmasim import _moved  # noqa: E402

_moved.install()

from typing import TYPE_CHECKING as _TYPE_CHECKING  # noqa: E402

if _TYPE_CHECKING:
    from rdmasim.fabric import Switch
    from rdmasim.sim import Host, Link, Simulator
    from rdmasim.topology import (
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

# The names below are imported when first used (PEP 562), not with the package: ``import
# rdmasim.cli`` then loads no numpy and no C core, so the command line starts in milliseconds and
# a Ctrl-C while it loads the rest reaches its own handler (a one-line message, exit 130).
_LAZY = {
    "Switch": "rdmasim.fabric",
    "get_include": "rdmasim.cc.plugin",
    "Host": "rdmasim.sim", "Link": "rdmasim.sim", "Simulator": "rdmasim.sim",
    **{name: "rdmasim.topology" for name in ("BackToBack", "back_to_back", "dragonfly", "dumbbell",
                                             "fat_tree", "incast", "leaf_spine", "rail_optimized",
                                             "ring", "star")},
}


def __getattr__(name: str) -> object:
    import importlib

    mod = _LAZY.get(name)
    if mod is not None:
        value = getattr(importlib.import_module(mod), name)
        globals()[name] = value
        return value
    # a submodule not imported yet (``import rdmasim; rdmasim.units.parse_rate(...)``, which worked
    # when the package imported its core at once)
    if not name.startswith("_"):
        import importlib.util

        if importlib.util.find_spec(f"rdmasim.{name}") is not None:
            return importlib.import_module(f"rdmasim.{name}")
    raise AttributeError(f"module 'rdmasim' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})

__all__ = ["BackToBack", "Host", "Link", "Simulator", "Switch", "back_to_back", "dragonfly", "dumbbell",
           "fat_tree", "get_include", "incast", "leaf_spine", "rail_optimized", "ring", "star",
           "__version__"]
