"""Cutting a lowered function into CUDA kernels, and what each launch of one needs.

The loop IR is one function; a GPU runs kernels, and only the host orders one kernel after
another. So each top-level statement that contains loops bound to ``blockIdx``/``threadIdx``
becomes one kernel, launched in program order (CUDA orders launches on one stream, which is
the barrier between them that no block-level barrier provides). A function with thread loops
but no block loops is one block: all of it is one kernel, so its shared buffers and barriers
work across its statements. Global buffers allocated at top level, between kernels, are
temporaries the launcher allocates in device memory; everything a kernel reads or writes in
global memory is passed to it, together with every symbolic size.

A kernel's grid is given by its outermost ``blockIdx`` loops (their extents, functions of the
sizes, are evaluated at launch) and its block by the largest constant extent of the loops of
each ``threadIdx`` tag (`loopir.memory.barriers` assumes the same); its static shared memory counts
the scratch of its block collectives too (`nvptx.allreduce`). Stores that every thread would
run alike are narrowed to one thread by `nvptx.uniform`. A kernel with tensor-core operations
(`MatrixOp`, run by the 32 lanes of a warp together, lane = ``threadIdx.x``) must have blocks
exactly 32 threads wide and no such operation inside a loop bound to ``threadIdx.x``. The
roles of a pipeline of bulk copies get loops of their own in the kernel's body
(`bulk_pipeline.split_roles`), while the plan's function keeps them in step, as the
interpreter runs them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import LoweringError
from ...ir import dtype as dt
from ...ir.expr import Const, Expr, Var, const
from ...ir.printer import expr_str
from ...loopir.core.nodes import (
    FRAGMENT_SCOPES,
    Allocate,
    AsyncCommit,
    AsyncCopy,
    AsyncWait,
    Barrier,
    Buffer,
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
    Turn,
)
from ...loopir.core.printer import stmt_head
from ...loopir.core.visit import stmt_children, substitute_expr, walk_expr, walk_stmt
from ...loopir.gpu.register_handover import REGISTER_FILE, hand_over_registers, is_producer
from ...loopir.gpu.take_turns import take_turns
from ...loopir.loops.host_loops import host_loop
from ...loopir.loops.unswitch import unswitch_products
from ...loopir.memory.bulk_pipeline import split_roles
from ...loopir.memory.bulk_store import bulk_stores
from ...loopir.memory.fragments import lane_size
from ..llvm.storage import constant_count
from .allreduce_forms import scratch_sizes
from .bulk_copy import TensorMap, tensor_maps
from .shared_layout import BUFFER_ALIGN, SWIZZLE_ALIGN, SharedLayout, lay_out_shared
from .uniform import guard_uniform_stores

MAX_THREADS = 1024  # per block: every CUDA GPU since compute capability 2.0, OpenCL GPUs
BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
_KNOWN = (
    Seq,
    Store,
    For,
    If,
    Let,
    Allocate,
    Barrier,
    ThreadAllReduce,
    MatrixOp,
    AsyncCopy,
    AsyncCommit,
    AsyncWait,
    BulkCopy,
    MBarrier,
)
WARP = 32
WARPGROUP = 128
MAX_REGISTERS = 255  # a thread's most
ADDRESS_REGISTERS = 24  # what a warpgroup product's kernel needs beside its accumulators


@dataclass(frozen=True, eq=False)
class KernelPlan:
    """One kernel: its body, its launch shape and its shared memory."""

    name: str
    body: Stmt
    grid: tuple[Expr, Expr, Expr]  # extents over blockIdx.x/y/z, functions of the sizes
    block: tuple[int, int, int]
    grid_loops: frozenset[int]  # ids of the loops whose extent is the grid's (need no guard)
    shared: SharedLayout
    registers: int = 0  # a consumer thread's, where a producer hands its own over (else 0)

    @property
    def shared_bytes(self) -> int:
        """Shared memory per block, static or dynamic."""
        return self.shared.nbytes

    @property
    def dynamic_shared_bytes(self) -> int:
        """The dynamic shared memory a launch passes (0 when it is all static)."""
        return self.shared.nbytes if self.shared.dynamic else 0

    def block_size(self, tag: str) -> int:
        return self.block[THREAD_TAGS.index(tag)]

    def covers(self, loop: For) -> bool:
        """Whether a launch runs exactly `loop`'s iterations (its bound index needs no guard):
        a grid loop, or a thread loop as long as the block."""
        if id(loop) in self.grid_loops:
            return True
        if not (loop.thread or "").startswith("threadIdx") or not isinstance(loop.extent, Const):
            return False
        return int(loop.extent.value) == self.block_size(loop.thread)


@dataclass(frozen=True, eq=False)
class HostLoop:
    """A serial loop around kernels (a scan's steps, whose every step needs the one before
    finished on the whole grid): the host runs it, launching the kernels of `body` once per
    value of `var`, which they take as a parameter after the sizes."""

    var: Var
    min: Expr
    extent: Expr
    body: tuple[int | HostLoop, ...]  # kernel indices and loops, in launch order


@dataclass(frozen=True, eq=False)
class DevicePlan:
    """The kernels of `func` in launch order and the temporaries they share."""

    func: LoweredFunc
    temps: tuple[Buffer, ...]
    kernels: tuple[KernelPlan, ...]
    tensor_maps: tuple[TensorMap, ...] = ()  # the kernels' map parameters, after the sizes
    program: tuple[int | HostLoop, ...] = ()  # the launches, where host loops order them
    loop_vars: tuple[Var, ...] = ()  # the host loops' variables, in parameter order

    @property
    def buffers(self) -> tuple[Buffer, ...]:
        """The global buffers every kernel takes, in parameter order (then the sizes)."""
        return (*self.func.params, *self.temps)

    @property
    def sizes(self) -> tuple[Var, ...]:
        """The integer parameters every kernel takes: the sizes, then the host loops'
        variables."""
        return (*self.func.sizes, *self.loop_vars)


def plan_kernels(func: LoweredFunc) -> DevicePlan:
    """The kernels of `func`; a `LoweringError` for what cannot run on a GPU."""
    _check_statements(func)
    temps: list[Buffer] = []
    parts: list[Stmt | tuple[For, list]] = []
    _peel(func.body, temps, (), parts)
    if not any(isinstance(s, tuple) or _has_tags(s, BLOCK_TAGS) for s in parts):
        parts = [_seq(parts)] if parts else []
    bodies: list[Stmt] = []
    loops: list[Var] = []
    program = _program(func, parts, bodies, loops)
    base = re.sub(r"\W", "_", func.name)
    loop_vars = tuple(loops)
    kernels = tuple(
        _kernel(func, f"{base}_kernel{k}", body, loop_vars) for k, body in enumerate(bodies)
    )
    if func.turns and not any(isinstance(s, Turn) for k in kernels for s in walk_stmt(k.body)):
        raise LoweringError(
            f"{_turns_pragma(func)}: no kernel of '{func.name}' has a producer warpgroup whose "
            "consumers could take turns; stage the products' tiles with pipeline(..., "
            "tma=True) and a producer warpgroup (warp_specialize=True)"
        )
    maps = tensor_maps((*func.params, *temps), [k.body for k in kernels])
    return DevicePlan(func, tuple(temps), kernels, maps, program, loop_vars)


def _program(func: LoweredFunc, parts: list, bodies: list[Stmt], loops: list[Var]) -> tuple:
    """The launch order of `parts`: kernel indices (their bodies appended to `bodies`) and
    host loops (their variables to `loops`)."""
    program: list[int | HostLoop] = []
    for part in parts:
        if isinstance(part, tuple):
            loop, inner = part
            loops.append(loop.var)
            body = _program(func, inner, bodies, loops)
            program.append(HostLoop(loop.var, loop.min, loop.extent, body))
            continue
        if not _has_tags(part, BLOCK_TAGS + THREAD_TAGS):
            raise _unbound(func, part)
        program.append(len(bodies))
        bodies.append(part)
    return tuple(program)


def _check_statements(func: LoweredFunc) -> None:
    for s in walk_stmt(func.body):
        if not isinstance(s, _KNOWN):
            raise LoweringError(
                f"kernel '{func.name}': the cuda target cannot lower '{stmt_head(s)}' "
                f"({type(s).__name__})"
            )


def _peel(s: Stmt, temps: list[Buffer], lets: tuple[Let, ...], parts: list) -> None:
    """Top-level statements (global allocations become temps, lets are copied into each); a
    serial loop around block loops becomes ``(loop, its parts)``, a loop the host runs."""
    if isinstance(s, Seq):
        for child in s.stmts:
            _peel(child, temps, lets, parts)
    elif isinstance(s, Allocate) and s.buffer.scope == "global":
        temps.append(s.buffer)
        _peel(s.body, temps, lets, parts)
    elif isinstance(s, Let):
        _peel(s.body, temps, (*lets, s), parts)
    elif host_loop(s):
        inner: list = []
        _peel(s.body, temps, lets, inner)
        parts.append((s, inner))
    else:
        for let in reversed(lets):
            s = Let(let.var, let.value, s)
        parts.append(s)


def _seq(parts: list[Stmt]) -> Stmt:
    return parts[0] if len(parts) == 1 else Seq(tuple(parts))


def _has_tags(s: Stmt, tags: tuple[str, ...]) -> bool:
    return any(isinstance(n, For) and n.kind == "bound" and n.thread in tags for n in walk_stmt(s))


def _unbound(func: LoweredFunc, part: Stmt) -> LoweringError:
    stores = [n.buffer.name for n in walk_stmt(part) if isinstance(n, Store)]
    stage = f" (stage '{stores[0]}')" if stores else ""
    return LoweringError(
        f"kernel '{func.name}': '{stmt_head(part)}'{stage} runs outside every loop bound to "
        "blockIdx/threadIdx, so no GPU thread would run it; bind its loops to blockIdx/threadIdx "
        "(s[T].bind(outer, sl.thread_axis('blockIdx.x')), s[T].bind(inner, "
        "sl.thread_axis('threadIdx.x')))"
    )


def _on_chip_in_blocks(func: LoweredFunc, body: Stmt) -> None:
    """A LoweringError when a kernel with block loops allocates shared or local memory
    outside them: that happens when such a stage is computed at the root (with block loops
    of its own), and a block's shared memory (a thread's local memory) neither outlives it nor
    is seen by other blocks, so the stages outside its loops would read another's copy."""
    if not _has_tags(body, BLOCK_TAGS):
        return  # one block: its shared memory is everyone's
    stack = [body]
    while stack:
        s = stack.pop()
        if isinstance(s, For) and s.kind == "bound" and s.thread in BLOCK_TAGS:
            continue
        if isinstance(s, Allocate) and s.buffer.scope in ("shared", "local", *FRAGMENT_SCOPES):
            owner = "block" if s.buffer.scope == "shared" else "thread"
            raise LoweringError(
                f"kernel '{func.name}': the {s.buffer.scope} buffer '{s.buffer.name}' is used "
                f"outside the loops bound to blockIdx that would own it, but {s.buffer.scope} "
                f"memory lives only as long as its {owner}; compute its stage inside the loops "
                "its readers bind to blockIdx (s[cache].compute_at(s[reader], axis))"
            )
        stack.extend(stmt_children(s))


