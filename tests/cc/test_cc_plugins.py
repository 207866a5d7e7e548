"""Congestion-control plug-ins (rdmasim.cc_plugin): C compiled at run time with cffi, registered by
name, run by the NIC exactly as a built-in algorithm.

A plug-in compiled from a built-in's own source (csrc/cc/dctcp.c) gives the built-in's flow
completion times to the picosecond; a plug-in that never limits gives those of no congestion
control; bad tables, parameters and sources are refused at registration with the reason."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import cffi
import pytest

import rdmasim
from rdmasim import cc
from rdmasim.cc_plugin import PluginError, header_cdef

ROOT = Path(__file__).resolve().parents[2]

LINE_RATE = """
#include <stdint.h>
typedef struct { uint64_t sent; } st;
static void init(void *s, const void *p, double line, int64_t now) {}
static void on_sent(void *s, const void *p, uint64_t b, int64_t now) { ((st *)s)->sent += b; }
static double rate(const void *s, const void *p) { return 0.0; }
const rs_cc_algo plugin = { .init = init, .on_sent = on_sent, .rate_bps = rate, .state_size = sizeof(st) };
"""

#: a fixed window of `window` bytes, the ACKs asked for by every packet (the window needs them)
FIXED_WINDOW = """
static void init(void *s, const void *p, double line, int64_t now) {}
static double rate(const void *s, const void *p) { return 0.0; }
static uint64_t win(const void *s, const void *p) { return (uint64_t)((const plugin_params *)p)->window; }
const rs_cc_algo plugin = { .flags = RS_CC_WANTS_ACKS, .init = init, .rate_bps = rate, .window_bytes = win };
"""


pytestmark = pytest.mark.usefixtures("plugin_cache")


def builtin_as_plugin(algo: str) -> str:
    """A built-in algorithm's C file as a plug-in's source: its table renamed `plugin`."""
    src = (ROOT / "csrc" / "cc" / f"{algo}.c").read_text()
    return f"#define rs_cc_{algo} plugin\n{src}"


def dctcp_params() -> dict:
    """The plug-in parameters laid out as rs_dctcp_params, valued as the bench's path."""
    from rdmasim.cc_dctcp import DctcpParams

    v = DctcpParams.for_path("100Gbps", "4190ns", mtu=1024).to_c()
    types = {"g": "double", "initial_alpha": "double", "ai_bps": "double", "min_rate_bps": "double",
             "max_rate_bps": "double", "window_bytes": "uint64_t", "var_win": "int", "pace": "int",
             "ack_every": "uint32_t"}
    assert list(types) == list(v)  # the struct's field order
    return {k: (types[k], v[k]) for k in types}


def incast_fcts(algo: str, params=None, *, notification_point: bool = False, ecn: bool = True):
    """FCTs (ps) of a 4-to-1 incast of 200 KB WRITEs under `algo` on every host."""
    ecn_cfg = {"kmin": "5KB", "kmax": "200KB", "pmax": 0.01} if ecn else {"priorities": []}
    t = rdmasim.incast(4, rate="100Gbps", delay="1us", mtu=1024, seed=3, switch_config={"ecn": ecn_cfg})
    for h in t.hosts:
        h.set_congestion_control(algo, params, notification_point=notification_point)
    recv = t.receiver.index
    fs = t.sim.add_flows({"src": [h.index for h in t.senders], "dst": [recv] * 4, "size": [200_000] * 4})
    t.sim.run(until="20ms")
    r = fs.results()
    assert (r["fct_ps"] > 0).all()
    return r["fct_ps"].tolist(), t


def test_plugin_never_limiting_equals_none():
    cc.register_plugin("linerate", LINE_RATE)
    fct_plugin, _ = incast_fcts("linerate")
    fct_none, _ = incast_fcts(None)
    assert fct_plugin == fct_none


