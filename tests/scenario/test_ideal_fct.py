"""The ideal FCT slowdown divides by: 'wire' (default: the flow alone on an idle fabric, headers on
the wire included, as the HPCC authors' simulator counts them) or 'payload' (the message bytes at
line rate plus the propagation round trip); every table, plot and summary names the one used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rdmasim import plots
from rdmasim.results import read_table
from rdmasim.scenario import ScenarioError, loads, run_scenario

NOPLOT = "[outputs]\nplots = false\n"
#: a window that never binds (the default rxe profile's 128 packets would on a fat tree)
OPEN = "[nic.overrides]\nmax_unacked_psns = 100000\n"
PAIRS = {"back_to_back": ("a", "b", ""), "fat_tree": ("h0_0_0", "h1_0_0", "k = 4\n")}


def _one_flow(kind: str, mtu: int, size: str, extra: str = "", verb: str = "WRITE") -> object:
    src, dst, params = PAIRS[kind]
    text = (f'[topology]\nkind = "{kind}"\n{params}[qp]\nmtu = {mtu}\n{OPEN}{NOPLOT}{extra}'
            f'[[flows]]\nsrc = "{src}"\ndst = "{dst}"\nsize = "{size}"\nverb = "{verb}"\n')
    res = run_scenario(loads(text, "s.toml"), "", progress=False)
    (f,) = res.flows
    assert f.status == "ok"
    return res


@pytest.mark.parametrize("kind", sorted(PAIRS))
@pytest.mark.parametrize("mtu", [1024, 4096])
@pytest.mark.parametrize("size", ["1MiB", "64KiB", "3000"])
def test_an_unloaded_flow_has_slowdown_one_under_wire(kind: str, mtu: int, size: str) -> None:
    res = _one_flow(kind, mtu, size)
    f = res.flows[0]  # type: ignore[attr-defined]
    assert f"{f.slowdown:.2f}" == "1.00", (f.fct_ps, f.ideal_fct_ps)
    assert f.ideal_fct_ps <= f.fct_ps  # a lower bound, here met exactly
    assert res.ideal_fct == "wire"  # type: ignore[attr-defined]


@pytest.mark.parametrize("verb", ["READ", "SEND"])
def test_read_and_send_alone_have_slowdown_one(verb: str) -> None:
    f = _one_flow("fat_tree", 1024, "256KiB", verb=verb).flows[0]  # type: ignore[attr-defined]
    assert f"{f.slowdown:.3f}" == "1.000", (f.fct_ps, f.ideal_fct_ps)


def test_payload_is_the_bytes_at_line_rate_plus_the_round_trip() -> None:
    res = _one_flow("back_to_back", 1024, "1MiB", "ideal_fct = 'payload'\n")  # in NOPLOT's [outputs]
    f = res.flows[0]  # type: ignore[attr-defined]
    assert f.ideal_fct_ps == (1 << 20) * 8 * 10 + 2 * 10**6  # 83.886 us at 100 Gb/s + 2 x 1 us
    assert f"{f.slowdown:.2f}" == "1.08"  # the headers of 1024-byte packets: (1024 + 82) / 1024
    assert res.ideal_fct == "payload"  # type: ignore[attr-defined]
    f4096 = _one_flow("back_to_back", 4096, "1MiB", "ideal_fct = 'payload'\n").flows[0]  # type: ignore[attr-defined]
    assert f"{f4096.slowdown:.2f}" == "1.02"


def test_every_output_names_the_definition(tmp_path: Path) -> None:
    text = ('[outputs]\nformats = ["csv"]\n[[flows]]\nsrc = "a"\ndst = "b"\nsize = "64KiB"\n'
            '[[flows]]\nsrc = "a"\ndst = "b"\nsize = "1MiB"\n')
    res = run_scenario(loads(text, "s.toml"), tmp_path / "out", progress=False)
    assert "(ideal FCT 'wire': the flow alone on an idle fabric" in res.summary()
    meta = json.loads(Path(res.files["metadata"]).read_text())
    assert meta["ideal_fct"] == "wire" and "'wire'" in meta["columns"]["slowdown"]
    df = res.to_pandas()
    assert df.attrs["ideal_fct"] == "wire"
    assert read_table(tmp_path / "out", "flows").attrs["ideal_fct"] == "wire"  # from metadata.json
    fig = plots.fct_slowdown_by_size(df)
    assert fig.axes[0].get_ylabel() == "FCT slowdown (FCT / ideal FCT, ideal: wire)"
    assert plots.summary_table(df).splitlines()[-1].startswith("slowdown: FCT / ideal FCT, ideal: wire")
    payload = run_scenario(loads(text, "s.toml", {"outputs.ideal_fct": "payload"}), "",
                           progress=False)
    assert "(ideal FCT 'payload': payload bytes at line rate" in payload.summary()
    assert plots.fct_slowdown_by_size(payload.rows(), ideal_fct="payload").axes[0].get_ylabel() == (
        "FCT slowdown (FCT / ideal FCT, ideal: payload)")


def test_an_unknown_definition_is_refused() -> None:
    with pytest.raises(ScenarioError, match=r"s.toml: outputs.ideal_fct = 'hpcc': not an allowed value "
                                            r"\(allowed: one of 'wire', 'payload'\)"):
        loads('[outputs]\nideal_fct = "hpcc"\n[[flows]]\nsrc = "a"\ndst = "b"\n', "s.toml")