def _kernel(func: LoweredFunc, name: str, body: Stmt, loop_vars: tuple[Var, ...]) -> KernelPlan:
    _on_chip_in_blocks(func, body)
    # the kernel's alone: `func` stays as the interpreter runs it
    body = unswitch_products(split_roles(body))
    block = _block(func, body)
    body, reused = bulk_stores(body, shared_bytes(body), block)
    # only where the entry's share is too few (the kernels that fit keep their code), and
    # every product fits it: ptxas compiles each instruction under the entry's count, whatever
    # setmaxnreg gives the code around it ("Insufficient registers (128)" for a 64 x 256 tile
    # of a block of four warpgroups)
    registers, entry = 0, _entry_registers(block)
    fits = _largest_product(body) + ADDRESS_REGISTERS <= entry
    short = entry < _peak_accumulators(body) + ADDRESS_REGISTERS
    if func.turns or (fits and short):
        body, registers = hand_over_registers(body, block)
    if func.turns and any(is_producer(s) for s in walk_stmt(body)):
        body = take_turns(body, _turns_pragma(func))  # on the parted roles (or refused)
    _check_matrix_ops(func, body, block)
    _check_accumulator_registers(func, body, block, registers)
    guarded = guard_uniform_stores(body, block)
    # The grid's loops are those of the final body: the code generator finds them by identity.
    grid, grid_loops = _grid(func, guarded, loop_vars)
    shared = _shared_layout(func, name, guarded, block, reused)
    return KernelPlan(name, guarded, grid, block, grid_loops, shared, registers)


