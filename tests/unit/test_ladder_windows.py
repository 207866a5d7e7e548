"""Ladder diagrams of real runs: windows (time, anchor, frame limit) that every output obeys, the
automatic focus on a scenario's first loss, labels that never collide, a character set every
monospace font has, the Mermaid export, the HTML frame details and the teaching annotations."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rdmasim import ladder
from rdmasim import trace as tr
from rdmasim.cli import main
from rdmasim.ladder._svg import CHAR_PX, FONT_PX

ROOT = Path(__file__).resolve().parents[2]
SVG_NS = "{http://www.w3.org/2000/svg}"
_TIME = re.compile(r"^\s*(\d+\.\d{3}) µs  ")


@pytest.fixture(scope="module")
def long_trace() -> tr.Trace:
    """A 2 MiB WRITE at 1 % loss: hundreds of frames, several NAKs and Go-Back-N rewinds."""
    return ladder.example_write(size=2 << 20, loss=0.01)


def _frames_in_text(text: str) -> list[str]:
    return [line for line in text.splitlines() if "──" in line]


def _arrows(svg: str) -> list[ET.Element]:
    root = ET.fromstring(svg)
    return [el for el in root.iter() if "arrow" in (el.get("class") or "").split()]


def test_a_long_trace_focuses_on_its_first_loss_in_every_output(long_trace: tr.Trace) -> None:
    total = int((long_trace.to_numpy()["kind"] == tr.TX).sum())
    assert total > 1000
    text = ladder.render_text(long_trace, focus=True)
    assert "focused on the first lost frame" in text
    frames = _frames_in_text(text)
    assert 0 < len(frames) <= 60 and any("─×" in f for f in frames)
    svg = ladder.svg_string(long_trace, focus=True)
    assert len(_arrows(svg)) == len(frames)
    assert len(svg) < 200_000
    mmd = ladder.mermaid_string(long_trace, focus=True)
    assert sum(1 for line in mmd.splitlines() if re.match(r"\s+n\d+-{1,2}(>>|x)n\d+:", line)) \
        == len(frames)
    # without focus (the Python default) everything is drawn
    assert len(_frames_in_text(ladder.render_text(long_trace))) == total


def test_time_window_and_frame_limit(long_trace: tr.Trace) -> None:
    text = ladder.render_text(long_trace, start="20us", end="30us")
    times = [float(m[1]) for line in text.splitlines() if (m := _TIME.match(line))]
    assert times and min(times) >= 20.0 and max(times) <= 30.0
    for n in (1, 7, 25):
        assert len(_frames_in_text(ladder.render_text(long_trace, max_frames=n))) == n
        assert len(_arrows(ladder.svg_string(long_trace, max_frames=n))) == n
    with pytest.raises(ValueError, match="allowed"):
        ladder.render_text(long_trace, around="second-nak")
    with pytest.raises(ValueError):
        ladder.render_text(long_trace, start="20 parsecs")


def test_a_lost_frame_says_why_in_words(long_trace: tr.Trace) -> None:
    from rdmasim.ladder._model import drop_text

    assert drop_text(tr.DROP_REASON_CODES["loss"]) == "random loss on the link"
    assert drop_text(tr.DROP_REASON_CODES["drop-list"]) == "drop-list"
    assert drop_text(tr.DROP_REASON_CODES["buffer-full"]) == "switch buffer full"


def test_around_an_anchor(long_trace: tr.Trace) -> None:
    text = ladder.render_text(long_trace, around="first-nak", max_frames=10)
    frames = _frames_in_text(text)
    assert len(frames) == 10 and any("NAK(seq err)" in f for f in frames)
    psn = ladder.render_text(long_trace, around="psn=700", max_frames=5)
    assert any("psn=700 " in f for f in _frames_in_text(psn))


def test_cli_trace_of_a_scenario_is_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    svg, html_path, mmd = tmp_path / "g.svg", tmp_path / "g.html", tmp_path / "g.mmd"
    args = ["trace", str(ROOT / "examples" / "gbn_loss.toml"), "--svg", str(svg), "--html",
            str(html_path), "--mermaid", str(mmd)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "focused on the first lost frame" in out
    assert "lost: random loss on the link" in out and "lost: loss" not in out  # the reason in words
    assert svg.stat().st_size < 200_000 and html_path.stat().st_size < 400_000
    root = ET.parse(svg).getroot()
    assert float(root.get("height", "0")) < 5000
    assert main(["trace", str(ROOT / "examples" / "gbn_loss.toml"), "--max-frames", "12",
                 "--format", "mermaid"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("sequenceDiagram") or "\nsequenceDiagram" in text
    assert sum(1 for line in text.splitlines() if re.match(r"\s+n\d+-{1,2}(>>|x)n\d+:", line)) == 12
    assert main(["trace", str(ROOT / "examples" / "gbn_loss.toml"), "--around", "bogus"]) == 2
    assert "allowed" in capsys.readouterr().err


def test_svg_labels_sit_above_every_arrow_and_the_drawing_holds_every_arrow(long_trace: tr.Trace) -> None:
    """In a burst every earlier frame's arrow crosses a label's row: the labels are drawn after all
    arrows, on a white box, so no arrow strikes them through; an arrow arriving after the window's
    last row still ends inside the drawing."""
    svg = ladder.svg_string(long_trace, around="first-nak", max_frames=40)
    root = ET.fromstring(svg)
    order = list(root.iter())
    pos = {id(el): k for k, el in enumerate(order)}
    arrows = [el for el in order if "arrow" in (el.get("class") or "").split()]
    labels = [el for el in order if el.tag == f"{SVG_NS}text" and "arrow-label" in (el.get("class") or "")]
    assert len(labels) == len(arrows) == 40
    assert min(pos[id(t)] for t in labels) > max(pos[id(a)] for a in arrows)
    boxes = [el for el in order if el.tag == f"{SVG_NS}rect" and el.get("class") == "label-bg"]
    assert len(boxes) == len(labels)
    for box, t in zip(boxes, labels, strict=True):
        x, w = float(box.get("x", 0)), float(box.get("width", 0))
        tx, chars = float(t.get("x", 0)), len(t.text or "")
        start = tx if t.get("text-anchor", "start") == "start" else tx - CHAR_PX * chars
        assert x <= start and start + CHAR_PX * chars <= x + w  # the box covers its label
    height = float(root.get("height", "0"))
    assert max(max(float(a.get("y1", 0)), float(a.get("y2", 0))) for a in arrows) < height - 10


def test_svg_labels_never_overlap_and_legend_is_inside(long_trace: tr.Trace) -> None:
    svg = ladder.svg_string(long_trace, around="first-nak", max_frames=60)
    root = ET.fromstring(svg)
    boxes = []
    for el in root.iter(f"{SVG_NS}text"):
        if el.get("class") not in {"arrow-label", "note", "event", "time", "state"} or not el.text:
            continue
        x, y = float(el.get("x", 0)), float(el.get("y", 0))
        w = len(el.text) * CHAR_PX
        x0 = x - w if el.get("text-anchor") == "end" else x - w / 2 if el.get("text-anchor") \
            == "middle" else x
        boxes.append((x0, y - FONT_PX, x0 + w, y, el.text))
    assert len(boxes) > 60
    boxes.sort(key=lambda b: b[1])
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if b[1] >= a[3]:
                break
            overlap = min(a[2], b[2]) - max(a[0], b[0])
            assert overlap <= 0.5, f"labels overlap: {a[4]!r} and {b[4]!r}"
    classes = {el.get("class") for el in root.iter()}
    assert "legend" in classes
    text = " ".join(el.text or "" for el in root.iter())
    assert "not to scale" in text and "µs" in text and " us" not in text


def test_text_uses_only_characters_monospace_fonts_have(long_trace: tr.Trace) -> None:
    text = ladder.render_text(long_trace, around="first-nak", state=True)
    assert {c for c in text if not c.isascii()} <= set(ladder.TEXT_CHARSET)
    assert ladder.render_text(long_trace, around="first-nak", ascii=True).isascii()


def test_mermaid_is_well_formed(long_trace: tr.Trace) -> None:
    mmd = ladder.mermaid_string(long_trace, around="first-nak", max_frames=20, title="GBN")
    lines = [line for line in mmd.splitlines() if line.strip()]
    assert lines[0] == "sequenceDiagram"
    declared = set()
    depth: dict[str, int] = {}
    allowed = re.compile(r"^\s+(participant (n\d+) as .+|title .+|(n\d+)-{1,2}(?:>>|x)(n\d+): .+"
                         r"|Note (?:(?:left|right) of|over) (n\d+): .+|(activate|deactivate) (n\d+))$")
    for line in lines[1:]:
        m = allowed.match(line)
        assert m, f"not Mermaid sequence syntax: {line!r}"
        if m[2]:
            declared.add(m[2])
        for who in (m[3], m[4], m[5], m[7]):
            if who:
                assert who in declared, f"{who} used before its participant line"
        if m[6] == "activate":
            depth[m[7]] = depth.get(m[7], 0) + 1
        elif m[6] == "deactivate":
            depth[m[7]] = depth.get(m[7], 0) - 1
            assert depth[m[7]] >= 0, "deactivate without activate"
        assert ";" not in line.split(":", 1)[-1] and "#" not in line.split(":", 1)[-1]


def test_html_has_each_frames_headers_and_needs_no_network(long_trace: tr.Trace,
                                                           tmp_path: Path) -> None:
    path = ladder.render_html(long_trace, tmp_path / "l.html", around="first-nak", max_frames=15)
    page = path.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)=["']?https?:""", page)
    m = re.search(r'<script[^>]*id="ladder-data"[^>]*>(.*?)</script>', page, re.S)
    assert m, "the events are embedded as JSON"
    rows = json.loads(m[1])
    frames = [r for r in rows if r.get("headers")]
    assert len(frames) >= 15
    for r in frames:
        fields = {(h[0], h[1]) for h in r["headers"]}
        assert {("BTH", "opcode"), ("BTH", "PSN")} <= fields
    assert "ArrowDown" in page or "ArrowRight" in page  # stepping from the keyboard


