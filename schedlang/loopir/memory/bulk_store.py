"""A warpgroup's tile stored by the copy engine (``store_matrix(tma=True)``), in a kernel.

A tile's store from registers is thousands of 4-byte stores per multiprocessor, each row's
16 bytes apart from the next row's: the warpgroup waits on them between one tile's last
products and the next one's first, while the tensor cores idle. The copy engine instead stores
boxes from shared memory in the background. So each `MatrixOp` store marked `bulk` becomes,
for each piece of the tile (64 rows of 128 bytes):

1. one thread of the warpgroup waits until the copy engine has read the staging buffer it is
   about to reuse (`BulkWait`), and the warpgroup's own barrier tells the others;
2. the warpgroup writes the piece into the staging buffer (the same `MatrixOp`, to shared
   memory), swizzled by 128 bytes: each of a warp's 8 rows of 16 bytes lands in other banks;
3. the warpgroup's barrier (after each writer's ``fence.proxy.async``) makes the writes visible
   to the copy engine, and one thread hands the piece to it (`BulkStore`), which clips it to
   the tensor's shape.

Each warpgroup has two staging buffers where shared memory allows (a piece's writes beside the
engine's reads of the last), one otherwise. Where the block's shared memory has no room left
(attention at d = 128: Q's tile and three stages of K and V take 224 KB of 227), the staging
takes the region of a buffer whose accesses are all over before the stores
(`shared_reuse.finished_before`: K's tiles, once the last step's scores have read them), and
a barrier of the storing threads before each store's first piece parts the two uses.

Before its block ends, the thread waits for its last stores (shared memory must outlive the
engine's reads): after the outermost serial loop around the store (a persistent block's loop
over its tiles), so that no tile waits for its own.

For a GPU only (as `bulk_pipeline.split_roles`): the interpreter runs the `MatrixOp`, which
stores the same values.
"""

from __future__ import annotations

from dataclasses import replace

from ...errors import LoweringError
from ...ir import dtype as dt
from ...ir.expr import Binary, Cast, Compare, Const, Expr, Var, const
from ..core.nodes import (
    Allocate,
    Barrier,
    Buffer,
    BulkStore,
    BulkWait,
    For,
    If,
    MatrixOp,
    Stmt,
    Tile,
    seq,
)
from ..core.simplify import simplify_expr
from ..core.visit import path_to, rebuild_stmt, transform_stmt, walk_stmt
from .bulk_pipeline import PRODUCER
from .fragments import WARPGROUP
from .shared_reuse import finished_before, uniform_path

PIECE_BYTES = 128  # a staging row: the 128-byte swizzle's width, and the copy engine's
ROWS = 64  # a warpgroup's accumulator tile
SHARED_LIMIT = 227 * 1024  # shared memory of one block on sm_90 (opt-in)


def bulk_stores(
    kernel: Stmt, used: int, block: tuple[int, int, int]
) -> tuple[Stmt, tuple[Buffer, Buffer] | None]:
    """`kernel` with its bulk stores made as the module doc says, and ``(staging, region)``
    where the staging takes the shared region of a buffer whose accesses are over (else
    None); `used`: the bytes of shared memory the kernel's own buffers take; `block`: its
    threads along x, y and z."""
    stores = [s for s in walk_stmt(kernel) if isinstance(s, MatrixOp) and s.bulk]
    if not stores:
        return kernel, None
    dtypes = {s.dst.buffer.dtype for s in stores}
    if len(dtypes) > 1:
        raise LoweringError(
            "store_matrix(tma=True) stores tiles of one dtype per kernel, but this one stores "
            f"{' and '.join(sorted(dtypes))}; store all but one without tma"
        )
    (dtype,) = dtypes
    width = PIECE_BYTES // dt.itemsize(dtype)
    for s in stores:
        _check(s, width)
    paths = [path_to(kernel, s) for s in stores]
    groups = max(_groups(path) for path in paths)
    producer = _has_producer(kernel)
    slots, region = _room(kernel, stores, paths, used, groups, block, producer)
    staging = Buffer(
        "store.staging",
        tuple(const(n, "int64") for n in (groups, slots, ROWS, width)),
        dtype,
        "shared",
        swizzle=PIECE_BYTES,
    )
    anchors = {id(_anchor(path)): path for path in paths}

    def wait_after(s: Stmt) -> Stmt | None:
        path = anchors.get(id(s))
        if path is None:
            return None
        return seq(s, _per_warpgroup(path, _one_thread(BulkWait(0, read=False))))

    waited = transform_stmt(kernel, wait_after)
    first = None if region is None else _threads_barrier(groups, producer)
    made = _rewrite(waited, None, staging, slots, first)
    done = _allocated(made, staging, path_to(made, next(_bulk_barriers(made))))
    return done, None if region is None else (staging, region)


