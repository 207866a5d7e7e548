"""Old module paths kept for users: ``import rdmasim.cc_dctcp`` gives ``rdmasim.cc.dctcp``.

rdmasim's modules live in packages per layer (docs/design.md, "Layers"). :data:`MOVED` maps
each module's old dotted path to its new one (a package's submodules follow it:
``rdmasim.traffic.table`` is ``rdmasim.workload.traffic.table``), and a finder at the front of
``sys.meta_path`` serves the old name as the same module object, so ``from rdmasim.cc_dctcp
import DctcpParams``, ``import rdmasim.nic`` and ``rdmasim.cc_plugin.register_plugin`` keep
working, and ``rdmasim.cc_dctcp is rdmasim.cc.dctcp``. The table is data, not files at the old
paths, so no module sits at both places. rdmasim's own modules import the new paths
(``.ci/check_py_layers.py`` fails on an old one).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

#: old dotted module path -> the module's path now
MOVED: dict[str, str] = {
    # congestion control: one module per algorithm in rdmasim/cc/
    "rdmasim.cc_dctcp": "rdmasim.cc.dctcp",
    "rdmasim.cc_hpcc": "rdmasim.cc.hpcc",
    "rdmasim.cc_ibcc": "rdmasim.cc.ibcc",
    "rdmasim.cc_nscc": "rdmasim.cc.nscc",
    "rdmasim.cc_swift": "rdmasim.cc.swift",
    "rdmasim.cc_timely": "rdmasim.cc.timely",
    "rdmasim.cc_plugin": "rdmasim.cc.plugin",
    "rdmasim._param_checks": "rdmasim.cc._param_checks",
    # the fabric: switches and links (rdmasim.fabric), the InfiniBand link layer and its routing
    "rdmasim.ib_fabric": "rdmasim.fabric.ib",
    # the transport: the simulation handle the verbs use, NIC profiles, UET's per-flow options
    "rdmasim._handle": "rdmasim.transport.handle",
    "rdmasim.nic": "rdmasim.transport.nic",
    "rdmasim.uet": "rdmasim.transport.uet",
    # the workload: bulk flows and the traffic packages (their submodules follow the package)
    "rdmasim.flows": "rdmasim.workload.flows",
    "rdmasim.traffic": "rdmasim.workload.traffic",
}


class _Alias(importlib.abc.Loader):
    """Loads an old path as the module at its new one (the same object, already executed)."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # the module ran when its new path was imported; the import system has just set its
        # __spec__ to the old path's: give it back its own
        module.__spec__ = self._spec


def new_path(name: str) -> str | None:
    """The module path now of the old dotted path ``name`` (or of a module under an old package
    path); None when ``name`` did not move."""
    head, tail = name, ""
    while head.startswith("rdmasim."):
        new = MOVED.get(head)
        if new is not None:
            return new + tail
        head, _, last = head.rpartition(".")
        tail = f".{last}{tail}"
    return None


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the old paths of :data:`MOVED` and the modules under them (and nothing else). It
    runs before the path finder: a submodule of an old package path would otherwise be found in
    the new package's folder and loaded a second time under the old name."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("rdmasim."):
            return None
        new = new_path(fullname)
        if new is None or importlib.util.find_spec(new) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Put the finder at the front of ``sys.meta_path`` once (``import rdmasim`` does)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
