"""Schedules the fuzzer (and the random properties before it) found answered wrongly,
minimised, each checked the way the fuzzer checks it."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from examples import gpu_gemm_fp16 as gemm_fp16
from examples import gpu_gemm_wgmma
from schedlang.loopir.interpret import run
from schedlang.schedule.errors import PlacementError, RFactorError
from tests.schedule.util import check

from .cases import Case
from .properties import check_cpu, check_simt
from .verdict import Tally


def test_chain_transposed_read_at_leaf():
    a = sl.placeholder((7, 7), name="A")
    p = sl.compute((7, 7), lambda i, j: a[j, i] * 3.0, name="P")
    c = sl.compute((7, 7), lambda i, j: p[j, i] + 1.0, name="C")
    s = sl.create_schedule(c)
    xo, xi = s[c].split(c.op.axis[1], factor=4)
    s[p].compute_at(s[c], xo)
    check(s, [a], [c])


def test_compute_at_inner_of_split_moved_outside():
    """isl gives the producer's loop a step of 2."""
    a = sl.placeholder((3, 1), name="A")
    p = sl.compute((3, 1), lambda i, j: a[i, j] * 3.0, name="P")
    c = sl.compute((3, 1), lambda i, j: p[i, j] + a[i, j], name="C")
    s = sl.create_schedule(c)
    i, j = c.op.axis
    io, ii = s[c].split(i, factor=1)
    ioo, ioi = s[c].split(io, factor=2)
    s[c].reorder(ioi, ioo, ii, j)
    s[p].compute_at(s[c], ioi)
    check(s, [a], [c])


def chain(shape, outputs_both: bool):
    a = sl.placeholder(shape, name="A")
    p = sl.compute(shape, lambda i, j: a[i, j] * 3.0 - a[i, j], name="P")
    c = sl.compute(shape, lambda i, j: p[i, j] * 3.0 - a[i, j], name="C")
    return a, p, c


def test_compute_at_a_loop_split_afterwards_names_the_compute_at():
    """Lowering looked for the loop among the consumer's current loops and raised
    StopIteration."""
    a, p, c = chain((4, 3), outputs_both=False)
    s = sl.create_schedule(c)
    s[p].compute_at(s[c], c.op.axis[0])
    s[c].split(c.op.axis[0], factor=2)
    with pytest.raises(PlacementError, match=r"compute_at\(s\[C\], i\) .*split or fused after"):
        sl.lower(s, [a, c])


def test_an_output_computed_at_another_outputs_loop_is_refused():
    """The output was stored into a one-row box at the start of the caller's array."""
    a, p, c = chain((2, 1), outputs_both=True)
    s = sl.create_schedule([p, c])
    with pytest.raises(PlacementError, match=r"compute_at\(s\[C\], i\) .*'P' is an output"):
        s[p].compute_at(s[c], c.op.axis[0])


def test_rfactor_after_nparts_of_a_symbolic_reduce_axis_names_the_rfactor():
    """rfactor asked a symbolic extent for its constant value (AttributeError)."""
    n = sl.var("n")
    a = sl.placeholder((3, n), name="A")
    k = sl.reduce_axis((0, n), name="k")
    r = sl.compute((3,), lambda i: sl.sum(a[i, k], axis=k), name="R")
    s = sl.create_schedule(r)
    ko, _ = s[r].split(k, nparts=2)
    with pytest.raises(RFactorError, match=r"rfactor\(R, k.outer.*split it by factor="):
        s.rfactor(r, ko)