def _bulk_barriers(kernel: Stmt):
    return (s for s in walk_stmt(kernel) if isinstance(s, Barrier) and s.warpgroup)


def _check(s: MatrixOp, width: int) -> None:
    rows, cols = s.dst.shape
    name = s.dst.buffer.name
    if rows != ROWS or cols % width:
        raise LoweringError(
            f"store_matrix(tma=True) of '{name}' stores pieces of {ROWS} x {width} "
            f"({PIECE_BYTES}-byte rows of {s.dst.buffer.dtype}), but the tile is {rows} x {cols}; "
            f"make the tile's columns a multiple of {width}, or store without tma"
        )
    if not 1 <= len(s.dst.buffer.shape) <= 5:
        raise LoweringError(
            f"store_matrix(tma=True) of '{name}': the copy engine stores tensors of 1-5 "
            f"dimensions, and it has {len(s.dst.buffer.shape)}"
        )


def _warpgroup_loop(path: list[Stmt]) -> For | None:
    """The loop over the store's warpgroups (``threadIdx.z``), if any."""
    loops = [s for s in path if _bound(s, "threadIdx.z")]
    return loops[-1] if loops else None


def _bound(s: Stmt, tag: str) -> bool:
    return isinstance(s, For) and s.kind == "bound" and s.thread == tag


def _groups(path: list[Stmt]) -> int:
    """How many warpgroups the store has (the plan checked their loop's extent constant)."""
    loop = _warpgroup_loop(path)
    return 1 if loop is None else int(loop.extent.value)


def _room(
    kernel: Stmt,
    stores: list[MatrixOp],
    paths: list[list[Stmt]],
    used: int,
    groups: int,
    block: tuple[int, int, int],
    producer: bool,
) -> tuple[int, Buffer | None]:
    """``(slots, region)``: two staging buffers per warpgroup where the block's shared memory
    has room beside the `used` bytes of the kernel's own buffers, else one; where it has
    none, as many in the region of a buffer whose accesses are over before the stores
    (`shared_reuse`), if every thread of the block's stores reaches them (one barrier of
    theirs then parts the region's two uses)."""
    piece = ROWS * PIECE_BYTES
    for slots in (2, 1):
        if used + groups * slots * piece <= SHARED_LIMIT:
            return slots, None
    storers = block[2] - (1 if producer else 0)
    uniform = block[0] * block[1] == WARPGROUP and all(map(uniform_path, paths))
    if used > SHARED_LIMIT:
        why = "more than it has alone"
    elif not (uniform and storers == groups):
        why = (
            "and no region freed before the stores can be given to the staging: not every "
            "thread of the block makes the stores alike (a guard, or warpgroups that store "
            "nothing), so no barrier of theirs can part the two uses"
        )
    else:
        for region, nbytes in finished_before(kernel, list(stores)):
            for slots in (2, 1):
                if groups * slots * piece <= nbytes:
                    return slots, region
        why = "and no buffer whose accesses are over before the stores has that much"
    raise LoweringError(
        f"store_matrix(tma=True) stages each warpgroup's pieces in {piece // 1024} KB of shared "
        f"memory, but the kernel's other buffers take {used // 1024} KB of the "
        f"{SHARED_LIMIT // 1024} KB a block has, {why}; use fewer pipeline stages, or store "
        "without tma"
    )


def _has_producer(kernel: Stmt) -> bool:
    return any(
        isinstance(s, For) and s.kind == "bound" and s.var.kind == PRODUCER
        for s in walk_stmt(kernel)
    )


def _threads_barrier(groups: int, producer: bool) -> Barrier:
    """The barrier of the threads that store (the consumers, beside a producer warpgroup):
    before it the reused region's last readers, after it the staging's first writers."""
    return Barrier(among=WARPGROUP * groups) if producer else Barrier()


