"""Loop nests as HTML for notebooks: the text of `printer`, with the loop kinds as badges.

Each line reads as `printer` prints it (a golden file and a notebook agree on what a nest
says), but the kind of a loop, the scope of an allocation, barriers, guards and block
collectives are coloured badges rather than trailing comments, and loops fold. A nest longer
than `LONG_NEST` lines opens folded below depth `OPEN_DEPTH`, so that the outer structure (grid,
blocks, staging) fits on a screen and the inner loops open on a click.
"""

from __future__ import annotations

from ...htmlkit import badge, escape, fold, page, table
from ...ir.printer import expr_str
from .nodes import (
    Allocate,
    Barrier,
    Buffer,
    For,
    If,
    Let,
    LoweredFunc,
    MatrixOp,
    Seq,
    Stmt,
    ThreadAllReduce,
)
from .printer import constant_bytes, range_str, stmt_head, stmt_str, type_str
from .visit import walk_stmt

LONG_NEST = 80
OPEN_DEPTH = 3


def func_html(func: LoweredFunc) -> str:
    """`func` as a self-contained HTML page: its signature, its allocations, its loop nest."""
    params = ", ".join(f"{b.name}: {type_str(b)}" for b in func.params)
    title = f"LoweredFunc <code>{escape(f'{func.name}({params})')}</code>"
    return page(title, func_body_html(func))


def func_body_html(func: LoweredFunc) -> str:
    """The allocations table and the folding loop nest of `func`, without the page around
    them (kernels embed it)."""
    parts = []
    allocations = allocations_html(func.body)
    if allocations:
        parts.append(allocations)
    parts.append(nest_html(func.body))
    return "".join(parts)


def allocations_html(body: Stmt) -> str:
    """A table of the buffers `body` allocates: name, scope, type, bytes ("" when none)."""
    rows = []
    for s in walk_stmt(body):
        if isinstance(s, Allocate):
            rows.append(_allocation_row(s.buffer))
    if not rows:
        return ""
    return table(("buffer", "scope", "type", "bytes"), rows, numeric=(False, False, False, True))


def _allocation_row(buffer: Buffer) -> tuple[str, str, str, str]:
    size = constant_bytes(buffer)
    shown = f"{size:,}" if size is not None else "depends on the sizes"
    return (escape(buffer.name), badge(buffer.scope), escape(type_str(buffer)), shown)


def nest_html(body: Stmt) -> str:
    """The loop nest as nested lines; loops fold (see the module docstring)."""
    long = stmt_str(body).count("\n") + 1 > LONG_NEST
    return f'<div class="sl-nest">{_stmt(body, 0, long)}</div>'


def _line(text: str, *badges: str) -> str:
    return f'<div class="sl-line">{escape(text)}{"".join(badges)}</div>'


def _stmt(s: Stmt, depth: int, long: bool) -> str:
    if isinstance(s, Seq):
        if not s.stmts:
            return _line("pass")
        return "".join(_stmt(child, depth, long) for child in s.stmts)
    if isinstance(s, For):
        return _loop(s, depth, long)
    if isinstance(s, If):
        return _if(s, depth, long, "if")
    if isinstance(s, Allocate):
        head = f"allocate {s.buffer.name}: {type_str(s.buffer)}"
        if s.buffer.strides is not None:
            head += f", strides=[{', '.join(expr_str(x) for x in s.buffer.strides)}]"
        size = constant_bytes(s.buffer)
        extra = [badge(s.buffer.scope)]
        if size is not None:
            extra.append(f'<span class="sl-muted">{size:,} bytes</span>')
        return _line(head, *extra) + _stmt(s.body, depth, long)
    if isinstance(s, Let):
        return _line(stmt_head(s)) + _stmt(s.body, depth, long)
    if isinstance(s, Barrier):
        return _line("barrier()", badge("barrier"))
    if isinstance(s, ThreadAllReduce):
        return _line(stmt_head(s), badge("allreduce"))
    if isinstance(s, MatrixOp):
        return _line(stmt_head(s), badge("tensor core"))
    return _line(stmt_head(s))


def _loop(s: For, depth: int, long: bool) -> str:
    kind = s.thread if s.kind == "bound" and s.thread else s.kind
    head = f"for {s.var.name} in range({range_str(s)}):"
    summary = f'<span class="sl-line">{escape(head)}{badge(kind)}</span>'
    body = f'<div class="sl-body">{_stmt(s.body, depth + 1, long)}</div>'
    return fold(summary, body, open=not (long and depth >= OPEN_DEPTH), css="sl-loop")


def _if(s: If, depth: int, long: bool, keyword: str) -> str:
    out = [_line(f"{keyword} {expr_str(s.cond)}:", badge("guard"))]
    out.append(f'<div class="sl-body">{_stmt(s.then, depth + 1, long)}</div>')
    if isinstance(s.otherwise, If):
        out.append(_if(s.otherwise, depth, long, "elif"))
    elif s.otherwise is not None:
        out.append(_line("else:"))
        out.append(f'<div class="sl-body">{_stmt(s.otherwise, depth + 1, long)}</div>')
    return "".join(out)
