"""What the loop IR can say and OpenCL C 1.2 cannot, refused by name before any source is
written: tensor-core operations and their fragments, asynchronous and bulk copies (``cp.async``,
the copy engine) with their barriers, collectives of a warp's lanes (warp shuffles), 8-bit
floats, C function calls and swizzled layouts. Each is a CUDA feature; the message says to
build for ``'cuda'``. (`driver`'s build names the schedule's primitive where one asked for it;
these are the loop nest's statements, what any lowering reaches.)"""

from __future__ import annotations

from ...errors import LoweringError
from ...ir import dtype as dt
from ...loopir.core.nodes import (
    FRAGMENT_SCOPES,
    Allocate,
    AsyncCommit,
    AsyncCopy,
    AsyncWait,
    Barrier,
    BulkCopy,
    BulkStore,
    BulkWait,
    CallExtern,
    LoweredFunc,
    MatrixOp,
    MBarrier,
    Stmt,
    ThreadAllReduce,
)
from ...loopir.core.printer import stmt_head
from ...loopir.core.visit import stmt_exprs, walk_expr, walk_stmt

_WHY = {
    MatrixOp: "a tensor-core operation (tensorize)",
    AsyncCopy: "an asynchronous copy (pipeline(), cp.async)",
    AsyncCommit: "an asynchronous copy's commit (pipeline(), cp.async)",
    AsyncWait: "an asynchronous copy's wait (pipeline(), cp.async)",
    BulkCopy: "a copy-engine copy (pipeline(tma=True))",
    BulkStore: "a copy-engine store (a warpgroup product's bulk store)",
    BulkWait: "a copy-engine wait",
    MBarrier: "a memory barrier of the copy engine (mbarrier)",
    CallExtern: "a call of a C function (a declared intrinsic's), which runs on the CPU",
}


def check_opencl(func: LoweredFunc) -> None:
    """A LoweringError naming the first statement of `func` that OpenCL cannot run."""
    for s in walk_stmt(func.body):
        why = _why(s)
        if why is not None:
            raise LoweringError(
                f"kernel '{func.name}': '{stmt_head(s)}' is {why}, which the opencl target "
                "cannot express; build with target='cuda'"
            )


def _why(s: Stmt) -> str | None:
    if type(s) in _WHY:
        return _WHY[type(s)]
    if isinstance(s, ThreadAllReduce) and s.lanes:
        return "a reduction across a warp's lanes (warp shuffles, of a tensor-core accumulator)"
    if isinstance(s, Barrier) and s.warpgroup:
        return "a warpgroup's barrier (named barriers)"
    if isinstance(s, Allocate) and s.buffer.scope in FRAGMENT_SCOPES:
        return f"a tensor-core fragment ({s.buffer.scope})"
    if isinstance(s, Allocate) and dt.is_float8(s.buffer.dtype):
        return f"a buffer of {s.buffer.dtype}, an 8-bit float"
    for e in stmt_exprs(s):
        for n in walk_expr(e):
            if dt.is_float8(n.dtype):
                return f"a computation with {n.dtype} values (an 8-bit float)"
    return None
