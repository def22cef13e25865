"""Readable pseudo-code for loop nests: what `sl.lower` prints (TVM's ``simple_mode``, in Python).

One statement per line, two spaces per level::

    def main(A: float32[M, K], B: float32[K, N], C: float32[M, N]):
      for i.outer in range(0, (M + 31) // 32):  # parallel
        allocate A.shared: float32[64, 8] in shared  # 2048 bytes
        barrier()

A loop's kind is a trailing comment (none for serial; the thread tag for a bound loop). An
`Allocate` and a `Let` print as one line and their body continues at the same indentation, as
in TVM, so staging buffers do not push the loop nest to the right. The output depends only on
the tree, never on object ids, so golden files can compare it.
"""

from __future__ import annotations

from ...ir import dtype as dt
from ...ir.expr import Const, Expr, binary
from ...ir.printer import expr_str
from .nodes import (
    Allocate,
    AsyncCommit,
    AsyncCopy,
    AsyncWait,
    Barrier,
    Buffer,
    BulkCopy,
    BulkStore,
    BulkWait,
    CallExtern,
    For,
    If,
    Let,
    LoweredFunc,
    MatrixOp,
    MBarrier,
    Seq,
    SetRegisters,
    Stmt,
    Store,
    ThreadAllReduce,
    Tile,
    Turn,
    element_name,
)
from .simplify import simplify_expr

_INDENT = "  "


def stmt_str(stmt: Stmt) -> str:
    """`stmt` as indented pseudo-code (no trailing newline)."""
    lines: list[str] = []
    _emit(stmt, 0, lines)
    return "\n".join(lines)


def func_str(func: LoweredFunc) -> str:
    """`func` as ``def name(params):`` followed by its loop nest (no trailing newline)."""
    params = ", ".join(f"{b.name}: {type_str(b)}" for b in func.params)
    lines = [f"def {func.name}({params}):"]
    for each in func.scan_rows:  # what a call checks of its sizes besides their ranges
        lines.append(
            f"  # a call checks {expr_str(each.rows)} <= {expr_str(each.steps)}: the init of "
            f"scan '{each.scan}' gives {expr_str(each.rows)} rows"
        )
    _emit(func.body, 1, lines)
    return "\n".join(lines)


def type_str(buffer: Buffer) -> str:
    """``dtype[extents]``, as parameters and allocations print."""
    return f"{buffer.dtype}[{', '.join(expr_str(n) for n in buffer.shape)}]"