def test_plugin_from_dctcp_source_equals_builtin_dctcp():
    from rdmasim.cc_dctcp import DctcpParams

    p = dctcp_params()
    cc.register_plugin("dctcp_copy", builtin_as_plugin("dctcp"), params=p)
    fct_plugin, _ = incast_fcts("dctcp_copy")
    fct_builtin, _ = incast_fcts("dctcp", DctcpParams.for_path("100Gbps", "4190ns", mtu=1024))
    assert fct_plugin == fct_builtin
    # and the reaction is real: ECN marks change the FCTs against no congestion control
    assert fct_plugin != incast_fcts(None)[0]


def test_plugin_params_override_defaults():
    cc.register_plugin("fixwin", FIXED_WINDOW, params={"window": 4096})
    plugin = cc.get_plugin("fixwin")
    small, _ = incast_fcts("fixwin")
    large, _ = incast_fcts(plugin, {"window": 1 << 20})  # the Plugin object works as its name
    assert max(small) > max(large)  # 4 KB in flight per QP cannot fill the link
    with pytest.raises(PluginError, match=r"unknown parameter\(s\) \['windw'\]"):
        incast_fcts("fixwin", {"windw": 1})
    with pytest.raises(PluginError, match=r"window=1.5: allowed an integer"):
        incast_fcts("fixwin", {"window": 1.5})


def test_each_simulation_registers_its_own_copy():
    cc.register_plugin("linerate", LINE_RATE)
    cc.register_plugin("fixwin", FIXED_WINDOW, params={"window": 4096})
    a = rdmasim.Simulator()
    b = rdmasim.Simulator()
    ha, hb = a.add_host("a"), b.add_host("b")
    hb.set_congestion_control("fixwin")
    ha.set_congestion_control("linerate")
    ha.set_congestion_control("fixwin")
    base = len(rdmasim._core.cc_kinds())
    assert (a._core.cc_name(base), a._core.cc_name(base + 1)) == ("linerate", "fixwin")
    assert (b._core.cc_name(base), b._core.cc_name(base + 1)) == ("fixwin", None)


def test_scenario_file_selects_a_plugin(tmp_path):
    from rdmasim.scenario import load, run_scenario

    cc.register_plugin("fixwin", FIXED_WINDOW, params={"window": 4096})
    f = tmp_path / "s.toml"
    f.write_text('[topology]\nkind = "incast"\nn_senders = 2\n[congestion_control]\nalgorithm = "fixwin"\n'
                 '[congestion_control.plugin]\nwindow = 8192\n[traffic.incast]\nsize = "100KB"\n')
    res = run_scenario(load(str(f)), "")
    assert res.flows and all(fl.status == "ok" for fl in res.flows)
    f.write_text(f.read_text().replace("window = 8192", "windw = 8192"))
    with pytest.raises(Exception, match="congestion_control.plugin.windw"):
        load(str(f))


# ---- refused at registration ----

def test_state_too_big_is_refused():
    src = LINE_RATE.replace(".state_size = sizeof(st)", ".state_size = 257")
    with pytest.raises(PluginError, match=r"state_size 257 bytes, allowed 0\.\.256"):
        cc.register_plugin("big_state", src)
    with pytest.raises(PluginError, match=r"state_size 300 bytes, allowed 0\.\.256"):
        cc.register_plugin("big_state2", LINE_RATE, state_size=300)


def test_params_too_big_are_refused():
    params = {f"p{i}": 0.0 for i in range(65)}  # 520 bytes
    with pytest.raises(PluginError, match=r"params_size 520 bytes, allowed 0\.\.512"):
        cc.register_plugin("big_params", LINE_RATE, params=params)


@pytest.mark.parametrize("drop, missing", [(".init = init, ", "init"), (".rate_bps = rate, ", "rate_bps")])
def test_missing_required_callback_is_refused(drop, missing):
    src = LINE_RATE.replace(drop, "")
    with pytest.raises(PluginError, match=f"missing required callback {missing}"):
        cc.register_plugin("incomplete", src)


