"""A warpgroup's matrix product on Hopper: ``wgmma.mma_async`` (sm_90a), operands in shared memory.

LLVM has no intrinsic for the product (only for its fences), so it is inline PTX, as MLIR's
NVVM dialect emits it: the accumulator's 64 x n tile is ``n / 2`` float registers per thread
(`fragments`: warp ``w`` of the group holds rows ``16 w ..``), tied in and out of the
instruction, and A and B are *matrix descriptors*: 64-bit words that give the hardware the
shared address of the tile and how its 128-byte swizzled rows are laid out.

A shared buffer swizzled by 128 bytes (`Buffer`) keeps its rows in panels 128 bytes wide, each
panel's rows contiguous, and permutes each row's 16-byte chunks by the row's index modulo 8;
the hardware applies that permutation to the absolute address, so the buffer starts at a
multiple of 1024 bytes (`shared_layout.lay_out_shared`) and the descriptor carries the unpermuted
address. Along a tile's K dimension:

- contiguous (K-major): the tile's rows are the buffer's rows, 128 bytes apart, 8 of them (a
  1024-byte swizzle atom) a stride apart (SBO, 1024); K moves within a row, so K's 32 bytes (16
  halves, or 32 8-bit floats) must start at a multiple of 32 bytes (one step of the row); the
  instruction reads 8-bit operands this way only, and takes no ``imm-trans`` for them;
- not contiguous (MN-major, ``imm-trans`` 1): M or N runs along the rows, a panel of 64
  elements at a time; panels are LBO apart (a panel's size), K's rows 128 bytes apart, each 8
  SBO (1024) apart; the tile starts at a panel and at a multiple of 8 rows.

Where these cannot be proven from the tile's indices, the kernel is refused (`LoweringError`)
rather than run on a misread tile.

The instruction runs in the background: `WgmmaOrder` issues ``wgmma.fence`` before the first
product of a run (other instructions wrote its registers; before a loop of nothing but products,
once), with the registers of an A operand held in registers made before it
(`mma.operand_registers`: one written between the fence and a product that reads it makes ptxas
fence that product again, C7519), commits each run of products as one group, and waits before
any other statement and at the end of every loop body that does anything else, so that neither
the accumulator registers nor the shared tiles are touched while a product reads or writes them
(letting a group run on across the next step's copies, into another stage, was measured no
faster). A statement that touches registers only, none a register of a group in flight, waits
for nothing, and one that touches those of older groups only waits for those
(`overlap_products`: a step's softmax beside the products of the step before). Shared memory
written by ordinary stores or ``cp.async`` is seen by the tensor cores only after
``fence.proxy.async`` in the writing threads: every barrier of a kernel with products is
preceded by one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from llvmlite import ir

from ...errors import LoweringError
from ...ir import dtype as dt
from ...loopir.core.nodes import (
    Allocate,
    Buffer,
    BulkCopy,
    For,
    If,
    Let,
    Load,
    MatrixOp,
    MBarrier,
    Seq,
    Stmt,
    Store,
    ThreadAllReduce,
    Tile,
    Turn,
)
from ...loopir.core.visit import stmt_exprs, walk_expr, walk_stmt
from ...loopir.memory.fragments import is_wgmma
from ..llvm.alignment import factor
from ..llvm.expr import panels
from ..llvm.intrinsics import function
from ..llvm.types import F32, I32, I64
from .nvvm import SHARED_PTR

if TYPE_CHECKING:
    from ..llvm.stmt import StmtEmitter

ATOM = 1024  # bytes of a 128-byte swizzle's repeating pattern: 8 rows of 128 bytes
ROW = 128  # bytes of a swizzled row (a panel's width)
K_STEP = 32  # bytes of K one instruction reads of a row: 16 halves or 32 8-bit floats
_TYPES = {"float16": "f16", "bfloat16": "bf16"}
_FLOAT8 = {"float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}


def emit_wgmma(
    em: StmtEmitter,
    c: Tile,
    a: Tile,
    b: Tile,
    acc: list[ir.Value],
    held: list[ir.Value] | None = None,
) -> list[ir.Value]:
    """D = A @ B + C for the accumulator slots `acc` of tile `c`; the new slots. With `held`,
    A's 64 x 16 tile is the thread's 8 slots of a 16-bit accumulator-layout fragment (the
    layout the instruction takes A in from registers: a tile computed by the threads, such as
    attention's probabilities), as 4 registers of two halves (`register_pairs`)."""
    operand = _TYPES.get(a.buffer.dtype)
    pair = _FLOAT8.get(a.buffer.dtype) and _FLOAT8.get(b.buffer.dtype)
    same = operand is not None and a.buffer.dtype == b.buffer.dtype
    if not (same or pair) or c.buffer.dtype != "float32":
        raise LoweringError(
            f"wgmma of {a.buffer.dtype} @ {b.buffer.dtype} into {c.buffer.dtype}: it multiplies "
            "two float16, two bfloat16 or two 8-bit float tiles into float32"
        )
    n, depth = c.shape[1], a.shape[1]
    desc_b, trans_b = _descriptor(em, b, k_axis=0)
    count = len(acc)
    registers = ", ".join(f"${k}" for k in range(count))
    if held is None:
        desc_a, trans_a = _descriptor(em, a, k_axis=1)
        a_args, a_types, a_text = [desc_a], [I64], f"${count}"
        trans = f", {trans_a}, {trans_b}"
    else:
        a_args = held
        a_types = [I32] * len(a_args)
        a_text = "{" + ", ".join(f"${count + k}" for k in range(len(a_args))) + "}"
        trans = f", {trans_b}"  # A from registers is K-major: no transpose of its own
    if pair:  # 8-bit operands are K-major, and the instruction takes no imm-trans
        shape = f"m64n{n}k{depth}.f32.{_FLOAT8[a.buffer.dtype]}.{_FLOAT8[b.buffer.dtype]}"
        trans = ""
    else:
        shape = f"m64n{n}k{depth}.f32.{operand}.{operand}"
    first = count + len(a_args)  # B's descriptor, then the scale
    text = (
        "{\n.reg .pred p;\n"
        f"setp.ne.b32 p, ${first + 1}, 0;\n"
        f"wgmma.mma_async.sync.aligned.{shape} "
        f"{{{registers}}}, {a_text}, ${first}, p, 1, 1{trans};\n}}"
    )
    result = _registers(em.b.module, count)
    ftype = ir.FunctionType(result, [*a_types, I64, I32, *([F32] * count)])
    inputs = ["r" if t is I32 else "l" for t in a_types]
    constraints = ",".join(["=f"] * count + inputs + ["l", "r"] + [str(k) for k in range(count)])
    scale = ir.Constant(I32, 1)  # D = A @ B + D: the fill gave D its first value
    if all(isinstance(x, ir.Constant) and x.constant == 0.0 for x in acc):
        scale = ir.Constant(I32, 0)  # D = A @ B: the zeros the fill gave need no registers
        acc = [ir.Constant(F32, ir.Undefined)] * count
    out = em.b.asm(ftype, text, constraints, [*a_args, desc_b, scale, *acc], side_effect=True)
    return [em.b.extract_value(out, k) for k in range(count)]


def _registers(module: ir.Module, count: int) -> ir.IdentifiedStructType:
    """The struct of `count` floats an accumulator's registers come back in from inline asm,
    by name: each ``extractvalue`` that reads one prints the name, not the type's fields (64
    at d = 128: 60% of the text of the causal attention kernel's module)."""
    struct = module.context.get_identified_type(f"wgmma.f32x{count}")
    if struct.is_opaque:
        struct.set_body(*[F32] * count)
    return struct


def register_pairs(b: ir.IRBuilder, held: list[ir.Value]) -> list[ir.Value]:
    """The 16-bit values `held` (in their storage type), two to a 32-bit register, the first
    in the low half: a two-element vector bitcast, one move in PTX."""
    words = []
    for low, high in zip(held[0::2], held[1::2]):
        pair: ir.Value = ir.Constant(ir.VectorType(low.type, 2), ir.Undefined)
        pair = b.insert_element(pair, low, ir.Constant(I32, 0))
        pair = b.insert_element(pair, high, ir.Constant(I32, 1))
        words.append(b.bitcast(pair, I32))
    return words


def _descriptor(em: StmtEmitter, t: Tile, k_axis: int) -> tuple[ir.Value, int]:
    """The matrix descriptor of shared tile `t` (K along its axis `k_axis`) and whether it is
    MN-major (the instruction's ``imm-trans``)."""
    buffer = t.buffer
    what = f"wgmma's operand '{buffer.name}'"
    size = dt.itemsize(buffer.dtype)
    last = len(buffer.shape) - 1
    width = buffer.shape[-1]
    row_bytes = int(width.value) * size if hasattr(width, "value") else None
    if buffer.scope != "shared" or buffer.swizzle != ROW or buffer.strides is not None:
        raise LoweringError(f"{what} must be a compact shared buffer swizzled by 128 bytes")
    if row_bytes != ROW and panels(buffer) is None:
        raise LoweringError(
            f"{what} has rows of {row_bytes} bytes; wgmma reads rows of 128 bytes, or rows of a "
            "whole number of 128-byte panels"
        )
    rows = int(buffer.shape[-2].value) if len(buffer.shape) > 1 else 1
    if rows * ROW % ATOM:
        raise LoweringError(f"{what} has {rows} rows, not a multiple of 8 (a 1024-byte atom)")
    k_dim, mn_dim = t.dims[k_axis], t.dims[1 - k_axis]
    k_major = k_dim == last
    if mn_dim != last and not k_major:
        raise LoweringError(f"{what}: neither of its tile's dimensions is contiguous")
    known = em.known_factors
    k_base, mn_base = factor(t.base[k_dim], known), factor(t.base[mn_dim], known)
    step = K_STEP // size  # elements of one instruction's K
    if k_major:
        need = {"K": (k_base, step), "M/N": (mn_base, 8)}
        leading, stride = 16, ATOM  # leading: unused by a K-major swizzled layout
    else:
        need = {"K": (k_base, 8), "M/N": (mn_base, ROW // size)}
        leading, stride = rows * ROW, ATOM  # a panel of rows, then the next panel
    for axis, (have, want) in need.items():
        if have < want:
            raise LoweringError(
                f"{what}: its tile's {axis} index is not provably a multiple of {want}, which "
                f"the swizzled layout needs a tile to start at; tile it by whole 64 x {step} "
                "blocks"
            )
    b = em.b
    offset = em.offset(buffer, tuple(t.base), xor=False)
    base = em.pointer(buffer)
    if base.type != SHARED_PTR:
        base = b.addrspacecast(base, SHARED_PTR)
    # the buffer's descriptor plus the tile's offset in 16-byte units, as CUTLASS steps its
    # descriptors: the buffer's part is the same for every product of a loop (LLVM computes
    # it once), the offset is a multiple of 16 bytes (the checks above), and the sum stays
    # within the 14 bits of the start address (a shared address is below 256 KB)
    start = b.lshr(b.and_(b.ptrtoint(base, I64), ir.Constant(I64, 0x3FFFF)), ir.Constant(I64, 4))
    fields = ((leading >> 4) << 16) | ((stride >> 4) << 32) | (1 << 62)  # 1: 128-byte swizzle
    whole = b.or_(start, ir.Constant(I64, fields))
    nbytes = b.mul(offset, ir.Constant(I64, size), flags=["nuw", "nsw"])
    chunks = b.udiv(nbytes, ir.Constant(I64, 16), flags=["exact"])
    return b.add(whole, chunks, flags=["nuw"]), 0 if k_major else 1


class WgmmaOrder:
    """Where the fences, commits and waits of asynchronous products go (see the module).

    A statement that touches only registers, none of them a register of a group of products
    in flight (their accumulators, and the fragments they read), lets those groups run on: a
    step's softmax runs beside the products of the step before (`overlap_products`). Every
    other statement waits for the groups it may depend on, or for all of them."""

    def __init__(self, prepare: Callable[[StmtEmitter, MatrixOp], dict]) -> None:
        self.prepare = prepare  # makes a run's A operand registers, before its fence
        self.made: dict = {}  # those registers, until the run's products take them
        self.groups: list[set[int]] = []  # committed, in flight: their registers' buffers
        self.current: set[int] = set()  # products issued since the last commit
        self.accumulators: dict[int, Buffer] = {}
        self.last_was_product = False
        self.register_branches: set[int] = set()  # branches of register stores (`before_branch`)

    @property
    def pending(self) -> bool:
        return bool(self.groups or self.current)

    def before(self, em: StmtEmitter, s: Stmt) -> None:
        """Called before each leaf statement `s`."""
        if is_wgmma(s):
            if not self.last_was_product:
                assert isinstance(s, MatrixOp)
                self._fence(em, self.prepare(em, s))
            return
        self.last_was_product = False
        self.made = {}
        if isinstance(s, Turn):  # a turn ends at issue: its products run on
            self.commit(em)
        elif isinstance(s, MBarrier) and s.op == "arrive":
            # an arrival releases what the thread's products read: they are done before it,
            # all but the `pending` newest groups (`MBarrier`)
            self.wait(em, s.pending)
        elif not isinstance(s, (MBarrier, BulkCopy)):  # these touch neither tiles nor registers
            self.wait_for(em, _registers_touched(s))

    def _fence(self, em: StmtEmitter, made: dict) -> None:
        """The fence of a run of products, and the A registers made for it: only those, as
        registers made for an earlier run may stand in a block that does not reach this one."""
        self.made = made
        _asm(em, "wgmma.fence.sync.aligned;")

    def after(self, em: StmtEmitter, s: Stmt) -> None:
        """Called after each leaf statement `s`."""
        if is_wgmma(s):
            assert isinstance(s, MatrixOp)
            self.accumulators[id(s.dst.buffer)] = s.dst.buffer
            self.current |= {id(t.buffer) for t in (s.dst, *s.srcs) if _in_registers(t.buffer)}
            self.last_was_product = True

    def before_loop(self, em: StmtEmitter, loop: For) -> None:
        """A loop of nothing but products (over k within a step) is fenced once, before it; one
        that does other work waits for the products it depends on before it, not in its body
        (where LLVM's unrolling would copy the wait into every iteration)."""
        if only_products(loop.body):
            if not self.last_was_product:
                self._fence(em, {})  # its products' tiles move with the loop: made in it
                self.last_was_product = True
        elif self.pending and not only_products(loop.body, (MBarrier, BulkCopy)):
            self.wait_for(em, _registers_touched(loop.body))
            self.last_was_product = False

    def end_of_body(self, em: StmtEmitter, body: Stmt) -> None:
        """Called at the end of a loop's body, before it repeats: a body that does anything
        but products (and memory-barrier operations and bulk copies, which touch neither
        their tiles nor their registers) must not start its next iteration with products in
        flight, unless it touches none of their registers."""
        if self.pending and not only_products(body, (MBarrier, BulkCopy)):
            self.commit(em)
            touched = _registers_touched(body)
            if touched is None or any(g & touched for g in self.groups):
                self.wait(em)
            self.last_was_product = False

    def before_branch(self, em: StmtEmitter, branch: If) -> None:
        """Wait for every product before a branch, and again at the end of each of its arms
        (`end_of_arm`): ptxas cannot prove our branches uniform over a warpgroup (a store
        guarded by the edge of the matrix, a warpgroup without rows in an edge block), and
        where a product may be in flight on one path and not on another, it waits for every
        product of the kernel before issuing the next ("wgmma serialized"). A branch of
        stores to registers alone (a rescale skipped where its factors are 1) issues and
        waits for nothing on either path: it waits only for the products whose registers it
        touches, and the others run on through it."""
        touched = _registers_touched(branch)
        if touched is None:
            self._drain(em)
        else:
            self.register_branches.add(id(branch))
            self.wait_for(em, touched)
            self.last_was_product = False

    def end_of_arm(self, em: StmtEmitter, branch: If) -> None:
        if id(branch) not in self.register_branches:
            self._drain(em)

    def _drain(self, em: StmtEmitter) -> None:
        if self.pending:
            self.wait(em)
            self.last_was_product = False

    def wait_for(self, em: StmtEmitter, touched: set[int] | None) -> None:
        """Wait for the groups whose registers `touched` holds (None: any memory, so all)."""
        self.commit(em)
        if touched is None:
            self.wait(em)
            return
        newest = max((k for k, g in enumerate(self.groups) if g & touched), default=None)
        if newest is not None:
            self.wait(em, len(self.groups) - 1 - newest)

    def commit(self, em: StmtEmitter) -> None:
        if self.current:
            _asm(em, "wgmma.commit_group.sync.aligned;")
            self.groups.append(self.current)
            self.current = set()

    def wait(self, em: StmtEmitter, keep: int = 0) -> None:
        """Commit the products issued since the last commit (a run of them, one group) and
        wait for every group but the `keep` newest. Groups in flight across a loop's turn
        (a loop of nothing but products and barriers) are not counted here, so a wait that
        keeps some is always emitted."""
        self.commit(em)
        if not self.groups:
            return
        if keep == 0:
            _wait_for_accumulators(em, "wgmma.wait_group.sync.aligned 0;", None)
            self.groups = []
            return
        done = self.groups[: max(0, len(self.groups) - keep)]
        self.groups = self.groups[len(done) :]
        ids = set().union(*done) if done else set()
        held = [b for k, b in self.accumulators.items() if k in ids]
        _wait_for_accumulators(em, f"wgmma.wait_group.sync.aligned {keep};", held)


def _in_registers(buffer: Buffer) -> bool:
    return buffer.scope not in ("global", "shared")


def _registers_touched(s: Stmt) -> set[int] | None:
    """The buffers `s` reads or writes (by identity), or None where it touches memory (a
    global or shared buffer, a copy, a barrier) or does what is not a store."""
    touched: set[int] = set()
    for n in walk_stmt(s):
        if isinstance(n, (Seq, For, If, Let, Allocate)):
            buffers = []
        elif isinstance(n, Store):
            buffers = [n.buffer]
        elif isinstance(n, ThreadAllReduce):
            buffers = [*n.sources, *n.results]
        else:
            return None
        for e in stmt_exprs(n):
            buffers += [x.buffer for x in walk_expr(e) if isinstance(x, Load)]
        if not all(_in_registers(b) for b in buffers):
            return None
        touched |= {id(b) for b in buffers}
    return touched


def _wait_for_accumulators(em: StmtEmitter, text: str, held: list[Buffer] | None) -> None:
    """`text` (a wait for groups of products) with the registers of the accumulators `held`
    (those the groups waited for wrote) passed through it: their readers then come after the
    wait in the code LLVM emits too. Without the link LLVM hoists their conversions above the
    wait, and ptxas, to keep them correct, waits for each product before issuing the next
    ("wgmma serialized"). The accumulators of groups still running are left out: passed
    through, they would be read while the products write them. None: every accumulator."""
    ids = None if held is None else {id(b) for b in held}
    for buffer, values in em.registers.values.items():
        if ids is not None and id(buffer) not in ids:
            continue
        if buffer.scope != "wgmma.accumulator" or buffer.dtype != "float32":
            continue  # a 16-bit fragment is computed by the threads, never by a product
        count = len(values)
        result = _registers(em.b.module, count)
        ftype = ir.FunctionType(result, [F32] * count)
        constraints = ",".join(["=f"] * count + [str(k) for k in range(count)] + ["~{memory}"])
        out = em.b.asm(ftype, text, constraints, values, side_effect=True)
        values[:] = [em.b.extract_value(out, k) for k in range(count)]
        text = ""  # one wait; the other accumulators only pass through
    if text:
        _asm(em, text)


def only_products(body: Stmt, neutral: tuple[type, ...] = ()) -> bool:
    """Whether every leaf statement of `body` is a warpgroup's product (or of a type in
    `neutral`)."""
    for s in walk_stmt(body):
        if not isinstance(s, (Seq, For, If, Let, Allocate, *neutral)) and not is_wgmma(s):
            return False
    return True


def warp_uniform(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """The i32 `value` of lane 0 of the warp (``shfl.sync.idx``): the same value where it
    already was the same on every lane, now known to be so."""
    shfl = function(b.module, "llvm.nvvm.shfl.sync.idx.i32", I32, [I32] * 4)
    full, clamp = ir.Constant(I32, 0xFFFFFFFF), ir.Constant(I32, 0x1F)
    return b.call(shfl, [full, value, ir.Constant(I32, 0), clamp])


def proxy_fence(em: StmtEmitter) -> None:
    """Make this thread's writes to shared memory visible to the tensor cores' reads."""
    _asm(em, "fence.proxy.async.shared::cta;")


def _asm(em: StmtEmitter, text: str) -> None:
    em.b.asm(ir.FunctionType(ir.VoidType(), []), text, "~{memory}", [], side_effect=True)