def stmt_head(stmt: Stmt) -> str:
    """The first line `stmt_str(stmt)` prints, without indentation (for error messages)."""
    if isinstance(stmt, Seq):
        return stmt_head(stmt.stmts[0]) if stmt.stmts else "pass"
    if isinstance(stmt, For):
        return f"for {stmt.var.name} in range({range_str(stmt)}):{_kind_comment(stmt)}"
    if isinstance(stmt, If):
        return f"if {expr_str(stmt.cond)}:"
    if isinstance(stmt, Store):
        indices = ", ".join(expr_str(i) for i in stmt.indices)
        return f"{element_name(stmt.buffer, stmt.indices)}[{indices}] = {expr_str(stmt.value)}"
    if isinstance(stmt, Let):
        return f"let {stmt.var.name} = {expr_str(stmt.value)}"
    if isinstance(stmt, Allocate):
        return _allocate_str(stmt.buffer)
    if isinstance(stmt, Barrier):
        among = f"first {stmt.among} threads" if stmt.among else ""
        return f"barrier({'warpgroup' if stmt.warpgroup else among})"
    if isinstance(stmt, SetRegisters):
        return f"set_registers({stmt.count}, {'more' if stmt.grow else 'fewer'})"
    if isinstance(stmt, Turn):
        when = "" if stmt.when is None else f" if {expr_str(stmt.when)}"
        return f"turn({'give' if stmt.give else 'take'}, of {stmt.warpgroups} warpgroups){when}"
    if isinstance(stmt, MatrixOp):
        return matrix_op_str(stmt)
    if isinstance(stmt, CallExtern):
        return _call_extern_str(stmt)
    if isinstance(stmt, AsyncCopy):
        dst = ", ".join(expr_str(i) for i in stmt.dst_index)
        src = ", ".join(expr_str(i) for i in stmt.src_index)
        lanes = f":+{stmt.lanes}" if stmt.lanes > 1 else ""
        when = "" if stmt.when is None else f" if {expr_str(stmt.when)} else zeros"
        return f"{stmt.dst.name}[{dst}{lanes}] = async_copy({stmt.src.name}[{src}{lanes}]){when}"
    if isinstance(stmt, BulkCopy):
        dst = ", ".join(expr_str(i) for i in stmt.dst_index)
        src = ", ".join(expr_str(i) for i in stmt.src_index)
        box = " x ".join(str(n) for n in stmt.shape)
        at = f"{stmt.barrier.name}[{expr_str(stmt.barrier_index)}]"
        return f"{stmt.dst.name}[{dst}] = bulk_copy({stmt.src.name}[{src}], box {box}) -> {at}"
    if isinstance(stmt, BulkStore):
        dst = ", ".join(expr_str(i) for i in stmt.dst_index)
        src = ", ".join(expr_str(i) for i in stmt.src_index)
        box = " x ".join(str(n) for n in stmt.shape)
        return f"{stmt.dst.name}[{dst}] = bulk_store({stmt.src.name}[{src}], box {box})"
    if isinstance(stmt, BulkWait):
        what = "reads" if stmt.read else "stores"
        return f"bulk_wait({what}, pending={stmt.pending})"
    if isinstance(stmt, MBarrier):
        at = f"{stmt.barrier.name}[{expr_str(stmt.index)}]"
        if stmt.op == "init":
            return f"mbarrier_init({at}, arrivals={stmt.count})"
        if stmt.op == "arrive":
            expect = f", expect_bytes={stmt.count}" if stmt.count else ""
            pending = f", products_pending={stmt.pending}" if stmt.pending else ""
            warp = ", once a warp" if stmt.per_warp else ""
            when = "" if stmt.when is None else f" if {expr_str(stmt.when)}"
            return f"mbarrier_arrive({at}{expect}{pending}{warp}){when}"
        return f"mbarrier_wait({at}, parity={expr_str(stmt.parity)})"
    if isinstance(stmt, AsyncCommit):
        return "async_commit()"
    if isinstance(stmt, AsyncWait):
        return f"async_wait(pending={stmt.pending})"
    if isinstance(stmt, ThreadAllReduce):
        outs = ", ".join(f"{b.name}[0]" for b in stmt.results)
        ins = ", ".join(f"{c.name}({b.name}[0])" for c, b in zip(stmt.combiners, stmt.sources))
        over = f"groups of {stmt.lanes} lanes" if stmt.lanes else ", ".join(stmt.tags)
        return f"{outs} = thread_allreduce({ins}) over {over}"
    return f"<{type(stmt).__name__}>"


def matrix_op_str(s: MatrixOp) -> str:
    """A tensor-core operation as one line: the tiles it reads and writes, with their shapes."""
    dst = tile_str(s.dst)
    if s.op == "fill":
        return f"{dst} = fill({expr_str(s.value)})"
    if s.op == "mma":
        a, b = (tile_str(t) for t in s.srcs)
        name = "wgmma" if s.dst.buffer.scope == "wgmma.accumulator" else "mma_sync"
        return f"{dst} += {name}({a} @ {b})"
    clipped = f" within {s.dst.buffer.name}" if s.clipped else ""
    by = ", by the copy engine" if s.bulk else ""
    return f"{dst} = {s.op}_matrix({tile_str(s.srcs[0])}{by}){clipped}"


