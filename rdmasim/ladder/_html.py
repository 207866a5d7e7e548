"""The ladder as one self-contained HTML page: the SVG, a details pane with each frame's headers,
and stepping event by event (buttons or the arrow keys). No network access: the script and the
style are inline.

The diagram takes the whole width of the window (scaled down to it when it is wider, so no note
is cut off); the details pane sits below it, held at the bottom of the window while scrolling."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from rdmasim import trace as tr
from rdmasim.codec import OPCODE_NAMES
from rdmasim.ladder import _svg
from rdmasim.ladder._model import _NAK_LONG, Event, fmt_time, rnr_timer_text
from rdmasim.ladder._window import View

_ECN = {0: "Not-ECT", 1: "ECT(1)", 2: "ECT(0)", 3: "CE (congestion experienced)"}


def _aeth(syn: int) -> str:
    kind = syn & 0xE0
    if kind == 0x00:
        return f"0x{syn:02x}: ACK (credit field {syn & 0x1F})"
    if kind == 0x20:
        return f"0x{syn:02x}: RNR NAK, {rnr_timer_text(syn)}"
    if kind == 0x60:
        return f"0x{syn:02x}: NAK, {_NAK_LONG.get(syn, 'reserved code')}"
    return f"0x{syn:02x}"


def headers(r: np.void, names: dict[int, str]) -> list[list[str]]:
    """The header fields of a frame record (or the fields of a verbs event) as
    ``[layer, field, value]`` rows, for the details pane."""
    kind = int(r["kind"])
    node, peer = int(r["node"]), int(r["peer"])
    rows: list[list[str]] = [["trace", "record", f"{tr.kind_name(kind)} at {fmt_time(int(r['t_ps']))}"]]
    if kind != tr.TX:
        rows.append(["trace", "node", names.get(node, str(node))])
        for f in ("wr_id", "qpn", "dest_qpn", "psn", "len", "aux", "status", "verb_op", "reason"):
            rows.append(["event", f, str(int(r[f]))])
        return rows
    rows.append(["link", "from -> to", f"{names.get(node, node)} -> {names.get(peer, peer)}"])
    if int(r["pkt_kind"]) == 1:
        rows.append(["MAC control", "PFC class-enable vector", f"0x{int(r['aux']):02x}"])
        return rows
    op = int(r["opcode"])
    rows.append(["IP", "traffic class (priority)", str(int(r["priority"]))])
    rows.append(["IP", "ECN", _ECN.get(int(r["ecn"]), str(int(r["ecn"])))])
    if op == 0x81:
        rows.append(["BTH", "opcode", "0x81 CNP (congestion notification)"])
        rows.append(["BTH", "dest QP", f"0x{int(r['dest_qpn']):06x}"])
        return rows
    flags = int(r["flags"])
    rows += [["BTH", "opcode", f"0x{op:02x} {OPCODE_NAMES.get(op, '?')}"],
             ["BTH", "dest QP", f"0x{int(r['dest_qpn']):06x}"],
             ["BTH", "PSN", str(int(r["psn"]))],
             ["BTH", "A (ack request)", str(int(bool(flags & tr.FLAG_ACKREQ)))],
             ["BTH", "SE (solicited event)", str(int(bool(flags & tr.FLAG_SE)))],
             ["(sender)", "source QP", f"0x{int(r['qpn']):06x}"]]
    if op in (0x06, 0x0A, 0x0B, 0x0C) or op in (0x26, 0x2A, 0x2B):
        rows.append(["RETH", "DMA length", str(int(r["aux"]))])
    if op in (0x0D, 0x0F, 0x10, 0x11, 0x12):
        rows.append(["AETH", "syndrome", _aeth(int(r["syndrome"]))])
        rows.append(["AETH", "MSN", str(int(r["msn"]))])
    rows.append(["payload", "bytes", str(int(r["len"]))])
    return rows


def _event_data(view: View, e: Event) -> dict[str, Any]:
    r = view.ladder.records[e.record]
    d: dict[str, Any] = {"i": e.index, "t": fmt_time(e.t_ps), "text": e.full_label,
                         "where": (f"{view.name(e.node)} → {view.name(e.peer)}" if e.frame
                                   else view.name(e.node)),
                         "headers": headers(r, view.ladder.names),
                         "state": [f"{view.name(n)}: {s}" for n, s in sorted(e.state.items())
                                   if n in view.lanes]}
    notes = []
    if e.frame and e.t_arrive_ps is not None:
        notes.append(f"arrives at {fmt_time(e.t_arrive_ps)}")
    if e.dropped is not None:
        notes.append(f"lost on the way: {e.dropped}")
    if e.discarded:
        notes.append(f"{view.name(e.peer)}: {e.discarded}")
    d["notes"] = notes
    return d


_STYLE = """
html{scroll-padding-bottom:32vh}
body{font-family:system-ui,sans-serif;margin:0}
header{padding:.6em 1em;border-bottom:1px solid #ccc;position:sticky;top:0;background:#fff;z-index:2}
h1{font-size:1.2em;margin:.2em 0}
#wrap{width:100%}
#diagram{width:100%;box-sizing:border-box;padding:0 1em}
#diagram svg{display:block;max-width:100%;height:auto}
#details{width:100%;box-sizing:border-box;position:sticky;bottom:0;z-index:2;background:#fff;
  padding:.3em 1em;border-top:1px solid #ccc;font-size:.9em;max-height:30vh;overflow:auto}
#details table{border-collapse:collapse;width:100%}
#details td{border-bottom:1px solid #eee;padding:2px 4px;vertical-align:top}
#details td:first-child{color:#666;white-space:nowrap}
button{font-size:1em;margin-right:.3em}
[data-ev]{cursor:pointer}
.later{opacity:.12}
.current line.arrow,.current circle{stroke-width:4}
.current text{font-weight:bold}
"""

_SCRIPT = """
(function(){
const data = JSON.parse(document.getElementById('ladder-data').textContent);
const order = data.map(d => d.i);
const pos = new Map(order.map((v, k) => [v, k]));
let cur = -1;
const svg = document.querySelector('#diagram svg');
function els(i){ return svg.querySelectorAll('[data-ev="' + i + '"]'); }
function esc(s){
  return String(s).replace(/[&<>"]/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
}
function show(k){
  const d = data[k];
  let h = '<h2 style="font-size:1.05em">' + esc(d.t) + ' &middot; ' + esc(d.where) + '</h2>';
  h += '<p><b>' + esc(d.text) + '</b></p>';
  if (d.notes.length) h += '<ul>' + d.notes.map(n => '<li>' + esc(n) + '</li>').join('') + '</ul>';
  h += '<table>' + d.headers.map(r => '<tr><td>' + esc(r[0]) + '</td><td>' + esc(r[1]) +
       '</td><td>' + esc(r[2]) + '</td></tr>').join('') + '</table>';
  if (d.state.length)
    h += '<p>QP state after it:</p><ul>' + d.state.map(s => '<li>' + esc(s) + '</li>').join('') + '</ul>';
  document.getElementById('details').innerHTML = h;
}
function go(k, stepping){
  if (k < 0 || k >= data.length) return;
  cur = k;
  svg.querySelectorAll('.current').forEach(el => el.classList.remove('current'));
  svg.querySelectorAll('[data-ev]').forEach(el => {
    const p = pos.get(Number(el.getAttribute('data-ev')));
    el.classList.toggle('later', stepping && p !== undefined && p > k);
  });
  els(order[k]).forEach(el => el.classList.add('current'));
  show(k);
  document.getElementById('step').textContent = 'event ' + (k + 1) + ' of ' + data.length;
  const first = els(order[k])[0];
  if (first && stepping && first.scrollIntoView) first.scrollIntoView({block:'nearest'});
}
function all(){
  cur = -1;
  svg.querySelectorAll('.later,.current').forEach(el => el.classList.remove('later','current'));
  document.getElementById('step').textContent = data.length + ' events'; }
svg.addEventListener('click', ev => {
  const g = ev.target.closest('[data-ev]');
  if (g) go(pos.get(Number(g.getAttribute('data-ev'))), false);
});
document.getElementById('prev').onclick = () => go(cur < 0 ? 0 : cur - 1, true);
document.getElementById('next').onclick = () => go(cur + 1, true);
document.getElementById('all').onclick = all;
document.addEventListener('keydown', ev => {
  if (ev.key === 'ArrowRight' || ev.key === 'j') { go(cur + 1, true); ev.preventDefault(); }
  if (ev.key === 'ArrowLeft' || ev.key === 'k') { go(cur < 0 ? 0 : cur - 1, true); ev.preventDefault(); }
  if (ev.key === 'Escape') all();
});
window.ladder = {go: go, all: all, count: data.length};
all();
})();
"""


#: characters JSON may hold that HTML reads inside a <script> element: "</script" ends it, "<!--"
#: and "<script" switch the tokenizer into the escaped states in which the next "</script" does not
_SCRIPT_UNSAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def script_json(value: Any) -> str:
    """``value`` as JSON text safe inside an HTML ``<script>`` element: ``<``, ``>`` and ``&`` are
    written as the JSON escapes ``\\u003c``, ``\\u003e`` and ``\\u0026`` (``JSON.parse`` reads the
    same value back), so no string in it can end the element or change how the page parses."""
    return json.dumps(value, ensure_ascii=True).translate(_SCRIPT_UNSAFE)


def render(view: View, title: str) -> str:
    """The HTML page of a :class:`View` (see :func:`rdmasim.ladder.render_html`)."""
    svg = _svg.render(view, title=None)
    data = [_event_data(view, e) for e in view.events]
    payload = script_json(data)
    desc = f"<p>Showing {_svg.esc(view.description)}.</p>" if view.description else ""
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_svg.esc(title)}</title><style>{_STYLE}</style></head><body>\n"
            f"<header><h1>{_svg.esc(title)}</h1>{desc}"
            "<button id=\"prev\" title=\"previous event (left arrow)\">&#9668; previous</button>"
            "<button id=\"next\" title=\"next event (right arrow)\">next &#9658;</button>"
            "<button id=\"all\" title=\"show every event (Esc)\">show all</button> "
            "<span id=\"step\"></span> <small>Click a frame or event for its headers; step with "
            "the arrow keys.</small></header>\n"
            f"<div id=\"wrap\"><div id=\"diagram\">\n{svg}\n</div>"
            "<aside id=\"details\"><p>Click a frame to see its headers.</p></aside></div>\n"
            f"<script type=\"application/json\" id=\"ladder-data\">{payload}</script>\n"
            f"<script>{_SCRIPT}</script>\n</body></html>\n")
