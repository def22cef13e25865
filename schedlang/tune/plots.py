"""Pictures of a tuning log for notebooks: how the best time fell, and two knobs' landscape.

Both return a matplotlib ``Figure`` (shown by Jupyter, saved with ``fig.savefig``); matplotlib
is imported only here, when a picture is asked for.
"""

from __future__ import annotations

import json
import math

import numpy as np


def convergence(log):
    """Each correct trial's time (dots) and the best so far (a line), in trial order; the
    trials that were illegal, wrong or failed are ticks along the bottom."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 3.4))
    ax = fig.add_subplot()
    ok = [(k + 1, t.seconds * 1e3) for k, t in enumerate(log.trials) if t.ok]
    if ok:
        xs, ys = zip(*ok)
        ax.scatter(xs, ys, s=12, color="#7a9cc6", label="trial", zorder=2)
        best, line = math.inf, []
        for t in log.trials:
            if t.ok:
                best = min(best, t.seconds * 1e3)
            line.append(best)
        ax.step(range(1, len(line) + 1), line, where="post", color="#d1495b", label="best so far")
        ax.set_yscale("log")
    bad = [k + 1 for k, t in enumerate(log.trials) if not t.ok]
    if bad:
        ax.plot(
            bad,
            [0.0] * len(bad),
            "|",
            color="grey",
            markersize=8,
            transform=ax.get_xaxis_transform(),
            label="illegal, wrong or failed",
        )
    counts = ", ".join(f"{n} {s}" for s, n in log.counts().items() if n)
    ax.set_title(f"{len(log)} trials: {counts}", fontsize=10)
    ax.set_xlabel("trial")
    ax.set_ylabel("time (ms)")
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def heatmap(log, x: str, y: str):
    """The best time found at each pair of values of knobs `x` (columns) and `y` (rows), over
    all values of the other knobs; grey where no trial of that pair ran correctly."""
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure

    from .knobs import TuneError

    have = set(log.trials[0].knobs) if log.trials else set()
    for name in (x, y):
        if name not in have:
            raise TuneError(f"heatmap: no knob {name!r}; the knobs are {sorted(have)}")
    columns = _ordered({json.dumps(t.knobs[x]) for t in log.trials})
    rows = _ordered({json.dumps(t.knobs[y]) for t in log.trials})
    values = np.full((len(rows), len(columns)), np.nan)
    for t in log.trials:
        if t.ok:
            r, c = rows.index(json.dumps(t.knobs[y])), columns.index(json.dumps(t.knobs[x]))
            values[r, c] = np.fmin(values[r, c], t.seconds * 1e3)
    fig = Figure(figsize=(0.9 * len(columns) + 2.6, 0.45 * len(rows) + 1.8))
    ax = fig.add_subplot()
    finite = values[np.isfinite(values)]
    norm = LogNorm(finite.min(), finite.max()) if finite.size else None  # times span decades
    shown = ax.imshow(np.ma.masked_invalid(values), cmap="viridis_r", aspect="auto", norm=norm)
    ax.set_facecolor("#dddddd")
    for (r, c), v in np.ndenumerate(values):
        if np.isfinite(v):
            colour = "white" if norm(v) > 0.5 else "black"
            ax.text(c, r, f"{v:.3g}", ha="center", va="center", fontsize=8, color=colour)
    labels = [repr(json.loads(text)) for text in columns]
    ax.set_xticks(range(len(columns)), labels, rotation=45 if len(columns) > 6 else 0)
    ax.set_yticks(range(len(rows)), [repr(json.loads(text)) for text in rows])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(f"best time (ms) by {y} and {x}", fontsize=10)
    fig.colorbar(shown, ax=ax, label="ms")
    fig.tight_layout()
    return fig


def _ordered(texts: set[str]) -> list[str]:
    """Knob values (as JSON text) in their natural order: numbers and lists of numbers by
    value, anything else by its text."""

    def key(text: str):
        value = json.loads(text)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return (0, [value], text)
        if isinstance(value, list) and all(isinstance(v, (int, float)) for v in value):
            return (1, value, text)
        return (2, [], text)

    return sorted(texts, key=key)
