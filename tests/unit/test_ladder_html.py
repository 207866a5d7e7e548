"""The HTML ladder page, checked as a structure rather than as strings: the page is well formed,
every id the script or the SVG refers to exists once, every clickable element belongs to an event
of the embedded data and every event has an element; and the page's own script, run by node
against a small DOM stand-in built from the page's elements, steps event by event, dims the
later events, shows the headers of the chosen frame and answers clicks and keys as the page says.

node is installed by CI (.ci/run, Debian's ``nodejs``); without it the stepping test skips and
the structural checks still run."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from rdmasim import ladder
from rdmasim import trace as tr

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Page(HTMLParser):
    """The parts of the page the checks need; fails on a tag closed out of order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.ids: list[str] = []
        self.refs: list[str] = []  # url(#x) and href="#x"
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.elements: list[dict[str, Any]] = []  # every element with data-ev, and its first child
        self._script: dict[str, str | None] | None = None
        self._in_svg = 0
        self._open_ev: list[int | None] = []  # per open SVG element: index into elements or None
        self.diagram_svgs = 0
        self._diagram_depth: int | None = None

    def _attrs(self, tag: str, attrs: list[tuple[str, str | None]]) -> dict[str, str | None]:
        a = dict(attrs)
        if a.get("id"):
            self.ids.append(str(a["id"]))
        for v in a.values():
            if v:
                self.refs += re.findall(r"url\(#([^)]+)\)", v)
        href = a.get("href") or a.get("xlink:href")
        if href and href.startswith("#"):
            self.refs.append(href[1:])
        return a

    def _element(self, tag: str, a: dict[str, str | None]) -> int | None:
        if not self._in_svg:
            return None
        parent = next((p for p in reversed(self._open_ev) if p is not None), None)
        if a.get("data-ev") is not None:
            cls = (a.get("class") or "").split()
            self.elements.append({"tag": tag, "ev": int(str(a["data-ev"])), "cls": cls, "parent": None})
            return len(self.elements) - 1
        if parent is not None and not any(e["parent"] == parent for e in self.elements):
            self.elements.append({"tag": tag, "ev": None, "cls": [], "parent": parent})
            return len(self.elements) - 1
        return None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = self._attrs(tag, attrs)
        if tag == "svg":
            if self._diagram_depth is not None and self._in_svg == 0:
                self.diagram_svgs += 1
            self._in_svg += 1
        idx = self._element(tag, a)
        if self._in_svg:
            self._open_ev.append(idx)
        if tag == "script":
            self._script = a
        if a.get("id") == "diagram":
            self._diagram_depth = len(self.stack)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = self._attrs(tag, attrs)
        self._element(tag, a)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack, f"</{tag}> closes nothing"
        assert self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1]}> (open: {self.stack})"
        self.stack.pop()
        if self._in_svg:
            self._open_ev.pop()
        if tag == "svg":
            self._in_svg -= 1
        if self._diagram_depth is not None and len(self.stack) == self._diagram_depth:
            self._diagram_depth = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self.scripts.append((self._script, data))
            self._script = None


