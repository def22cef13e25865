"""A weight-only int4 GEMM, written as its plain dequantising definition, scheduled for the
CPU and for the GPU's CUDA cores.

The algorithm is the one users of quantised LLMs write (AWQ, GPTQ, torchao): activations A
(m x k) of float16 or bfloat16; the weight W (k x n) stored as two unsigned 4-bit values per
byte with a scale and a zero per group of `group` rows (`sl.packed_int4`, docs/concepts.md,
"Packed int4 weights"):

    W[k, n] = (unpack_int4(Wq[k // 2, n], k % 2) - zero[k // group, n]) * scale[k // group, n]
    C[i, n] = sum_k float32(A[i, k]) * float32(W[k, n])

W is computed in the activations' dtype (``(q - zero)`` is exact there, the product is rounded
once), as a dequantising kernel feeds half-precision units, and the products are summed in
float32; C is stored in the activations' dtype.

The GPU schedule (`schedule`), from the outside in:
- blocks of ``block_rows x block_cols`` outputs (``blockIdx``), ``threads_y x threads_x``
  threads, each thread ``block_rows / threads_y`` rows of ``block_cols / threads_x`` adjacent
  columns, accumulated in registers (the sum's stage in scope ``local``);
- k in steps of `step`: each step stages the block's tile of A (halves) and its **packed tile
  of Wq as bytes** (``step / 2`` rows of ``block_cols`` bytes) in shared memory;
- for each k of a step, each thread dequantises its row of W in registers (W's stage in scope
  ``local``, computed at that k: a shift, a mask, a subtraction and a multiplication per value,
  the group's scale and zero read from global memory, where every thread of a column reads the
  same ones) and multiplies it into its rows' accumulators. The unpacked weight never goes to
  shared memory.

For decoding (m = 1..16), `decode_schedule` cuts k instead: at m = 1 the block of rows above
leaves 15 of its 16 rows idle, and n / 128 blocks do not fill the GPU. Each block sums a slice
of `slice_k` rows of k into partial sums (``rfactor`` of k's outer loop, bound to
``blockIdx.y``), which a second kernel adds; each thread takes `cols` adjacent columns of all m
rows, reads its `cols` packed bytes of a row pair straight into registers (no shared memory:
each byte is read once), and dequantises them there as one vector (bfloat16 instructions two
columns at a time on sm_90) with its group's scales and zeros, kept in registers for the group.

At m = 16 the CUDA cores multiply each weight into 16 rows; `tensor_core_decode_schedule`
gives that to the tensor cores instead: `tensor_core_schedule`'s warpgroup steps, with k cut
into slices as `decode_schedule` cuts it, for m a size variable (the 64-row tile cut where m
ends). `register_decode_schedule` turns the product around (``C^T = W^T A^T``) so that the
dequantised weight is wgmma's A operand, computed in registers by the threads that hold it.
"""

from __future__ import annotations

import numpy as np

import schedlang as sl
from examples import gpu_gemm_wgmma
from schedlang.ir import dtype as dt

__all__ = [
    "apply_schedule",
    "build",
    "bytes_by_thread_order",
    "cpu_schedule",
    "decode_schedule",
    "dequantize",
    "int4_gemm",
    "pack_int4",
    "schedule",
    "register_decode_schedule",
    "tensor_core_decode_schedule",
    "tensor_core_schedule",
    "thread_bytes",
]


TENSOR_CORE_STEP = 64  # k per step of `tensor_core_schedule`: a 128-byte row of A's halves


