"""The progress bar of a tuning run: trials done of those asked, how many were legal, illegal,
wrong or failed, the best time so far, the time spent and the time left (tqdm's bar).

In a terminal the bar redraws itself on stderr. In a Jupyter kernel each write to stderr
would be an output of its own, which a notebook stores (and a documentation site shows) as
dozens of lines, one per redraw; there the bar is one display output, updated in place, so the
notebook keeps a single line with the final state, whether run by hand or by an executor.
"""

from __future__ import annotations

import math
import sys


class Progress:
    def __init__(self, total: int, shown: bool, description: str) -> None:
        self.counts = {"ok": 0, "illegal": 0, "wrong": 0, "failed": 0}
        self.best = math.inf
        self._bar = None
        if shown:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                desc=description,
                unit="trial",
                smoothing=0.1,
                mininterval=0.5,
                file=_kernel_line() or sys.stderr,
            )

    def add(self, status: str, seconds: float | None) -> None:
        self.counts[status] += 1
        if seconds is not None:
            self.best = min(self.best, seconds)
        if self._bar is not None:
            best = f"{self.best * 1e3:.4g} ms" if math.isfinite(self.best) else "-"
            shown = {k: v for k, v in self.counts.items() if v or k == "ok"}
            self._bar.set_postfix(best=best, **shown, refresh=False)
            self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


class DisplayLine:
    """A file for tqdm that shows only its latest line, as one display output updated in
    place (`handle` is IPython's ``DisplayHandle``)."""

    encoding = "utf-8"  # tqdm then draws the bar in block characters, as in a terminal

    def __init__(self, handle, text_type) -> None:
        self._handle, self._text = handle, text_type

    def write(self, text: str) -> None:
        line = text.replace("\n", "\r").rstrip("\r").rpartition("\r")[2]
        if line.strip():
            self._handle.update(self._text(line))

    def flush(self) -> None:
        pass


def _kernel_line() -> DisplayLine | None:
    """A `DisplayLine` when this runs in a Jupyter kernel (IPython already imported, with a
    kernel), else None."""
    if "IPython" not in sys.modules:
        return None
    from IPython import get_ipython
    from IPython.display import Pretty, display

    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return None
    return DisplayLine(display(Pretty(""), display_id=True), Pretty)