def _parse(page: str) -> Page:
    assert page.startswith("<!DOCTYPE html>")
    p = Page()
    p.feed(page)
    p.close()
    assert p.stack == [], f"left open: {p.stack}"
    return p


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The small WRITE example whole, and a window around the first NAK of a lossy 2 MiB WRITE."""
    tmp = tmp_path_factory.mktemp("html")
    long = ladder.example_write(size=2 << 20, loss=0.01)
    return {
        "example": ladder.render_html(ladder.example_write(), tmp / "a.html").read_text(encoding="utf-8"),
        "window": ladder.render_html(long, tmp / "b.html", around="first-nak", max_frames=20)
        .read_text(encoding="utf-8"),
    }


def _data(p: Page) -> list[dict[str, Any]]:
    (payload,) = [body for a, body in p.scripts if a.get("id") == "ladder-data"]
    return json.loads(payload)


def _code(p: Page) -> str:
    (code,) = [body for a, body in p.scripts if not a.get("type") and not a.get("src")]
    return code


@pytest.mark.parametrize("name", ["example", "window"])
def test_page_is_well_formed_and_its_references_resolve(pages: dict[str, str], name: str) -> None:
    p = _parse(pages[name])
    assert len(p.ids) == len(set(p.ids)), sorted(i for i in p.ids if p.ids.count(i) > 1)
    missing = sorted(set(p.refs) - set(p.ids))
    assert not missing, f"url(#...)/href to ids the page lacks: {missing}"
    code = _code(p)
    for wanted in re.findall(r"getElementById\('([^']+)'\)", code):
        assert wanted in p.ids, f"the script needs #{wanted}"
    assert "querySelector('#diagram svg')" in code and p.diagram_svgs == 1
    data = _data(p)
    assert data, "no events embedded"
    indices = [d["i"] for d in data]
    assert len(set(indices)) == len(indices)
    on_svg = {e["ev"] for e in p.elements if e["ev"] is not None}
    # a click on an element of no event would make the script show data[undefined]
    assert on_svg <= set(indices), sorted(on_svg - set(indices))
    assert set(indices) <= on_svg, f"events with nothing to click: {sorted(set(indices) - on_svg)}"
    for d in data:
        assert d["t"].endswith(("ps", "ns", "µs", "ms", " s")) and d["headers"] and d["text"], d


def test_window_page_holds_the_frames_of_the_window(pages: dict[str, str]) -> None:
    data = _data(_parse(pages["window"]))
    frames = [d for d in data if d["headers"][0][2].startswith("TX")]
    assert len(frames) == 20
    assert any(("AETH", "syndrome") == (h[0], h[1]) and "NAK" in h[2] for d in frames for h in d["headers"])


# A DOM stand-in with just what the page's script uses, built from the elements the parser found.
HARNESS = r"""
const input = JSON.parse(require('fs').readFileSync(process.argv[2], 'utf8'));
class ClassList {
  constructor(el, names){ this.el = el; this.s = new Set(names); }
  add(...n){ n.forEach(x => this.s.add(x)); }
  remove(...n){ n.forEach(x => this.s.delete(x)); }
  toggle(n, force){ const on = force === undefined ? !this.s.has(n) : !!force;
    if (on) this.s.add(n); else this.s.delete(n); return on; }
  contains(n){ return this.s.has(n); }
}
function El(spec){
  this.spec = spec; this.parent = null; this.textContent = ''; this.innerHTML = ''; this.onclick = null;
  this.classList = new ClassList(this, spec.cls || []);
}
El.prototype.getAttribute = function(n){
  const ev = this.spec.ev;
  return n === 'data-ev' && ev !== null && ev !== undefined ? String(ev) : null;
};
El.prototype.matches = function(sel){
  return sel.split(',').some(s => {
    s = s.trim();
    let m = s.match(/^\[data-ev="(\d+)"\]$/); if (m) return this.getAttribute('data-ev') === m[1];
    if (s === '[data-ev]') return this.getAttribute('data-ev') !== null;
    m = s.match(/^\.([\w-]+)$/); if (m) return this.classList.contains(m[1]);
    throw new Error('selector the stand-in does not know: ' + s);
  });
};
El.prototype.closest = function(sel){ let e = this; while (e) { if (e.matches(sel)) return e; e = e.parent; }
  return null; };
