"""Congestion-control plug-ins: an ``rs_cc_algo`` written in C, compiled at run time with cffi.

A plug-in is C source that defines the callbacks of ``rs_cc_algo`` (``rdmasim/cc.h``) and one table
``const rs_cc_algo plugin = {...}``.  :func:`register_plugin` compiles it with cffi (API mode, into a
cache directory keyed by the source, the headers and the parameters) against the public headers
(:func:`get_include`), checks the table the way a simulation will (one set of rules, in C:
``csrc/transport/cc_plugin.c``) and registers it by name.  The name then works wherever a built-in
algorithm's does: ``Host.set_congestion_control(name, params)``, ``add_flows(..., cc=...)`` through
the hosts, and ``congestion_control.algorithm = "<name>"`` in scenario files.  Each simulation copies
the table when a host first selects the plug-in; the NIC calls it through the same function pointers
as a built-in algorithm, so it runs in the hot loop at native speed, with no Python per packet.

The parameters are a struct generated from ``params`` (name -> default, in that order), typedef'd
``plugin_params`` before the source: an ``int`` default gives an ``int64_t`` field, a ``float`` a
``double``; ``(ctype, default)`` picks the type (one of :data:`PARAM_TYPES`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.machinery
import importlib.util
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: C types a parameter may have (``params={"beta": ("float", 0.5)}``)
PARAM_TYPES: tuple[str, ...] = ("int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t",
                                "int64_t", "uint64_t", "int", "unsigned", "float", "double")
#: the public headers a plug-in may include (the algorithm interface and what it includes)
PUBLIC_HEADERS: tuple[str, ...] = ("rdmasim/cc.h", "rdmasim/telemetry.h")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,30}")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class PluginError(ValueError):
    """A plug-in refused at registration: its name, its parameters, its table or its C source (the
    message then carries the compiler's)."""


def get_include() -> str:
    """The directory holding rdmasim's public C headers (``rdmasim/cc.h``, ...): the installed
    package's ``rdmasim/include``, or ``csrc/include`` of a source tree."""
    here = Path(__file__).resolve().parent.parent  # rdmasim/
    for d in (here / "include", here.parent / "csrc" / "include"):
        if (d / "rdmasim" / "cc.h").is_file():
            return str(d)
    raise FileNotFoundError(f"rdmasim's public headers are neither in {here / 'include'} nor in "
                            f"{here.parent / 'csrc' / 'include'}: reinstall rdmasim")


# ---- the headers as cffi declarations ----

_GUARD = re.compile(r"^\s*#\s*(ifndef|define)\s+RDMASIM_\w+_H\s*$|^\s*#\s*endif\b.*$")
_DEFINE_INT = re.compile(r"^\s*#\s*define\s+\w+\s+\d+\s*(/\*.*\*/)?\s*$")
_INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^">]+)[">]\s*$')


def header_cdef(header: str = "rdmasim/cc.h", *, types_only: bool = False) -> str:
    """A public header (and the rdmasim headers it includes) as text for cffi's ``cdef``.

    The only preprocessing: ``#include "rdmasim/..."`` is replaced by that header, system includes
    (``<stdint.h>``, ``<stddef.h>``: cffi knows their types) and include guards are dropped, integer
    ``#define``s are kept (cffi reads them).  Any other preprocessor line raises ValueError, so a
    header stays cffi-clean.  ``types_only`` drops the function declarations (the registry's, which
    a plug-in does not link against)."""
    root = Path(get_include())
    seen: set[str] = set()

    def expand(rel: str) -> list[str]:
        if rel in seen:
            return []
        seen.add(rel)
        out = []
        for n, line in enumerate((root / rel).read_text().splitlines(), 1):
            m = _INCLUDE.match(line)
            if m and m.group(1) == '"':
                out += expand(m.group(2))
            elif m or _GUARD.match(line):
                continue
            elif line.lstrip().startswith("#") and not _DEFINE_INT.match(line):
                raise ValueError(f"{rel}:{n}: preprocessor line cffi's cdef cannot take: {line.strip()}")
            else:
                out.append(line)
        return out

    text = "\n".join(expand(header))
    return _drop_functions(text) if types_only else text


