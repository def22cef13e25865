"""Computes with several outputs (a function returning a tuple) and reductions over tuples
(argmax): one stage computes all outputs in the same loops, scheduled as one, checked against
the reference on random data with NaN-poisoned outputs, on the CPU and in the GPU simulator."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.errors import AlgorithmError, LoweringError, ScheduleError

RNG = np.random.default_rng(17)


def _pair():
    m, n = sl.var("m"), sl.var("n")
    a = sl.placeholder((m, n), name="A")
    b = sl.placeholder((m, n), name="B")
    p, q = sl.compute((m, n), lambda i, j: (a[i, j] * 2 - b[i, j], sl.exp(b[i, j])), name="P")
    return a, b, p, q


def _argmax_reducer():
    def combine(x, y):
        keep = x[1] >= y[1]
        return sl.if_then_else(keep, x[0], y[0]), sl.if_then_else(keep, x[1], y[1])

    def identity(index_type, value_type):
        return sl.const(-1, index_type), sl.min_value(value_type)

    return sl.comm_reducer(combine, identity, name="argmax")


def _argmax(where=None):
    """T0[i], T1[i]: the first column of the row's largest value, and the value."""
    m, n = sl.var("m"), sl.var("n")
    val = sl.placeholder((m, n), name="val")
    k = sl.reduce_axis((0, n), name="k")
    argmax = _argmax_reducer()
    cond = None if where is None else where(k)
    t0, t1 = sl.compute((m,), lambda i: argmax((k.var, val[i, k]), axis=k, where=cond), name="T")
    return val, t0, t1


def _floats(*shape):
    return RNG.uniform(-2, 2, shape).astype("float32")


def _run(kernel, arrays, outs, simulate=False):
    results = [np.full(shape, np.nan if dtype == "float32" else -7, dtype) for shape, dtype in outs]
    (kernel.simulate if simulate else kernel)(*arrays, *results)
    return results


def test_the_outputs_are_computed_in_one_loop_nest():
    a, b, p, q = _pair()
    s = sl.create_schedule(p)
    assert s[p] is s[q] and s[p].name == "P"
    assert (p.value_index, q.value_index) == (0, 1) and p.op.output(1) == q
    text = str(sl.lower(s, [a, b, p, q]))
    assert text.count("for j in range") == 1 and "P.v0[i, j] =" in text and "P.v1[i, j] =" in text
    x, y = _floats(7, 13), _floats(7, 13)
    got = _run(sl.build(s, [a, b, p, q]), [x, y], [((7, 13), "float32")] * 2)
    want = sl.reference([p, q], {a: x, b: y})
    np.testing.assert_allclose(got[0], x * 2 - y, rtol=1e-6)
    np.testing.assert_allclose(got[1], np.exp(y), rtol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)


def test_loop_primitives_apply_to_every_output():
    a, b, p, q = _pair()
    s = sl.create_schedule([p, q])
    i, j = s[p].op.axis
    jo, ji = s[q].split(j, factor=4)
    s[p].reorder(jo, i, ji)
    s[p].vectorize(ji)
    s[p].parallel(jo)
    x, y = _floats(5, 11), _floats(5, 11)
    got = _run(sl.build(s, [a, b, p, q]), [x, y], [((5, 11), "float32")] * 2)
    np.testing.assert_allclose(got[0], x * 2 - y, rtol=1e-6)
    np.testing.assert_allclose(got[1], np.exp(y), rtol=1e-6)


def test_computed_at_a_consumer_that_reads_both_outputs():
    a, b, p, q = _pair()
    m, n = a.shape
    c = sl.compute((m, n), lambda i, j: p[i, j] + q[i, n - 1 - j], name="C")
    s = sl.create_schedule(c)
    s[p].compute_at(s[c], c.op.axis[0])
    text = str(sl.lower(s, [a, b, c]))
    assert "allocate P.v0: float32[1, n]" in text and "allocate P.v1: float32[1, n]" in text
    x, y = _floats(6, 9), _floats(6, 9)
    (got,) = _run(sl.build(s, [a, b, c]), [x, y], [((6, 9), "float32")])
    np.testing.assert_allclose(got, x * 2 - y + np.exp(y)[:, ::-1], rtol=1e-5, atol=1e-6)