@pytest.mark.parametrize(("rnr_retry", "says"), [(7, "rnr_retry 7 = infinite"),
                                                  (3, "2 RNR retries left")])
def test_rnr_wait_is_decoded(rnr_retry: int, says: str) -> None:
    from support.verbs_pair import VerbsPair

    from rdmasim.verbs import SGE, QPCap, RecvWR, SendWR
    from rdmasim.verbs import enums as e

    p = VerbsPair(mtu=1024, seed=1, cqe=8, cap=(QPCap(max_send_wr=4), QPCap(max_recv_wr=4)),
                  rnr_retry=rnr_retry, min_rnr_timer=1)
    topo, qa, qb, cqa = p.t, p.qa, p.qb, p.cq_a
    src, dst = p.mr_a(64, e.IBV_ACCESS_LOCAL_WRITE), p.mr_b(64, e.IBV_ACCESS_LOCAL_WRITE)
    trace = topo.sim.trace()
    qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(src.buf, 16, src.lkey)]))
    topo.sim.run("15us")
    qb.post_recv(RecvWR(wr_id=2, sg=[SGE(dst.buf, 64, dst.lkey)]))
    topo.sim.wait_for(cqa, 1)
    trace.stop()
    text = ladder.render_text(trace)
    assert "RNR_NAK(timer 1 = 10 µs)" in text
    assert "b not accepted: no receive posted (RNR NAK)" in text
    assert says in text and "RNR wait: timer 1 = 10 µs" in text