def _drop_functions(text: str) -> str:
    """The declarations of ``text`` without its top-level function prototypes."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out, stmt, depth = [], "", 0
    for ch in text:
        stmt += ch
        depth += ch == "{"
        depth -= ch == "}"
        if ch == ";" and depth == 0:
            body = stmt.strip()
            is_proto = "(" in body and not body.startswith(("typedef", "struct", "enum", "union"))
            if not is_proto:
                out.append(stmt)
            stmt = ""
    return "".join(out) + stmt


# ---- parameters ----

def _param_fields(params: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    """(name, C type, default) of each parameter; PluginError naming a bad one."""
    fields_ = []
    for name, spec in params.items():
        if not isinstance(name, str) or not _IDENT.fullmatch(name):
            raise PluginError(f"plug-in parameter name {name!r}: allowed a C identifier")
        if isinstance(spec, tuple):
            if len(spec) != 2 or spec[0] not in PARAM_TYPES:
                raise PluginError(f"plug-in parameter {name}={spec!r}: allowed a number, or (ctype, default) "
                                  f"with ctype one of {', '.join(PARAM_TYPES)}")
            ctype, default = spec
        elif isinstance(spec, bool):
            ctype, default = "int", int(spec)
        elif isinstance(spec, int):
            ctype, default = "int64_t", spec
        elif isinstance(spec, float):
            ctype, default = "double", spec
        else:
            raise PluginError(f"plug-in parameter {name}={spec!r}: allowed an int, a float, a bool or "
                              f"(ctype, default)")
        fields_.append((name, ctype, default))
    return fields_


def _params_decl(fields_: list[tuple[str, str, Any]]) -> str:
    body = " ".join(f"{t} {n};" for n, t, _ in fields_) or "char unused_;"
    return f"typedef struct plugin_params {{ {body} }} plugin_params;"


# ---- compiling ----

@contextlib.contextmanager
def _stderr_to(path: str) -> Iterator[None]:
    """Send file descriptor 2 (the compiler's diagnostics) to ``path`` for the block, with the
    compiler's messages in plain ASCII (LC_ALL=C: the same text whatever the user's locale)."""
    sys.stderr.flush()
    saved, lc_all = os.dup(2), os.environ.get("LC_ALL")
    with open(path, "wb") as f:
        os.dup2(f.fileno(), 2)
    os.environ["LC_ALL"] = "C"
    try:
        yield
    finally:
        if lc_all is None:
            os.environ.pop("LC_ALL", None)
        else:
            os.environ["LC_ALL"] = lc_all
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _cache_root(cache_dir: str | os.PathLike[str] | None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get("RDMASIM_CACHE_DIR")
    if env:
        return Path(env) / "cc_plugins"
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "rdmasim" / "cc_plugins"


def _compile(name: str, source: str, decl: str, extra_compile_args: tuple[str, ...],
             cache_dir: str | os.PathLike[str] | None) -> Any:
    """The compiled module (cffi API mode) of a plug-in's source; cached by its inputs."""
    import cffi

    include = get_include()
    headers = "".join((Path(include) / h).read_text() for h in PUBLIC_HEADERS)
    key = hashlib.sha256("\0".join((source, decl, headers, " ".join(extra_compile_args), cffi.__version__,
                                    sys.version)).encode()).hexdigest()[:16]
    modname = f"_rdmasim_cc_{re.sub(r'[^A-Za-z0-9_]', '_', name)}_{key}"
    if modname in sys.modules:
        return sys.modules[modname]
    out = _cache_root(cache_dir) / key
    out.mkdir(parents=True, exist_ok=True)
    built = [p for p in out.glob(modname + ".*") if p.suffix in (".so", ".pyd")]
    if not built:
        ffi = cffi.FFI()
        ffi.cdef(header_cdef(types_only=True))
        ffi.cdef(decl + "\nconst rs_cc_algo *rs_plugin_table(void);\nsize_t rs_plugin_params_size(void);")
        # the plug-in's source between the generated declarations and the accessors cffi calls
        ffi.set_source(modname, (f'#include "rdmasim/cc.h"\n{decl}\n#line 1 "<plug-in {name}>"\n{source}\n'
                                 "#line 1 \"<rdmasim accessors>\"\n"
                                 "const rs_cc_algo *rs_plugin_table(void) { return &plugin; }\n"
                                 "size_t rs_plugin_params_size(void) { return sizeof(plugin_params); }\n"),
                       include_dirs=[include], extra_compile_args=list(extra_compile_args))
        with tempfile.TemporaryDirectory(prefix="rdmasim-cc-") as tmp:
            log = os.path.join(tmp, "compiler.txt")
            try:
                with _stderr_to(log):
                    so = ffi.compile(tmpdir=tmp, verbose=False)
            except Exception as exc:  # cffi.VerificationError and setuptools' CompileError/LinkError
                msg = Path(log).read_text(errors="replace").strip()
                raise PluginError(f"congestion control plug-in {name!r}: its C source does not compile:\n"
                                  f"{msg or exc}") from None
            target = out / Path(so).name
            os.replace(so, target)
        built = [target]
    spec = importlib.util.spec_from_file_location(
        modname, built[0], loader=importlib.machinery.ExtensionFileLoader(modname, str(built[0])))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules[modname] = mod
    return mod


