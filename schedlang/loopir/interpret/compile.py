"""Translation of a lowered function into Python source for `schedlang.loopir.interpret`.

Code outside thread loops is plain Python over numpy scalars: ``for`` loops over ``np.arange``
values, stores of global and local buffers inline (expressions: `interpret.expr`). Code inside
loops bound to ``threadIdx.*`` keeps a mask variable of active threads; there values may be
arrays over the threads, and stores, loops over thread-dependent bounds and guards go through
the `Runtime`, which applies the mask and tracks races; block and warp collectives
(``ThreadAllReduce``, ``MatrixOp``: `interpret.matrix`) are runtime calls too, and so are the
asynchronous copies (`interpret.asynccopy`), whose per-thread queues are checked empty at the
end of every block (each iteration of an innermost ``blockIdx`` loop, each kernel, the
function). Every generated line remembers the loop-IR statement it came from, for error
messages. Python allows 20 nested blocks per function, so deep nests are cut into nested
functions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...errors import InternalError
from ...ir.expr import Const, Expr, Var, const
from ...ir.printer import expr_str
from ..core.nodes import (
    FRAGMENT_SCOPES,
    LOOP_KINDS,
    THREAD_TAGS,
    Allocate,
    AsyncCommit,
    AsyncCopy,
    AsyncWait,
    Barrier,
    BulkCopy,
    For,
    If,
    Let,
    LoweredFunc,
    MatrixOp,
    MBarrier,
    Seq,
    Stmt,
    Store,
    ThreadAllReduce,
)
from ..core.printer import stmt_head
from ..core.visit import walk_expr, walk_stmt
from ..loops.host_loops import host_loop
from ..memory.fragments import lane_size, tile_offset
from . import asynccopy, mbarrier
from .expr import ExprCompiler, Scoped, tuple_code
from .matrix import execute, matrix_spec

_MAX_DEPTH = 15


@dataclass(frozen=True)
class Compiled:
    kernel: Callable
    source: str
    free_vars: tuple[Var, ...]
    threaded: bool
    origins: tuple[str, ...]  # per source line (from 1), the loop-IR statement it runs
    filename: str

    def origin(self, line: int) -> str:
        return self.origins[line - 1] if 0 < line <= len(self.origins) else ""


def compile_func(func: LoweredFunc) -> Compiled:
    """`func` as a Python function ``kernel(runtime, arrays, size_values)``."""
    return _Compiler(func).build()


class _Compiler(ExprCompiler):
    """Statements to Python lines; expressions come from `ExprCompiler`."""

    def __init__(self, func: LoweredFunc) -> None:
        super().__init__(func)
        self.lines: list[str] = []
        self.origins: list[str] = []  # per line, the head of the statement it runs
        self.here = ""
        self.depth = 0  # nested for-blocks in the current Python function

    def emit(self, line: str) -> None:
        self.lines.append(line)
        self.origins.append(self.here)

    # -- build ----------------------------------------------------------------------------
    def build(self) -> Compiled:
        self.depth = 0
        self.kernels = _kernels(self.func.body) if self.threaded else set()
        self.copies = any(isinstance(n, _ASYNC) for n in walk_stmt(self.func.body))
        self.bulk = any(isinstance(n, (BulkCopy, MBarrier)) for n in walk_stmt(self.func.body))
        self.stmt(self.func.body, "    ", None)
        if not self.kernels:  # else each kernel checks its own end
            self.block_end("    ", "the end of the function")
        body, body_origins = self.lines, self.origins
        self.lines, self.origins, self.here = [], [], ""
        self.preamble()
        head = self.lines
        src = "\n".join(["def _kernel(_rt, _arrays, _sizes):", *head, *body, ""])
        origins = ("", *self.origins, *body_origins)
        try:
            code = compile(src, self.filename, "exec")
        except SyntaxError as err:  # pragma: no cover - a bug of this file
            raise InternalError(f"the interpreter generated invalid Python: {err}") from err
        exec(code, self.ns)
        kernel = self.ns["_kernel"]
        return Compiled(kernel, src, tuple(self.free), self.threaded, origins, self.filename)

    def preamble(self) -> None:
        emit = self.emit
        for k, v in enumerate(self.free):
            emit(f"    {self.name(v)} = _sizes[{k}]")
        methods = ("load", "store", "barrier", "allreduce", "enter", "narrow", "narrow_not", "loop")
        for method in methods:
            emit(f"    _{method} = _rt.{method}")
        emit("    _sel = _rt.select")
        emit("    _oob = _rt.out_of_bounds")
        emit("    _alloc = _rt.alloc")
        for k, buffer in enumerate(self.func.params):
            if buffer.scope in FRAGMENT_SCOPES:
                raise InternalError(f"parameter '{buffer.name}' is a fragment ({buffer.scope})")
            b = self.name(buffer)
            emit(f"    {b} = _Mem({buffer.name!r}, {buffer.scope!r}, _arrays[{k}], False)")
            emit(f"    {b}_a = {b}.array")
        if self.threaded:
            emit(f"    {self.setup_threads(self.extents)}")

    def setup_threads(self, extents: dict[str, list[Expr]]) -> str:
        """The call laying out a block whose loops bound to each threadIdx tag have
        `extents`: as many threads as the largest."""
        threads = []
        for tag in ("threadIdx.x", "threadIdx.y", "threadIdx.z"):
            sizes = [self.size_expr(e, tag) for e in extents.get(tag, [])]
            threads.append(f"max(1, {', '.join(f'int({x})' for x in sizes)})" if sizes else "1")
        return f"_rt.setup_threads({', '.join(threads)}, {tuple(sorted(extents))!r})"

    def size_expr(self, e: Expr, tag: str) -> str:
        for node in walk_expr(e):
            if isinstance(node, Var) and node in self.binders:
                raise InternalError(
                    f"the extent {expr_str(e)} of a loop bound to {tag} depends on the loop or "
                    f"let variable '{node.name}'; thread extents must be fixed per launch"
                )
        return self.expr(e, None)

    # -- statements -----------------------------------------------------------------------
    def stmt(self, s: Stmt, ind: str, mask: str | None) -> None:
        start = len(self.lines)
        self.stmt_inner(s, ind, mask)
        if len(self.lines) == start:
            self.emit(f"{ind}pass")

    def stmt_inner(self, s: Stmt, ind: str, mask: str | None) -> None:
        emit = self.emit
        if id(s) in self.kernels:
            emit(f"{ind}{self.setup_threads(_thread_extents(s))}")
        if not isinstance(s, Seq):
            self.here = stmt_head(s)
        if isinstance(s, Seq):
            for child in s.stmts:
                self.stmt_inner(child, ind, mask)
        elif isinstance(s, For):
            self.for_(s, ind, mask)
        elif isinstance(s, If):
            self.if_(s, ind, mask)
        elif isinstance(s, Store):
            self.store(s, ind, mask)
        elif isinstance(s, Let):
            emit(f"{ind}{self.name(s.var)} = {self.expr(s.value, mask)}")
            with self.binding(s.var, s.value):
                self.stmt_inner(s.body, ind, mask)
        elif isinstance(s, Allocate):
            self.allocate(s, ind, mask)
        elif isinstance(s, Barrier):
            emit(f"{ind}_barrier({mask})")
        elif isinstance(s, ThreadAllReduce):
            self.allreduce(s, ind, mask)
        elif isinstance(s, MatrixOp):
            self.matrix_op(s, ind, mask)
        elif isinstance(s, _ASYNC):
            self.async_stmt(s, ind, mask)
        elif isinstance(s, (BulkCopy, MBarrier)):
            self.bulk_stmt(s, ind, mask)
        else:
            raise InternalError(f"the interpreter cannot run a {type(s).__name__} statement")
        if id(s) in self.kernels:
            self.block_end(ind, f"the end of the kernel {stmt_head(s)}")

    def block_end(self, ind: str, where: str) -> None:
        """The check that no async copy is still in flight where a block ends (and the reset
        of the threads' copy state for the next block)."""
        if self.copies:
            self.here = where
            self.emit(f"{ind}{self.constant(asynccopy.finish, 'async_finish')}(_rt)")
        if self.bulk:
            self.here = where
            self.emit(f"{ind}{self.constant(mbarrier.finish, 'bulk_finish')}(_rt)")

    def for_(self, s: For, ind: str, mask: str | None) -> None:
        if self.depth >= _MAX_DEPTH:
            fn = self.fresh("_f")
            self.emit(f"{ind}def {fn}():")
            saved, self.depth = self.depth, 0
            self.for_(s, ind + "    ", mask)
            self.depth = saved
            self.emit(f"{ind}{fn}()")
            return
        v = self.name(s.var)
        lo, extent = self.expr(s.min, mask), self.expr(s.extent, mask)
        d = self.np_dtype(s.var.dtype)
        if s.kind == "bound" and s.thread not in THREAD_TAGS:
            raise InternalError(f"loop '{s.var.name}' is bound to the unknown tag {s.thread!r}")
        if s.kind not in LOOP_KINDS:
            raise InternalError(f"loop '{s.var.name}' has the unknown kind {s.kind!r}")
        thread = s.kind == "bound" and s.thread.startswith("threadIdx")
        inner_mask = mask
        if thread:
            # Every loop bound to a tag is the same hardware index, nested loops included: the
            # loop only narrows the mask to the threads below its extent.
            if not (isinstance(s.min, Const) and s.min.value == 0):
                raise InternalError(f"the loop bound to {s.thread} must start at 0")
            inner_mask = self.fresh("_m")
            enter = f"_enter({mask}, {s.thread!r}, {extent}, {d})"
            self.emit(f"{ind}{v}, {inner_mask} = {enter}")
            self.emit(f"{ind}if {inner_mask} is not None:")
        elif mask is None:
            self.emit(f"{ind}for {v} in _arange({lo}, {extent}, {d}):")
        elif s.kind == "bound":
            raise InternalError(f"a loop bound to {s.thread} inside a loop bound to threadIdx")
        else:
            inner_mask = self.fresh("_m")
            self.emit(f"{ind}for {v}, {inner_mask} in _loop({mask}, {lo}, {extent}, {d}):")
        self.depth += 1
        with self.binding(s.var, s.min):
            self.stmt(s.body, ind + "    ", inner_mask)
        self.depth -= 1
        if self.copies and _innermost_block_loop(s):
            self.block_end(ind + "    ", f"the end of a block of {stmt_head(s)}")

    def if_(self, s: If, ind: str, mask: str | None) -> None:
        self.check_dtype(s.cond, "bool", "the condition of an if")
        cond = self.expr(s.cond, mask)
        if mask is None:
            self.emit(f"{ind}if {cond}:")
            self.stmt(s.then, ind + "    ", None)
            if s.otherwise is not None:
                self.emit(f"{ind}else:")
                self.stmt(s.otherwise, ind + "    ", None)
            return
        c = self.fresh("_c")
        self.emit(f"{ind}{c} = {cond}")
        for branch, narrow in ((s.then, "_narrow"), (s.otherwise, "_narrow_not")):
            if branch is None:
                continue
            m = self.fresh("_m")
            self.emit(f"{ind}{m} = {narrow}({mask}, {c})")
            self.emit(f"{ind}if {m} is not None:")
            self.stmt(branch, ind + "    ", m)

    def allreduce(self, s: ThreadAllReduce, ind: str, mask: str | None) -> None:
        if mask is not None and not s.lanes:
            raise InternalError("thread_allreduce under a thread loop: not every thread reaches it")
        for b in (*s.sources, *s.results):
            self.buffer(b, (const(0),), "thread_allreduce of")
        combiners = self.constant(s.combiners, f"combiners{id(s)}")
        sources = ", ".join(self.name(b) for b in s.sources)
        results = ", ".join(self.name(b) for b in s.results)
        emit = self.emit
        tags = f"{s.tags!r}, {mask}, {s.lanes}" if s.lanes else f"{s.tags!r}"
        emit(f"{ind}_allreduce({combiners}, ({sources},), ({results},), {tags})")

    def matrix_op(self, s: MatrixOp, ind: str, mask: str | None) -> None:
        """A warp collective, like `allreduce` a call into the runtime (`interpret.matrix`):
        the tiles' buffers, base values and, for fragments, where the tile sits in each lane's
        storage (`fragments.tile_offset`, the same expression the code generator uses)."""
        spec = matrix_spec(s)
        tiles = []
        for tile in (s.dst, *s.srcs):
            b = self.buffer(tile.buffer, tile.base, f"{spec.head} on", matrix=True)
            base = tuple_code([self.expr(i, mask) for i in tile.base])
            offset = "None"
            if tile.buffer.scope in FRAGMENT_SCOPES:
                offset = self.expr(tile_offset(tile.buffer, tile.shape, tile.base), mask)
            tiles.append(f"({b}, ({base}), {offset})")
        value = "None"
        if s.value is not None:
            self.check_dtype(s.value, s.dst.buffer.dtype, f"the value of {spec.head}")
            value = self.expr(s.value, mask)
        k = self.constant(spec, self.fresh("matrix"))
        run = self.constant(execute, "matrix_op")
        self.emit(f"{ind}{run}(_rt, {k}, {mask}, ({tuple_code(tiles)}), {value})")

    def async_stmt(self, s: Stmt, ind: str, mask: str | None) -> None:
        """`AsyncCopy`, `AsyncCommit`, `AsyncWait`: runtime calls (`interpret.asynccopy`) with
        the indices and, where the buffer has them, the strides the alignment is checked in."""
        head = stmt_head(s)
        if isinstance(s, AsyncCommit):
            commit = self.constant(asynccopy.commit, "async_commit")
            self.emit(f"{ind}{commit}(_rt, {mask})")
            return
        if isinstance(s, AsyncWait):
            if not isinstance(s.pending, int) or s.pending < 0:
                raise InternalError(f"{head}: pending must be a non-negative int")
            wait = self.constant(asynccopy.wait, "async_wait")
            self.emit(f"{ind}{wait}(_rt, {mask}, {s.pending})")
            return
        asynccopy.check_copy(s.dst, s.src, s.lanes, head)
        args = []
        for buffer, index, what in ((s.dst, s.dst_index, "to"), (s.src, s.src_index, "from")):
            b = self.buffer(buffer, index, f"async copy {what}")
            indices = tuple_code([self.expr(i, mask) for i in index])
            strides = "None"
            if buffer.strides is not None:
                strides = f"({tuple_code([self.expr(x, mask) for x in buffer.strides])})"
            args.append(f"{b}, ({indices}), {strides}")
        issue = self.constant(asynccopy.issue, "async_issue")
        when = "None" if s.when is None else self.expr(s.when, mask)
        self.emit(f"{ind}{issue}(_rt, {mask}, {args[0]}, {args[1]}, {s.lanes}, {when})")

    def bulk_stmt(self, s: Stmt, ind: str, mask: str | None) -> None:
        """`BulkCopy`, `MBarrier`: runtime calls (`interpret.mbarrier`)."""
        head = stmt_head(s)
        at_index = s.barrier_index if isinstance(s, BulkCopy) else s.index
        bar = self.buffer(s.barrier, (at_index,), f"{head} on")
        if isinstance(s, BulkCopy):
            at = self.expr(s.barrier_index, mask)
            dst = self.buffer(s.dst, s.dst_index, "bulk copy to")
            src = self.buffer(s.src, s.src_index, "bulk copy from")
            dst_idx = tuple_code([self.expr(i, mask) for i in s.dst_index])
            src_idx = tuple_code([self.expr(i, mask) for i in s.src_index])
            issue = self.constant(mbarrier.issue, "bulk_issue")
            args = f"{dst}, ({dst_idx}), {src}, ({src_idx}), {s.shape!r}, {bar}, {at}, {head!r}"
            self.emit(f"{ind}{issue}(_rt, {mask}, {args})")
            return
        at = self.expr(s.index, mask)
        if s.op == "init":
            run = self.constant(mbarrier.init, "mbarrier_init")
            self.emit(f"{ind}{run}(_rt, {mask}, {bar}, {at}, {s.count}, {head!r})")
        elif s.op == "arrive":
            run = self.constant(mbarrier.arrive, "mbarrier_arrive")
            when = "True" if s.when is None else self.expr(s.when, mask)
            args = f"{bar}, {at}, {s.count}, {when}, {head!r}, {s.per_warp}"
            self.emit(f"{ind}{run}(_rt, {mask}, {args})")
        elif s.op == "wait":
            run = self.constant(mbarrier.wait, "mbarrier_wait")
            parity = self.expr(s.parity, mask)
            self.emit(f"{ind}{run}(_rt, {mask}, {bar}, {at}, {parity}, {head!r})")
        else:
            raise InternalError(f"{head}: unknown memory-barrier operation {s.op!r}")

    def allocate(self, s: Allocate, ind: str, mask: str | None) -> None:
        buffer = s.buffer
        if buffer.scope in FRAGMENT_SCOPES:
            # Per thread, like local memory, but flat: each lane's share of the warp's tiles.
            shape = f"{lane_size(buffer)}, "
        elif buffer.scope in ("global", "shared", "local"):
            shape = "".join(f"{self.expr(n, mask)}, " for n in buffer.shape)
        else:
            raise InternalError(f"buffer '{buffer.name}' has the unknown scope {buffer.scope!r}")
        b = self.name(buffer)
        args = f"{buffer.name!r}, {buffer.scope!r}, {buffer.dtype!r}, ({shape})"
        self.emit(f"{ind}{b} = _alloc({args})")
        self.emit(f"{ind}{b}_a = {b}.array")
        with Scoped(self.live, buffer):
            self.stmt_inner(s.body, ind, mask)

    def store(self, s: Store, ind: str, mask: str | None) -> None:
        b = self.buffer(s.buffer, s.indices, "store to")
        self.check_dtype(s.value, s.buffer.dtype, f"the value stored to '{s.buffer.name}'")
        value = self.expr(s.value, mask)
        indices = [self.expr(i, mask) for i in s.indices]
        if mask is not None or s.buffer.scope == "shared":
            self.emit(f"{ind}_store({b}, {mask}, {value}, ({tuple_code(indices)}))")
            return
        items = self.checked(s.indices, indices)
        for t, i in items.items():
            self.emit(f"{ind}{t} = {i}")
        final = [t if t in items else i for t, i in zip(self.temp_names, indices)]
        if items:
            self.emit(f"{ind}if ({' | '.join(items)}) < 0: _oob({b}, ({tuple_code(final)}))")
        where = ("slice(None), " if self.lanes(s.buffer) else "") + tuple_code(final)
        self.emit(f"{ind}{b}_a[{where or '()'}] = {value}")


_ASYNC = (AsyncCopy, AsyncCommit, AsyncWait)


def _block_loop(s: Stmt) -> bool:
    return isinstance(s, For) and s.kind == "bound" and str(s.thread).startswith("blockIdx")


def _innermost_block_loop(s: For) -> bool:
    """Whether an iteration of `s` is one block: a loop bound to blockIdx with none inside."""
    return _block_loop(s) and not any(_block_loop(n) for n in walk_stmt(s.body))


def _kernels(body: Stmt) -> set[int]:
    """The ids of the statements that the GPU target launches as kernels of their own, each
    with its own block shape: the top-level statements (through sequences, global
    allocations, lets and host loops), where some of them have loops bound to blockIdx;
    without any, the whole function is one block."""
    parts: list[Stmt] = []
    pending = [body]
    while pending:
        s = pending.pop()
        if isinstance(s, Seq):
            pending.extend(reversed(s.stmts))
        elif isinstance(s, Allocate) and s.buffer.scope == "global" or isinstance(s, Let):
            pending.append(s.body)
        elif host_loop(s):  # the host runs it, launching the kernels in it
            pending.append(s.body)
        else:
            parts.append(s)
    blocks = any(
        isinstance(n, For) and n.kind == "bound" and str(n.thread).startswith("blockIdx")
        for part in parts
        for n in walk_stmt(part)
    )
    return {id(part) for part in parts} if blocks else set()


def _thread_extents(s: Stmt) -> dict[str, list[Expr]]:
    extents: dict[str, list[Expr]] = {}
    for n in walk_stmt(s):
        if isinstance(n, For) and n.kind == "bound" and str(n.thread).startswith("threadIdx"):
            extents.setdefault(n.thread, []).append(n.extent)
    return extents