def _anchor(path: list[Stmt]) -> Stmt:
    """Where the last stores are waited for: after the outermost serial loop around the
    store, else after its warpgroups' loop, else after the store."""
    serial = [s for s in path if isinstance(s, For) and s.kind == "serial"]
    if serial:
        return serial[0]
    loop = _warpgroup_loop(path)
    return loop if loop is not None else path[-1]


def _per_warpgroup(path: list[Stmt], body: Stmt) -> Stmt:
    """`body` in a loop over the store's warpgroups, as the store has them."""
    loop = _warpgroup_loop(path)
    if loop is None:
        return body
    var = Var("threadIdx.z.stored", loop.var.dtype, loop.var.kind)
    return For(var, loop.min, loop.extent, "bound", body, "threadIdx.z")


def _one_thread(body: Stmt) -> Stmt:
    """`body` run by the warpgroup's first thread (lane 0 of warp 0)."""
    for tag, extent in (("threadIdx.x", 32), ("threadIdx.y", 4)):
        var = Var(f"{tag}.stored", "int32", "axis")
        first = Compare("==", var, const(0, "int32"))
        body = For(var, const(0, "int32"), const(extent, "int32"), "bound", If(first, body), tag)
    return body


def _rewrite(
    s: Stmt, group: Expr | None, staging: Buffer, slots: int, first: Barrier | None
) -> Stmt:
    if isinstance(s, MatrixOp) and s.bulk:
        pieces = _pieces(s, group if group is not None else const(0, "int64"), staging, slots)
        return pieces if first is None else seq(first, pieces)
    if _bound(s, "threadIdx.z"):
        index = s.var if _zero(s.min) else Binary("-", s.var, s.min, s.var.dtype)
        return replace(s, body=_rewrite(s.body, index, staging, slots, first))
    return rebuild_stmt(s, lambda e: e, lambda c: _rewrite(c, group, staging, slots, first))


def _zero(e: Expr) -> bool:
    return isinstance(e, Const) and int(e.value) == 0


def _pieces(s: MatrixOp, group: Expr, staging: Buffer, slots: int) -> Stmt:
    """The store `s` as its pieces through `staging` (module doc)."""
    width = int(staging.shape[3].value)
    acc, dst = s.srcs[0], s.dst
    box = _box(dst, width)
    out: list[Stmt] = []
    for k in range(dst.shape[1] // width):
        slot = k % slots
        pending = 1 if slots > 1 and k > 0 else 0
        at = (_index(group), const(slot, "int64"), const(0, "int64"), const(0, "int64"))
        piece = Tile(staging, at, (2, 3), (ROWS, width))
        out += [
            _one_thread(BulkWait(pending)),
            Barrier(warpgroup=True),
            MatrixOp("store", piece, (_shifted(acc, k * width, width),)),
            Barrier(warpgroup=True),
            _one_thread(
                BulkStore(dst.buffer, _shifted(dst, k * width, width).base, staging, at, box)
            ),
        ]
    return seq(*out)


def _index(e: Expr) -> Expr:
    return e if e.dtype == "int64" else Cast(e, "int64")


def _shifted(t: Tile, columns: int, width: int) -> Tile:
    """The `ROWS` x `width` piece of `t` that starts `columns` along its columns."""
    base = list(t.base)
    d = t.dims[1]
    if columns:
        base[d] = simplify_expr(Binary("+", base[d], const(columns, base[d].dtype), base[d].dtype))
    return Tile(t.buffer, tuple(base), t.dims, (ROWS, width))


def _box(dst: Tile, width: int) -> tuple[int, ...]:
    box = [1] * len(dst.buffer.shape)
    box[dst.dims[0]] = ROWS
    box[dst.dims[1]] = width
    return tuple(box)


def _allocated(kernel: Stmt, staging: Buffer, path: list[Stmt]) -> Stmt:
    """`kernel` with `staging` allocated inside the innermost block loop on `path` (a path
    to a store), or around it all when it has none (one block)."""
    blocks = [s for s in path if isinstance(s, For) and (s.thread or "").startswith("blockIdx")]
    if not blocks:
        return Allocate(staging, kernel)
    target = blocks[-1]

    def wrap(s: Stmt) -> Stmt | None:
        return replace(s, body=Allocate(staging, s.body)) if s is target else None

    return transform_stmt(kernel, wrap)