# ---- the registry (of this Python process; each simulation copies what it uses) ----

@dataclass(frozen=True)
class Plugin:
    """A registered congestion-control plug-in: its name, parameters (name -> (C type, default)),
    flags, state size and the address of its table (kept alive with the compiled module)."""

    name: str
    params: dict[str, tuple[str, Any]]
    state_size: int
    flags: int
    uses_cnp: bool
    source: str = field(repr=False)
    _module: Any = field(repr=False, compare=False)
    _table: Any = field(repr=False, compare=False)

    @property
    def table_address(self) -> int:
        """The address of this plug-in's ``rs_cc_algo`` (what the C core copies)."""
        ffi = self._module.ffi
        return int(ffi.cast("uintptr_t", self._table))

    def defaults(self) -> dict[str, Any]:
        """The parameters' default values."""
        return {k: v for k, (_, v) in self.params.items()}

    def params_bytes(self, values: Mapping[str, Any] | None = None) -> bytes:
        """The C ``plugin_params`` struct of the defaults overridden by ``values``; PluginError naming
        an unknown parameter or a value its C type cannot hold."""
        values = dict(values or {})
        if not self.params and not values:
            return b""  # no parameters: params_size 0
        unknown = sorted(set(values) - set(self.params))
        if unknown:
            raise PluginError(f"congestion control {self.name!r}: unknown parameter(s) {unknown}; "
                              f"known: {list(self.params)}")
        ffi = self._module.ffi
        p = ffi.new("plugin_params *")
        for k, (ctype, default) in self.params.items():
            v = values.get(k, default)
            integer = ctype not in ("float", "double")
            if isinstance(v, bool) or (integer and not isinstance(v, int)) or \
                    (not integer and not isinstance(v, (int, float))):
                raise PluginError(f"congestion control {self.name!r} parameter {k}={v!r}: allowed "
                                  f"{'an integer' if integer else 'a number'} ({ctype})")
            try:
                setattr(p, k, v)
            except OverflowError:
                raise PluginError(f"congestion control {self.name!r} parameter {k}={v!r}: out of range "
                                  f"of {ctype}") from None
        return bytes(ffi.buffer(p))

    def kind_in(self, core: Any) -> int:
        """This plug-in's kind in a simulation (``SimCore``), registering it there the first time."""
        from rdmasim import _core

        base = len(_core.cc_kinds())
        for k in range(base, base + _core.CC_PLUGINS):
            n = core.cc_name(k)
            if n is None:
                break
            if n == self.name:
                return int(k)
        return int(core.cc_plugin_add(self.table_address, self.name))


_PLUGINS: dict[str, Plugin] = {}