def test_html_script_parses(tmp_path: Path) -> None:
    """The page's script is valid JavaScript (checked with node when it is installed)."""
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    page = ladder.render_html(ladder.example_write(), tmp_path / "l.html").read_text(encoding="utf-8")
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert scripts
    js = tmp_path / "page.js"
    js.write_text(scripts[-1], encoding="utf-8")
    subprocess.run([node, "--check", str(js)], check=True, capture_output=True)


def _two_qp_trace(long_size: int) -> tr.Trace:
    """Two WRITEs a -> b on two QPs: a short one whose last packet is lost (nothing follows it on
    its QP, so its retransmit timer, 131 us, runs out) and a long one that keeps the link busy
    meanwhile: the lost frame is near the start, its timer bar ends deep in the trace."""
    from rdmasim.topology import back_to_back
    from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR, connect_qps
    from rdmasim.verbs import enums as e

    topo = back_to_back(rate="100Gbps", delay="1us", mtu=1024)
    ctx_a, ctx_b = Context(topo.a), Context(topo.b)
    pd_a, pd_b = PD(ctx_a), PD(ctx_b)
    cq_a, cq_b = CQ(ctx_a, 16), CQ(ctx_b, 16)
    src = MR(pd_a, long_size, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pd_b, long_size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    pairs = []
    for _ in range(2):
        qa = QP(pd_a, QPInitAttr(scq=cq_a, rcq=cq_a, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
        qb = QP(pd_b, QPInitAttr(scq=cq_b, rcq=cq_b, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
        connect_qps(qa, qb, path_mtu=1024, timeout=5)
        pairs.append((qa, qb))
    (short_a, short_b), (long_a, _) = pairs
    topo.link.ab.drop(psn=1, dest_qp=short_b.qp_num)
    t = topo.sim.trace(max_records=None)
    for qa, size in ((short_a, 2048), (long_a, long_size)):
        wr = SendWR(wr_id=size, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, size, src.lkey)])
        wr.set_wr_rdma(dst.rkey, dst.buf)
        qa.post_send(wr)
    topo.sim.run_until_idle()
    t.stop()
    return t


def _records_fed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records fed to the row builders of the windows drawn (one entry per builder)."""
    import rdmasim.ladder._window as window
    from rdmasim.ladder._model import Builder

    made: list[Builder] = []

    class Counting(Builder):
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(window, "Builder", Counting)
    return made  # type: ignore[return-value]


def test_a_window_builds_rows_only_for_the_records_it_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """A window of a long trace is built from a bounded number of records: the same number for a
    trace four times longer, although the lost frame's timer bar, which starts in the focused
    window, ends only when its timer fires deep in the trace (and is drawn as it is), and a window
    deep in the trace shows the QP state and timer bar the records before it left."""
    made = _records_fed(monkeypatch)
    fed: list[tuple[int, int]] = []
    for size in (2 << 20, 8 << 20):
        t = _two_qp_trace(size)
        n = len(t.to_numpy())
        text = ladder.render_text(t, focus=True)
        assert "a: retransmit timer: 131.072 µs" in text  # the bar, from its start to when it fired
        # a window deep in the trace: the QP state before it comes from a few records per QP
        deep = ladder.render_text(t, start="100us", max_frames=20, state=True)
        assert "retransmit timer: 131.072 µs" in deep  # the bar that started before it, too
        first, second = made
        made.clear()
        fed.append((first.visits, second.visits))
        assert first.visits < n / 20 and second.visits < n / 20, (first.visits, second.visits, n)
    assert fed[0] == fed[1]


def _ids(svg: str) -> str:
    """``svg`` with its event ids (positions in the ladder drawn from) numbered from 0 in order."""
    ids: dict[str, str] = {}
    return re.sub(r'data-ev="(\d+)"', lambda m: f'data-ev="{ids.setdefault(m[1], str(len(ids)))}"', svg)


def test_windows_drawn_from_their_records_equal_windows_of_the_whole_ladder() -> None:
    """Every output of a window built from its records only is what the window of the ladder of
    every record shows (rows, marks, discards, QP state, bars)."""
    from rdmasim.ladder import _mermaid, _svg, _text

    t = _two_qp_trace(2 << 20)
    whole = ladder.build(t)
    recs = t.to_numpy()
    lossy = int(recs["qpn"][recs["kind"] == tr.TIMEOUT][0])
    other = int(recs["qpn"][(recs["kind"] == tr.TX) & (recs["qpn"] != lossy)][0])
    windows: list[dict[str, object]] = [
        {"focus": True}, {"around": "first-loss", "max_frames": 5}, {"around": "first-timeout"},
        {"around": "first-retry", "max_frames": 12}, {"start": "100us", "max_frames": 20},
        {"around": "t=131us", "max_frames": 8}, {"start": "50us", "end": "51us"},
        {"around": f"qp={other}", "max_frames": 30}, {"qp": lossy, "around": "first-loss"},
        {"max_frames": 3}, {"end": "2us"}]
    for w in windows:
        v = ladder.view(t, **w)  # type: ignore[arg-type]
        ref = ladder.select(whole, **w)  # type: ignore[arg-type]
        assert _text.render(v, state=True) == _text.render(ref, state=True), w
        assert _ids(_svg.render(v, "t")) == _ids(_svg.render(ref, "t")), w
        assert _mermaid.render(v, None) == _mermaid.render(ref, None), w


def test_max_frames_0_shows_every_frame(long_trace: tr.Trace) -> None:
    total = int((long_trace.to_numpy()["kind"] == tr.TX).sum())
    text = ladder.render_text(long_trace, focus=True, max_frames=0)
    assert len(_frames_in_text(text)) == total and "focused" not in text
    # around an anchor too: 0 is no limit
    assert len(_frames_in_text(ladder.render_text(long_trace, around="first-nak", max_frames=0))) == total


def test_around_first_nak_starts_at_the_lost_request(long_trace: tr.Trace) -> None:
    """The NAK names the PSN the responder expects: the window starts at the transmission of it
    that was lost, so the loss, the discarded packets after it and the NAK are all in view."""
    for n in (None, 30):
        frames = _frames_in_text(ladder.render_text(long_trace, around="first-nak", max_frames=n))
        nak = next(k for k, f in enumerate(frames) if "NAK(seq err)" in f)
        psn = re.search(r"NAK\(seq err\) psn=(\d+)", frames[nak])[1]  # type: ignore[index]
        lost = [k for k, f in enumerate(frames[:nak]) if f" psn={psn} " in f and "lost:" in f]
        assert lost, frames
        assert lost[0] <= 1  # at most one frame before it


def test_windows_of_a_trace_whose_psns_wrap_equal_the_whole_ladders() -> None:
    """PSNs that wrap from 2^24 - 1 to 0 inside the trace (serial arithmetic): the records that set
    the QP state before a window are not picked by the highest PSN then, and windows still show
    what the ladder of every record shows."""
    from rdmasim.ladder import _svg, _text
    from rdmasim.topology import back_to_back
    from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR, connect_qps
    from rdmasim.verbs import enums as e

    topo = back_to_back(rate="100Gbps", delay="1us", mtu=1024, loss_ab=0.01, seed=3)
    ctx_a, ctx_b = Context(topo.a), Context(topo.b)
    pd_a, pd_b = PD(ctx_a), PD(ctx_b)
    cq_a, cq_b = CQ(ctx_a, 16), CQ(ctx_b, 16)
    n = 1 << 20
    src = MR(pd_a, n, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pd_b, n, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    qa = QP(pd_a, QPInitAttr(scq=cq_a, rcq=cq_a, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    qb = QP(pd_b, QPInitAttr(scq=cq_b, rcq=cq_b, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    connect_qps(qa, qb, path_mtu=1024, psn_a=(1 << 24) - 300, psn_b=(1 << 24) - 300)
    t = topo.sim.trace(max_records=None)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, n, src.lkey)])
    wr.set_wr_rdma(dst.rkey, dst.buf)
    qa.post_send(wr)
    topo.sim.run_until_idle()
    t.stop()
    psns = t.to_numpy()["psn"][t.to_numpy()["kind"] == tr.TX]
    assert psns.max() == (1 << 24) - 1 and psns.min() == 0
    whole = ladder.build(t)
    for w in ({"focus": True}, {"start": "5us", "max_frames": 30}, {"start": "20us", "max_frames": 30},
              {"around": "psn=2", "max_frames": 20}, {"around": "first-nak"}):
        v, ref = ladder.view(t, **w), ladder.select(whole, **w)  # type: ignore[arg-type]
        assert _text.render(v, state=True) == _text.render(ref, state=True), w
        assert _ids(_svg.render(v, "t")) == _ids(_svg.render(ref, "t")), w