def int4_gemm(m, n, k: int, group: int = 128, dtype: str = "float16") -> tuple[sl.Tensor, ...]:
    """``(A, Wq, W_scale, W_zero, C)``: C (m x n) = A (m x k) @ W, W the int4 weight packed in
    Wq (k // 2 x n) with its scales and zeros per `group` rows; m and n may be size
    variables, k is an int (even, a multiple of `group`: `sl.packed_int4` says so otherwise)."""
    wq, scale, zero = sl.packed_int4((k, n), group, dtype, name="W")
    a = sl.placeholder((m, k), dtype, name="A")

    def dequantised(r, j):
        return (sl.unpack_int4(wq[r // 2, j], r % 2) - zero[r // group, j]) * scale[r // group, j]

    w = sl.compute((k, n), dequantised, name="W")
    r = sl.reduce_axis((0, k), name="k")
    acc = sl.compute(
        (m, n),
        lambda i, j: sl.sum(a[i, r].astype("float32") * w[r, j].astype("float32"), axis=r),
        name="acc",
    )
    c = sl.compute((m, n), lambda i, j: acc[i, j].astype(dtype), name="C")
    return a, wq, scale, zero, c


def pack_int4(
    weight: np.ndarray, group: int, dtype: str = "float16"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(packed, scales, zeros)`` of the float matrix `weight` (k x n) quantised per group of
    `group` rows and column, asymmetrically (the scale is the group's range / 15, the zero
    the rounded -minimum / scale), in `sl.packed_int4`'s layout: row 2j in the low nibble of
    packed row j, 2j + 1 in its high."""
    k, n = weight.shape
    if k % 2 or k % group:
        raise ValueError(
            f"pack_int4: a weight of {k} rows cannot be packed in groups of {group}: its rows "
            "must be even in number and a multiple of the group"
        )
    groups = weight.reshape(k // group, group, n).astype(np.float32)
    low, high = groups.min(axis=1), groups.max(axis=1)
    scales = np.where(high > low, (high - low) / 15, 1.0).astype(dt.to_numpy(dtype))
    step = scales.astype(np.float32)
    zeros = np.clip(np.rint(-low / step), 0, 15).astype(dt.to_numpy(dtype))
    q = np.rint(groups / step[:, None] + zeros.astype(np.float32)[:, None])
    q = np.clip(q, 0, 15).astype(np.uint8).reshape(k, n)
    return q[0::2] | (q[1::2] << 4), scales, zeros


def dequantize(packed: np.ndarray, scales: np.ndarray, zeros: np.ndarray) -> np.ndarray:
    """The weight (k x n) that `packed`, `scales` and `zeros` hold, computed in their dtype as
    the algorithm computes it: numpy's reference for the tests."""
    q = np.empty((2 * packed.shape[0], packed.shape[1]), np.uint8)
    q[0::2], q[1::2] = packed & 15, packed >> 4
    group = q.shape[0] // scales.shape[0]
    values = q.astype(scales.dtype) - np.repeat(zeros, group, axis=0)
    return values * np.repeat(scales, group, axis=0)


def _stages(c: sl.Tensor) -> tuple[sl.Tensor, sl.Tensor]:
    """``(acc, W)``: the sum and the dequantised weight that C is computed from."""
    acc = next(t for t in c.op.input_tensors if t.name == "acc")
    w = next(t for t in acc.op.input_tensors if t.name == "W")
    return acc, w


def cpu_schedule(a, wq, scale, zero, c, cols: int = 16) -> sl.Schedule:
    """Blocks of `cols` columns in parallel (m may be 1); in each, row by row, k outermost and
    the columns vectorized: W is dequantised in vector registers as it is used (inlined)."""
    acc, w = _stages(c)
    s = sl.create_schedule(c.op)
    s[w].compute_inline()
    i, j = c.op.axis
    jo, ji = s[c].split(j, factor=cols)
    s[c].reorder(jo, i, ji)
    s[c].parallel(jo)
    s[c].vectorize(ji)
    s[acc].compute_at(s[c], i)
    ai, aj = s[acc].op.axis
    s[acc].reorder(ai, s[acc].op.reduce_axis[0], aj)
    s[acc].vectorize(aj)
    return s


def schedule(
    a,
    wq,
    scale,
    zero,
    c,
    block_rows: int = 16,
    block_cols: int = 128,
    threads_y: int = 4,
    threads_x: int = 32,
    step: int = 32,
    copy_bytes: int | None = 16,
) -> sl.Schedule:
    """The GPU schedule of the module docstring; `step` even (a step's rows fill whole bytes),
    `block_rows` a multiple of `threads_y`, `block_cols` of `threads_x`; each thread copies
    `copy_bytes` at once into shared memory."""
    s = sl.create_schedule(c.op)
    apply_schedule(s, a, wq, c, block_rows, block_cols, threads_y, threads_x, step, copy_bytes)
    return s


def apply_schedule(
    s: sl.Schedule,
    a,
    wq,
    c,
    block_rows: int,
    block_cols: int,
    threads_y: int,
    threads_x: int,
    step: int,
    copy_bytes: int | None,
) -> None:
    """`schedule`'s primitives on `s`, a schedule of the GEMM (or of a program around it);
    without `copy_bytes`, a thread copies one element at a time."""
    acc, w = _stages(c)
    a_shared = s.cache_read(a, "shared", [acc])
    wq_shared = s.cache_read(wq, "shared", [w])
    s[acc].set_scope("local")
    s[w].set_scope("local")

    i, j = c.op.axis
    by, i = s[c].split(i, factor=block_rows)
    bx, j = s[c].split(j, factor=block_cols)
    ty, i = s[c].split(i, nparts=threads_y)
    tx, j = s[c].split(j, nparts=threads_x)
    s[c].reorder(by, bx, ty, tx, i, j)
    for axis, tag in ((by, "blockIdx.y"), (bx, "blockIdx.x"), (ty, "threadIdx.y")):
        s[c].bind(axis, sl.thread_axis(tag))
    s[c].bind(tx, sl.thread_axis("threadIdx.x"))

    s[acc].compute_at(s[c], tx)
    ko, ki = s[acc].split(s[acc].op.reduce_axis[0], factor=step)
    s[acc].reorder(ko, ki, *s[acc].op.axis)
    s[acc].unroll(ki)
    s[w].compute_at(s[acc], ki)

    for staged in (a_shared, wq_shared):
        s[staged].compute_at(s[acc], ko)
        rest = s[staged].fuse(*s[staged].op.axis)
        if copy_bytes is not None:
            rest, lanes = s[staged].split(rest, factor=copy_bytes // dt.itemsize(staged.dtype))
            s[staged].vectorize(lanes)
        rest, fx = s[staged].split(rest, factor=threads_x)
        _, fy = s[staged].split(rest, factor=threads_y)
        s[staged].bind(fy, sl.thread_axis("threadIdx.y"))
        s[staged].bind(fx, sl.thread_axis("threadIdx.x"))


def tensor_core_schedule(
    a, wq, scale, zero, c, block_rows: int = 128, block_cols: int = 128, stages: int = 3
) -> sl.Schedule:
    """Prefill on Hopper's warpgroup tensor cores (sm_90a): `gpu_gemm_wgmma`'s blocks of
    `block_rows` x `block_cols` outputs, a warpgroup per 64 rows, k by 64. Each step, A's tile
    and the **packed** tile of Wq (32 rows of `block_cols` bytes) come by asynchronous copies
    `stages` - 1 steps ahead; the block's threads then dequantise W's tile from the packed one
    straight into the swizzled shared tile that wgmma reads as its B operand (W's stage, in
    shared memory, 16 bytes a thread). The unpacked weight is never in global memory, and the
    bytes a step brings are A's and a quarter of W's."""
    acc, w = _stages(c)
    s = sl.create_schedule(c.op)
    s[acc].set_scope("wgmma.accumulator")
    groups = block_rows // gpu_gemm_wgmma.GROUP_ROWS
    ko = gpu_gemm_wgmma.warpgroup_tiles(
        s, c, acc, a.dtype, block_rows, block_cols, TENSOR_CORE_STEP
    )
    _stage_operands(s, a, wq, w, acc, ko, groups, stages)
    return s


def _stage_operands(s, a, wq, w, product, at, groups: int, stages: int) -> None:
    """A's tile and the packed tile of Wq copied at loop `at` of the wgmma `product`, `stages`
    - 1 steps ahead; W's tile computed there from the packed one into wgmma's swizzled B
    tile by the block's threads."""
    gpu_gemm_wgmma.stage_tile(
        s, s.cache_read(a, "shared", [product]), s[product], at, groups, stages
    )
    s[w].set_scope("shared")
    gpu_gemm_wgmma.stage_tile(s, w, s[product], at, groups, 1)  # computed there, not copied
    packed = s.cache_read(wq, "shared", [w])
    gpu_gemm_wgmma.stage_tile(s, packed, s[product], at, groups, stages, swizzle=False)


def tensor_core_decode_schedule(
    a, wq, scale, zero, c, slice_k: int = 512, block_cols: int = 128, stages: int = 2
) -> sl.Schedule:
    """Decoding (m = 1..64, m a size variable) on Hopper's warpgroup tensor cores (sm_90a):
    `tensor_core_schedule`'s steps, but k cut into slices of `slice_k` rows (a multiple of
    64) summed by blocks of their own, as `decode_schedule` cuts it, each block one
    warpgroup over `block_cols` columns and all the rows (64, those past m never stored); a
    second kernel adds the slices' partial sums. At m = 16 each weight then costs its
    dequantisation alone, where the CUDA cores multiply it into 16 rows (sixteen
    multiply-adds and A's widening); at m = 1 those are few, and `decode_schedule` is faster."""
    acc, w = _stages(c)
    s = sl.create_schedule(c.op)
    sliced, _ = s[acc].split(s[acc].op.reduce_axis[0], factor=slice_k)
    partial = s.rfactor(acc, sliced)
    product = s.cache_write(partial, "wgmma.accumulator")
    k_slice, i, j = partial.op.axis
    bi, i = s[partial].split(i, factor=gpu_gemm_wgmma.GROUP_ROWS)
    bj, j = s[partial].split(j, factor=block_cols)
    s[partial].reorder(k_slice, bi, bj, i, j)
    blocks = ((k_slice, "blockIdx.y"), (bi, "blockIdx.z"), (bj, "blockIdx.x"))
    for axis, tag in blocks:
        s[partial].bind(axis, sl.thread_axis(tag))
    s[partial].tensorize(i, sl.intrin.store_matrix(n=block_cols, m=gpu_gemm_wgmma.GROUP_ROWS))
    s[product].compute_at(s[partial], bj)
    ko, _ = _warpgroup_steps(s, product, block_cols)
    _stage_operands(s, a, wq, w, product, ko, 1, stages)
    _add_slices(s, c, acc)
    return s


def _warpgroup_steps(s: sl.Schedule, product, n: int, step: int = TENSOR_CORE_STEP) -> tuple:
    """``(steps, tiles)``: the loops over `product`'s steps of k of `step` rows and over each
    step's 16-row tiles, inside which wgmma (its n = `n`) computes the tile of the last two
    dimensions (a slice's partial sums)."""
    _, rows, columns = s[product].op.axis
    steps, k = s[product].split(s[product].op.reduce_axis[0], factor=step)
    tiles, k = s[product].split(k, factor=16)
    s[product].reorder(steps, tiles, rows, columns, k)
    s[product].tensorize(rows, sl.intrin.wgmma(n=n))
    return steps, tiles


def register_decode_schedule(
    a,
    wq,
    scale,
    zero,
    c,
    slice_k: int = 512,
    rows: int = 16,
    stages: int = 2,
    bytes_by_thread: bool = False,
    step: int = TENSOR_CORE_STEP,
    sum_lanes: int = 2,
) -> sl.Schedule:
    """Decoding (m a size variable, `rows` of them a block: 8 or 16) with the dequantised
    weight as wgmma's A operand in registers: the product transposed, ``C^T = W^T A^T``, each
    block one warpgroup over 64 columns of n (the instruction's M) and `rows` rows of A (its N),
    k cut into slices of `slice_k` as in `tensor_core_decode_schedule`. W's stage is laid out
    as [n, k] (its loops reordered, then ``cache_write`` into a warpgroup fragment, W itself
    inlined), and each thread computes its own elements of it from the packed bytes, `step`
    rows of k at a time (all the step's bytes loaded before its products; 128 is faster on
    an H200, 64 takes fewer registers), each byte's two nibbles as one bfloat16x2 register
    (the stage vectorized over k): no shared tile of W, no barrier between the
    dequantisation and the product. The partial sums, held as [n, rows], are stored
    transposed by ``store_matrix``.

    With `bytes_by_thread`, Wq arrives in `thread_bytes`'s order (`bytes_by_thread_order`
    makes it; n a multiple of 64): the four bytes a thread reads for a step of 16 adjacent,
    a warp's 128 in one line, where the plain layout spreads them over four rows of Wq.
    The second kernel adds the slices `sum_lanes` columns a thread (`_add_slices`; 0: eight
    warps a block of 32 columns)."""
    acc, w = _stages(c)
    s = sl.create_schedule(c.op)
    sliced, _ = s[acc].split(s[acc].op.reduce_axis[0], factor=slice_k)
    partial = s.rfactor(acc, sliced)
    k_slice, i, j = partial.op.axis
    s[partial].reorder(k_slice, j, i)
    product = s.cache_write(partial, "wgmma.accumulator")  # [slice, n, m]
    s[w].reorder(*reversed(w.op.axis))
    weight = s.cache_write(w, "wgmma.accumulator")  # [n, k]: rows of the A operand
    s[w].compute_inline()
    k_slice, i, j = partial.op.axis
    bj, j = s[partial].split(j, factor=gpu_gemm_wgmma.GROUP_ROWS)
    bi, i = s[partial].split(i, factor=rows)
    s[partial].reorder(k_slice, bj, bi, j, i)
    for axis, tag in ((k_slice, "blockIdx.y"), (bj, "blockIdx.x"), (bi, "blockIdx.z")):
        s[partial].bind(axis, sl.thread_axis(tag))
    s[partial].tensorize(j, sl.intrin.store_matrix(n=rows, m=gpu_gemm_wgmma.GROUP_ROWS))
    s[product].compute_at(s[partial], bi)
    ko, kio = _warpgroup_steps(s, product, rows, step)
    s[weight].compute_at(s[product], ko)
    s[weight].vectorize(weight.op.axis[1])  # a thread's two k of a row: one byte, one bf16x2
    a_tile = s.cache_read(a, "shared", [product])
    gpu_gemm_wgmma.stage_tile(s, a_tile, s[product], ko, 1, stages)
    if bytes_by_thread:
        s[wq].transform_layout(thread_bytes)
    _add_slices(s, c, acc, sum_lanes)
    return s


def thread_bytes(kp, j):
    """Where Wq's byte [kp, j] goes for `register_decode_schedule`'s threads: by steps of 16
    rows of k (8 bytes: ``kp // 8``), blocks of 64 columns, the warp (16 columns), the row in
    the lane's quad (``j % 8``), the quad's lane (``kp % 4``), then the thread's own four
    bytes: its two rows (``j % 16 // 8``) and its two k-pairs of the step (``kp % 8 // 4``),
    the accumulator fragment's layout of wgmma's A operand."""
    return [kp // 8, j // 64, j % 64 // 16, j % 8, kp % 4, j % 16 // 8, kp % 8 // 4]


def bytes_by_thread_order(packed: np.ndarray) -> np.ndarray:
    """`packed` (k / 2 x n bytes, n a multiple of 64) in `thread_bytes`'s order, as the
    caller passes it to a kernel built with ``bytes_by_thread=True`` (done once per weight,
    as torch's tinygemm repacks its weights)."""
    half_k, n = packed.shape
    if half_k % 8 or n % 64:
        raise ValueError(
            f"bytes_by_thread_order: a packed weight of {half_k} x {n} bytes; the threads' "
            "order takes rows in steps of 8 (16 rows of k) and columns in blocks of 64"
        )
    tiles = packed.reshape(half_k // 8, 2, 4, n // 64, 4, 2, 8)  # kp = 8 s + 4 t + q, j = ...
    return np.ascontiguousarray(tiles.transpose(0, 3, 4, 6, 2, 5, 1))


def decode_schedule(
    a,
    wq,
    scale,
    zero,
    c,
    slice_k: int = 128,
    cols: int = 4,
    warps: int = 8,
    unroll: int = 4,
    rows: int | None = None,
) -> sl.Schedule:
    """The decoding schedule of the module docstring: blocks of ``32 * warps`` threads, each
    thread `cols` columns of `rows` rows (all m where m is an int, else 8; more rows are more
    blocks), over slices of `slice_k` rows of k (even; a multiple of the group or a divisor of
    it keeps a slice's scales in one group per step), `unroll` row pairs a step."""
    acc, w = _stages(c)
    group = int(a.shape[1]) // int(scale.shape[0])
    s = sl.create_schedule(c.op)
    sliced, _ = s[acc].split(s[acc].op.reduce_axis[0], factor=slice_k)
    partial = s.rfactor(acc, sliced)
    summed = s.cache_write(partial, "local")
    s[w].set_scope("local")
    packed = s.cache_read(wq, "local", [w])
    scales = [s.cache_read(t, "local", [w]) for t in (scale, zero)]
    row = s.cache_read(a, "local", [summed])

    k_slice, i, j = s[partial].op.axis
    m = a.shape[0]
    bz, i = s[partial].split(i, factor=rows or (8 if isinstance(m, sl.Var) else int(m)))
    bx, j = s[partial].split(j, factor=cols * 32 * warps)
    ty, j = s[partial].split(j, nparts=warps)
    tx, j = s[partial].split(j, nparts=32)
    s[partial].reorder(k_slice, bz, bx, ty, tx, i, j)
    blocks = ((k_slice, "blockIdx.y"), (bz, "blockIdx.z"), (bx, "blockIdx.x"))
    for axis, tag in (*blocks, (ty, "threadIdx.y")):
        s[partial].bind(axis, sl.thread_axis(tag))
    s[partial].bind(tx, sl.thread_axis("threadIdx.x"))

    s[summed].compute_at(s[partial], tx)
    groups, r = s[summed].split(s[summed].op.reduce_axis[0], factor=min(group, slice_k))
    pairs, half = s[summed].split(r, factor=2)
    steps, pairs = s[summed].split(pairs, factor=unroll)
    s[summed].reorder(groups, steps, pairs, half, *s[summed].op.axis)
    s[summed].unroll(pairs)
    for staged in scales:
        s[staged].compute_at(s[summed], groups)
    for staged in (w, packed, row):
        s[staged].compute_at(s[summed], pairs)
    for staged in (*scales, packed, row, w):
        s[staged].vectorize(s[staged].op.axis[1])
    s[row].unroll(s[row].op.axis[0])  # A's rows in registers, each pair widened by halves

    _add_slices(s, c, acc)
    return s


def _add_slices(s: sl.Schedule, c, acc, lanes: int = 0) -> None:
    """C's kernel: the slices' partial sums (`acc`, the sum over the slices of k) added.
    By default by blocks of 32 columns, each column's slices shared by 8 warps and their
    sums combined across them: at m = 1, 80 blocks of 128 threads each adding all the slices
    of its column left most multiprocessors idle (5.5 us at 8192 x 10240). With `lanes`,
    each thread adds all the slices of `lanes` adjacent columns as vectors, 128 threads a
    block: at m = 16 the blocks are enough, and the 8 warps' combining (three barriers a
    block of 32 columns) took 7 us of a 39 us call."""
    i, j = c.op.axis
    if lanes:
        columns, lane = s[c].split(j, factor=lanes)
        out, thread = s[c].split(s[c].fuse(i, columns), factor=128)
        s[c].bind(out, sl.thread_axis("blockIdx.x"))
        s[c].bind(thread, sl.thread_axis("threadIdx.x"))
        s[acc].compute_at(s[c], thread)
        s[acc].reorder(s[acc].op.reduce_axis[0], s[acc].op.axis[1])
        s[acc].unroll(s[acc].op.reduce_axis[0])  # every slice's load in flight at once
        s[acc].vectorize(s[acc].op.axis[1])
        s[c].vectorize(lane)
        return
    columns, lane = s[c].split(j, factor=32)
    out = s[c].fuse(i, columns)
    s[c].bind(out, sl.thread_axis("blockIdx.x"))
    s[c].bind(lane, sl.thread_axis("threadIdx.x"))
    s[acc].compute_at(s[c], out)
    s[acc].set_scope("shared")
    s[acc].bind(s[acc].op.axis[1], sl.thread_axis("threadIdx.x"))
    slices, _ = s[acc].split(s[acc].op.reduce_axis[0], nparts=8)
    s[acc].bind(slices, sl.thread_axis("threadIdx.y"))


def build(m, n, k, group: int = 128, dtype: str = "float16", target: str = "cuda", **options):
    """The GEMM built for `target` with `schedule`'s `options` (`cpu_schedule` for "cpu",
    `decode_schedule` when `options` has ``decode=True``, `tensor_core_schedule` with
    ``tensor_cores=True``, `tensor_core_decode_schedule` with a ``slice_k`` too,
    `register_decode_schedule` with ``registers=True``)."""
    tensors = int4_gemm(m, n, k, group, dtype)
    make = schedule
    if target == "cpu":
        make = cpu_schedule
    elif options.pop("decode", False):
        make = decode_schedule
    elif options.pop("registers", False):
        make = register_decode_schedule
    elif options.pop("tensor_cores", False):
        make = tensor_core_decode_schedule if "slice_k" in options else tensor_core_schedule
    return sl.build(make(*tensors, **options), list(tensors), target=target)