El.prototype.scrollIntoView = function(){ scrolled.push(this.spec.ev); };
const scrolled = [];
const els = input.elements.map(s => new El(s));
els.forEach((e, k) => { if (input.elements[k].parent !== null) e.parent = els[input.elements[k].parent]; });
const listeners = {svg: {}, doc: {}};
const svg = {
  querySelectorAll(sel){ return els.filter(e => e.matches(sel)); },
  addEventListener(t, f){ listeners.svg[t] = f; },
};
const byId = {};
for (const id of input.ids) byId[id] = new El({cls: []});
byId['ladder-data'].textContent = input.payload;
global.document = {
  getElementById(id){ if (!(id in byId)) throw new Error('no #' + id); return byId[id]; },
  querySelector(sel){ if (sel !== '#diagram svg') throw new Error(sel); return svg; },
  addEventListener(t, f){ listeners.doc[t] = f; },
};
global.window = {};
eval(input.code);
function snap(what){
  const with_ = c => [...new Set(els.filter(e => e.classList.contains(c) && e.spec.ev !== null)
                                   .map(e => e.spec.ev))].sort((a, b) => a - b);
  return {what, step: byId['step'].textContent, details: byId['details'].innerHTML,
          current: with_('current'), later: with_('later'), scrolled: scrolled.splice(0)};
}
const out = [snap('loaded')];
let prevented = 0;
function key(k){ listeners.doc.keydown({key: k, preventDefault(){ prevented++; }}); }
for (const a of input.actions) {
  if (a[0] === 'key') key(a[1]);
  else if (a[0] === 'button') byId[a[1]].onclick();
  else if (a[0] === 'click') {  // on the first child of the element of event a[1], as a mouse would
    const g = els.find(e => e.spec.ev === a[1]);
    const target = els.find(e => e.parent === g) || g;
    listeners.svg.click({target});
  }
  out.push(snap(a.join(' ')));
}
out.push({prevented, count: window.ladder.count});
process.stdout.write(JSON.stringify(out));
"""


def _run_script(page: str, actions: list[list[Any]], tmp_path: Path) -> list[dict[str, Any]]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (CI installs Debian's nodejs)")
    p = _parse(page)
    (payload,) = [body for a, body in p.scripts if a.get("id") == "ladder-data"]
    spec = {"elements": p.elements, "ids": p.ids, "payload": payload, "code": _code(p), "actions": actions}
    (tmp_path / "in.json").write_text(json.dumps(spec), encoding="utf-8")
    (tmp_path / "harness.js").write_text(HARNESS, encoding="utf-8")
    proc = subprocess.run([node, str(tmp_path / "harness.js"), str(tmp_path / "in.json")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("name", ["example", "window"])
def test_stepping_clicking_and_keys_in_node(pages: dict[str, str], name: str, tmp_path: Path) -> None:
    data = _data(_parse(pages[name]))
    n = len(data)
    order = [d["i"] for d in data]
    click_k = min(5, n - 1)
    actions: list[list[Any]] = [["key", "ArrowRight"], ["button", "next"], ["button", "next"],
                                ["button", "prev"], ["key", "k"], ["key", "ArrowLeft"],
                                ["click", order[click_k]], ["key", "Escape"]]
    actions += [["key", "j"]] * (n + 2)  # past the last event
    out = _run_script(pages[name], actions, tmp_path)
    tail = out.pop()
    assert tail["count"] == n
    assert tail["prevented"] == 3 + n + 2  # arrow keys and j/k do not scroll the page; Esc is not caught

    def stepped_to(s: dict[str, Any], k: int) -> None:
        d = data[k]
        assert s["step"] == f"event {k + 1} of {n}", s["step"]
        assert s["current"] == [order[k]]
        assert s["later"] == sorted(order[k + 1:])  # what has not happened yet is dimmed
        assert s["scrolled"] == [order[k]]
        shown = html.unescape(re.sub(r"<[^>]+>", "|", s["details"]))
        assert d["t"] in shown and d["text"] in shown and d["where"] in shown
        for layer, field, value in d["headers"]:
            assert f"|{layer}||{field}||{value}|" in shown, (layer, field, value)
        for note in d["notes"]:
            assert note in shown

    assert out[0]["step"] == f"{n} events" and out[0]["current"] == out[0]["later"] == []
    stepped_to(out[1], 0)
    stepped_to(out[2], 1)
    stepped_to(out[3], 2)
    stepped_to(out[4], 1)
    stepped_to(out[5], 0)
    same = {"what": "", "scrolled": []}
    assert {**out[6], **same} == {**out[5], **same}  # previous at the first event stays there
    click = out[7]  # a click shows the event's headers without dimming anything
    assert click["current"] == [order[click_k]] and click["later"] == [] and click["scrolled"] == []
    assert click["step"] == f"event {click_k + 1} of {n}"
    assert html.unescape(data[click_k]["text"]) in html.unescape(click["details"])
    assert out[8]["step"] == f"{n} events" and out[8]["current"] == out[8]["later"] == []
    for k, s in enumerate(out[9:9 + n]):  # from "show all", next starts at the first event
        stepped_to(s, k)
    assert {**out[-1], "what": ""} == {**out[-2], "what": "", "scrolled": []}  # next at the last stays there
    stepped_to(out[-3], n - 1)


@pytest.mark.slow  # the scenario's trace takes about 10 s; the windowed pages above cover the same code
def test_scenario_page_from_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``rdmasim trace examples/gbn_loss.toml --html`` (the first loss, focused): well formed, every
    clickable element an event, and every frame of the window has its BTH headers."""
    from rdmasim.cli import main

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "g.html"
    assert main(["trace", str(root / "examples" / "gbn_loss.toml"), "--html", str(out), "-q"]) == 0
    p = _parse(out.read_text(encoding="utf-8"))
    data = _data(p)
    assert {e["ev"] for e in p.elements if e["ev"] is not None} == {d["i"] for d in data}
    frames = [d for d in data if d["headers"][0][2].startswith(tr.kind_name(tr.TX))]
    assert frames and all({("BTH", "opcode"), ("BTH", "PSN")} <= {(h[0], h[1]) for h in d["headers"]}
                          for d in frames if any(h[0] == "BTH" for h in d["headers"]))
    assert any("lost on the way" in note for d in data for note in d["notes"])


# The end of a <script> element as the HTML tokenizer finds it (script data states, WHATWG HTML
# 13.2.5.4-13.2.5.20): "<!--" enters the escaped state, in which "<script" enters the double
# escaped state, in which "</script" does not end the element but only leaves that state again.
_TAG_END = (" ", "\t", "\n", "\f", "\r", "/", ">")