def test_a_stage_computed_inside_the_multi_output_stage():
    m, n = sl.var("m"), sl.var("n")
    a = sl.placeholder((m, n), name="A")
    sq = sl.compute((m, n), lambda i, j: a[i, j] * a[i, j], name="sq")
    p, q = sl.compute((m, n), lambda i, j: (sq[i, j] + 1, sq[i, j] - a[i, j]), name="P")
    s = sl.create_schedule(p)
    s[sq].compute_at(s[p], p.op.axis[1])
    x = _floats(4, 10)
    got = _run(sl.build(s, [a, p, q]), [x], [((4, 10), "float32")] * 2)
    np.testing.assert_allclose(got[0], x * x + 1, rtol=1e-6)
    np.testing.assert_allclose(got[1], x * x - x, rtol=1e-6)


def test_inlined_into_its_reader():
    a, b, p, q = _pair()
    m, n = a.shape
    c = sl.compute((m, n), lambda i, j: p[i, j] * q[i, j], name="C")
    s = sl.create_schedule(c)
    s[p].compute_inline()
    text = str(sl.lower(s, [a, b, c]))
    assert "P.v" not in text
    x, y = _floats(3, 8), _floats(3, 8)
    (got,) = _run(sl.build(s, [a, b, c]), [x, y], [((3, 8), "float32")])
    np.testing.assert_allclose(got, (x * 2 - y) * np.exp(y), rtol=1e-5, atol=1e-6)


def test_one_output_cached_for_its_reader():
    a, b, p, q = _pair()
    m, n = a.shape
    c = sl.compute((m, n), lambda i, j: p[i, j] + q[i, j], name="C")
    s = sl.create_schedule(c)
    qq = s.cache_read(q, "local", [c])
    s[qq].compute_at(s[c], c.op.axis[1])
    assert qq.name == "P.v1.local"
    x, y = _floats(5, 6), _floats(5, 6)
    (got,) = _run(sl.build(s, [a, b, c]), [x, y], [((5, 6), "float32")])
    np.testing.assert_allclose(got, x * 2 - y + np.exp(y), rtol=1e-5, atol=1e-6)


def test_argmax_matches_numpy_with_ties_taking_the_first():
    val, t0, t1 = _argmax()
    s = sl.create_schedule(t0)
    x = np.round(_floats(9, 23))  # few distinct values: many ties
    kernel = sl.build(s, [val, t0, t1])
    got = _run(kernel, [x], [((9,), "int32"), ((9,), "float32")])
    np.testing.assert_array_equal(got[0], np.argmax(x, axis=1))
    np.testing.assert_array_equal(got[1], x.max(axis=1))
    ref = sl.reference([t0, t1], {val: x})
    np.testing.assert_array_equal(ref[0], np.argmax(x, axis=1))


def test_argmax_split_reduction_and_parallel_rows():
    val, t0, t1 = _argmax()
    s = sl.create_schedule([t0, t1])
    (i,) = s[t0].op.axis
    (k,) = s[t0].op.reduce_axis
    ko, ki = s[t0].split(k, factor=8)
    s[t0].parallel(i)
    text = str(sl.lower(s, [val, t0, t1]))
    assert "let T.v0.new" in text  # both new values come from the old ones
    x = _floats(11, 37)
    got = _run(sl.build(s, [val, t0, t1]), [x], [((11,), "int32"), ((11,), "float32")])
    np.testing.assert_array_equal(got[0], np.argmax(x, axis=1))
    np.testing.assert_array_equal(got[1], x.max(axis=1))


def test_argmax_over_a_where():
    val, t0, t1 = _argmax(where=lambda k: k % 3 != 1)
    s = sl.create_schedule(t0)
    x = _floats(5, 14)
    got = _run(sl.build(s, [val, t0, t1]), [x], [((5,), "int32"), ((5,), "float32")])
    masked = np.where(np.arange(14) % 3 != 1, x, -np.inf)
    np.testing.assert_array_equal(got[0], np.argmax(masked, axis=1))
    np.testing.assert_array_equal(got[0], sl.reference(t0, {val: x}))


