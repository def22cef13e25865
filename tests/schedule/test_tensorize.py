"""tensorize: what the loop nest becomes, and every way a tensorized schedule is refused.

The values of tensorized kernels are checked by the SIMT interpreter (tests/cuda/
test_tensor_cores.py) and on a GPU; here: the loop nest printed, the replayable text, and the
errors, each naming the primitive and what to change.
"""

from __future__ import annotations

import pytest

import schedlang as sl
from examples import gpu_gemm_fp16 as example
from schedlang.schedule.errors import TensorizeError


def small(m=64, n=64, k=64, dtype="float16", **options):
    """The example's GEMM with one block of 2 x 2 warps of 32 x 32 outputs."""
    a, b, c = example.gemm(m, n, k, dtype)
    opts = dict(block_rows=64, block_cols=64, warp_rows=32, warp_cols=32, step=32)
    opts.update(options)
    return example.schedule(a, b, c, **opts), [a, b, c]


def test_the_tile_loops_become_one_matrix_op_each():
    s, args = small()
    text = str(sl.lower(s, args))
    assert "C.wmma.accumulator[16 * i.c.outer:+16, 16 * j.c.outer:+16] = fill(0.0)" in text
    assert "+= mma_sync(A.shared.wmma.matrix_a[16 * i.c.outer_1:+16, 0:+16] @ " in text
    assert "= load_matrix(A.shared[k.outer, " in text
    assert "= store_matrix(C.wmma.accumulator[" in text
    assert "in wmma.accumulator" in text
    # the tile loops are gone: no loop of 16 iterations is left
    assert "range(0, 16)" not in text


def test_tensorize_replays_from_its_text():
    s, args = small()
    text = str(s)
    assert "s[C_wmma_accumulator].tensorize(" in text
    assert "sl.intrin.mma_sync(n=16))" in text
    assert 'sl.intrin.load_matrix("wmma.matrix_a"))' in text
    copy = s.copy()
    assert str(sl.lower(copy, args)) == str(sl.lower(s, args))


def test_bfloat16_operands_lower():
    s, args = small(dtype="bfloat16")
    assert "mma_sync" in str(sl.lower(s, args))


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"step": 8}, r"the loop 'ax0' has extent 8, the intrinsic needs 16; split it by 16"),
        ({"k": 40}, r"the reduction's tile loop 'k.inner.inner' runs part of a tile.*padding"),
        ({"dtype": "float32"}, r"float32, which the tensor cores multiply only as TF32"),
    ],
)
def test_mismatches_are_named(options, match):
    s, args = small(**options)
    with pytest.raises(TensorizeError, match=match):
        sl.lower(s, args)


def test_a_symbolic_reduction_names_a_size_that_cuts_a_tile():
    s, args = small(k=sl.var("k"))
    with pytest.raises(TensorizeError, match=r"runs part of a tile \(e\.g\. where k = \d+\)"):
        sl.lower(s, args)


def test_a_tile_cut_along_the_rows_is_stored_within_the_tensor():
    s, args = small(m=40)
    text = str(sl.lower(s, args))
    assert "= store_matrix(C.wmma.accumulator[" in text and "]) within C" in text


def test_a_tile_cut_in_global_memory_is_refused():
    a, b, c = example.gemm(24, 16, 16)
    s = sl.create_schedule(c.op)
    af = s.cache_read(a, "wmma.matrix_a", [c])
    bf = s.cache_read(b, "wmma.matrix_b", [c])
    bs = s.cache_read(b, "shared", [bf])
    cf = s.cache_write(c, "wmma.accumulator")
    io, ii = s[c].split(c.op.axis[0], factor=16)
    s[c].tensorize(ii, sl.intrin.store_matrix())
    s[cf].compute_at(s[c], io)
    s[cf].tensorize(s[cf].op.axis[0], sl.intrin.mma_sync())
    for frag in (af, bf, bs):
        s[frag].compute_at(s[c], io)  # A's fragment straight from A
    s[af].tensorize(s[af].op.axis[0], sl.intrin.load_matrix("wmma.matrix_a"))
    s[bf].tensorize(s[bf].op.axis[0], sl.intrin.load_matrix("wmma.matrix_b"))
    _, lanes = s[bs].split(s[bs].fuse(*s[bs].op.axis), factor=32)
    s[bs].bind(lanes, sl.thread_axis("threadIdx.x"))
    with pytest.raises(TensorizeError, match=r"'A' is a tensor in global memory, past whose end"):
        sl.lower(s, [a, b, c])