def _script_end(page: str, i: int) -> int:
    """Index of the ``</script`` that ends the script element whose text starts at ``i``."""
    state, dashes = "data", 0  # data | escaped | double

    def tag_at(k: int, prefix: str) -> bool:
        n = len(prefix)
        return page[k:k + n].lower() == prefix and k + n < len(page) and page[k + n] in _TAG_END

    while i < len(page):
        c = page[i]
        if state in ("data", "escaped") and tag_at(i, "</script"):
            return i
        if state == "data":
            if page.startswith("<!--", i):
                state, dashes, i = "escaped", 2, i + 4
                continue
        elif c == ">" and dashes >= 2:
            state = "data"
        elif state == "escaped" and tag_at(i, "<script"):
            state, i = "double", i + len("<script") + 1
            dashes = 0
            continue
        elif state == "double" and tag_at(i, "</script"):
            state, i = "escaped", i + len("</script") + 1
            dashes = 0
            continue
        dashes = dashes + 1 if c == "-" else 0
        i += 1
    raise AssertionError("a <script> element is never closed")


def _scripts_per_spec(page: str) -> list[str]:
    """The text of the page's two script elements (the data, then the code) as a browser splits
    them, and a check that nothing but the end of the page follows them."""
    head = '<script type="application/json" id="ladder-data">'
    start = page.index(head) + len(head)
    end = _script_end(page, start)
    data = page[start:end]
    rest = page[end:]
    assert rest.startswith("</script>\n<script>"), rest[:80]
    start2 = end + len("</script>\n<script>")
    end2 = _script_end(page, start2)
    assert page[end2:] == "</script>\n</body></html>\n", page[end2:][:80]
    return [data, page[start2:end2]]


HOSTILE = "</script><!--<script>&amp;\u2028"


def test_host_names_and_title_cannot_break_out_of_the_page(tmp_path: Path) -> None:
    """A host name or title holding ``</script><!--<script>``: the embedded data stays one script
    element (a browser would otherwise read the viewer script as part of it), the page parses, the
    names show as text, and the viewer still steps through the events under node."""
    names = {0: "a" + HOSTILE, 1: "<b>" + HOSTILE}
    page = ladder.render_html(ladder.example_write(), tmp_path / "h.html", title="t" + HOSTILE,
                              names=names).read_text(encoding="utf-8")
    payload, code = _scripts_per_spec(page)
    for c in "<>&":
        assert c not in payload
    p = _parse(page)
    assert json.loads(payload) == _data(p)
    assert code == _code(p)
    data = _data(p)
    assert any(d["where"].startswith(names[0]) for d in data)
    assert any(names[1] in d["where"] for d in data)
    text = html.unescape(re.sub(r"<[^>]+>", "", page.split("<script", 1)[0]))
    assert "t" + HOSTILE in text and names[0] in text
    out = _run_script(page, [["key", "ArrowRight"], ["key", "ArrowRight"]], tmp_path)
    assert out[-1]["count"] == len(data)
    assert out[2]["step"] == f"event 2 of {len(data)}"
    assert data[1]["where"] in html.unescape(out[2]["details"])  # shown as text, escaped once


def _css(page: str) -> dict[str, dict[str, str]]:
    """The page's style rules: selector -> {property: value}."""
    (style,) = re.findall(r"<style>(.*?)</style>", page, re.S)
    rules: dict[str, dict[str, str]] = {}
    for sel, body in re.findall(r"([^{}]+)\{([^{}]*)\}", style):
        decls = dict(tuple(x.strip() for x in d.split(":", 1)) for d in body.split(";") if ":" in d)
        for one in sel.split(","):
            rules.setdefault(one.strip(), {}).update(decls)
    return rules


@pytest.mark.parametrize("name", ["example", "window"])
def test_the_diagram_takes_the_width_of_the_window(pages: dict[str, str], name: str) -> None:
    """The ladder pane is as wide as the window (no side column beside it, no fixed width), and
    the SVG follows the pane's width: scaled down to it when wider, so no note is cut off."""
    css = _css(pages[name])
    for sel in ("body", "#wrap", "#diagram", "#diagram svg", "#details"):
        for prop in ("width", "max-width", "min-width", "flex", "flex-basis"):
            value = css.get(sel, {}).get(prop)
            assert value in (None, "100%", "auto"), f"{sel} {{{prop}:{value}}}: not the width of the window"
    assert css["#diagram"].get("width") == "100%"
    assert css["#diagram svg"].get("max-width") == "100%" and css["#diagram svg"].get("height") == "auto"
    assert css.get("#wrap", {}).get("display") != "flex"  # the details pane is not a column beside it
    assert "overflow" not in css["#diagram"]  # nothing of the drawing is clipped
    # the SVG scales: it has a viewBox of its own size
    svg = re.search(r'<svg [^>]*width="(\d+)" height="(\d+)" viewBox="0 0 (\d+) (\d+)"', pages[name])
    assert svg and svg[1] == svg[3] and svg[2] == svg[4]
