"""Reports such as ``qp.stats()``: a dict that prints as a table, and displays in Jupyter as an
HTML table."""

from __future__ import annotations

import html
from typing import Any


def _cell(v: Any) -> str:
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (list, tuple)):
        return ", ".join(_cell(x) for x in v)
    return str(v)


class Report(dict):  # type: ignore[type-arg]
    """A ``{name: value}`` report (it is a dict: index it, compare it, ``json.dumps`` it) that
    ``print`` shows as a two-column table and Jupyter as an HTML table, under its ``title``."""

    def __init__(self, title: str, values: dict[str, Any]) -> None:
        super().__init__(values)
        self.title = title

    def table(self) -> str:
        """The report as a fixed-width text table: the title, then one ``name  value`` row each."""
        width = max((len(str(k)) for k in self), default=0)
        cells = [_cell(v) for v in self.values()]
        vwidth = max((len(c) for c in cells), default=0)
        rows = [f"  {str(k):<{width}}  {c:>{vwidth}}" for k, c in zip(self, cells, strict=True)]
        return "\n".join([self.title, *rows])

    def __str__(self) -> str:
        return self.table()

    def _repr_html_(self) -> str:
        """The HTML table Jupyter shows."""
        rows = "".join(f"<tr><th style=\"text-align:left\">{html.escape(str(k))}</th>"
                       f"<td style=\"text-align:right\">{html.escape(_cell(v))}</td></tr>"
                       for k, v in self.items())
        return (f"<table class=\"rdmasim-report\"><caption style=\"text-align:left\">"
                f"{html.escape(self.title)}</caption><tbody>{rows}</tbody></table>")

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        """IPython's text display: the table."""
        p.text(self.title if cycle else self.table())

    def __reduce__(self) -> tuple[Any, ...]:
        return (Report, (self.title, dict(self)))


__all__ = ["Report"]
