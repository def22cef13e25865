"""The example's tensor-core GEMM schedule (`examples/gpu_gemm_fp16.schedule`) mirrored step
for step, with one `Defect` applied: the tensor-core fuzz family (tensor_cores.py) draws the
example itself for its clean cases, and this mirror for the cases that change one thing in it
(a tile, a scope, the lanes, the copy width, the swizzle, the loop order). With the default
`Defect()` the mirror lowers to the example's loop nest (test_tensor_cores.py checks it), so a
change the example's authors make shows up there, and the mirror must follow.
"""

from __future__ import annotations

from dataclasses import dataclass

import schedlang as sl
from examples import gpu_gemm_fp16 as example

TILE = example.TILE


@dataclass(frozen=True)
class Defect:
    """One change to the example's schedule: `name` says which, the fields what the mirrored
    schedule (`schedule_with`) does instead; 0 and the defaults are the example's choices."""

    name: str = ""
    must_refuse: bool = False
    kind: str = ""  # the entry of DEFECTS that drew it: the family in a campaign's tally
    store_tile: int = TILE
    mma_tile: int = TILE
    k_tile: int = 0  # 0: the instruction's reduction, 16 (8 for TF32)
    load_tile: int = 0  # 0: the instruction's operand tiles
    a_scope: str = "wmma.matrix_a"
    b_scope: str = "wmma.matrix_b"
    acc_scope: str = "wmma.accumulator"
    a_intrinsic: str = "wmma.matrix_a"  # the scope load_matrix is told for A's fragments
    lanes: int = 32
    vector: int = 0  # elements each thread copies into shared memory at once; 0: 16 bytes
    swizzle_bytes: int = 128  # the line whose 16-byte chunks the shared tiles permute
    k_inside: bool = False  # the k tiles inside the accumulator's tile loops, not outside
    fragments_at_step: bool = False  # A and B fragments loaded for the whole k step at once


def schedule_with(
    defect: Defect,
    a: sl.Tensor,
    b: sl.Tensor,
    c: sl.Tensor,
    block_rows: int = 128,
    block_cols: int = 128,
    warp_rows: int = 64,
    warp_cols: int = 32,
    step: int = 64,
    stages: int = 3,
    double_buffer: bool = False,
    layout: str = "swizzle",
    tf32: bool = False,
) -> sl.Schedule:
    """`example.schedule`, step for step, but with `defect`'s tiles, scopes, lanes and copy
    width; with the default `Defect()` it lowers to the example's loop nest (tested)."""
    k_tile = defect.k_tile or (8 if tf32 else TILE)
    vector = defect.vector or 16 // (4 if a.dtype == "float32" else 2)
    s = sl.create_schedule(c.op)
    product = c.op.input_tensors[0] if c.op.input_tensors[0].op is not a.op else c
    a_shared = s.cache_read(a, "shared", [product])
    b_shared = s.cache_read(b, "shared", [product])
    a_frag = s.cache_read(a_shared, defect.a_scope, [product])
    b_frag = s.cache_read(b_shared, defect.b_scope, [product])
    if product is c:
        acc = s.cache_write(c, defect.acc_scope)
    else:
        acc = product
        s[acc].set_scope(defect.acc_scope)
    warps_y, warps_x = block_rows // warp_rows, block_cols // warp_cols

    i, j = c.op.axis
    bi, i = s[c].split(i, factor=block_rows)
    bj, j = s[c].split(j, factor=block_cols)
    wi, i = s[c].split(i, factor=warp_rows)
    wj, j = s[c].split(j, factor=warp_cols)
    ti, i = s[c].split(i, factor=defect.store_tile)
    tj, j = s[c].split(j, factor=defect.store_tile)
    s[c].reorder(bi, bj, wi, wj, ti, tj, i, j)
    s[c].bind(bi, sl.thread_axis("blockIdx.y"))
    s[c].bind(bj, sl.thread_axis("blockIdx.x"))
    s[c].bind(wi, sl.thread_axis("threadIdx.z"))
    s[c].bind(wj, sl.thread_axis("threadIdx.y"))
    s[c].tensorize(i, sl.intrin.store_matrix())

    s[acc].compute_at(s[c], wj)
    fi, fj = s[acc].op.axis
    fio, fi = s[acc].split(fi, factor=defect.mma_tile)
    fjo, fj = s[acc].split(fj, factor=defect.mma_tile)
    ko, ki = s[acc].split(s[acc].op.reduce_axis[0], factor=step)
    kio, ki = s[acc].split(ki, factor=k_tile)
    if defect.k_inside:
        s[acc].reorder(ko, fio, fjo, kio, fi, fj, ki)
    else:
        s[acc].reorder(ko, kio, fio, fjo, fi, fj, ki)
    s[acc].tensorize(fi, sl.intrin.mma_sync(tf32=tf32))

    for frag, scope in ((a_frag, defect.a_intrinsic), (b_frag, "wmma.matrix_b")):
        s[frag].compute_at(s[acc], ko if defect.fragments_at_step else kio)
        rows, cols = s[frag].op.axis
        width = defect.load_tile or (k_tile if frag is a_frag else TILE)
        outer, cols = s[frag].split(cols, factor=width)
        s[frag].reorder(outer, rows, cols)
        if frag is a_frag:
            outer, rows = s[frag].split(rows, factor=defect.load_tile or TILE)
        elif defect.fragments_at_step:  # B's rows are the k step's: k tiles of them
            outer, rows = s[frag].split(rows, factor=defect.load_tile or k_tile)
        s[frag].tensorize(rows, sl.intrin.load_matrix(scope, tf32=tf32))

    for staged in (a_shared, b_shared):
        s[staged].compute_at(s[acc], ko)
        rows, cols = s[staged].op.axis
        if layout == "swizzle":
            s[staged].swizzle(defect.swizzle_bytes)
        else:
            s[staged].storage_align(rows, 32, 8)
        rest = s[staged].fuse(rows, cols)
        if vector > 1:
            rest, lanes = s[staged].split(rest, factor=vector)
        rest, tx = s[staged].split(rest, factor=defect.lanes)
        rest, ty = s[staged].split(rest, factor=warps_x)
        _, tz = s[staged].split(rest, factor=warps_y)
        s[staged].bind(tx, sl.thread_axis("threadIdx.x"))
        s[staged].bind(ty, sl.thread_axis("threadIdx.y"))
        s[staged].bind(tz, sl.thread_axis("threadIdx.z"))
        if vector > 1:
            s[staged].vectorize(lanes)
        if stages >= 2:
            s[staged].pipeline(stages)
        elif double_buffer:
            s[staged].double_buffer()
    return s
