"""Which lane of a warp holds which element of a tensor-core fragment, and where.

A fragment is a matrix that a warp holds together, spread over its 32 lanes' registers in the
layout that ``mma.sync.aligned.m16n8k16`` reads and writes (PTX ISA, "Matrix Fragments for
mma.m16n8k16"). With ``g = lane // 4`` and ``t = lane % 4``:

- ``wmma.matrix_a``, 16 x 16 (m x k), 8 elements a lane: slot ``i`` holds row
  ``g + 8 * (i // 2 % 2)``, column ``2 * t + i % 2 + 8 * (i // 4)``;
- ``wmma.matrix_b``, 16 x n (k x n) for n = 8 or 16, 4 elements a lane per 8 columns: slot
  ``4 * h + i`` holds row ``2 * t + i % 2 + 8 * (i // 2)``, column ``g + 8 * h``;
- ``wmma.accumulator``, 16 x n (m x n), 4 elements a lane per 8 columns: slot ``4 * h + i``
  holds row ``g + 8 * (i // 2)``, column ``2 * t + i % 2 + 8 * h``.

A 32-row tile (TE's warp-matrix shape m32n8k16: A 32 x 16, the accumulator 32 x 8) is two
16-row tiles stacked: a lane's slots for rows 0 to 15 in the layout above, then the same
slots for rows 16 to 31 (row + 16), so that its product is two m16n8k16 ones, one per half.
An 8-row tile (m8n32k16: A 8 x 16, B 16 x 32, the accumulator 8 x 32) is the top half of a
16-row one: the slots above whose row is ``g`` (A's ``i // 2 % 2 == 0``, the accumulator's
``i < 2``), in their order; its product is m16n8k16 ones whose rows ``g + 8`` are zeros.

These are the layouts ``ldmatrix`` (``.x4`` for A, ``.x4.trans``/``.x2`` for B) produces, so a
load, an mma and a store agree without any shuffle. For float32 data run as TF32
(``mma.sync.aligned.m16n8k8...tf32``, a tile's reduction 8 long), one element per register:

- ``wmma.matrix_a``, 16 x 8: slot ``i`` holds row ``g + 8 * (i % 2)``, column
  ``t + 4 * (i // 2)``;
- ``wmma.matrix_b``, 8 x n: slot ``2 * h + i`` holds row ``t + 4 * i``, column ``g + 8 * h``;
- the accumulator as above.

A warpgroup's accumulator (``wgmma.accumulator``, ``wgmma.mma_async.m64nNk16``) is 64 x n,
held by 128 threads: warp ``w`` of the group (``threadIdx.y``) holds rows ``16 w .. 16 w + 15``
in the layout of a warp's 16 x n accumulator above (slot ``4 * h + i``: row
``16 w + g + 8 * (i // 2)``, column ``2 * t + i % 2 + 8 * h``). The interpreter keeps
fragments in exactly these layouts, so a kernel that only works by accident of a layout fails
on the CPU too.

A buffer in a fragment scope is a grid of such tiles: its last two dimensions are multiples of
the tile's, and each thread stores ``size / 32`` elements (``size / 128`` for a warpgroup's),
tile after tile in row-major order of the grid (the leading dimensions included), each tile's
slots in the order above.

A warpgroup's accumulator is also computed element by element, by stages that are not
tensorized (`loopir.gpu.fragment_lanes`): each thread computes the elements it holds. A stage
of such a buffer whose last dimension runs over rows (``wgmma.accumulator`` with fewer than 64
rows along its second-to-last dimension, or one dimension) is a *column of rows*: the row
statistics of an accumulator (its maximum, its sum), each thread holding the rows its
accumulator slots are in, two of every 64, the same in the four lanes of a quad. Those
elements are addressed by one index, the slot in the running thread's share (`element_slot`,
`row_slot`); a `Load` or `Store` of a fragment with one index means that slot.
"""

from __future__ import annotations

from functools import cache
from math import prod

from ...errors import InternalError
from ...ir.expr import Binary, Const, Expr, const
from ..core.nodes import FRAGMENT_SCOPES, Buffer, MatrixOp, Stmt