def _turns_pragma(func: LoweredFunc) -> str:
    axis, stage = func.turns[0]
    return f"pragma({axis}, 'take_turns') of stage '{stage}'"


def _block(func: LoweredFunc, body: Stmt) -> tuple[int, int, int]:
    sizes = dict.fromkeys(THREAD_TAGS, 1)
    for s in walk_stmt(body):
        if not (isinstance(s, For) and s.kind == "bound" and s.thread in THREAD_TAGS):
            continue
        if not isinstance(s.extent, Const):
            raise LoweringError(
                f"kernel '{func.name}': loop {s.var.name} is bound to {s.thread} with the "
                f"symbolic extent {expr_str(s.extent)}; a block has a fixed number of threads, "
                "so split the axis by a constant factor and bind the inner loop"
            )
        sizes[s.thread] = max(sizes[s.thread], int(s.extent.value))
    block = (sizes["threadIdx.x"], sizes["threadIdx.y"], sizes["threadIdx.z"])
    threads = block[0] * block[1] * block[2]
    if threads > MAX_THREADS:  # the launch checks the device's own limits
        raise LoweringError(
            f"kernel '{func.name}': a block of {block} is {threads} threads, but a block runs "
            f"at most {MAX_THREADS} (on every CUDA GPU, and in an OpenCL GPU's work-group); "
            "split the loops bound to threadIdx by smaller factors"
        )
    return block


