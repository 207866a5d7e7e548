"""Reports (qp.stats(), switch totals, NIC pause stats) print as tables and show in Jupyter as HTML."""

from __future__ import annotations

import json
import pickle
from html.parser import HTMLParser

from support.verbs_pair import VerbsPair, write_wr

from rdmasim import topology
from rdmasim.report import Report
from rdmasim.verbs import QPCap
from rdmasim.verbs import enums as e


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.tags: list[str] = []
        self.caption = ""
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: object) -> None:
        self.tags.append(tag)
        if tag == "tr":
            self.rows.append([])
        self._in = tag

    def handle_data(self, data: str) -> None:
        if self._in in ("th", "td"):
            self.rows[-1].append(data)
        elif self._in == "caption":
            self.caption += data


def _qp_stats() -> dict[str, int]:
    p = VerbsPair(mtu=1024, loss_ab=0.05, seed=2, cqe=4, cap=(QPCap(max_send_wr=4), QPCap(max_recv_wr=4)))
    src = p.mr_a(64 * 1024, e.IBV_ACCESS_LOCAL_WRITE)
    dst = p.mr_b(64 * 1024, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    p.qa.post_send(write_wr(1, src, dst, 64 * 1024))
    assert p.sim.wait_for(p.cq_a, 1)[0].ok
    return p.qa.stats()


def test_qp_stats_is_a_dict_that_prints_as_a_table() -> None:
    stats = _qp_stats()
    assert isinstance(stats, dict) and isinstance(stats, Report)
    assert stats["pkts_sent"] >= 64 and stats == dict(stats)  # still a dict of ints
    assert json.loads(json.dumps(stats)) == dict(stats)
    text = str(stats)
    lines = text.splitlines()
    assert lines[0].startswith("QP 0x") and lines[0].endswith(": counters")
    assert len(lines) == 1 + len(stats)
    for line, (k, v) in zip(lines[1:], stats.items(), strict=True):  # one aligned row per counter
        assert line.split() == [k, f"{v:,}"]
    assert len({len(ln) for ln in lines[1:]}) == 1  # the values are right-aligned in one column
    assert pickle.loads(pickle.dumps(stats)) == stats


def test_reports_show_in_jupyter_as_html_tables() -> None:
    stats = _qp_stats()
    parsed = _Cells()
    parsed.feed(stats._repr_html_())
    assert parsed.tags[:2] == ["table", "caption"] and parsed.caption == str(stats).splitlines()[0]
    assert parsed.rows == [[k, f"{v:,}"] for k, v in stats.items()]
    # escaped: a name or value with markup is text, not HTML
    r = Report("<b>", {"a<b": "x&y"})
    assert "<b>" not in r._repr_html_() and "&lt;b&gt;" in r._repr_html_() and "x&amp;y" in r._repr_html_()


def test_switch_totals_and_pause_stats_are_reports() -> None:
    topo = topology.incast(2, seed=1)
    totals = topo.switch.totals()
    assert isinstance(totals, Report) and totals["drops"] == 0
    assert str(totals).startswith(f"switch {topo.switch.name}: totals")
    pause = topo.senders[0].pause_stats()
    assert isinstance(pause, Report) and "pfc_rx_frames" in pause
    assert str(pause).splitlines()[0] == f"host {topo.senders[0].name}: PFC pause received"
