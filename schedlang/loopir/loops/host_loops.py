"""Serial loops around grids: a loop whose body holds loops bound to blockIdx (a scan's steps,
each needing the one before finished on the whole grid) is run by the host, which launches the
kernels in its body once per iteration. The CUDA plan (`codegen.nvptx.plan`) and the SIMT
interpreter both cut kernels below such loops."""

from __future__ import annotations

from ..core.nodes import For, Stmt
from ..core.visit import walk_stmt


def host_loop(s: Stmt) -> bool:
    """A serial loop with loops bound to blockIdx inside."""
    return (
        isinstance(s, For)
        and s.kind != "bound"
        and any(
            isinstance(n, For) and n.kind == "bound" and str(n.thread).startswith("blockIdx")
            for n in walk_stmt(s.body)
        )
    )