def test_timer_without_on_timer_is_refused():
    src = LINE_RATE.replace("const rs_cc_algo plugin = {",
                            "static int64_t nt(const void *s) { return 0; }\n"
                            "const rs_cc_algo plugin = { .next_timer_ps = nt,")
    with pytest.raises(PluginError, match="next_timer_ps needs on_timer"):
        cc.register_plugin("no_timer", src)


def test_unknown_flags_are_refused():
    src = LINE_RATE.replace("const rs_cc_algo plugin = {", "const rs_cc_algo plugin = { .flags = 64,")
    with pytest.raises(PluginError, match="flags 0x40 has unknown bits"):
        cc.register_plugin("odd_flags", src)


@pytest.mark.parametrize("name", ["dcqcn", "none", "hpcc"])
def test_builtin_name_is_refused(name):
    with pytest.raises(PluginError, match=f"{name!r} is a built-in algorithm's"):
        cc.register_plugin(name, LINE_RATE)


def test_bad_names_and_params_are_refused():
    with pytest.raises(PluginError, match="plug-in name 'a b'"):
        cc.register_plugin("a b", LINE_RATE)
    with pytest.raises(PluginError, match=r"parameter x=\[1\]: allowed an int"):
        cc.register_plugin("p", LINE_RATE, params={"x": [1]})
    with pytest.raises(PluginError, match=r"parameter x=\('char', 1\)"):
        cc.register_plugin("p", LINE_RATE, params={"x": ("char", 1)})
    with pytest.raises(PluginError, match=r"parameter x=300: out of range of uint8_t"):
        cc.register_plugin("p", LINE_RATE, params={"x": ("uint8_t", 300)})


def test_name_clash_with_another_plugin_is_refused():
    cc.register_plugin("twice", LINE_RATE)
    assert cc.register_plugin("twice", LINE_RATE) is cc.get_plugin("twice")  # the same again: kept
    with pytest.raises(PluginError, match="registered already with another source"):
        cc.register_plugin("twice", FIXED_WINDOW, params={"window": 1})


def test_compile_error_shows_the_compiler_message():
    src = LINE_RATE.replace("((st *)s)->sent += b;", "((st *)s)->sent += undeclared_thing;")
    with pytest.raises(PluginError, match="does not compile") as ei:
        cc.register_plugin("broken", src)
    msg = str(ei.value)
    assert "undeclared_thing" in msg and "<plug-in broken>" in msg


def test_unknown_name_lists_plugins():
    cc.register_plugin("linerate", LINE_RATE)
    t = rdmasim.incast(2)
    with pytest.raises(ValueError, match=r"registered plug-in \['linerate'\]"):
        t.hosts[0].set_congestion_control("linerat")


# ---- the headers ----

def test_get_include_holds_the_public_headers():
    inc = Path(rdmasim.get_include())
    assert (inc / "rdmasim" / "cc.h").is_file() and (inc / "rdmasim" / "telemetry.h").is_file()