def _check_matrix_ops(func: LoweredFunc, body: Stmt, block: tuple[int, int, int]) -> None:
    """A LoweringError when the kernel's tensor-core operations cannot run as warps: each
    lane of a warp is one ``threadIdx.x``, so the block must be 32 threads wide, and an op is
    run once by the whole warp, so it must not stand inside a loop over ``threadIdx.x``."""
    stack: list[tuple[Stmt, For | None, For | None]] = [(body, None, None)]
    found = group = None
    while stack:
        s, lane_loop, warp_loop = stack.pop()
        if isinstance(s, MatrixOp):
            found = s
            if lane_loop is not None:
                raise LoweringError(
                    f"kernel '{func.name}': the tensor-core operation '{stmt_head(s)}' stands "
                    f"inside loop {lane_loop.var.name}, bound to threadIdx.x; a warp's 32 "
                    "threads run it together, so it must run outside the loops over threadIdx.x"
                )
        if isinstance(s, MatrixOp) and _warpgroup(s) and warp_loop is not None:
            raise LoweringError(
                f"kernel '{func.name}': the warpgroup's operation '{stmt_head(s)}' stands "
                f"inside loop {warp_loop.var.name}, bound to threadIdx.y; the 4 warps of "
                "threadIdx.y run it together, so it must run outside the loops over threadIdx.y"
            )
        if isinstance(s, MatrixOp) and _warpgroup(s):
            group = s
        if isinstance(s, For) and s.kind == "bound" and s.thread == "threadIdx.x":
            lane_loop = s
        if isinstance(s, For) and s.kind == "bound" and s.thread == "threadIdx.y":
            warp_loop = s
        stack.extend((kid, lane_loop, warp_loop) for kid in stmt_children(s))
    if found is not None and block[0] != WARP:
        raise LoweringError(
            f"kernel '{func.name}': its tensor-core operations ('{stmt_head(found)}') are run "
            f"by warps, one lane per threadIdx.x, but its block is {block[0]} threads wide in x; "
            f"bind a loop of extent {WARP} to threadIdx.x (and the warps of a block to "
            "threadIdx.y/z)"
        )
    if group is not None and block[1] != WARPGROUP // WARP:
        raise LoweringError(
            f"kernel '{func.name}': its warpgroup operations ('{stmt_head(group)}') are run by "
            f"the {WARPGROUP // WARP} warps of threadIdx.y together, but its block is "
            f"{block[1]} threads in y; bind a loop of extent 4 to threadIdx.y (and warpgroups "
            "to threadIdx.z)"
        )