@pytest.mark.parametrize("factor_axis", [0, 1])
def test_rfactor_of_a_reduce_axis_in_more_parts_than_it_fills(factor_axis):
    """k of 8 in 5 parts of 2 leaves the fifth part past the end; the factored stage read it
    unguarded (a read outside A, refused as the algorithm's own) where the split divided."""
    a = sl.placeholder((3, 8), name="A")
    b = sl.placeholder((8, 5), name="B")
    k = sl.reduce_axis((0, 8), name="k")
    c = sl.compute((3, 5), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
    s = sl.create_schedule(c)
    ko, _ = s[c].split(k, nparts=5)
    s.rfactor(c, ko, factor_axis)
    check(s, [a, b], [c])


def conv_like():
    a = sl.placeholder((2, 3, 3), name="A")
    w = sl.placeholder((1, 2), name="W")
    apad = sl.compute((2, 3, 3), lambda c, y, x: a[c, y, x] + 1.0, name="Apad")
    rc = sl.reduce_axis((0, 2), name="rc")
    out = sl.compute(
        (1, 3, 3), lambda f, y, x: sl.sum(apad[rc, y, x] * w[f, rc], axis=rc), name="Out"
    )
    return Case("conv2d", [a, w], [out]), apad, out


def producer_bound_to_threads_only():
    case, apad, out = conv_like()
    s = sl.create_schedule(out)
    s[apad].bind(apad.op.axis[0], sl.thread_axis("threadIdx.y"))
    fo, fi = s[out].split(out.op.axis[0], factor=1)
    s[out].bind(fo, sl.thread_axis("blockIdx.x"))
    s[out].bind(fi, sl.thread_axis("threadIdx.x"))
    return case, s


def test_a_block_loop_of_extent_one_keeps_its_kernel():
    """isl drops a loop with one value: the output's blockIdx loop vanished, and with no
    block loop left the GPU target ran both stages as one block, every thread of the
    producer's threadIdx.y writing the output."""
    case, s = producer_bound_to_threads_only()
    kernel = sl.build(s, case.inputs + case.outputs, target="cuda")
    blocks = [config.block for config in kernel.launch_config]
    assert blocks == [(1, 2, 1), (1, 1, 1)]


def test_the_interpreter_gives_each_kernel_its_own_block():
    """The SIMT interpreter laid out one block for the whole function (the largest extent of
    each threadIdx tag), so the second kernel's statements ran on both threadIdx.y lanes of
    the first kernel's block: a race the GPU does not have."""
    case, s = producer_bound_to_threads_only()
    tally = Tally()
    check_simt(case, s, tally)
    assert tally.counts["ran and matched"] == 1


def test_a_shared_stage_at_the_root_is_not_read_by_another_kernel():
    """A shared copy filled by one kernel was read by the next, whose block loop had
    vanished: now the two are one kernel with two block loops, which the GPU target
    refuses."""
    a = sl.placeholder((2, 1), name="A")
    b = sl.placeholder((1, 1), name="B")
    k = sl.reduce_axis((0, 1), name="k")
    c = sl.compute((2, 1), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
    s = sl.create_schedule(c)
    cached = s.cache_read(a, "shared", [c])
    outer, inner = s[cached].split(s[cached].op.axis[0], factor=1)
    s[cached].bind(outer, sl.thread_axis("blockIdx.x"))
    s[cached].bind(inner, sl.thread_axis("threadIdx.x"))
    co, ci = s[c].split(c.op.axis[0], factor=2)
    s[c].bind(co, sl.thread_axis("blockIdx.x"))
    s[c].bind(ci, sl.thread_axis("threadIdx.x"))
    tally = Tally()
    check_simt(Case("matmul", [a, b], [c]), s, tally)
    assert tally.counts == {"lowering rejected: LoweringError": 1}


def test_the_cpu_runs_a_producer_bound_nowhere():
    """The same schedule without binds runs on the CPU."""
    case, apad, out = conv_like()
    s = sl.create_schedule(out)
    s[apad].compute_at(s[out], out.op.axis[1])
    tally = Tally()
    check_cpu(case, s, tally)
    assert tally.counts["ran and matched"] == 1


def test_one_block_runs_each_store_on_one_thread():
    """Without block loops the GPU target runs every stage in one block, but each stage
    wrapped its stores for its own thread tags only: the producer's store ran on every
    threadIdx.y lane of the consumer."""
    a = sl.placeholder((3, 3), name="A")
    bx = sl.compute((3, 1), lambda i, j: a[i, j] + a[i, j + 1] + a[i, j + 2], name="BX")
    by = sl.compute((1, 1), lambda i, j: bx[i, j] + bx[i + 1, j] + bx[i + 2, j], name="BY")
    s = sl.create_schedule(by)
    s[bx].bind(bx.op.axis[0], sl.thread_axis("threadIdx.x"))
    s[by].bind(by.op.axis[0], sl.thread_axis("threadIdx.y"))
    tally = Tally()
    check_simt(Case("stencil", [a], [by]), s, tally)
    assert tally.counts["ran and matched"] == 1


def test_a_shared_stage_at_the_root_beside_another_kernel_is_refused():
    """A shared stage computed at the root with block loops of its own is filled by one
    grid of blocks and read by another: shared memory does not outlive a block."""
    a = sl.placeholder((1,), name="A")
    p = sl.compute((1,), lambda i: a[i] * 3.0 - a[i], name="P0")
    s = sl.create_schedule(p)
    s[p].bind(p.op.axis[0], sl.thread_axis("blockIdx.y"))
    cached = s.cache_read(a, "shared", [p])
    outer, inner = s[cached].split(s[cached].op.axis[0], factor=1)
    s[cached].bind(outer, sl.thread_axis("blockIdx.x"))
    s[cached].bind(inner, sl.thread_axis("threadIdx.x"))
    tally = Tally()
    check_simt(Case("elementwise", [a], [p]), s, tally)
    assert tally.counts == {"lowering rejected: LoweringError": 1}
    with pytest.raises(sl.LoweringError, match="shared buffer 'A.shared' is used outside the"):
        sl.build(s, [a, p], target="cuda")


def test_a_cross_thread_reduction_in_a_wider_block():
    """A reduction over 2 threads in a block of 3 (the next stage binds 3): the third thread
    takes part in the collective with the identity."""
    a = sl.placeholder((2, 3), name="A")
    k = sl.reduce_axis((0, 2), name="k")
    r = sl.compute((3,), lambda j: sl.sum(a[k, j], axis=k), name="R")
    out = sl.compute((3,), lambda i: r[i] * 2.0 + 1.0, name="Out")
    s = sl.create_schedule(out)
    s[r].bind(r.op.reduce_axis[0], sl.thread_axis("threadIdx.x"))
    s[out].bind(out.op.axis[0], sl.thread_axis("threadIdx.x"))
    tally = Tally()
    check_simt(Case("column_reduction", [a], [out]), s, tally)
    assert tally.counts["ran and matched"] == 1


def test_a_shared_stage_at_the_root_read_by_a_stage_outside_every_block_is_refused():
    """Found on a GPU: the shared stage's blocks each fill their own copy, and the unbound
    stage read whichever copy its block had (wrong numbers). Refused before code is made."""
    a = sl.placeholder((2, 1), name="A")
    b = sl.placeholder((2, 1), name="B")
    p = sl.compute((2, 1), lambda i, j: a[i, j] * 3.0 - b[i, j], name="P0")
    s = sl.create_schedule(p)
    s[p].unroll(p.op.axis[0])
    cached = s.cache_read(a, "shared", [p])
    outer, inner = s[cached].split(s[cached].op.axis[0], factor=1)
    s[cached].bind(outer, sl.thread_axis("blockIdx.x"))
    s[cached].bind(inner, sl.thread_axis("threadIdx.x"))
    with pytest.raises(sl.LoweringError, match="shared buffer 'A.shared' is used outside the"):
        sl.build(s, [a, b, p], target="cuda")


def test_a_local_stage_at_the_root_read_by_another_kernel_is_refused():
    """Found on a GPU: a local cache computed at the root with block loops of its own; the
    stencil's blocks read registers of threads of other blocks (wrong numbers)."""
    a = sl.placeholder((3, 3), name="A")
    out = sl.compute((3, 3), lambda i, j: a[i, j] + a[i, 2 - j], name="S")
    s = sl.create_schedule(out)
    s[out].bind(s[out].op.axis[0], sl.thread_axis("blockIdx.y"))
    cached = s.cache_read(a, "local", [out])
    outer, inner = s[cached].split(s[cached].op.axis[0], factor=1)
    s[cached].bind(outer, sl.thread_axis("blockIdx.x"))
    s[cached].bind(inner, sl.thread_axis("threadIdx.x"))
    with pytest.raises(sl.LoweringError, match="local buffer 'A.local' is used outside the"):
        sl.build(s, [a, out], target="cuda")


def _root_local_rows(reach: int):
    """BX local at the root, its rows spread over threadIdx.x; BY's row i reads BX's rows i
    and i + reach, on BY's thread i."""
    a = sl.placeholder((3, 3), name="A")
    bx = sl.compute((3, 3), lambda i, j: a[i, j] + a[i, (j + 1) % 3], name="BX")
    by = sl.compute((3 - reach, 3), lambda i, j: bx[i, j] + bx[i + reach, j], name="BY")
    s = sl.create_schedule(by)
    s[bx].set_scope("local")
    s[bx].bind(s[bx].op.axis[0], sl.thread_axis("threadIdx.x"))
    s[by].bind(s[by].op.axis[0], sl.thread_axis("threadIdx.x"))
    return a, bx, by, s


def test_a_local_stage_at_the_root_of_one_block_read_across_threads_is_refused():
    """Found by the fuzzer: each thread's local copy of BX holds only its own rows, so BY's
    thread 0 reading row 2 found nothing there (wrong numbers); now an exact legality error
    naming one offending write and read."""
    a, _, by, s = _root_local_rows(reach=2)
    with pytest.raises(
        sl.ScheduleError,
        match=r"bind\(i, threadIdx.x\) at .*'BX' has scope "
        r"'local' \(a copy per thread\), but BY\[i=0, j=0\] reads the value "
        r"BX\[i=2, j=0\] stores on another thread",
    ):
        sl.build(s, [a, by], target="cuda")


def test_a_local_stage_at_the_root_read_on_its_own_threads_is_kept():
    """The same stages where each thread reads only the rows it computed: legal, and right."""
    a, _, by, s = _root_local_rows(reach=0)
    kernel = sl.build(s, [a, by], target="cuda")
    a_np = np.random.default_rng(5).uniform(-1, 1, (3, 3)).astype(np.float32)
    out = np.full((3, 3), np.nan, np.float32)
    run(kernel.lowered, [a_np, out])
    np.testing.assert_allclose(out, sl.reference(by, {a: a_np}), rtol=1e-6)


def test_vectorized_stage_whose_row_isl_writes_as_a_select():
    """isl wrote the row ``i.j.fused // 2 + i`` of a vectorized `i` as a select over `i` with
    uniform branches, one per piece of BX's footprint (its three rows); the vector select needs
    both sides as vectors. The footprint is now stated as its box, one piece, and the row as
    the sum."""
    n = sl.var("n0")
    a = sl.placeholder((n, 4), name="A")
    bx = sl.compute((n, 2), lambda i, j: a[i, j] + a[i, j + 1] + a[i, j + 2], name="BX")
    by = sl.compute((n - 2, 2), lambda i, j: bx[i, j] + bx[i + 1, j] + bx[i + 2, j], name="BY")
    s = sl.create_schedule(by)
    fused = s[by].fuse(*by.op.axis)
    s[bx].vectorize(bx.op.axis[0])
    s[bx].compute_at(s[by], fused)
    func = check(s, [a], [by], {"n0": 7})
    assert "A[i + i.j.fused // 2, i.j.fused % 2]" in str(func)


def test_a_local_tile_unrolled_under_many_guards_is_simulated():
    """The cuda build unrolled the local 8 x 8 tile of a block cut by the edge under one `if`
    of 200 conjuncts, which the SIMT interpreter wrote as 200 nested parentheses, past
    Python's parser limit: InternalError 'the interpreter generated invalid Python: too many
    nested parentheses' from kernel.simulate. Found by the GPU sample's shared-GEMM recipe (a
    matmul, 11 x 11 x 1, tiles of 8, the output's inner loops fused afterwards); minimised to
    an elementwise product: the local cache of an 8 x 8 tile computed at the block, the
    block's thread loops fused."""
    a = sl.placeholder((9, 2), name="A")
    c = sl.compute((9, 9), lambda i, j: a[i, 0] * a[j, 1], name="C")
    s = sl.create_schedule(c)
    local = s.cache_write(c, "local")
    io, ii = s[c].split(c.op.axis[0], factor=8)
    jo, ji = s[c].split(c.op.axis[1], factor=8)
    s[c].reorder(io, jo, ii, ji)
    s[c].bind(io, sl.thread_axis("blockIdx.y"))
    s[c].bind(jo, sl.thread_axis("blockIdx.x"))
    s[local].compute_at(s[c], jo)
    s[c].fuse(ii, ji)
    kernel = sl.build(s, [a, c], target="cuda")
    x = np.random.default_rng(0).uniform(0.5, 2.0, (9, 2)).astype(np.float32)
    z = np.full((9, 9), np.nan, np.float32)
    kernel.simulate(x, z)
    np.testing.assert_allclose(z, sl.reference(c, {a: x}), rtol=1e-6)


def test_a_pipelined_copy_of_rows_cut_by_the_edge_says_what_to_do():
    """examples/gpu_gemm_fp16.py with n = 17 and two warps across the columns: B's shared
    tile holds rows of 17 halves, so the copy's 8-wide vectors straddle rows, and pipeline's
    LoweringError said so ('the lanes of its vectorized loop ... are not consecutive elements
    of the last dimension of 'B.shared'') but not what to do, as a LoweringError must
    (verdict.lowering_verdict). Found by the tensor-core family (a ragged n)."""
    a, b, c = gemm_fp16.gemm(16, 17, 32)
    s = gemm_fp16.schedule(
        a, b, c, block_rows=16, block_cols=32, warp_rows=16, warp_cols=16, step=16, stages=2
    )
    with pytest.raises(sl.LoweringError, match="; "):  # what to do comes after the reason
        sl.build(s, [a, b, c], target="cuda")


def test_a_bulk_copy_it_cannot_prove_whole_says_what_to_do():
    """The warpgroup GEMM with a symbolic m, blocks of 16 columns (B's tile rows of 32 bytes)
    on 2 persistent blocks: isl cannot show the copy engine's box covers the tile for every
    m, and the refusal said so but not what to do. Found by the tensor-core family
    (benchmarks/fuzz.py, seed 7)."""
    a, b, c = gemm_fp16.gemm(sl.var("m"), 64, 64, "float16", "float32")
    s = gpu_gemm_wgmma.schedule(
        a, b, c, block_rows=64, block_cols=16, stages=2, tma=True, persistent=2
    )
    with pytest.raises(sl.LoweringError, match="; pipeline it without tma"):
        sl.build(s, [a, b, c], target="cuda")


def test_a_pipelined_tile_with_an_aligned_last_axis_builds_or_is_refused():
    """Found by the GPU sample's shared-GEMM recipe (A.shared pipelined, then a random
    storage_align of its last axis): the code generator refused copies of one float whose
    row's elements are not adjacent, which need not be (a vector of them is refused by the
    pipeline, saying what to do)."""
    a = sl.placeholder((1, 2), name="A")
    b = sl.placeholder((2, 1), name="B")
    k = sl.reduce_axis((0, 2), name="k")
    c = sl.compute((1, 1), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
    s = sl.create_schedule(c)
    cached = s.cache_read(a, "shared", [c])
    s[c].bind(c.op.axis[0], sl.thread_axis("blockIdx.x"))
    ko, _ = s[c].split(c.op.reduce_axis[0], factor=1)
    s[cached].compute_at(s[c], ko)
    s[cached].pipeline(2)
    s[cached].storage_align(s[cached].op.axis[1], 2, 0)
    try:
        kernel = sl.build(s, [a, b, c], target="cuda")
    except sl.LoweringError as err:  # a refusal must say what to do
        assert "; " in str(err), str(err)
        return
    x, y = np.full((1, 2), 1.5, np.float32), np.full((2, 1), 2.0, np.float32)
    z = np.full((1, 1), np.nan, np.float32)
    kernel.simulate(x, y, z)
    np.testing.assert_allclose(z, x @ y)


def test_a_local_stage_recomputed_on_every_thread_waits_for_its_shared_inputs():
    """Found by the GPU sample's shared-GEMM recipe (a 1 x 1 x 1 matmul in a 2 x 2 block of
    threads); needs both operands staged, the local accumulator and the block loops. The
    shared tiles are filled by one thread and read by it, so lowering put no barrier between;
    the local stage's guards dropped (`register_guards`), every thread read them before the
    fill: a race. Its guards now stay, as no barrier separates the fill from its reads."""
    a = sl.placeholder((1, 1), name="A")
    b = sl.placeholder((1, 1), name="B")
    k = sl.reduce_axis((0, 1), name="k")
    c = sl.compute((1, 1), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
    s = sl.create_schedule(c)
    staged = [s.cache_read(t, "shared", [c]) for t in (a, b)]
    local = s.cache_write(c, "local")
    by, i = s[c].split(c.op.axis[0], factor=2)
    bx, j = s[c].split(c.op.axis[1], factor=2)
    ty, yi = s[c].split(i, nparts=2)
    tx, xi = s[c].split(j, nparts=2)
    s[c].reorder(by, bx, ty, tx, yi, xi)
    for axis, tag in ((by, "blockIdx.y"), (bx, "blockIdx.x"), (ty, "threadIdx.y")):
        s[c].bind(axis, sl.thread_axis(tag))
    s[c].bind(tx, sl.thread_axis("threadIdx.x"))
    s[local].compute_at(s[c], tx)
    for cache in staged:
        s[cache].compute_at(s[local], s[local].op.reduce_axis[0])
    tally = Tally()
    check_simt(Case("matmul", [a, b], [c]), s, tally)
    assert tally.counts["ran and matched"] == 1


def test_a_second_cache_write_of_a_two_output_reduction_gets_a_name_of_its_own():
    """Both caches of an argmax were named ``T.global.v0`` (the group's name was unique, its
    first output's was not), and lowering mixed their statements: an isl error."""
    from .algorithms import _argmax_reducer

    a = sl.placeholder((11, 3), name="A")
    k = sl.reduce_axis((0, 3), name="k")
    index, value = sl.compute(
        (11,), lambda i: _argmax_reducer()((k.var.astype("float32"), a[i, k]), axis=k), name="T"
    )
    s = sl.create_schedule([index.op])
    s.cache_write([index, value], "global")
    s.cache_write([index, value], "global")
    assert [st.name for st in s.stages].count("T.global.v0") == 1
    check(s, [a], [index, value])
