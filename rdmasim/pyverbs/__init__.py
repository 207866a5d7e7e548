"""A pyverbs-shaped namespace over rdmasim's emulated devices.

``rdmasim.pyverbs`` has rdma-core's pyverbs module layout (``device``, ``pd``, ``mr``, ``cq``,
``qp``, ``wr``, ``addr``, ``srq``, ``pyverbs_error``, ``libibverbs_enums``, ``enums``, ``base``,
``utils``, ``mem_alloc``, ``librdmacm_enums``) built on :mod:`rdmasim.verbs`. The modules of
features the emulated devices lack (``providers.mlx5``, ``providers.efa``, ``dmabuf``,
``dma_util``) exist so that code importing them loads; their classes raise EOPNOTSUPP.
Nothing named ``pyverbs`` is importable until you ask:

* ``rdmasim pyverbs-run script.py [args]`` runs an unmodified pyverbs program against it;
* :func:`install` (e.g. in a ``conftest.py``) maps ``import pyverbs`` / ``pyverbs.*`` to this
  package for the rest of the process; :func:`uninstall` removes the mapping.

The devices (``rxe0``, ``rxe1``, ...) are the hosts of a simulation: a default one (two hosts back
to back) or the one given to :func:`use`; under ``rdmasim exec`` they are the fabric daemon's hosts,
shared with the other processes on it (``rdmasim/pyverbs/_remote.py``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any

from rdmasim.pyverbs._devices import reset, simulation, use

__all__ = ["install", "installed", "reset", "run_script", "simulation", "uninstall", "use"]

_ALIAS = "pyverbs"
_TARGET = "rdmasim.pyverbs"


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        """The module is rdmasim's, already executed."""


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``pyverbs`` and ``pyverbs.X`` as ``rdmasim.pyverbs`` and ``rdmasim.pyverbs.X``."""

    def find_spec(self, fullname: str, path: Any = None,
                  target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != _ALIAS and not fullname.startswith(_ALIAS + "."):
            return None
        real = _TARGET + fullname[len(_ALIAS):]
        if importlib.util.find_spec(real) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(real),
                                              is_package=fullname == _ALIAS)


def installed() -> bool:
    """True while ``import pyverbs`` resolves to this package."""
    return any(isinstance(f, _AliasFinder) for f in sys.meta_path)


def install() -> None:
    """Make ``import pyverbs`` and ``import pyverbs.X`` load ``rdmasim.pyverbs`` (and ``.X``) in
    this process, ahead of any installed pyverbs. Refused if a real pyverbs is already imported
    (its objects and these cannot be mixed)."""
    if installed():
        return
    loaded = sys.modules.get(_ALIAS)
    if loaded is not None and not getattr(loaded, "__name__", "").startswith(_TARGET):
        where = getattr(loaded, "__file__", loaded)
        raise RuntimeError(f"install(): a real pyverbs is already imported ({where}); "
                           "install the rdmasim mapping before anything imports pyverbs")
    sys.meta_path.insert(0, _AliasFinder())


def uninstall() -> None:
    """Remove the mapping and forget the aliased ``pyverbs`` modules."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _AliasFinder)]
    for name in [n for n in sys.modules if n == _ALIAS or n.startswith(_ALIAS + ".")]:
        if getattr(sys.modules[name], "__name__", "").startswith(_TARGET):
            del sys.modules[name]


def run_script(path: str, argv: list[str] | None = None) -> None:
    """Run the pyverbs program ``path`` as ``__main__`` with ``sys.argv = [path, *argv]`` and the
    mapping installed (what ``rdmasim pyverbs-run`` does). As ``python path`` does, the program's
    ``__file__`` is absolute whatever ``path`` is, and its directory comes first on ``sys.path``."""
    import os

    install()
    full = os.path.abspath(path)
    old_argv, old_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [path, *(argv or [])]
    sys.path.insert(0, os.path.dirname(full))
    main = ModuleType("__main__")
    main.__file__ = full
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", full)
    main.__builtins__ = __builtins__  # type: ignore[attr-defined]
    old_main = sys.modules.get("__main__")
    sys.modules["__main__"] = main  # the program's classes pickle as __main__.X, as under python
    try:
        with open(full, "rb") as fh:
            code = compile(fh.read(), full, "exec", dont_inherit=True)
        exec(code, main.__dict__)  # runpy.run_path would set sys.argv[0] to the absolute path
    finally:
        sys.argv = old_argv
        if old_main is not None:
            sys.modules["__main__"] = old_main
        if sys.path and sys.path[0] != old_path0:
            del sys.path[0]