def _check_accumulator_registers(
    func: LoweredFunc, body: Stmt, block: tuple[int, int, int], handed: int
) -> None:
    """A LoweringError when the warpgroup accumulators a thread holds leave too few of the
    registers its block's size allows (or the producer hands over: `handed`) for anything
    else (ptxas would refuse the kernel when it is loaded, with a message that names no
    schedule)."""
    held = _peak_accumulators(body)
    threads = block[0] * block[1] * block[2]
    budget = handed or _entry_registers(block)
    handing = ", the producer's handed over" if handed else ""
    if held and held + ADDRESS_REGISTERS > budget:
        raise LoweringError(
            f"kernel '{func.name}': each thread holds {held} registers of warpgroup "
            f"accumulators, but a block of {threads} threads leaves {budget} registers a thread "
            f"({REGISTER_FILE} a multiprocessor{handing}), too few for them and the rest of the "
            "work; "
            "use fewer or narrower warpgroup tiles (pipeline(tma=True) adds a warpgroup for its "
            "producer)"
        )


def _entry_registers(block: tuple[int, int, int]) -> int:
    """A thread's registers when every thread of the block has the same share."""
    return min(MAX_REGISTERS, REGISTER_FILE // (block[0] * block[1] * block[2]) // 8 * 8)


def _largest_product(s: Stmt) -> int:
    """The registers of the largest accumulator one warpgroup product writes."""
    return max(
        (
            _registers(n.dst.buffer)
            for n in walk_stmt(s)
            if isinstance(n, MatrixOp) and n.dst.buffer.scope == "wgmma.accumulator"
        ),
        default=0,
    )


def _registers(buffer: Buffer) -> int:
    """A thread's registers of accumulator `buffer`, 16-bit elements two to a register."""
    return -(-lane_size(buffer) * dt.itemsize(buffer.dtype) // 4)


def _peak_accumulators(s: Stmt) -> int:
    """The most registers of warpgroup accumulators a thread holds at once: those allocated
    around a point, 16-bit elements two to a register (a step's scores and probabilities are
    allocated per step, beside the running output)."""
    if isinstance(s, Allocate):
        own = 0
        if s.buffer.scope == "wgmma.accumulator":
            own = _registers(s.buffer)
        return own + _peak_accumulators(s.body)
    return max((_peak_accumulators(k) for k in stmt_children(s)), default=0)


def _warpgroup(s: MatrixOp) -> bool:
    return any(t.buffer.scope == "wgmma.accumulator" for t in (s.dst, *s.srcs))


def _grid(
    func: LoweredFunc, body: Stmt, loop_vars: tuple[Var, ...]
) -> tuple[tuple[Expr, Expr, Expr], frozenset[int]]:
    found: dict[str, tuple[For, Expr]] = {}
    _block_loops(func, body, {}, None, found)
    sizes = set(func.sizes) | set(loop_vars)
    extents = []
    for tag in BLOCK_TAGS:
        if tag not in found:
            extents.append(const(1, "int64"))
            continue
        loop, extent = found[tag]
        free = [n for n in walk_expr(extent) if isinstance(n, Var) and n not in sizes]
        if free:
            raise LoweringError(
                f"kernel '{func.name}': loop {loop.var.name} is bound to {tag} with the extent "
                f"{expr_str(loop.extent)}, which depends on {free[0].name}; the grid must be "
                "known at launch, so bind loops whose extents depend only on the sizes"
            )
        extents.append(extent)
    grid_loops = frozenset(id(loop) for loop, _ in found.values())
    return (extents[0], extents[1], extents[2]), grid_loops


def _block_loops(
    func: LoweredFunc,
    s: Stmt,
    lets: dict[Var, Expr],
    inside: For | None,
    found: dict[str, tuple[For, Expr]],
) -> None:
    """The outermost loop of each blockIdx tag, with its extent (lets substituted)."""
    if isinstance(s, For) and s.kind == "bound" and s.thread in BLOCK_TAGS:
        if inside is not None:
            raise LoweringError(
                f"kernel '{func.name}': loop {s.var.name} is bound to {s.thread} but runs inside "
                f"loop {inside.var.name}; loops bound to blockIdx must enclose all other loops "
                "(reorder them outermost)"
            )
        if s.thread in found:
            raise LoweringError(
                f"kernel '{func.name}': loops {found[s.thread][0].var.name} and {s.var.name} "
                f"are both bound to {s.thread} in one kernel; bind the loops of separate "
                "stages at the top level (compute_root), so that each becomes its own kernel"
            )
        found[s.thread] = (s, substitute_expr(s.extent, lets))
        _block_loops(func, s.body, lets, None, found)
        return
    if isinstance(s, For):
        inside = s
    if isinstance(s, Let):
        lets = {**lets, s.var: substitute_expr(s.value, lets)}
    for child in stmt_children(s):
        _block_loops(func, child, lets, inside, found)


def shared_bytes(body: Stmt) -> int:
    """The shared memory of `body`'s constant-sized buffers, each at a swizzle's alignment (an
    upper bound of their layout's size)."""
    total = 0
    for s in walk_stmt(body):
        if isinstance(s, Allocate) and s.buffer.scope == "shared":
            nbytes = (constant_count(s.buffer) or 0) * dt.itemsize(s.buffer.dtype)
            total += -(-nbytes // SWIZZLE_ALIGN) * SWIZZLE_ALIGN
    return total


def _shared_layout(
    func: LoweredFunc,
    name: str,
    body: Stmt,
    block: tuple[int, int, int],
    reused: tuple[Buffer, Buffer] | None = None,
) -> SharedLayout:
    """The regions of the shared buffers and of the scratch of the block collectives;
    `reused`, ``(buffer, earlier)``: the buffer laid in the earlier one's region
    (`shared_reuse`)."""
    owners: list[tuple[object, tuple[int, ...]]] = []
    loose: set[int] = set()  # regions that need no swizzle's alignment
    swizzled = False
    for s in walk_stmt(body):
        if isinstance(s, ThreadAllReduce):
            owners.append((s, scratch_sizes(s, block)))
            loose.add(id(s))
        if not isinstance(s, Allocate):
            continue
        if s.buffer.scope == "global":
            raise LoweringError(
                f"kernel '{func.name}': the global buffer '{s.buffer.name}' is allocated inside "
                "a kernel, where each block would need its own copy; give it shared or local "
                f"scope (s[{s.buffer.name}].set_scope('shared')) or compute it at the root"
            )
        count = constant_count(s.buffer)
        if count is None:
            shape = ", ".join(expr_str(e) for e in s.buffer.shape)
            raise LoweringError(
                f"kernel '{func.name}': the {s.buffer.scope} buffer '{s.buffer.name}' has the "
                f"symbolic shape [{shape}]; GPU {s.buffer.scope} memory needs a constant size, "
                "so compute it at a loop inside a tile of constant size (split by a factor)"
            )
        if s.buffer.scope == "shared":
            nbytes = count * dt.itemsize(s.buffer.dtype)
            owners.append((s, (nbytes,)))
            swizzled |= bool(s.buffer.swizzle)
            if not s.buffer.swizzle and nbytes < SWIZZLE_ALIGN:
                loose.add(id(s))
    align = SWIZZLE_ALIGN if swizzled else BUFFER_ALIGN
    within = {}
    if reused is not None:
        allocations = {id(o.buffer): o for o, _ in owners if isinstance(o, Allocate)}
        later, earlier = (allocations[id(b)] for b in reused)
        within[id(later)] = id(earlier)
    return lay_out_shared(name, owners, align, frozenset(loose), within)
