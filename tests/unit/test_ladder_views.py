"""Ladder windows, readability and teaching annotations: sizes and frame counts of every output
for a long run, no overlapping labels, the glyphs of the text, RNR timer decoding checked against
the simulated wait, timer bars, QP state changes, the HTML page and the Mermaid text."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from rdmasim import ladder
from rdmasim import trace as tr
from rdmasim.cli import main

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def long_trace() -> tr.Trace:
    # 2,000 packets with i.i.d. loss: a few thousand frames, Go-Back-N rewinds
    return ladder.example_write(size=2000 * 1024, drop_psn=None, loss=0.01, seed=3, timeout=8)


def _frames(t: tr.Trace) -> int:
    return int((t.to_numpy()["kind"] == tr.TX).sum())


def _boxes(root: ET.Element) -> list[tuple[str, float, float, float, float]]:
    """(text, x0, y0, x1, y1) of every text element, from its attributes and a monospace font of
    0.6 em per character, cap height 0.8 em above the baseline, 0.2 em below."""
    out = []
    for el in root.iter(f"{SVG}text"):
        s = "".join(el.itertext())
        if not s:
            continue
        fs = float(el.get("font-size") or root.get("font-size") or 11)
        x, y, w = float(el.get("x") or 0), float(el.get("y") or 0), 0.6 * fs * len(s)
        anchor = el.get("text-anchor") or "start"
        x0 = x - w if anchor == "end" else x - w / 2 if anchor == "middle" else x
        out.append((s, x0, y - 0.8 * fs, x0 + w, y + 0.2 * fs))
    return out


def _overlaps(boxes: list[tuple[str, float, float, float, float]]) -> list[tuple[str, str]]:
    bad = []
    boxes = sorted(boxes, key=lambda b: b[2])
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if b[2] >= a[4]:
                break
            if a[1] < b[3] and b[1] < a[3]:
                bad.append((a[0], b[0]))
    return bad


def test_a_long_trace_focuses_on_the_first_loss_in_every_output(long_trace: tr.Trace,
                                                               tmp_path: Path) -> None:
    total = _frames(long_trace)
    assert total > 2000
    v = ladder.view(long_trace, focus=True)
    assert v.frames_shown == ladder._window.FOCUS_FRAMES
    assert v.anchor is not None and v.anchor.dropped is not None
    assert "around the first lost frame" in v.description
    svg = ladder.svg_string(long_trace, focus=True)
    root = ET.fromstring(svg)
    arrows = [el for el in root.iter() if "arrow" in (el.get("class") or "").split()]
    assert len(arrows) == ladder._window.FOCUS_FRAMES
    assert len(svg) < 200_000 and float(root.get("height") or 0) < 5000
    mmd = ladder.mermaid_string(long_trace, focus=True)
    assert sum(bool(re.match(r"\s+n\d+-{1,2}(>>|x)n\d+: ", ln)) for ln in mmd.splitlines()) == 60
    page = ladder.render_html(long_trace, tmp_path / "l.html", focus=True).read_text()
    data = json.loads(re.search(r'id="ladder-data">(.*?)</script>', page, re.S)[1])
    assert sum(1 for d in data if "->" in d["headers"][1][2] and d["headers"][1][0] == "link") == 60
    text = ladder.render_text(long_trace, focus=True)
    assert text.count("──►") + text.count("◄──") + text.count("─×") == 60
    assert "focused on the first lost frame" in text
    # the whole thing, for comparison: every frame
    assert len(ET.fromstring(ladder.svg_string(long_trace)).findall(f".//{SVG}line[@class]")) > total


def test_windows_by_time_anchor_psn_qp_and_frame_limit(long_trace: tr.Trace) -> None:
    a = long_trace.to_numpy()
    v = ladder.view(long_trace, start="10us", end="20us")
    assert v.events and all(10_000_000 <= e.t_ps <= 20_000_000 for e in v.events)
    v = ladder.view(long_trace, around="first-nak", max_frames=10)
    assert v.frames_shown == 10 and v.anchor is not None and v.anchor.style == "nak"
    assert v.anchor in v.events
    v = ladder.view(long_trace, around="psn=500", max_frames=5)
    assert any(e.frame and int(a[e.record]["psn"]) == 500 for e in v.events)
    v = ladder.view(long_trace, max_frames=7)
    assert v.frames_shown == 7 and v.frames_after == _frames(long_trace) - 7
    qpn = int(a[a["kind"] == tr.TX]["qpn"][0])
    v = ladder.view(long_trace, around=f"qp={qpn}", max_frames=3)
    assert v.frames_shown == 3 and "QP 0x" in v.description
    for bad, msg in [({"around": "first-bogus"}, "allowed first-loss"),
                     ({"around": "psn=99999999"}, "a PSN is"),
                     ({"start": "5 parsecs"}, "start="),
                     ({"start": "20us", "end": "10us"}, "before start"),
                     ({"max_frames": -1}, "max_frames"),
                     ({"around": "qp=4242"}, "no frame or event of QP")]:
        with pytest.raises(ValueError, match=msg):
            ladder.view(long_trace, **bad)  # type: ignore[arg-type]


def test_no_two_labels_overlap_in_a_dense_burst(long_trace: tr.Trace) -> None:
    root = ET.fromstring(ladder.svg_string(long_trace, around="first-loss", max_frames=120,
                                           title="dense"))
    boxes = _boxes(root)
    assert len(boxes) > 150
    assert _overlaps(boxes) == []
    # the check finds overlaps when there are some
    assert _overlaps([("a", 0, 0, 10, 10), ("b", 5, 5, 15, 15)]) == [("a", "b")]


def test_svg_holds_its_legend_and_a_not_to_scale_note() -> None:
    t = ladder.example_write()
    root = ET.fromstring(ladder.svg_string(t))
    texts = [("".join(el.itertext()), el.get("class") or "") for el in root.iter(f"{SVG}text")]
    legend = root.find(f".//{SVG}g[@class='legend']")
    assert legend is not None
    names = {"".join(el.itertext()) for el in legend.iter(f"{SVG}text")}
    assert {"request", "retransmission", "ACK", "lost frame", "retransmit timer", "RNR wait"} <= names
    assert any("not to scale" in s for s, _ in texts)
    times = [s for s, c in texts if c == "time"]
    assert times and all(s.endswith(" µs") for s in times)
    assert not any(re.search(r"\d us\b", s) for s, _ in texts)


def test_text_uses_only_glyphs_every_monospace_font_has(long_trace: tr.Trace) -> None:
    text = "\n".join([ladder.render_text(long_trace, around="first-loss", state=True),
                      ladder.render_text(ladder.example_write(drop_psn=[2, 2, 2], timeout=1,
                                                              retry_cnt=1))])
    extra = {c for c in text if not c.isascii()}
    assert extra <= ladder.TEXT_CHARSET, extra - ladder.TEXT_CHARSET
    assert " us " not in text and " µs " in text
    font = Path("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf")
    if font.exists():
        from fontTools.ttLib import TTFont

        cmap = TTFont(str(font)).getBestCmap()
        assert all(ord(c) in cmap for c in ladder.TEXT_CHARSET)
    assert ladder.render_text(long_trace, ascii=True, around="first-loss").isascii()


def test_discards_after_a_nak_and_the_timer_bar() -> None:
    t = ladder.example_write(size=6144)  # PSN 1 lost: 2 triggers the NAK, 3-5 are discarded silently
    text = ladder.render_text(t)
    assert text.count("b discarded: out of sequence (expects 1), NAK sent") == 1
    assert text.count("b discarded: out of sequence (expects 1), NAK already sent") == 3
    t = ladder.example_write(drop_psn=[2, 2, 2], timeout=1, retry_cnt=1)
    lad = ladder.build(t)
    rto = [b for b in lad.bars if b.kind == "rto"]
    assert rto, lad.bars
    # the timer runs 4.096 us * 2^timeout from its last restart to the TIMEOUT record
    assert rto[0].t1_ps - rto[0].t0_ps == 4_096_000 * 2
    assert "state RTS → ERR" in ladder.render_text(t)
    root = ET.fromstring(ladder.svg_string(t))
    assert root.findall(f".//{SVG}rect[@class='bar rto']")


def _rnr_trace(timer: int) -> tr.Trace:
    import rdmasim
    from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR, connect_qps
    from rdmasim.verbs import enums as e

    topo = rdmasim.back_to_back(mtu=1024)
    ca, cb = Context(topo.a), Context(topo.b)
    pa, pb = PD(ca), PD(cb)
    cqa, cqb = CQ(ca, 4), CQ(cb, 4)
    src = MR(pa, 64, e.IBV_ACCESS_LOCAL_WRITE)
    qa = QP(pa, QPInitAttr(scq=cqa, rcq=cqa, cap=QPCap(max_send_wr=2)))
    qb = QP(pb, QPInitAttr(scq=cqb, rcq=cqb))
    connect_qps(qa, qb, rnr_retry=1, min_rnr_timer=timer)
    t = topo.sim.trace()
    qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(src.buf, 16, src.lkey)]))
    topo.sim.run_until_idle()
    t.stop()
    return t


@pytest.mark.parametrize("timer", [1, 5, 14])
def test_rnr_timer_is_decoded_as_the_wait_the_requester_makes(timer: int) -> None:
    t = _rnr_trace(timer)
    lad = ladder.build(t)
    rnr = [b for b in lad.bars if b.kind == "rnr"]
    assert rnr
    assert rnr[0].t1_ps - rnr[0].t0_ps == ladder.RNR_TIMER_US[timer] * 1_000_000
    text = ladder.render_text(t)
    assert f"RNR_NAK({ladder.rnr_timer_text(timer)})" in text
    assert "not accepted: no receive posted (RNR NAK)" in text
    assert ladder.rnr_timer_text(1) == "timer 1 = 0.01 ms"  # IBA table 45
    assert ladder.rnr_timer_text(0) == "timer 0 = 655.36 ms"


def test_duplicate_acks_are_marked() -> None:
    # the responder's last ACK sent twice (as after a duplicate request): the second one
    # acknowledges nothing new
    t = ladder.example_write(size=3072, drop_psn=[], loss=0.0)
    assert not any(e.dup for e in ladder.build(t).events)
    recs = t.to_numpy()
    is_ack = recs["opcode"] == 0x11
    tx = int(np.flatnonzero((recs["kind"] == tr.TX) & is_ack)[-1])
    rx = int(np.flatnonzero((recs["kind"] == tr.RX) & is_ack)[-1])
    again = recs[[tx, rx]].copy()
    again["t_ps"] = [recs["t_ps"][rx] + 1, recs["t_ps"][rx] + 2]
    dup = np.concatenate([recs[: rx + 1], again, recs[rx + 1:]])
    dup = dup[np.argsort(dup["t_ps"], kind="stable")]
    marked = [e for e in ladder.build(dup).events if e.dup]
    assert len(marked) == 1 and marked[0].t_ps == recs["t_ps"][rx] + 1
    assert "(dup ACK)" in ladder.render_text(dup)


def test_html_is_self_contained_with_headers_and_stepping(tmp_path: Path) -> None:
    t = ladder.example_write()
    page = ladder.render_html(t, tmp_path / "l.html", title="teaching").read_text()
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page and "<script src" not in page and "<link" not in page
    data = json.loads(re.search(r'id="ladder-data">(.*?)</script>', page, re.S)[1])
    svg = ET.fromstring(page[page.index("<svg"):page.index("</svg>") + 6])
    ids = {el.get("data-ev") for el in svg.iter() if el.get("data-ev") is not None}
    assert {str(d["i"]) for d in data} == ids
    nak = next(d for d in data if d["text"].startswith("NAK"))
    fields = {(h[0], h[1]): h[2] for h in nak["headers"]}
    assert fields[("BTH", "PSN")] == "1" and "PSN sequence error" in fields[("AETH", "syndrome")]
    assert 'id="next"' in page and 'id="prev"' in page and "ArrowRight" in page


_MERMAID_LINE = re.compile(
    r"^(sequenceDiagram|    title .+|    participant n\d+ as [^;#<>]+|"
    r"    n\d+(->>|-->>|-x|--x)n\d+: [^;<>\n]+|"
    r"    Note (left of|right of|over) n\d+: [^;<>\n]+|    (activate|deactivate) n\d+)$")


def test_mermaid_is_well_formed(tmp_path: Path) -> None:
    for t in (ladder.example_write(), _rnr_trace(1),
              ladder.example_write(drop_psn=[2, 2, 2], timeout=1, retry_cnt=1)):
        text = ladder.mermaid_string(t, title="x; y #1")
        lines = text.splitlines()
        assert lines[0] == "sequenceDiagram"
        bad = [ln for ln in lines if not _MERMAID_LINE.match(ln)]
        assert not bad, bad
        declared = {m[1] for m in re.finditer(r"participant (n\d+)", text)}
        used = {m for ln in lines for m in re.findall(r"\bn\d+\b", ln.split(":")[0])}
        assert used <= declared
        depth: dict[str, int] = {}
        for ln in lines:
            m = re.match(r"    (activate|deactivate) (n\d+)$", ln)
            if m:
                depth[m[2]] = depth.get(m[2], 0) + (1 if m[1] == "activate" else -1)
                assert depth[m[2]] >= 0
        assert all(v == 0 for v in depth.values())
    assert "-xn1" in ladder.mermaid_string(ladder.example_write())


def test_cli_trace_windows_and_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "t.npz"
    ladder.example_write(size=400 * 1024, drop_psn=[100], loss=0.0).save(saved)
    svg, mmd = tmp_path / "t.svg", tmp_path / "t.mmd"
    assert main(["trace", str(saved), "--svg", str(svg), "--mermaid", str(mmd)]) == 0
    out = capsys.readouterr().out
    assert "focused on the first lost frame" in out and "psn=100 len=1024─×" in out
    root = ET.parse(svg).getroot()
    assert len([el for el in root.iter() if "arrow" in (el.get("class") or "").split()]) == 60
    assert main(["trace", str(saved), "--from", "5us", "--to", "6us", "--format", "mermaid"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("sequenceDiagram") and "from 5.000 µs to 6.000 µs" in out
    assert main(["trace", str(saved), "--around", "psn=7", "--max-frames", "3"]) == 0
    assert capsys.readouterr().out.count("──►") == 3
    assert main(["trace", str(saved), "--around", "nonsense"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "allowed first-loss" in err
