"""The loop IR: what the polyhedral layer produces, `sl.lower` prints and code generators consume.

Expressions are the algorithm's expression nodes (`schedlang.ir.expr`) plus `Load` from a
`Buffer`; tensor reads (`Read`) never appear here. Statements are frozen dataclasses with tuple
children. A loop's `kind` says how it runs:

- ``"serial"``, ``"unrolled"``, ``"vectorized"``, ``"parallel"`` (CPU threads);
- ``"bound"``: the loop *is* a hardware index; `thread` is ``"blockIdx.x"`` ... ``"threadIdx.z"``;
  its `min` is 0 and the loop variable equals the hardware index (a guard inside handles tails);
- ``"vthread"``: a virtual thread (executed by one real thread, interleaved; see TE).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from ...errors import deep_recursion
from ...ir.expr import CommReducer, Expr, Var
from ...schedule.intrin import FRAGMENT_SCOPES
from ...schedule.stage import HARDWARE_TAGS

LOOP_KINDS = ("serial", "unrolled", "vectorized", "parallel", "bound", "vthread")
SCOPES = ("global", "shared", "local", *FRAGMENT_SCOPES)
REGISTER_SCOPES = ("local", *FRAGMENT_SCOPES)  # a thread's own: registers, or slots of a fragment
THREAD_TAGS = tuple(tag for tag in HARDWARE_TAGS if tag != "vthread")


SWIZZLES = (32, 64, 128)


@dataclass(frozen=True, slots=True, eq=False)
class Buffer:
    """A region of memory. `strides` are in elements (row-major with padding from
    ``storage_align``); `None` means compact row-major. With `swizzle` (32, 64 or 128: a
    shared buffer's ``swizzle``), the 16-byte chunks of each 128-byte line of the buffer are
    permuted by the line's index: byte offset ``o`` holds what ``o ^ (((o >> 7) & m) << 4)``
    would, ``m`` = 1, 3, 7 (the tensor cores' and the copy engine's 32-, 64- and 128-byte
    swizzles), so that the 8 rows of 16 bytes that ``ldmatrix`` reads lie in 8 different bank
    groups without padding. Rows longer than the swizzle (a whole number of its widths, the
    buffer compact) are first cut into panels that wide, each panel's rows contiguous
    (`codegen.llvm.expr.panels`): the layout wgmma's descriptors and the copy engine take.
    Elements are addressed as if the buffer were not swizzled."""

    name: str
    shape: tuple[Expr, ...]
    dtype: str
    scope: str = "global"
    strides: tuple[Expr, ...] | None = None
    swizzle: int = 0


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Load(Expr):
    """An element of `buffer`; of a fragment (`FRAGMENT_SCOPES`), one index: the slot of the
    running thread's share (`loopir.memory.fragments`)."""

    buffer: Buffer
    indices: tuple[Expr, ...]
    dtype: str

    def sl_str(self, expr_str) -> str:
        """How `schedlang.ir.printer.expr_str` prints this node."""
        shown = ", ".join(expr_str(i) for i in self.indices)
        return f"{element_name(self.buffer, self.indices)}[{shown}]"


def element_name(buffer: Buffer, indices: tuple) -> str:
    """How an element access names `buffer`: a fragment at one index by its running thread's
    share (``acc.slot[3]``), which is what one index into a fragment means."""
    slot = buffer.scope in FRAGMENT_SCOPES and len(indices) == 1
    return f"{buffer.name}.slot" if slot else buffer.name


class Stmt:
    """Base of statements."""

    __slots__ = ()

    def __str__(self) -> str:
        from .printer import stmt_str

        with deep_recursion():  # a chain of many stages nests as deep
            return stmt_str(self)


@dataclass(frozen=True, slots=True, eq=False)
class Store(Stmt):
    buffer: Buffer
    indices: tuple[Expr, ...]
    value: Expr


@dataclass(frozen=True, slots=True, eq=False)
class For(Stmt):
    """``for var in [min, min + extent)``."""

    var: Var
    min: Expr
    extent: Expr
    kind: str
    body: Stmt
    thread: str | None = None


@dataclass(frozen=True, slots=True, eq=False)
class If(Stmt):
    cond: Expr
    then: Stmt
    otherwise: Stmt | None = None


@dataclass(frozen=True, slots=True, eq=False)
class Let(Stmt):
    """`var` = `value` in `body` (an index computed once)."""

    var: Var
    value: Expr
    body: Stmt


@dataclass(frozen=True, slots=True, eq=False)
class Allocate(Stmt):
    """`buffer` exists (uninitialised) for the duration of `body`."""

    buffer: Buffer
    body: Stmt


@dataclass(frozen=True, slots=True, eq=False)
class Barrier(Stmt):
    """All threads of a block wait here; shared-memory writes before it are visible after it.
    With `warpgroup`, only the 128 threads of the running thread's warpgroup (its
    ``threadIdx.z``) wait for each other (a named barrier of its own); with `among`, only the
    block's first `among` threads (the consumers, once a producer warpgroup has gone its own
    way: `gpu.register_handover`)."""

    warpgroup: bool = False
    among: int = 0


@dataclass(frozen=True, slots=True, eq=False)
class SetRegisters(Stmt):
    """From here on each thread of the running warpgroup has `count` registers (Hopper's
    ``setmaxnreg``; more than it had when `grow`): a producer warpgroup that only issues copies
    gives registers up for its consumers to take (`gpu.register_handover`). A GPU kernel's
    statement only, made after the interpreter's function is final."""

    count: int
    grow: bool


@dataclass(frozen=True, slots=True, eq=False)
class Turn(Stmt):
    """The consumer warpgroups of a producer take turns at the tensor cores (FlashAttention
    3's "pingpong", `gpu.take_turns`): a take waits until the warpgroup before the running one
    (along ``threadIdx.z``, of `warpgroups` in a ring) has given the turn on, a give passes
    it to the warpgroup after; with `when`, only where that holds (the same for every
    warpgroup of the block). A GPU kernel's statement only, made after the interpreter's
    function is final; it orders issue, never values."""

    give: bool
    warpgroups: int
    when: Expr | None = None


@dataclass(frozen=True, slots=True, eq=False)
class ThreadAllReduce(Stmt):
    """A collective of the threads of a block, reached by all of them (never under a thread
    loop): each group of threads that agree on the thread indices not in `tags` combines its
    ``sources[k][0]`` (one per thread, "local" buffers) with ``combiners[k]``, and every thread
    of the group gets the result in ``results[k][0]``. A reduce axis bound to ``threadIdx.*``
    lowers to this (see `schedlang.loopir.gpu.thread_reduce`).

    With `lanes`, a collective of each warp instead, reached inside the thread loops by every
    lane of the warp: each group of `lanes` consecutive lanes combines (``tags`` is
    ``("threadIdx.x",)``); the rows of an accumulator are held by quads
    (`schedlang.loopir.gpu.fragment_lanes`)."""

    combiners: tuple[CommReducer, ...]
    sources: tuple[Buffer, ...]
    results: tuple[Buffer, ...]
    tags: tuple[str, ...]
    lanes: int = 0


@dataclass(frozen=True, slots=True, eq=False)
class Tile:
    """A `shape` (rows, columns) tile of `buffer` whose element (0, 0) is at index `base`; its
    rows run along buffer dimension ``dims[0]`` and its columns along ``dims[1]``.

    For a buffer in a fragment scope (`FRAGMENT_SCOPES`), the tile is a logical matrix of the
    warp (`fragments` says which lane holds which element): ``dims`` are then the buffer's last
    two dimensions and `base` is a multiple of `shape` along them."""

    buffer: Buffer
    base: tuple[Expr, ...]
    dims: tuple[int, int]
    shape: tuple[int, int]


@dataclass(frozen=True, slots=True, eq=False)
class MatrixOp(Stmt):
    """A warp-collective tensor-core operation (`schedlang.loopir.memory.fragments`): the 32
    lanes of each warp (``threadIdx.x`` is the lane; the block's x extent is 32) run it
    together, so it stands under no loop bound to ``threadIdx.x`` and under no condition that
    differs between the lanes of a warp. Its tiles' bases are the same for every lane of a warp.

    - ``"fill"``: ``dst`` (an accumulator fragment) := `value` everywhere;
    - ``"load"``: ``dst`` (a fragment) := ``srcs[0]`` (a tile of a shared, global or local
      buffer of the same dtype);
    - ``"mma"``: ``dst`` += ``srcs[0] @ srcs[1]`` (matrix_a m x k, matrix_b k x n, accumulator
      m x n fragments; products and sums in the accumulator's dtype);
    - ``"store"``: ``dst`` (a tile of a shared, global or local buffer) := ``srcs[0]`` (an
      accumulator fragment), converted to ``dst``'s dtype; with `clipped`, only the elements
      inside ``dst``'s shape (a tile cut by the edge of a tensor whose size is not a multiple
      of the tile's). With `bulk`, a warpgroup's store to a global tensor goes through
      shared memory by the copy engine (`loopir.memory.bulk_store` makes it so in a kernel): the
      same values, clipped by the copy engine.
    """

    op: str
    dst: Tile
    srcs: tuple[Tile, ...] = ()
    value: Expr | None = None
    clipped: bool = False
    bulk: bool = False


@dataclass(frozen=True, slots=True, eq=False)
class AsyncCopy(Stmt):
    """``dst[dst_index + l] = src[src_index + l]`` for the `lanes` consecutive elements ``l``
    of the last dimension, copied by the thread in the background (``cp.async``): `src` is a
    global buffer, `dst` a shared one, and the bytes moved (``lanes`` x the element size) are 4,
    8 or 16, aligned to that size at both ends. The elements are in `dst` only once an
    `AsyncWait` of the same thread has waited for the group the copy was committed with
    (`AsyncCommit`); other threads see them after a `Barrier` that follows that wait. Where
    `when` is given and false, zeros are written instead and `src` is not read (padding:
    ``cp.async``'s source size of 0)."""

    dst: Buffer
    dst_index: tuple[Expr, ...]
    src: Buffer
    src_index: tuple[Expr, ...]
    lanes: int
    when: Expr | None = None


@dataclass(frozen=True, slots=True, eq=False)
class AsyncCommit(Stmt):
    """Closes a group: the `AsyncCopy`s this thread issued since its last commit."""


@dataclass(frozen=True, slots=True, eq=False)
class AsyncWait(Stmt):
    """This thread waits until at most `pending` of its committed groups are still in flight
    (the older ones have landed)."""

    pending: int


@dataclass(frozen=True, slots=True, eq=False)
class BulkCopy(Stmt):
    """The copy engine (Hopper's TMA) copies the box of `shape` elements of `src` (a global
    buffer) that starts at `src_index` into `dst` (a shared buffer, compact or swizzled) at
    `dst_index`: ``dst[dst_index + o] = src[src_index + o]`` for every offset ``o`` of the
    box, `shape` giving the extents of `src`'s dimensions, which are `dst`'s last ones.
    Elements of the box outside `src` arrive as zeros. One thread issues it; the bytes land in
    the background and count as transactions of ``barrier[barrier_index]`` (an `MBarrier`),
    whose phase completes only once they all have landed: a thread reads them after waiting
    for that phase."""

    dst: Buffer
    dst_index: tuple[Expr, ...]
    src: Buffer
    src_index: tuple[Expr, ...]
    shape: tuple[int, ...]
    barrier: Buffer
    barrier_index: Expr


@dataclass(frozen=True, slots=True, eq=False)
class BulkStore(Stmt):
    """The copy engine stores the box of `shape` elements of `src` (a shared buffer, whose
    last dimensions the box fills from `src_index`) into `dst` (a global buffer) at
    `dst_index`, `shape` giving the extents of `dst`'s dimensions; elements of the box outside
    `dst` are not written. One thread issues it, as a group of its own (``bulk_group``): the
    copy engine reads `src` in the background, and the thread may write `src` again only after
    a `BulkWait` has waited for the group's reads.
    """

    dst: Buffer
    dst_index: tuple[Expr, ...]
    src: Buffer
    src_index: tuple[Expr, ...]
    shape: tuple[int, ...]


@dataclass(frozen=True, slots=True, eq=False)
class BulkWait(Stmt):
    """The thread waits until at most `pending` of its `BulkStore` groups are still reading
    their shared memory (`read`), or still writing global memory (not `read`)."""

    pending: int
    read: bool = True


MBARRIER_OPS = ("init", "arrive", "wait")


@dataclass(frozen=True, slots=True, eq=False)
class MBarrier(Stmt):
    """An operation on the memory barrier ``barrier[index]`` (`barrier`: a shared int64 buffer;
    CUDA's ``mbarrier``), by each thread that runs it:

    - ``"init"``: the barrier's phases complete after `count` arrivals each (run by one
      thread, before a block barrier that publishes it);
    - ``"arrive"``: one arrival on the current phase; with `count` > 0 it also expects that
      many bytes of `BulkCopy` transactions in the phase (``arrive.expect_tx``). The thread's
      asynchronous warpgroup products have completed before it arrives, all but the `pending`
      newest groups of them (a group: the products issued since the last non-product
      statement), which may still be reading what the arrival does not release. Where `when`
      is given and false the thread does not arrive (it still waits for its products). With
      `per_warp` the warp's threads meet first (``__syncwarp``) and its first thread arrives
      for them all, once: the phase counts warps, and a warp's arrival releases what any of
      its threads read (one shared-memory atomic a warp instead of 32);
    - ``"wait"``: the thread waits until the phase of parity `parity` (0 or 1) has completed:
      every arrival in, every expected byte landed. What the arrivers did before arriving (and
      the copies counted in the phase) is then seen by the waiter.
    """

    op: str
    barrier: Buffer
    index: Expr
    count: int = 0
    parity: Expr | None = None
    pending: int = 0
    when: Expr | None = None
    per_warp: bool = False


@dataclass(frozen=True, slots=True)
class PackedSite:
    """A call of the Python function registered as `func`, made through the C function a
    `CallExtern` names (the runtime's, `runtime.packed_calls`): per argument of `func`, the
    shape and dtype of the tile it is handed as an array, or None for an integer. The C
    function takes each array as its address then its strides in elements (int64), and each
    integer as an int64."""

    func: str
    arrays: tuple[tuple[tuple[int, ...], str] | None, ...]

    @property
    def symbol(self) -> str:
        """The C function's name: one per function and signature, the same in every process
        (compiled code is cached by it)."""
        digest = hashlib.sha256(repr((self.func, self.arrays)).encode()).hexdigest()[:12]
        return f"schedlang_packed_{re.sub(r'[^0-9A-Za-z_]', '_', self.func)}_{digest}"


@dataclass(frozen=True, slots=True, eq=False)
class CallExtern(Stmt):
    """A call of the C function `name` (a declared intrinsic's, `schedule.user_intrin`) on
    the CPU: each argument is an integer expression, or, where `modes` says so, a `Load`
    whose element's address is passed (the first element of a tile the function reads or
    writes, as `modes` says). With `packed`, the C function is the runtime's, calling a
    registered Python function (see `PackedSite`)."""

    name: str
    args: tuple[Expr, ...]
    modes: tuple[str | None, ...]  # per argument: its access ("r", "w", "rw") or None (a value)
    packed: PackedSite | None = None

    def writes(self, buffer: Buffer) -> bool:
        """Whether the function writes `buffer` through one of the addresses it is given."""
        return any(
            mode is not None and "w" in mode and arg.buffer is buffer
            for arg, mode in zip(self.args, self.modes)
        )


@dataclass(frozen=True, slots=True, eq=False)
class Seq(Stmt):
    stmts: tuple[Stmt, ...]


def seq(*stmts: Stmt | None) -> Stmt:
    """A statement running `stmts` in order (flattened; None entries dropped)."""
    flat: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        flat.extend(s.stmts if isinstance(s, Seq) else (s,))
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


@dataclass(frozen=True, slots=True)
class ScanRows:
    """A scan whose init gives `rows` rows into a state of `steps` steps, at sizes where they
    may not fit: a call checks ``rows <= steps`` (`scan_rows`), since the init's rows would
    be written past the end of the state's buffer."""

    scan: str
    init: str
    state: str
    rows: Expr
    steps: Expr


@dataclass(frozen=True, slots=True, eq=False)
class LoweredFunc:
    """A lowered schedule: `params` are the argument buffers in call order, `sizes` the
    symbolic sizes read off them, `body` the loop nest, `index_dtype` the type its loop
    variables and index arithmetic are declared in (`index_type`), whose range a call's sizes
    must fit; `imports` is LLVM IR defining the C functions its calls call (`CallExtern`),
    linked into the CPU kernel; `scan_rows` are what a call checks of its sizes besides;
    `turns` the loops (by name, with their stage's) whose kernel's consumer warpgroups take
    turns at the tensor cores (``pragma(axis, "take_turns")``, `gpu.take_turns`): the GPU
    code generator's alone, as the interpreter runs every thread at once."""

    name: str
    params: tuple[Buffer, ...]
    sizes: tuple[Var, ...]
    body: Stmt
    index_dtype: str = "int32"
    imports: tuple[str, ...] = ()
    scan_rows: tuple[ScanRows, ...] = ()
    turns: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        from .printer import func_str

        with deep_recursion():  # a chain of many stages nests as deep
            return func_str(self)

    def _repr_html_(self) -> str:
        from .html import func_html

        with deep_recursion():
            return func_html(self)
