"""The loop-IR interpreter: results against numpy, thread semantics, races and errors."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir.expr import const
from schedlang.loopir.core.nodes import Allocate, Barrier, Buffer, For, If, LoweredFunc, seq
from schedlang.loopir.interpret import DivergentBarrierError, RaceError, run

from .nests import load, loop_var, matmul_tail, staged_rotate, store, tiled_matmul


def _random(gen: np.random.Generator, *shape: int) -> np.ndarray:
    return gen.uniform(-2, 2, shape).astype("float32")


@pytest.mark.parametrize("m, n, k", [(13, 7, 5), (1, 1, 1), (16, 8, 9), (4, 3, 0)])
def test_matmul_with_tail_matches_numpy(m, n, k):
    gen = np.random.default_rng(m * 100 + n)
    a, b = _random(gen, m, k), _random(gen, k, n)
    c = np.full((m, n), np.nan, "float32")
    run(matmul_tail(), [a, b, c])
    np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-5, atol=1e-5)


def test_tiled_gpu_matmul_matches_numpy_with_odd_sizes():
    gen = np.random.default_rng(1)
    a, b = _random(gen, 19, 11), _random(gen, 11, 13)
    c = np.full((19, 13), np.nan, "float32")
    run(tiled_matmul(), [a, b, c])
    np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-5, atol=1e-5)


def test_staged_rotate_with_barrier_is_correct_and_race_free():
    gen = np.random.default_rng(2)
    a = _random(gen, 37)
    b = np.full(37, np.nan, "float32")
    run(staged_rotate(), [a, b])
    for g in range(37):
        nxt = g // 16 * 16 + (g % 16 + 1) % 16
        assert b[g] == a[nxt] if nxt < 37 else np.isnan(b[g])


def test_missing_barrier_is_a_race():
    a, b = np.ones(32, "float32"), np.zeros(32, "float32")
    with pytest.raises(RaceError, match=r"race on shared buffer 'A.shared' at A.shared\[1\]"):
        run(staged_rotate(barrier=False), [a, b])


def test_missing_barriers_of_a_tiled_matmul_are_races():
    gen = np.random.default_rng(3)
    a, b, c = _random(gen, 16, 16), _random(gen, 16, 16), np.zeros((16, 16), "float32")
    with pytest.raises(RaceError, match="reads it after thread .* wrote it"):
        run(tiled_matmul(first_barrier=False), [a, b, c])
    # Without the barrier at the end of a k tile, the next tile overwrites what others read.
    with pytest.raises(RaceError, match="writes it after other threads read it"):
        run(tiled_matmul(second_barrier=False), [a, b, c])


def test_barrier_in_divergent_code_raises():
    a, b = np.ones(32, "float32"), np.zeros(32, "float32")
    with pytest.raises(DivergentBarrierError, match="barrier in divergent code"):
        run(staged_rotate(divergent=True), [a, b])


def test_two_threads_storing_one_element_is_a_race():
    n = sl.var("n")
    out = Buffer("out", (n,), "float32")
    tx = loop_var("tx")
    body = For(tx, const(0), const(8), "bound", store(out, (tx // 2,), const(1.0)), "threadIdx.x")
    func = LoweredFunc("f", (out,), (n,), body)
    with pytest.raises(RaceError, match=r"threads \(x=0\) and \(x=1\) both write out\[0\]"):
        run(func, [np.zeros(4, "float32")])


def test_statement_outside_the_x_loop_runs_on_every_x_thread():
    # Threads differ in x, so a store inside the y loop only is written by all x threads.
    out = Buffer("out", (const(4),), "float32")
    tx, ty = loop_var("tx"), loop_var("ty")
    inner = For(tx, const(0), const(2), "bound", seq(), "threadIdx.x")
    body = For(
        ty, const(0), const(4), "bound", seq(store(out, (ty,), const(1.0)), inner), "threadIdx.y"
    )
    with pytest.raises(RaceError, match="both write"):
        run(LoweredFunc("f", (out,), (), body), [np.zeros(4, "float32")])


def test_allocations_start_as_nan():
    out = Buffer("out", (const(3),), "float32")
    tmp = Buffer("tmp", (const(3),), "float32", "global")
    i = loop_var("i")
    body = Allocate(
        tmp,
        seq(
            store(tmp, (0,), const(5.0)),
            For(i, const(0), const(3), "serial", store(out, (i,), load(tmp, i))),
        ),
    )
    out_array = np.zeros(3, "float32")
    run(LoweredFunc("f", (out,), (), body), [out_array])
    assert out_array[0] == 5.0 and np.isnan(out_array[1:]).all()


def test_local_buffers_are_per_thread_and_shared_ones_per_block():
    out = Buffer("out", (const(2), const(4)), "int32")
    acc = Buffer("acc", (const(1),), "int32", "local")
    bx, tx = loop_var("bx"), loop_var("tx")
    body = Allocate(
        acc,
        seq(
            store(acc, (0,), tx * 10 + bx),
            store(out, (bx, tx), load(acc, 0)),
        ),
    )
    nest = For(
        bx,
        const(0),
        const(2),
        "bound",
        For(tx, const(0), const(4), "bound", body, "threadIdx.x"),
        "blockIdx.x",
    )
    result = np.zeros((2, 4), "int32")
    run(LoweredFunc("f", (out,), (), nest), [result])
    np.testing.assert_array_equal(result, np.arange(4)[None, :] * 10 + np.arange(2)[:, None])


def test_thread_dependent_loop_bounds_iterate_over_the_union():
    # Thread tx sums A[0 .. tx] (a triangular loop inside a thread loop).
    n = sl.var("n")
    A, out = Buffer("A", (n,), "float32"), Buffer("out", (n,), "float32")
    tx, k = loop_var("tx"), loop_var("k")
    acc = store(out, (tx,), load(out, tx) + load(A, k))
    body = If(
        tx < n,
        seq(store(out, (tx,), const(0.0)), For(k, const(0), tx + 1, "serial", acc)),
    )
    func = LoweredFunc(
        "f", (A, out), (n,), For(tx, const(0), const(16), "bound", body, "threadIdx.x")
    )
    a = _random(np.random.default_rng(4), 11)
    result = np.full(11, np.nan, "float32")
    run(func, [a, result])
    np.testing.assert_allclose(result, np.cumsum(a), rtol=1e-5)


def test_shapes_dtypes_and_sizes_are_checked():
    func = matmul_tail()
    a, b, c = np.zeros((3, 4), "float32"), np.zeros((5, 2), "float32"), np.zeros((3, 2), "float32")
    with pytest.raises(ValueError, match="size 'K' is 4 from an earlier array but 5"):
        run(func, [a, b, c])
    with pytest.raises(TypeError, match="is float32 but its array is float64"):
        run(func, [a.astype("float64"), b, c])
    with pytest.raises(ValueError, match="takes 3 arrays"):
        run(func, [a, b])
    n = sl.var("n")
    out = Buffer("out", (n + 1,), "float32")
    i = loop_var("i")
    shifted = LoweredFunc(
        "f", (out,), (n,), For(i, const(0), n + 1, "serial", store(out, (i,), const(2.0)))
    )
    result = np.zeros(6, "float32")
    run(shifted, [result])
    assert (result == 2.0).all()
    extra = sl.var("extra")
    uses_extra = LoweredFunc(
        "g", (out,), (n,), For(i, const(0), extra, "serial", store(out, (i,), const(1.0)))
    )
    with pytest.raises(ValueError, match="pass it as sizes=\\{extra: value\\}"):
        run(uses_extra, [result])
    run(uses_extra, [result], sizes={extra: 2})


def test_out_of_bounds_access_names_the_statement():
    n = sl.var("n")
    out = Buffer("out", (n,), "float32")
    i = loop_var("i")
    past_end = LoweredFunc(
        "f", (out,), (n,), For(i, const(0), n + 1, "serial", store(out, (i,), const(1.0)))
    )
    with pytest.raises(sl.InternalError, match=r"out-of-bounds.*\n  in 'f' at: out\[i\] = 1.0"):
        run(past_end, [np.zeros(3, "float32")])
    before_start = LoweredFunc(
        "f", (out,), (n,), For(i, const(0), n, "serial", store(out, (i - 1,), const(1.0)))
    )
    with pytest.raises(sl.InternalError, match=r"out-of-bounds access out\[-1\]"):
        run(before_start, [np.zeros(3, "float32")])


def test_select_is_lazy_inside_threads():
    # select(tx + 1 < n, A[tx + 1], 0): the read past the end is never made.
    n = sl.var("n")
    A, out = Buffer("A", (n,), "float32"), Buffer("out", (n,), "float32")
    tx = loop_var("tx")
    value = sl.if_then_else(tx + 1 < n, load(A, tx + 1), const(0.0))
    body = If(tx < n, store(out, (tx,), value))
    func = LoweredFunc(
        "f", (A, out), (n,), For(tx, const(0), const(8), "bound", body, "threadIdx.x")
    )
    a = np.arange(1, 6, dtype="float32")
    result = np.zeros(5, "float32")
    run(func, [a, result])
    np.testing.assert_array_equal(result, [2, 3, 4, 5, 0])


def test_barrier_counts_outside_thread_loops():
    # A barrier at block level between two thread loops separates their accesses.
    out = Buffer("out", (const(8),), "float32")
    S = Buffer("S", (const(8),), "float32", "shared")
    bx, tx, ty = loop_var("bx"), loop_var("tx"), loop_var("tx2")
    write = For(tx, const(0), const(8), "bound", store(S, (tx,), const(3.0)), "threadIdx.x")
    read = For(ty, const(0), const(8), "bound", store(out, (ty,), load(S, 7 - ty)), "threadIdx.x")
    for sync, error in ((Barrier(), None), (None, RaceError)):
        body = For(
            bx, const(0), const(1), "bound", Allocate(S, seq(write, sync, read)), "blockIdx.x"
        )
        func = LoweredFunc("f", (out,), (), body)
        if error is None:
            run(func, [np.zeros(8, "float32")])
        else:
            with pytest.raises(error):
                run(func, [np.zeros(8, "float32")])


def test_deep_nests_and_else_branches_inside_threads():
    # 20 nested loops exceed Python's limit of nested blocks in one function.
    out = Buffer("out", (const(2), const(8)), "float32")
    loops = [loop_var(f"l{d}") for d in range(20)]
    tx = loop_var("tx")
    total = loops[0]
    for v in loops[1:]:
        total = total + v
    value = total.astype("float32") + tx.astype("float32")
    body = If(tx % 2 == 0, store(out, (loops[0], tx), value), store(out, (loops[0], tx), -value))
    for d, v in reversed(list(enumerate(loops))):
        body = For(v, const(0), const(2 if d == 0 else 1), "serial", body)
    func = LoweredFunc(
        "deep", (out,), (), For(tx, const(0), const(8), "bound", body, "threadIdx.x")
    )
    result = np.zeros((2, 8), "float32")
    run(func, [result])
    base = np.arange(2)[:, None] + np.arange(8)[None, :]
    expected = np.where(np.arange(8) % 2, -base, base)
    np.testing.assert_array_equal(result, expected.astype("float32"))