def tile_str(t: Tile) -> str:
    """``A[i:+16, k:+16]``: the tile's base and extent along its two dimensions, its base
    elsewhere."""
    parts = [expr_str(i) for i in t.base]
    for d, n in zip(t.dims, t.shape):
        parts[d] = f"{parts[d]}:+{n}"
    return f"{t.buffer.name}[{', '.join(parts)}]"


def _emit(s: Stmt, depth: int, lines: list[str]) -> None:
    pad = _INDENT * depth
    if isinstance(s, Seq):
        if not s.stmts:
            lines.append(f"{pad}pass")
        for child in s.stmts:
            _emit(child, depth, lines)
    elif isinstance(s, If):
        _emit_if(s, depth, lines, "if")
    else:
        lines.append(f"{pad}{stmt_head(s)}")
        if isinstance(s, For):
            _emit(s.body, depth + 1, lines)
        elif isinstance(s, (Let, Allocate)):
            _emit(s.body, depth, lines)


def _emit_if(s: If, depth: int, lines: list[str], keyword: str) -> None:
    pad = _INDENT * depth
    lines.append(f"{pad}{keyword} {expr_str(s.cond)}:")
    _emit(s.then, depth + 1, lines)
    if s.otherwise is None:
        return
    if isinstance(s.otherwise, If):
        _emit_if(s.otherwise, depth, lines, "elif")
        return
    lines.append(f"{pad}else:")
    _emit(s.otherwise, depth + 1, lines)


def range_str(s: For) -> str:
    """The bounds of loop `s` as ``range(...)`` prints them: ``min, end``."""
    if isinstance(s.min, Const) and s.min.value == 0:
        return f"0, {expr_str(s.extent)}"
    end = simplify_expr(binary("+", s.min, s.extent))
    return f"{expr_str(s.min)}, {expr_str(end)}"


def _kind_comment(s: For) -> str:
    if s.kind == "serial":
        return ""
    if s.kind == "bound":
        return f"  # {s.thread}"
    return f"  # {s.kind}"


def _allocate_str(buffer: Buffer) -> str:
    text = f"allocate {buffer.name}: {type_str(buffer)} in {buffer.scope}"
    if buffer.strides is not None:
        text += f", strides=[{', '.join(expr_str(x) for x in buffer.strides)}]"
    if buffer.swizzle:
        text += f", swizzled {buffer.swizzle}"
    size = constant_bytes(buffer)
    if size is not None:
        text += f"  # {size} bytes"
    return text


def constant_bytes(buffer: Buffer) -> int | None:
    """Bytes the buffer occupies when its shape (and strides) are constants, else None.

    With strides, the footprint is the largest ``shape[d] * strides[d]`` (the padded rows of a
    row-major buffer from ``storage_align``).
    """
    shape = _ints(buffer.shape)
    if shape is None:
        return None
    if buffer.strides is None:
        count = 1
        for n in shape:
            count *= n
    else:
        strides = _ints(buffer.strides)
        if strides is None:
            return None
        count = max((n * s for n, s in zip(shape, strides)), default=1)
        if any(n == 0 for n in shape):
            count = 0
    return count * dt.itemsize(buffer.dtype)


def _ints(exprs: tuple[Expr, ...]) -> list[int] | None:
    values = []
    for e in exprs:
        if not isinstance(e, Const):
            return None
        values.append(int(e.value))
    return values


def _call_extern_str(stmt: CallExtern) -> str:
    """``gemv(&C[i, 0], 16)``; a packed call as ``call_packed("name", &A[0, 0], 3)``, each
    tile's address standing for the array it is handed (its strides left out)."""
    shown = [
        f"&{expr_str(a)}" if mode is not None else expr_str(a)
        for a, mode in zip(stmt.args, stmt.modes)
    ]
    if stmt.packed is None:
        return f"{stmt.name}({', '.join(shown)})"
    kept, at = [f'"{stmt.packed.func}"'], 0
    for spec in stmt.packed.arrays:
        kept.append(shown[at])
        at += 1 if spec is None else 1 + len(spec[0])
    return f"call_packed({', '.join(kept)})"