# the dtypes each fragment scope holds (16-bit in a warpgroup's accumulator: wgmma's A operand)
DTYPES = {
    "wmma.matrix_a": ("float16", "bfloat16", "float32"),  # float32: as TF32
    "wmma.matrix_b": ("float16", "bfloat16", "float32"),
    "wmma.accumulator": ("float32", "float16"),
    "wgmma.accumulator": ("float32", "float16", "bfloat16"),
}
ACCUMULATORS = ("wmma.accumulator", "wgmma.accumulator")
WARP = 32
WARPGROUP = 128
M = 16  # rows of A and of the accumulator
M_STACKED = 32  # rows of a tile of two 16-row ones (m32n8k16)
M_SHORT = 8  # rows of the top half of a 16-row tile (m8n32k16)
K = 16  # the reduction length of one mma of 16-bit data
K_TF32 = 8  # ... of TF32 data


def tile_shapes(scope: str) -> tuple[tuple[int, int], ...]:
    """The tile shapes a fragment of `scope` can have."""
    if scope == "wmma.matrix_a":
        return ((M, K), (M, K_TF32), (M_STACKED, K), (M_SHORT, K))
    if scope == "wmma.matrix_b":
        return ((K, 8), (K, 16), (K_TF32, 8), (K_TF32, 16), (K, 32))
    if scope == "wmma.accumulator":
        return ((M, 8), (M, 16), (M_STACKED, 8), (M_SHORT, 32))
    if scope == "wgmma.accumulator":
        return tuple((64, n) for n in range(8, 257, 8))
    raise InternalError(f"{scope!r} is not a fragment scope")


def threads(scope: str) -> int:
    """How many threads hold a fragment of `scope` together: a warp, or a warpgroup."""
    return WARPGROUP if scope == "wgmma.accumulator" else WARP


def slots(scope: str, shape: tuple[int, int]) -> int:
    """How many elements of a `shape` tile each lane holds."""
    _check(scope, shape)
    return shape[0] * shape[1] // threads(scope)


