"""The progress bar of a tuning run: trials done of those asked, how many were legal, illegal,
wrong or failed, the best time so far, the time spent and the time left (tqdm's bar, as a
widget in Jupyter where ipywidgets is installed, as text elsewhere)."""

from __future__ import annotations

import math
import warnings


class Progress:
    def __init__(self, total: int, shown: bool, description: str) -> None:
        self.counts = {"ok": 0, "illegal": 0, "wrong": 0, "failed": 0}
        self.best = math.inf
        self._bar = None
        if shown:
            with warnings.catch_warnings():  # tqdm.auto warns where ipywidgets is missing
                warnings.simplefilter("ignore")
                from tqdm.auto import tqdm

                self._bar = tqdm(
                    total=total, desc=description, unit="trial", smoothing=0.1, mininterval=0.5
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