def _mma_stage(tile_k=16, bind_lanes=False, lanes=32, scope="wmma.accumulator", reorder=True):
    """One warp, fragments loaded straight from global memory."""
    a, b, c = example.gemm(16, 16, 32)
    s = sl.create_schedule(c.op)
    af = s.cache_read(a, "wmma.matrix_a", [c])
    bf = s.cache_read(b, "wmma.matrix_b", [c])
    cf = s.cache_write(c, scope)
    i, j = c.op.axis
    s[c].tensorize(i, sl.intrin.store_matrix())
    ko, ki = s[cf].split(s[cf].op.reduce_axis[0], factor=tile_k)
    fi, fj = s[cf].op.axis
    if reorder:
        s[cf].reorder(ko, fi, fj, ki)
    if bind_lanes:
        o, fi = s[cf].split(fi, nparts=1)
        s[cf].bind(o, sl.thread_axis("threadIdx.x"))
    s[cf].tensorize(fi, sl.intrin.mma_sync())
    for frag in (af, bf):
        s[frag].compute_at(s[cf], ko)
        scope = "wmma.matrix_a" if frag is af else "wmma.matrix_b"
        s[frag].tensorize(s[frag].op.axis[0], sl.intrin.load_matrix(scope))
    return s, [a, b, c]


def test_the_lanes_must_be_32_threads():
    s, args = _mma_stage()
    with pytest.raises(TensorizeError, match=r"needs threadIdx.x of extent 32, and it has no loop"):
        sl.lower(s, args)


def test_a_stage_computed_inside_the_tile_loops_is_refused():
    s, args = _mma_stage(reorder=False)
    match = r"'A.wmma.matrix_a' is computed at 'k.outer', inside the loops the tensor instruction"
    with pytest.raises(TensorizeError, match=match):
        sl.lower(s, args)


def test_a_tile_of_the_wrong_scope_is_refused():
    s, args = _mma_stage(scope="local")
    with pytest.raises(TensorizeError, match=r"'C.local' has scope 'local'; it must be"):
        sl.lower(s, args)


def test_the_lane_index_cannot_be_bound_in_a_tensorized_stage():
    s, args = _mma_stage(bind_lanes=True)
    with pytest.raises(TensorizeError, match=r"bound to threadIdx.x, but threadIdx.x is the lane"):
        sl.lower(s, args)


def test_a_fragment_must_be_tensorized_to_build_but_prints_before():
    """As TE prints a schedule before tensorize, lower shows the fragment's copy as loops;
    a build refuses it."""
    a, b, c = example.gemm(16, 16, 16)
    s = sl.create_schedule(c.op)
    s.cache_read(a, "wmma.matrix_a", [c])
    text = str(sl.lower(s, [a, b, c]))
    assert "allocate A.wmma.matrix_a: float16[16, 16] in wmma.matrix_a" in text
    match = r"'A.wmma.matrix_a': its scope .* is a tensor-core fragment"
    with pytest.raises(TensorizeError, match=match):
        sl.build(s, [a, b, c], target="cuda")


def test_a_fragment_read_element_by_element_is_refused():
    a, b, c = example.gemm(16, 16, 16)
    s = sl.create_schedule(c.op)
    af = s.cache_read(a, "wmma.matrix_a", [c])
    s[af].tensorize(s[af].op.axis[0], sl.intrin.load_matrix("wmma.matrix_a"))
    match = r"'C': it reads the fragment 'A.wmma.matrix_a' element by"
    with pytest.raises(TensorizeError, match=match):
        sl.build(s, [a, b, c], target="cuda")


def test_primitive_checks_at_the_call():
    a, b, c = example.gemm(16, 16, 16)
    s = sl.create_schedule(c.op)
    i, j = c.op.axis
    with pytest.raises(TensorizeError, match=r"is not a tensor intrinsic"):
        s[c].tensorize(i, "mma")
    s[c].vectorize(j)
    with pytest.raises(TensorizeError, match=r"'j' is vectorized; the loops a tensor instruction"):
        s[c].tensorize(i, sl.intrin.store_matrix())
    assert "tensorize" not in str(s)


def test_intrinsic_arguments_are_checked():
    with pytest.raises(ValueError, match="n must be 8 or 16"):
        sl.intrin.mma_sync(n=32)
    with pytest.raises(ValueError, match="unknown scope 'shared'"):
        sl.intrin.load_matrix("shared")


def test_a_fused_tile_loop_is_refused():
    a, b, c = example.gemm(16, 16, 16)
    s = sl.create_schedule(c.op)
    i, j = c.op.axis
    f = s[c].fuse(i, j)
    o, f = s[c].split(f, factor=16)
    s[c].tensorize(o, sl.intrin.store_matrix())
    with pytest.raises(TensorizeError):
        sl.lower(s, [a, b, c])
