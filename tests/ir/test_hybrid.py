"""Hybrid scripts (`sl.hybrid.script`): Python loops over tensors, compiled as a function of
their own and run as Python for the reference; checked against numpy written out here, on
random data with symbolic and odd sizes and outputs poisoned with NaN."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir.hybrid import HYBRID_GLOBALS
from schedlang.schedule.errors import PlacementError

RNG = np.random.default_rng(11)
script = sl.hybrid.script


def _random(*shape, dtype="float32"):
    if dtype.startswith("int"):
        return RNG.integers(-50, 50, shape).astype(dtype)
    return RNG.uniform(-1, 1, shape).astype(dtype)


@script
def window_mean(a, width):
    out = output_tensor((a.shape[0] - width + 1,), a.dtype)  # noqa: F821
    for i in range(a.shape[0] - width + 1):
        total = 0.0
        for k in range(width):
            total += a[i + k]
        total = total / width
        out[i] = total
    return out


def _window_mean(x, width):
    return np.array([x[i : i + width].sum() / width for i in range(len(x) - width + 1)])


def test_a_script_with_a_running_total_at_symbolic_sizes():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    out = window_mean(a, 3)
    kernel = sl.build(sl.create_schedule(out.op), [a, out])
    for size in (3, 4, 17):
        x = _random(size)
        expected = _window_mean(x, 3)
        np.testing.assert_allclose(sl.reference(out, {a: x}), expected, rtol=1e-5, atol=1e-6)
        got = np.full(size - 2, np.nan, "float32")
        kernel(x, got)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_called_on_arrays_a_script_runs_as_python_and_leaves_its_module_alone():
    x = _random(9)
    np.testing.assert_allclose(window_mean(x, 4), _window_mean(x, 4), rtol=1e-5)
    assert not set(HYBRID_GLOBALS) & set(globals())


@script
def split_signs(a, offsets):
    pos = output_tensor(a.shape, "int32")  # noqa: F821
    neg = output_tensor((a.shape[0],), a.dtype)  # noqa: F821
    for i in parallel(a.shape[0]):  # noqa: F821
        for j in const_range(len(offsets)):  # noqa: F821
            if a[i, j] > 0 and not j == 1:
                pos[i, j] = int32(a[i, j] * 10.0) + offsets[j]  # noqa: F821
            else:
                pos[i, j] = -1 if a[i, j] < -0.5 else 0
    for i in unroll(a.shape[0]):  # noqa: F821
        neg[i] = min(a[i, 0], a[i, 2]) + sqrt(abs(a[i, 1]))  # noqa: F821
    return pos, neg


def _split_signs(x, offsets):
    pos = np.where(x < -0.5, -1, 0).astype("int32")
    for j, off in enumerate(offsets):
        keep = (x[:, j] > 0) & (j != 1)
        pos[keep, j] = (x[keep, j] * np.float32(10)).astype("int32") + off
    neg = np.minimum(x[:, 0], x[:, 2]) + np.sqrt(np.abs(x[:, 1]))
    return pos, neg


def test_two_outputs_conditions_and_an_unrolled_python_list():
    a = sl.placeholder((5, 3), name="A")
    pos, neg = split_signs(a, [7, -2, 4])
    assert (pos.op.num_outputs, neg.op.value_index) == (2, 1)
    assert pos.op.output(1) == neg
    s = sl.create_schedule([pos.op, neg.op])
    text = str(sl.lower(s, [a, pos, neg]))
    assert "# parallel" in text and "# unrolled" in text
    assert "and False" not in text and "A[i, 1] > 0.0" not in text  # `not j == 1` is known
    x = _random(5, 3)
    got_pos, got_neg = np.full((5, 3), -9, "int32"), np.full(5, np.nan, "float32")
    sl.build(s, [a, pos, neg])(x, got_pos, got_neg)
    want_pos, want_neg = _split_signs(x, [7, -2, 4])
    np.testing.assert_array_equal(got_pos, want_pos)
    np.testing.assert_allclose(got_neg, want_neg, rtol=1e-6)
    ref_pos, ref_neg = sl.reference([pos, neg], {a: x})
    np.testing.assert_array_equal(ref_pos, want_pos)
    np.testing.assert_allclose(ref_neg, want_neg, rtol=1e-6)


@script
def scaled_rows(a):
    out = output_tensor(a.shape, a.dtype)  # noqa: F821
    for i in range(1, a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j] * i
    return out


def test_a_script_between_computed_stages_with_their_schedules():
    n, m = sl.var("n"), sl.var("m")
    a = sl.placeholder((n, m), name="A")
    b = sl.compute((n, m), lambda i, j: a[i, j] + 1.0, name="B")
    c = scaled_rows(b)
    d = sl.compute((n, m), lambda i, j: c[i, j] - b[i, j], name="D")
    s = sl.create_schedule(d.op)
    s[b].split(b.op.axis[1], factor=4)
    outer, inner = s[d].split(d.op.axis[1], factor=3)
    s[d].vectorize(inner)
    kernel = sl.build(s, [a, d])
    for rows, cols in ((5, 7), (2, 13)):
        x = _random(rows, cols)
        rows_scale = np.arange(rows, dtype="float32")[:, None]
        expected = (x + 1) * rows_scale - (x + 1)
        expected[0] = -(x[0] + 1)  # row 0 is never written: it stays 0
        got = np.full((rows, cols), np.nan, "float32")
        kernel(x, got)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(sl.reference(d, {a: x}), expected, rtol=1e-5, atol=1e-6)


@script
def outer(a, b):
    c = output_tensor((a.shape[0], b.shape[0]), a.dtype)  # noqa: F821
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            c[i, j] = a[i] * b[j]
    return c


@script
def outer_plus_diagonal(a, b):
    c = outer(a, b)
    d = output_tensor(c.shape, c.dtype)  # noqa: F821
    scratch = allocate((1,), "float32", "local")  # noqa: F821
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            scratch[0] = c[i, j]
            d[i, j] = scratch[0] + (1.0 if i == j else 0.0)
    return d


def test_a_script_calling_a_script_allocates_what_the_callee_returns():
    a, b = sl.placeholder((6,), name="A"), sl.placeholder((4,), name="B")
    d = outer_plus_diagonal(a, b)
    assert d.op.input_tensors == (a, b)
    x, y = _random(6), _random(4)
    got = np.full((6, 4), np.nan, "float32")
    sl.build(sl.create_schedule(d.op), [a, b, d])(x, y, got)
    expected = np.outer(x, y) + np.eye(6, 4, dtype="float32")
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_allclose(sl.reference(d, {a: x, b: y}), expected, rtol=1e-6)


@script
def needs_a_loop(a):
    out = output_tensor(a.shape, a.dtype)  # noqa: F821
    while a[0] > 0:
        out[0] = 1.0
    return out


@script
def forgets_an_output(a):
    out = output_tensor(a.shape, a.dtype)  # noqa: F821
    extra = output_tensor(a.shape, a.dtype)  # noqa: F821
    out[0] = a[0]
    extra[0] = a[0]
    return out


@script
def symbolic_const_range(a):
    out = output_tensor(a.shape, a.dtype)  # noqa: F821
    for i in const_range(a.shape[0]):  # noqa: F821
        out[i] = a[i]
    return out


@script
def calls_numpy(a):
    out = output_tensor(a.shape, a.dtype)  # noqa: F821
    out[0] = np.sum(a[0])
    return out


def test_what_a_script_cannot_say_is_refused_when_it_is_called():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    with pytest.raises(sl.AlgorithmError, match=r"'needs_a_loop', line \d+: the statement While"):
        needs_a_loop(a)
    with pytest.raises(sl.AlgorithmError, match="output_tensor 'extra' is not returned"):
        forgets_an_output(a)
    with pytest.raises(sl.AlgorithmError, match="const_range takes Python integers"):
        symbolic_const_range(a)
    with pytest.raises(sl.AlgorithmError, match="call functions by name"):
        calls_numpy(a)


def test_a_script_stage_is_not_placed_and_its_gpu_loops_are_bound(tmp_path):
    a = sl.placeholder((8,), name="A")
    out = window_mean(a, 2)
    s = sl.create_schedule(out.op)
    with pytest.raises(PlacementError, match="computed by the hybrid script 'window_mean'"):
        s[out].compute_root()
    with pytest.raises(sl.LoweringError, match="runs outside every loop bound to blockIdx"):
        sl.build(s, [a, out], target="cuda")  # no thread would run the script's loop
    with pytest.raises(sl.LoweringError, match="runs a function for each script"):
        sl.build(s, [a, out]).export(tmp_path / "mean.so")
    s[out].bind(out.op.axis[0], sl.thread_axis("threadIdx.x"))
    with pytest.raises(sl.LoweringError, match="loop 'i' is bound to threadIdx.x, which needs a"):
        sl.build(s, [a, out])


@script
def triangle(a, b):
    c = output_tensor((a.shape[0], b.shape[0]), a.dtype)  # noqa: F821
    for i in range(2, a.shape[0]):
        for j in range(i - 2, b.shape[0]):
            c[i, j] = a[i] * b[j] + 1.0
    return c


def _triangle(x, y):
    c = np.zeros((len(x), len(y)), "float32")
    for i in range(2, len(x)):
        c[i, i - 2 :] = x[i] * y[i - 2 :] + 1
    return c


def test_a_scripts_loops_are_split_fused_reordered_and_annotated():
    n = sl.var("n")
    a, b = sl.placeholder((n,), name="A"), sl.placeholder((11,), name="B")
    c = outer(a, b)
    s = sl.create_schedule(c.op)
    i, j = c.op.axis
    io, ii = s[c].split(i, factor=4)
    jo, ji = s[c].split(j, nparts=3)
    s[c].reorder(io, jo, ii, ji)
    s[c].parallel(io)
    s[c].vectorize(ji)
    text = str(sl.lower(s, [a, b, c]))
    assert "for i.outer in range(0, (n + 3) // 4):  # parallel" in text
    assert "# vectorized" in text and "< n" in text  # the split of i by 4 is guarded
    kernel = sl.build(s, [a, b, c])
    fused = sl.create_schedule(c.op)
    fused[c].unroll(fused[c].fuse(*c.op.axis))
    kernel_fused = sl.build(fused, [a, b, c])
    for size in (1, 9):
        x, y = _random(size), _random(11)
        for k in (kernel, kernel_fused):
            got = np.full((size, 11), np.nan, "float32")
            k(x, y, got)
            np.testing.assert_allclose(got, np.outer(x, y), rtol=1e-6)


def test_a_triangular_nest_is_split_but_not_turned_inside_out():
    a, b = sl.placeholder((9,), name="A"), sl.placeholder((8,), name="B")
    c = triangle(a, b)
    s = sl.create_schedule(c.op)
    i, j = c.op.axis
    s[c].split(j, factor=3)
    x, y = _random(9), _random(8)
    got = np.full((9, 8), np.nan, "float32")
    sl.build(s, [a, b, c])(x, y, got)
    np.testing.assert_allclose(got, _triangle(x, y), rtol=1e-6)
    np.testing.assert_allclose(sl.reference(c, {a: x, b: y}), _triangle(x, y), rtol=1e-6)
    inside_out = sl.create_schedule(c.op)
    inside_out[c].reorder(j, i)
    with pytest.raises(sl.LoweringError, match="extent of loop 'j' depends on 'i'"):
        sl.build(inside_out, [a, b, c])


def test_loops_of_two_nests_are_not_fused():
    a = sl.placeholder((6, 3), name="A")
    pos, neg = split_signs(a, [1, 2, 3])
    s = sl.create_schedule(pos.op)
    assert s[neg] is s[pos]  # one stage for the script's outputs
    first, second = pos.op.axis  # the parallel loop, then the unrolled one after it
    s[pos].fuse(first, second)
    with pytest.raises(sl.LoweringError, match=r"fuse\(i, i.1\) relates loops .* not perfectly"):
        sl.lower(s, [a, pos, neg])


@script
def first_rows(a, rows):
    out = output_tensor(a.shape, a.dtype)  # noqa: F821
    for i in range(rows):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j] * 2.0
    return out


@script
def differences(a):
    out = output_tensor(a.shape, a.dtype)  # noqa: F821
    for i in range(a.shape[0]):
        if i > 0:
            out[i] = a[i] - a[i - 1]
        out[i] = out[i] + (a[i + 1] if i + 1 < a.shape[0] else 0.0)
    return out


@script
def reads_one_past(a):
    out = output_tensor(a.shape, a.dtype)  # noqa: F821
    for i in range(a.shape[0]):
        out[i] = a[i + 1]
    return out


def test_a_scripts_accesses_are_checked_against_its_tensors_before_it_runs():
    n = sl.var("n")
    a = sl.placeholder((n, 4), name="A")
    rows = sl.var("rows")
    out = first_rows(a, rows)
    with pytest.raises(
        sl.AlgorithmError,
        match=r"'first_rows' writes out\[i, j\] out of bounds at i=1, j=\d, n=1, rows=2: outside "
        r"its shape \(n, 4\)",
    ):
        sl.build(sl.create_schedule(out.op), [a, out])
    within = first_rows(a, 3)  # rows a constant: still more than n may be
    with pytest.raises(sl.AlgorithmError, match="writes out"):
        sl.lower(sl.create_schedule(within.op), [a, within])
    b = sl.placeholder((n,), name="B")
    with pytest.raises(sl.AlgorithmError, match=r"reads B\[i \+ 1\] out of bounds at i=0, n=1"):
        sl.build(sl.create_schedule(reads_one_past(b).op), [b, reads_one_past(b)])
    guarded = differences(b)  # an if and an if_then_else keep the reads inside
    x = _random(9)
    got = np.full(9, np.nan, "float32")
    sl.build(sl.create_schedule(guarded.op), [b, guarded])(x, got)
    expected = np.append(x[1:], 0) + np.insert(np.diff(x), 0, 0)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


@script
def argwhere_2d(output_shape, condition):
    out = output_tensor(output_shape, "int32")  # noqa: F821
    found = 0
    for i in range(condition.shape[0]):
        for j in range(condition.shape[1]):
            if condition[i, j] != 0:
                out[found, 0] = i
                out[found, 1] = j
                found += 1
    return out


@script
def gather_rows(a, rows):
    out = output_tensor((rows.shape[0], a.shape[1]), a.dtype)  # noqa: F821
    for r in range(rows.shape[0]):
        for j in range(a.shape[1]):
            out[r, j] = a[rows[r], j]
    return out


def test_indices_read_from_tensors_stay_inside_at_run_time():
    cond = sl.placeholder((5, 7), "int32", name="C")
    flags = (RNG.random((5, 7)) > 0.6).astype("int32")
    flags[0, 0] = 1
    count = int(flags.sum())
    exact = argwhere_2d((count, 2), cond)
    got = np.full((count, 2), -7, "int32")
    sl.build(sl.create_schedule(exact.op), [cond, exact])(flags, got)
    np.testing.assert_array_equal(got, np.argwhere(flags))
    short = argwhere_2d((2, 2), cond)  # room for two: the stores past it are not made
    got = np.full((2, 2), -7, "int32")
    sl.build(sl.create_schedule(short.op), [cond, short])(flags, got)
    np.testing.assert_array_equal(got, np.argwhere(flags)[:2])
    a = sl.placeholder((4, 3), name="A")
    rows = sl.placeholder((5,), "int32", name="R")
    gathered = gather_rows(a, rows)
    x = _random(4, 3)
    picks = np.array([3, 0, 9, -2, 1], "int32")  # 9 and -2 are clamped, as a compute's are
    got = np.full((5, 3), np.nan, "float32")
    sl.build(sl.create_schedule(gathered.op), [a, rows, gathered])(x, picks, got)
    np.testing.assert_allclose(got, x[np.clip(picks, 0, 3)], rtol=1e-6)


@script
def bound_sum(a, b):
    c = output_tensor(a.shape, a.dtype)  # noqa: F821
    total = allocate((1,), a.dtype, "local")  # noqa: F821
    for i in bind("threadIdx.x", a.shape[0]):  # noqa: F821
        total[0] = 0.0
        for k in range(a.shape[1]):
            total[0] += a[i, k]
        c[i, 0] = total[0] + b[i]
    return c


def test_a_script_builds_for_cuda_with_its_loops_bound():
    a, b = sl.placeholder((8, 5), name="A"), sl.placeholder((8,), name="B")
    c = bound_sum(a, b)  # bound in the script: one block of 8 threads
    x, y = _random(8, 5), _random(8)
    expected = np.zeros((8, 5), "float32")
    expected[:, 0] = x.sum(axis=1) + y
    program = sl.build(sl.create_schedule(c.op), [a, b, c], target="cuda")
    got = np.full((8, 5), np.nan, "float32")
    program.simulate(x, y, got)  # outputs zeroed first, then the threads
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    n = sl.var("n")
    p, q = sl.placeholder((n,), name="P"), sl.placeholder((n,), name="Q")
    d = outer(p, q)  # bound by the schedule: blocks of rows, threads of columns
    s = sl.create_schedule(d.op)
    s[d].bind(d.op.axis[0], sl.thread_axis("blockIdx.x"))
    s[d].bind(d.op.axis[1], sl.thread_axis("threadIdx.x"))
    with pytest.raises(sl.LoweringError, match="bound to threadIdx.x with the symbolic extent n"):
        sl.build(s, [p, q, d], target="cuda")
    s = sl.create_schedule(d.op)
    s[d].bind(d.op.axis[0], sl.thread_axis("blockIdx.x"))
    jo, ji = s[d].split(d.op.axis[1], factor=4)
    s[d].bind(ji, sl.thread_axis("threadIdx.x"))
    program = sl.build(s, [p, q, d], target="cuda")
    u, v = _random(6), _random(6)
    got = np.full((6, 6), np.nan, "float32")
    program.simulate(u, v, got)
    np.testing.assert_allclose(got, np.outer(u, v), rtol=1e-6)


@pytest.mark.gpu
def test_a_script_runs_on_the_gpu():
    a, b = sl.placeholder((8, 5), name="A"), sl.placeholder((8,), name="B")
    c = bound_sum(a, b)
    x, y = _random(8, 5), _random(8)
    got = np.full((8, 5), np.nan, "float32")
    sl.build(sl.create_schedule(c.op), [a, b, c], target="cuda")(x, y, got)
    np.testing.assert_allclose(got[:, 0], x.sum(axis=1) + y, rtol=1e-5)
    np.testing.assert_array_equal(got[:, 1:], 0)


@script
def doubled_by_threads_then_blocks(a):
    b = output_tensor(a.shape, a.dtype)  # noqa: F821
    n = a.shape[0]
    m = max_num_threads(True)  # noqa: F821
    for i in bind("threadIdx.x", m):  # noqa: F821
        for j in bind("blockIdx.x", ceil_div(n, m)):  # noqa: F821
            if i * ceil_div(n, m) + j < n:  # noqa: F821
                b[i * ceil_div(n, m) + j] = a[i * ceil_div(n, m) + j] * 2.0  # noqa: F821
    return b


def test_a_block_loop_bound_inside_a_thread_loop_and_max_num_threads():
    """TE's scripts may bind blockIdx inside threadIdx (bound loops are indices, in any
    order) and ask for the block's most threads (1024 on CUDA GPUs)."""
    a = sl.placeholder((3001,), name="A")
    b = doubled_by_threads_then_blocks(a)
    program = sl.build(sl.create_schedule(b.op), [a, b], target="cuda")
    assert "%ctaid.x" in program.ptx and "%tid.x" in program.ptx
    x = _random(3001)
    got = np.full(3001, np.nan, "float32")
    program.simulate(x, got)
    np.testing.assert_allclose(got, 2 * x, rtol=1e-6)
    np.testing.assert_allclose(doubled_by_threads_then_blocks(x), 2 * x, rtol=1e-6)
