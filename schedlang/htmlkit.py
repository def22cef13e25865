"""The look shared by every HTML rendering in notebooks: one stylesheet, badges, tables, folds.

Jupyter shows an object's ``_repr_html_``; schedules, loop nests and kernels each render in
their own stage (`schedule.html`, `loopir.core.html`, `runtime.html`) with the pieces here, so that
they look alike and none drifts. The output is self-contained: an inline ``<style>`` scoped to
``.sl-view``, no scripts, folds made of ``<details>``. Colours are translucent over the page's
own background and text inherits the page's colour, so both light and dark themes read well.
This is a base module: it imports no stage, so every stage may use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

__all__ = ["badge", "code_block", "escape", "fold", "page", "table"]

# Hue per badge kind: loop kinds, hardware tags, scopes and statement kinds. Serial loops and
# global memory stay grey: they are what happens when nothing was asked for.
_HUES = {
    "serial": "128, 128, 128",
    "parallel": "230, 126, 34",
    "vectorized": "39, 174, 96",
    "unrolled": "142, 68, 173",
    "blockIdx": "231, 76, 60",
    "threadIdx": "41, 128, 185",
    "vthread": "22, 160, 133",
    "global": "128, 128, 128",
    "shared": "211, 84, 0",
    "local": "41, 128, 185",
    "barrier": "192, 57, 43",
    "guard": "243, 156, 18",
    "allreduce": "41, 128, 185",
    "tensor core": "118, 185, 0",
    "wmma": "118, 185, 0",
    "inline": "128, 128, 128",
    "root": "128, 128, 128",
    "at": "22, 160, 133",
    "ok": "39, 174, 96",
    "failed": "192, 57, 43",
}

_STYLE = """
.sl-view { font-family: var(--jp-ui-font-family, system-ui, sans-serif); color: inherit;
  line-height: 1.45; max-width: 100%; }
.sl-view .sl-title { font-weight: 600; margin: 0.2em 0 0.4em; }
.sl-view .sl-muted { opacity: 0.7; }
.sl-view .sl-code { font-family: var(--jp-code-font-family, ui-monospace, monospace);
  font-size: 0.9em; white-space: pre; overflow-x: auto; padding: 0.4em 0.6em;
  border: 1px solid rgba(128, 128, 128, 0.35); border-radius: 4px;
  background: rgba(128, 128, 128, 0.06); }
.sl-view .sl-nest { font-family: var(--jp-code-font-family, ui-monospace, monospace);
  font-size: 0.9em; overflow-x: auto; padding: 0.4em 0.6em;
  border: 1px solid rgba(128, 128, 128, 0.35); border-radius: 4px;
  background: rgba(128, 128, 128, 0.06); }
.sl-view .sl-line { white-space: pre; }
.sl-view .sl-body { margin-left: 1.1em; padding-left: 0.7em;
  border-left: 1px dotted rgba(128, 128, 128, 0.5); }
.sl-view details > summary { cursor: pointer; list-style-position: outside; }
.sl-view details.sl-fold > summary { font-weight: 600; margin: 0.3em 0; }
.sl-view .sl-badge { display: inline-block; font-family: var(--jp-ui-font-family, sans-serif);
  font-size: 0.75em; font-weight: 600; padding: 0 0.45em; margin: 0 0.3em;
  border-radius: 0.7em; border: 1px solid rgba(var(--sl-hue), 0.8);
  background: rgba(var(--sl-hue), 0.18); vertical-align: baseline; white-space: nowrap; }
.sl-view table.sl-table { border-collapse: collapse; margin: 0.3em 0; font-size: 0.9em; }
.sl-view table.sl-table th, .sl-view table.sl-table td { padding: 0.2em 0.7em;
  border-bottom: 1px solid rgba(128, 128, 128, 0.3); text-align: left; color: inherit;
  background: transparent; }
.sl-view table.sl-table td.sl-num { text-align: right; font-variant-numeric: tabular-nums; }
.sl-view table.sl-table th { font-weight: 600; border-bottom-width: 2px; }
"""


def badge(text: str, kind: str | None = None) -> str:
    """A coloured pill; `kind` picks the colour (a loop kind, hardware tag, scope, ...), by
    default `text` itself; a hardware tag such as ``threadIdx.x`` takes its family's colour."""
    key = kind or text
    hue = _HUES.get(key) or _HUES.get(key.split(".")[0], _HUES["serial"])
    return f'<span class="sl-badge" style="--sl-hue: {hue}">{escape(text)}</span>'


def fold(summary: str, body: str, open: bool = False, css: str = "sl-fold") -> str:
    """A ``<details>`` block: `summary` (HTML) always shown, `body` (HTML) on demand."""
    opened = " open" if open else ""
    return f'<details class="{css}"{opened}><summary>{summary}</summary>{body}</details>'


def code_block(text: str) -> str:
    """Plain text (IR, PTX, Python) in a scrolling monospace box, escaped."""
    return f'<div class="sl-code">{escape(text)}</div>'


def table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[bool] = ()
) -> str:
    """A table of HTML cells; columns flagged in `numeric` align right. Headers are escaped,
    cells are taken as HTML (escape text cells with `escape`)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    lines = []
    for row in rows:
        cells = []
        for k, cell in enumerate(row):
            css = ' class="sl-num"' if k < len(numeric) and numeric[k] else ""
            cells.append(f"<td{css}>{cell}</td>")
        lines.append(f"<tr>{''.join(cells)}</tr>")
    body = "".join(lines)
    return f'<table class="sl-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def page(title: str, body: str) -> str:
    """A complete rendering: the stylesheet, a title (HTML) and `body` (HTML)."""
    head = f'<style>{_STYLE}</style><div class="sl-title">{title}</div>'
    return f'<div class="sl-view">{head}{body}</div>'