def register_plugin(name: str, source: str, *, params: Mapping[str, Any] | None = None,
                    state_size: int | None = None, uses_cnp: bool = False,
                    extra_compile_args: tuple[str, ...] = ("-O2",),
                    cache_dir: str | os.PathLike[str] | None = None) -> Plugin:
    """Compile ``source`` (C defining ``const rs_cc_algo plugin``) and register it as ``name``.

    ``params``: parameter name -> default (see the module doc), the struct ``plugin_params`` the
    callbacks receive; ``state_size``: bytes of per-QP state (default: the table's ``state_size``;
    at most ``RS_CC_STATE_BYTES``); ``uses_cnp``: the algorithm reacts to CNPs, so receivers send
    them by default (as for DCQCN).  The table's ``name``, ``kind`` and ``params_size`` are filled in.
    Registering the same name again with the same source and parameters returns the plug-in; with
    others it is refused (:func:`unregister_plugin` first).  Raises :class:`PluginError` for a bad
    name (or a built-in's), parameters, table (state or params too big, init or rate_bps missing,
    next_timer_ps without on_timer, unknown flags) or source (with the compiler's messages).
    """
    from rdmasim import _core

    builtins = list(_core.cc_kinds())  # the C registry's names, "none" included
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise PluginError(f"congestion control plug-in name {name!r}: allowed 1..31 characters of letters, "
                          "digits, '_', '.', '-', starting with a letter or '_'")
    if name in builtins:
        raise PluginError(f"congestion control plug-in name {name!r} is a built-in algorithm's "
                          f"({', '.join(builtins)}): choose another")
    if not isinstance(source, str):
        raise PluginError(f"congestion control plug-in {name!r}: source must be C text, got "
                          f"{type(source).__name__}")
    if state_size is not None and (isinstance(state_size, bool) or not isinstance(state_size, int)
                                   or state_size < 0):
        raise PluginError(f"congestion control plug-in {name!r}: state_size={state_size!r}: allowed an "
                          f"integer 0..{_core.CC_STATE_BYTES}")
    fields_ = _param_fields(params or {})
    decl = _params_decl(fields_)
    mod = _compile(name, source, decl, tuple(extra_compile_args), cache_dir)
    ffi, lib = mod.ffi, mod.lib
    table = ffi.new("rs_cc_algo *", lib.rs_plugin_table()[0])
    table.params_size = lib.rs_plugin_params_size() if fields_ else 0
    if state_size is not None:
        table.state_size = state_size
    table.name = ffi.NULL
    plugin = Plugin(name, {n: (t, d) for n, t, d in fields_}, int(table.state_size), int(table.flags),
                    bool(uses_cnp), source, mod, table)
    old = _PLUGINS.get(name)
    if old is not None:
        same = (old.source, old.params, old.state_size, old.uses_cnp)
        if same == (source, plugin.params, plugin.state_size, plugin.uses_cnp):
            return old
        raise PluginError(f"congestion control plug-in {name!r} is registered already with another source or "
                          "parameters: unregister_plugin(name) first, or choose another name")
    plugin.params_bytes()  # the defaults fit their C types
    # the table passes the simulation's checks (csrc/transport/cc_plugin.c) now, not at first use
    from rdmasim.errors import PyverbsRDMAError

    try:
        _core.SimCore(0).cc_plugin_add(plugin.table_address, name)
    except PyverbsRDMAError as exc:
        raise PluginError(str(exc).rsplit(". Errno:", 1)[0]) from None
    _PLUGINS[name] = plugin
    return plugin


def unregister_plugin(name: str) -> None:
    """Forget plug-in ``name`` for new simulations (one that used it keeps its copy)."""
    if _PLUGINS.pop(name, None) is None:
        raise KeyError(f"no congestion control plug-in {name!r} (registered: {sorted(_PLUGINS)})")


def get_plugin(name: str) -> Plugin | None:
    """The registered plug-in called ``name``, or None."""
    return _PLUGINS.get(name)


def plugin_names() -> tuple[str, ...]:
    """The names of the registered plug-ins."""
    return tuple(_PLUGINS)


class AlgorithmChoices(Sequence):
    """The names ``congestion_control.algorithm`` takes: the built-in ones, then the plug-ins
    registered so far (read when a scenario is checked, so a plug-in registered before loading a
    scenario file is accepted)."""

    def __init__(self, builtins: Sequence[str]) -> None:
        self._builtins = tuple(builtins)

    def _all(self) -> tuple[str, ...]:
        return (*self._builtins, *_PLUGINS)

    def __getitem__(self, i: Any) -> Any:
        return self._all()[i]

    def __len__(self) -> int:
        return len(self._builtins) + len(_PLUGINS)

    def __contains__(self, x: object) -> bool:
        return x in self._builtins or x in _PLUGINS

    def __repr__(self) -> str:
        return repr(self._all())
