"""Ladder diagrams: the text for the teaching scenario, well-formed SVG with one arrow per frame,
the HTML wrapper and the ``rdmasim trace`` command."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rdmasim import ladder
from rdmasim import trace as tr
from rdmasim.cli import main

# 3 packets at MTU 1024, PSN 1 dropped once on a->b: NAK(seq err) for 1, Go-Back-N from 1
EXPECTED = [
    r"0\.000 µs  a  post_send wr_id=1 RDMA_WRITE len=3072$",
    r"0\.000 µs  a ──WRITE_FIRST psn=0 len=1024──► b  @1\.090$",
    r"0\.090 µs  a ──WRITE_MIDDLE psn=1 len=1024─× b  lost: drop-list$",
    r"0\.178 µs  a ──WRITE_LAST psn=2 len=1024 A──► b  @1\.267$",
    r"^ +· b discarded: out of sequence \(expects 1\), NAK sent$",
    r"1\.267 µs  a ◄──NAK\(seq err\) psn=1 msn=0── b  @2\.274$",
    r"2\.274 µs  a  Go-Back-N from psn=1 after NAK \(6 retries left\)$",
    r"2\.274 µs  a ──WRITE_MIDDLE psn=1 len=1024 \(retx\)──► b  @3\.362$",
    r"2\.362 µs  a ──WRITE_LAST psn=2 len=1024 A \(retx\)──► b  @3\.451$",
    r"3\.451 µs  a ◄──ACK psn=2 msn=1── b  @4\.457$",
    r"4\.457 µs  a  completion wr_id=1 RDMA_WRITE SUCCESS len=3072$",
]


@pytest.fixture(scope="module")
def example() -> tr.Trace:
    return ladder.example_write()


def test_text_of_the_teaching_scenario(example: tr.Trace) -> None:
    text = ladder.render_text(example)
    lines = text.splitlines()[1:]
    assert len(lines) == len(EXPECTED)
    for line, pattern in zip(lines, EXPECTED, strict=True):
        assert re.search(pattern, line), (line, pattern)
    assert max(len(line) for line in text.splitlines()) <= 80


def test_ascii_text_has_no_other_characters(example: tr.Trace) -> None:
    text = ladder.render_text(example, ascii=True)
    assert text.isascii()
    assert "a --WRITE_MIDDLE psn=1 len=1024-X b  lost: drop-list" in text
    assert "0.000 us" in text and "µ" not in text
    assert "a <--NAK(seq err) psn=1 msn=0-- b" in text
    assert "- b discarded: out of sequence (expects 1), NAK sent" in text
    assert "a  completion wr_id=1" in text


def test_timeout_and_error_completion_are_on_the_timeline() -> None:
    # the last packet lost three times: nothing follows it, so only the timer can recover; the
    # first resend gets PSNs 0-1 acknowledged (progress refills retry_cnt=1), the last one fails
    t = ladder.example_write(drop_psn=[2, 2, 2], timeout=1, retry_cnt=1)
    text = ladder.render_text(t)
    assert "TIMEOUT: retransmit timer fired, oldest unacked psn=0" in text
    assert "Go-Back-N from psn=2 after timeout (0 retries left)" in text
    assert "completion wr_id=1 RDMA_WRITE RETRY_EXC_ERR" in text
    assert text.count("lost: drop-list") == 3
    # the state change an error completion causes, and what the responder did with the resends
    assert "QP 0x11 state RTS → ERR" in text
    assert text.count("b duplicate: already accepted") == 2
    assert "ACK psn=1 msn=0 (dup ACK)" in text


def test_node_selection_and_limits(example: tr.Trace) -> None:
    assert ladder.render_text(example, nodes=["b", "a"]).splitlines()[2].endswith("@1.090")
    assert "b ◄──WRITE_FIRST" in ladder.render_text(example, nodes=["b", "a"])
    with pytest.raises(ValueError, match="no node named 'c'"):
        ladder.render_text(example, nodes=["c"])
    short = ladder.render_text(example, max_lines=3)
    assert short.splitlines()[-1] == f"... {len(EXPECTED) - 1 - 3} more events"
    later = ladder.render_text(example, start_ps=2_000_000)
    assert "post_send" not in later and "ACK psn=2" in later


def test_svg_is_well_formed_with_one_arrow_per_frame(example: tr.Trace, tmp_path: Path) -> None:
    path = ladder.render_svg(example, tmp_path / "l.svg", title="teaching")
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    a = example.to_numpy()
    arrows = [el for el in root.iter() if "arrow" in (el.get("class") or "").split()]
    assert len(arrows) == int((a["kind"] == tr.TX).sum()) == 7
    assert sum("drop" in el.get("class", "").split() for el in arrows) == 1
    assert sum("retx" in el.get("class", "").split() for el in arrows) == 2
    assert sum("nak" in el.get("class", "").split() for el in arrows) == 1
    xs = [el for el in root.iter() if el.get("class") == "drop-x"]
    assert len(xs) == 1
    texts = " ".join(el.text or "" for el in root.iter())
    assert "NAK(seq err) psn=1 msn=0" in texts and "completion wr_id=1" in texts


def test_html_wraps_the_svg(example: tr.Trace, tmp_path: Path) -> None:
    path = ladder.render_html(example, tmp_path / "l.html", title="WRITE & drop")
    body = path.read_text(encoding="utf-8")
    assert body.startswith("<!DOCTYPE html>") and "<svg" in body and "WRITE &amp; drop" in body
    svg = body[body.index("<svg"):body.index("</svg>") + 6]
    ET.fromstring(svg)


def test_cli_trace_prints_the_ladder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    svg, saved = tmp_path / "t.svg", tmp_path / "t.npz"
    assert main(["trace", "--svg", str(svg), "--save", str(saved)]) == 0
    out = capsys.readouterr().out
    assert "NAK(seq err) psn=1" in out and "(retx)" in out and "×" in out
    ET.parse(svg)
    assert main(["trace", str(saved), "--ascii"]) == 0
    again = capsys.readouterr().out
    assert "a <--NAK(seq err) psn=1 msn=0-- b" in again
    assert main(["trace", "--drop-psn", "-1", "--op", "send", "--size", "100"]) == 0
    out = capsys.readouterr().out
    assert "recv completion wr_id=100 RECV SUCCESS" in out and "NAK" not in out


def test_records_as_plain_array_render_too(example: tr.Trace) -> None:
    text = ladder.render_text(example.to_numpy(), names={0: "client", 1: "server"})
    assert "client ──WRITE_FIRST psn=0 len=1024──► server" in text


# a host name (or title) a user might hold: markup, a script, an entity, line breaks of every kind,
# a Mermaid directive and a control character XML does not allow
HOSTILE = "</script><!--<script>&amp;\r\x0b\u2028%%{init: {'securityLevel': 'loose'}}%%\x01"


def test_hostile_names_stay_text_in_the_svg(example: tr.Trace) -> None:
    names = {0: "a" + HOSTILE, 1: "b" + HOSTILE}
    svg = ladder.svg_string(example, names=names, title="t" + HOSTILE)
    root = ET.fromstring(svg)  # well-formed XML 1.0, whose characters exclude \x01 and \x0b
    assert not [el for el in root.iter() if el.tag.endswith("script")]
    texts = [t for el in root.iter() if el.text for t in [el.text]]
    shown = "a</script><!--<script>&amp;\n\\x0b\u2028%%{init: {'securityLevel': 'loose'}}%%\\x01"
    assert shown in texts  # the name as text (XML-invalid characters spelled out; \r read as \n)
    assert any(t.startswith("t</script>") for t in texts)


def test_hostile_names_stay_text_in_mermaid(example: tr.Trace) -> None:
    names = {0: "a" + HOSTILE, 1: "b" + HOSTILE}
    plain = ladder.mermaid_string(example, title="t").split("\n")
    mmd = ladder.mermaid_string(example, names=names, title="t" + HOSTILE)
    # one line per statement whatever the names hold (Mermaid ends a statement at any line break)
    assert mmd.splitlines() == mmd.split("\n")[:-1] and len(mmd.split("\n")) == len(plain)
    assert "%%" not in mmd  # Mermaid reads a %%{init: ...}%% directive anywhere in the text
    heads = [line for line in mmd.split("\n") if line.startswith(("    participant", "    title"))]
    assert len(heads) == 3
    for line in heads:
        assert not set(re.sub(r"#\w+;", "", line)) & set("<>;%"), line  # only as entity codes
        assert "#lt;/script#gt;#lt;!--#lt;script#gt;&amp#59;" in line
