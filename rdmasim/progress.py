"""Progress bars of long runs (``rdmasim run``, ``sweep``, the demo's scenarios), drawn by tqdm.

tqdm is used rather than hand-written ``\\r`` lines: it is small, has no dependencies of its own,
redraws at a bounded rate, sizes the bar to the terminal, and leaves non-terminal streams (a pipe,
a log file, CI) alone unless asked. ``enabled=None`` means "when the stream is a terminal".
"""

from __future__ import annotations

import shutil
import sys
from typing import Any, TextIO

from tqdm import tqdm

#: the bar's resolution: the fraction done is shown in steps of 1/STEPS
STEPS = 1000


class Progress:
    """A progress bar on ``stream`` (default stderr) that shows a fraction done and a status text.

    ``enabled``: True always draws, False never, None (the default) only on a terminal. A stream
    that is not a terminal gets at most one line every ``file_interval_s`` seconds."""

    def __init__(self, desc: str, enabled: bool | None = None, stream: TextIO | None = None,
                 file_interval_s: float = 5.0) -> None:
        out = sys.stderr if stream is None else stream
        tty = bool(getattr(out, "isatty", lambda: False)())
        # the terminal's size; one that reports none (0 x 0, e.g. a bare pty) counts as 100 x 20
        size = shutil.get_terminal_size((100, 20))
        self.bar: Any = tqdm(
            total=STEPS, desc=desc, file=out, leave=True,
            ncols=min(size.columns, 120) if tty else None, nrows=size.lines if tty else None,
            disable=(not enabled) if enabled is not None else (None if tty else True),
            mininterval=0.2 if tty else file_interval_s,
            # {unit} carries the status text (tqdm would put ", " before a postfix)
            unit="", bar_format="{desc}: {percentage:3.0f}%|{bar:20}| {unit} [{elapsed}, ETA {remaining}]",
        )

    @property
    def enabled(self) -> bool:
        """Whether anything is drawn."""
        return not self.bar.disable

    def update(self, fraction: float, status: str) -> None:
        """Show ``fraction`` (0..1) done and ``status`` (e.g. the simulated time and event rate)."""
        if self.bar.disable:
            return
        n = int(max(0.0, min(1.0, fraction)) * STEPS)
        self.bar.unit = status
        if n != self.bar.n:
            self.bar.update(n - self.bar.n)
        else:
            self.bar.refresh() if self.bar.n == STEPS else None

    def close(self) -> None:
        """Draw the last state and end the line."""
        self.bar.close()


__all__ = ["Progress"]