def test_argmax_on_gpu_threads_in_the_simulator():
    val, t0, t1 = _argmax()
    s = sl.create_schedule(t0)
    (i,) = s[t0].op.axis
    bx, tx = s[t0].split(i, factor=32)
    s[t0].bind(bx, sl.thread_axis("blockIdx.x"))
    s[t0].bind(tx, sl.thread_axis("threadIdx.x"))
    kernel = sl.build(s, [val, t0, t1], target="cuda")
    x = _floats(45, 19)
    got = _run(kernel, [x], [((45,), "int32"), ((45,), "float32")], simulate=True)
    np.testing.assert_array_equal(got[0], np.argmax(x, axis=1))
    np.testing.assert_array_equal(got[1], x.max(axis=1))


def test_outputs_of_different_dtypes_elementwise():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    whole, frac = sl.compute(
        (n,), lambda i: (sl.floor(a[i]).astype("int32"), a[i] - sl.floor(a[i])), name="split"
    )
    s = sl.create_schedule(whole)
    x = _floats(17)
    got = _run(sl.build(s, [a, whole, frac]), [x], [((17,), "int32"), ((17,), "float32")])
    np.testing.assert_array_equal(got[0], np.floor(x).astype("int32"))
    np.testing.assert_allclose(got[1], x - np.floor(x), rtol=1e-6)


# -- what is refused, and how it is said ------------------------------------------------


def test_a_tuple_mixing_reductions_and_values_is_refused():
    n = sl.var("n")
    a = sl.placeholder((n, n), name="A")
    k = sl.reduce_axis((0, n), name="k")
    with pytest.raises(AlgorithmError, match="either elementwise values or all the components"):
        sl.compute((n,), lambda i: (sl.sum(a[i, k], axis=k), a[i, 0]), name="bad")


def test_a_combiner_returning_the_wrong_number_of_values_is_refused():
    pick = sl.comm_reducer(lambda x, y: x[0], lambda t0, t1: (0, 0), name="pick")
    n = sl.var("n")
    a = sl.placeholder((n, n), name="A")
    k = sl.reduce_axis((0, n), name="k")
    with pytest.raises(AlgorithmError, match="its combiner must return 2 values"):
        sl.compute((n,), lambda i: pick((a[i, k], a[k, i]), axis=k), name="bad")


@pytest.mark.parametrize("primitive", ["rfactor", "cache_write", "tensorize"])
def test_primitives_that_replace_one_op_are_refused_on_several_outputs(primitive):
    val, t0, t1 = _argmax()
    s = sl.create_schedule(t0)
    (k,) = s[t0].op.reduce_axis
    with pytest.raises(ScheduleError, match=r"'T' computes 2 outputs together \(T.v0, T.v1\)"):
        if primitive == "rfactor":
            s.rfactor(t0, k)
        elif primitive == "cache_write":
            s.cache_write(t1, "local")
        else:
            s[t0].tensorize(k, sl.intrin.mma_sync())


def test_a_reduction_over_tuples_across_threads_is_refused():
    val, t0, t1 = _argmax()
    s = sl.create_schedule(t0)
    (k,) = s[t0].op.reduce_axis
    with pytest.raises(ScheduleError, match="reduces over tuples"):
        s[t0].bind(k, sl.thread_axis("threadIdx.x"))


def test_every_output_must_be_in_args():
    a, b, p, q = _pair()
    s = sl.create_schedule(p)
    with pytest.raises(LoweringError, match="the output 'P.v1' is not in args"):
        sl.lower(s, [a, b, p])


def test_an_intermediate_listed_in_part_is_refused():
    a, b, p, q = _pair()
    m, n = a.shape
    c = sl.compute((m, n), lambda i, j: p[i, j] + q[i, j], name="C")
    s = sl.create_schedule(c)
    with pytest.raises(LoweringError, match="list all of them in args, or none"):
        sl.lower(s, [a, b, p, c])