@cache
def layout(scope: str, shape: tuple[int, int]) -> tuple[tuple[tuple[int, int], ...], ...]:
    """``layout(...)[lane][slot]``: the (row, column) of the tile that `lane` holds in `slot`
    (for a warpgroup's tile, `lane` is the thread's index in the group, 0 to 127)."""
    _check(scope, shape)
    if scope == "wgmma.accumulator":
        slice_ = warp_slice(shape[1])
        return tuple(
            tuple((16 * (k // WARP) + r, c) for r, c in slice_[k % WARP]) for k in range(WARPGROUP)
        )
    if shape[0] == M_STACKED:
        half = layout(scope, (M, shape[1]))
        return tuple(held + tuple((r + M, c) for r, c in held) for held in half)
    lanes = []
    for lane in range(WARP):
        g, t = lane // 4, lane % 4
        if scope == "wmma.matrix_a" and shape[1] == K_TF32:
            held = [(g + 8 * (i % 2), t + 4 * (i // 2)) for i in range(4)]
        elif scope == "wmma.matrix_b" and shape[0] == K_TF32:
            held = [(t + 4 * i, g + 8 * h) for h in range(shape[1] // 8) for i in range(2)]
        elif scope == "wmma.matrix_a":
            held = [(g + 8 * (i // 2 % 2), 2 * t + i % 2 + 8 * (i // 4)) for i in range(8)]
        elif scope == "wmma.matrix_b":
            held = [
                (2 * t + i % 2 + 8 * (i // 2), g + 8 * h)
                for h in range(shape[1] // 8)
                for i in range(4)
            ]
        else:
            held = list(warp_slice(shape[1])[lane])
        if shape[0] == M_SHORT:
            held = [(r, c) for r, c in held if r < M_SHORT]
        lanes.append(tuple(held))
    return tuple(lanes)


@cache
def warp_slice(n: int) -> tuple[tuple[tuple[int, int], ...], ...]:
    """``[lane][slot]``: the (row, column) of a warp's 16 x `n` accumulator slice (`n` a
    multiple of 8) that `lane` holds, the layout a warpgroup's warps each hold 16 rows in."""
    return tuple(
        tuple(
            (lane // 4 + 8 * (i // 2), 2 * (lane % 4) + i % 2 + 8 * h)
            for h in range(n // 8)
            for i in range(4)
        )
        for lane in range(WARP)
    )


def is_wgmma(s: Stmt) -> bool:
    """Whether `s` is a warpgroup's product (a `MatrixOp` into a ``wgmma.accumulator``), which
    runs in the background until waited for (`codegen.nvptx.wgmma`)."""
    return isinstance(s, MatrixOp) and s.op == "mma" and s.dst.buffer.scope == "wgmma.accumulator"


def lane_size(buffer: Buffer) -> int:
    """Elements each lane stores for a fragment `buffer` (its shape is constant)."""
    if buffer.scope not in FRAGMENT_SCOPES:
        raise InternalError(f"'{buffer.name}' is not a fragment (scope {buffer.scope!r})")
    if holds_rows(buffer):
        return _size(buffer) * 2 // 64  # two of every 64 rows
    return _size(buffer) // threads(buffer.scope)


def holds_rows(buffer: Buffer) -> bool:
    """Whether `buffer` (a warpgroup's accumulator scope) is a column of row statistics rather
    than a grid of 64 x n tiles (module docstring)."""
    if buffer.scope != "wgmma.accumulator":
        return False
    dims = [_constant(buffer, n) for n in buffer.shape]
    return len(dims) < 2 or dims[-2] % 64 != 0


def element_slot(buffer: Buffer, lead: Expr, tile: Expr, h: Expr, v: Expr, e: Expr) -> Expr:
    """The slot of a warpgroup accumulator `buffer` holding the element at row
    ``64 tile + 16 w + 8 v + g`` and column ``8 h + 2 t + e`` of the running thread (warp ``w``,
    ``g = lane // 4``, ``t = lane % 4``) in leading position `lead` (flattened): tiles of
    64 x n are stored row after row, so the slot does not depend on n."""
    rows, cols = (_constant(buffer, n) for n in buffer.shape[-2:])
    per_lead = rows * cols // WARPGROUP
    index = _add(_mul(lead, per_lead), _mul(tile, cols // 2))
    return _add(_add(index, _mul(h, 4)), _add(_mul(v, 2), e))


def row_slot(buffer: Buffer, lead: Expr, tile: Expr, v: Expr) -> Expr:
    """The slot of a column of rows `buffer` holding row ``64 tile + 16 w + 8 v + g`` of the
    running thread in leading position `lead` (flattened)."""
    rows = _constant(buffer, buffer.shape[-1])
    return _add(_mul(lead, rows // 32), _add(_mul(tile, 2), v))


def tile_offset(buffer: Buffer, shape: tuple[int, int], base: tuple[Expr, ...]) -> Expr:
    """The index, in each lane's storage of fragment `buffer`, of slot 0 of the `shape` tile
    whose element (0, 0) is at `base` (a multiple of `shape` along the last two dimensions)."""
    dims = [_constant(buffer, n) for n in buffer.shape]
    grid = dims[:-2] + [dims[-2] // shape[0], dims[-1] // shape[1]]
    coords = list(base[:-2]) + [_div(base[-2], shape[0]), _div(base[-1], shape[1])]
    index: Expr = const(0, base[-1].dtype)
    for coord, extent in zip(coords, grid):
        index = _add(_mul(index, extent), coord)
    return _mul(index, shape[0] * shape[1] // threads(buffer.scope))


def _check(scope: str, shape: tuple[int, int]) -> None:
    if tuple(shape) not in tile_shapes(scope):
        raise InternalError(f"a {scope} fragment tile of shape {shape} is not supported")


def _size(buffer: Buffer) -> int:
    return prod(_constant(buffer, n) for n in buffer.shape)


def _constant(buffer: Buffer, n: Expr) -> int:
    if not isinstance(n, Const):
        raise InternalError(f"fragment '{buffer.name}' has a symbolic extent")
    return int(n.value)


def _div(e: Expr, by: int) -> Expr:
    if isinstance(e, Const):
        return const(e.value // by, e.dtype)
    return Binary("//", e, const(by, e.dtype), e.dtype)


def _mul(e: Expr, by: int) -> Expr:
    if isinstance(e, Const):
        return const(e.value * by, e.dtype)
    return e if by == 1 else Binary("*", e, const(by, e.dtype), e.dtype)


def _add(a: Expr, b: Expr) -> Expr:
    if isinstance(a, Const) and isinstance(b, Const):
        return const(a.value + b.value, a.dtype)
    if isinstance(a, Const) and a.value == 0:
        return b
    return Binary("+", a, b, a.dtype)
