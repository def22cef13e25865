"""Buffers stored in another order (``transform_layout``): their loads and stores at the
indices the layout gives, on the loop nest as the polyhedral layer made it."""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import LoweringError
from ...schedule.layout import TransformLayout
from ..core.nodes import Allocate, Buffer, Load, Stmt, Store
from ..core.visit import stmt_buffers, transform_stmt


def apply_layouts(stmt: Stmt, layouts: Mapping[Buffer, TransformLayout]) -> Stmt:
    """`stmt` with each load and store of a buffer of `layouts` at its physical index.
    Expects the buffers' shapes to be the physical ones already, and their elements touched
    by loads and stores only (not by copies or tensor-core operations, which are refused)."""
    if not layouts:
        return stmt

    def expr_fn(e):
        if isinstance(e, Load) and e.buffer in layouts:
            return Load(e.buffer, layouts[e.buffer].indices(e.indices), e.dtype)
        return None

    def stmt_fn(s: Stmt):
        if isinstance(s, Store):
            if s.buffer in layouts:
                return Store(s.buffer, layouts[s.buffer].indices(s.indices), s.value)
            return None
        touched = [] if isinstance(s, Allocate) else [b for b in stmt_buffers(s) if b in layouts]
        if touched:
            raise LoweringError(
                f"'{touched[0].name}' is stored in another layout (transform_layout), and "
                f"{type(s).__name__} statements copy whole rows of it; keep its layout, or "
                "leave it out of copies and tensor-core operations"
            )
        return None

    return transform_stmt(stmt, stmt_fn, expr_fn)