def test_get_include_prefers_the_installed_headers(tmp_path, monkeypatch):
    """An installed package (setup.py's build_py copies the headers to rdmasim/include) finds them
    beside itself."""
    import importlib.util
    import shutil

    pkg = tmp_path / "rdmasim"
    (pkg / "include" / "rdmasim").mkdir(parents=True)
    (pkg / "cc").mkdir()
    shutil.copy(ROOT / "rdmasim" / "cc" / "plugin.py", pkg / "cc" / "plugin.py")
    (pkg / "include" / "rdmasim" / "cc.h").write_text("/* installed */\n")
    spec = importlib.util.spec_from_file_location("installed_cc_plugin", pkg / "cc" / "plugin.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "installed_cc_plugin", mod)  # (its dataclasses look it up)
    spec.loader.exec_module(mod)
    assert mod.get_include() == str(pkg / "include")
    (pkg / "include" / "rdmasim" / "cc.h").unlink()
    with pytest.raises(FileNotFoundError, match="public headers are neither in"):
        mod.get_include()


CC_HEADERS = sorted(p.name for p in (ROOT / "csrc" / "include" / "rdmasim").glob("cc*.h"))


@pytest.mark.parametrize("header", CC_HEADERS)
def test_cc_headers_are_cffi_clean(header):
    """Every congestion-control header parses with cffi's cdef after the documented preprocessing
    (rdmasim.cc_plugin.header_cdef), and the interface's types come out with the compiler's sizes."""
    ffi = cffi.FFI()
    ffi.cdef(header_cdef(f"rdmasim/{header}"))
    if header == "cc.h":
        assert ffi.sizeof("rs_cc_algo") == rdmasim._core.CC_ALGO_BYTES


def test_header_cdef_refuses_what_cffi_cannot_parse(tmp_path, monkeypatch):
    (tmp_path / "rdmasim").mkdir()
    (tmp_path / "rdmasim" / "cc.h").write_text("#if FOO\nint x;\n#endif\n")
    monkeypatch.setattr("rdmasim.cc_plugin.get_include", lambda: str(tmp_path))
    with pytest.raises(ValueError, match=r"cc.h:1: preprocessor line cffi's cdef cannot take: #if FOO"):
        header_cdef()


def test_sizes_match_the_compiled_core():
    """The cffi layout of the interface is the C compiler's: rdmasim's own build reports the same
    limits the headers define."""
    ffi = cffi.FFI()
    ffi.cdef(header_cdef())
    lib = ffi.dlopen(None)  # the header's constants only
    assert lib.RS_CC_STATE_BYTES == rdmasim._core.CC_STATE_BYTES
    assert lib.RS_CC_PARAMS_BYTES == rdmasim._core.CC_PARAMS_BYTES
    assert lib.RS_CC_COUNT == len(rdmasim._core.cc_kinds())


def test_cache_reused(tmp_path):
    cc.register_plugin("cached", LINE_RATE, cache_dir=tmp_path)
    built = sorted(p.name for p in tmp_path.rglob("*.so"))
    assert len(built) == 1
    mtime = os.path.getmtime(next(tmp_path.rglob("*.so")))
    cc.unregister_plugin("cached")
    cc.register_plugin("cached", LINE_RATE, cache_dir=tmp_path)
    assert os.path.getmtime(next(tmp_path.rglob("*.so"))) == mtime


# ---- the protocol invariants with a plug-in in charge (rdmasim.testing) ----

def test_plugin_keeps_the_invariants_under_hypothesis():
    from dataclasses import replace

    from hypothesis import given, settings

    from rdmasim.testing import check_all, run_scenario
    from rdmasim.testing.strategies import scenarios

    cc.register_plugin("fixwin", FIXED_WINDOW, params={"window": 4096})
    seen = []

    @settings(max_examples=4, deadline=None, derandomize=True, database=None)
    @given(sc=scenarios(topologies=("star",), max_ops=2))
    def check(sc):
        sc = replace(sc, params=replace(sc.params, dcqcn=None, cc="fixwin", cc_params={"window": 2048}))
        r = run_scenario(sc)
        seen.append(r.sim._core.cc_name(len(rdmasim._core.cc_kinds())))
        violations = check_all(r)
        assert not violations, "\n".join(map(str, violations))

    check()
    assert seen and set(seen) == {"fixwin"}  # each run registered and used the plug-in


def test_runner_refuses_two_congestion_controls():
    from dataclasses import replace

    from rdmasim.cc import DcqcnParams
    from rdmasim.testing import Scenario, run_scenario

    sc = Scenario()
    with pytest.raises(ValueError, match="dcqcn and cc='fixwin' both set"):
        run_scenario(replace(sc, params=replace(sc.params, dcqcn=DcqcnParams(), cc="fixwin")))
