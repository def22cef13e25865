"""Every AlgorithmError a user can meet while writing an algorithm, and its message."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl

from .util import random_array, rng

AlgorithmError = sl.AlgorithmError


@pytest.fixture
def tensors():
    n = sl.var("n")
    A = sl.placeholder((n, 5), "float32", name="A")
    I = sl.placeholder((n,), "int32", name="I")
    k = sl.reduce_axis(5, name="k")
    return A, I, k, n


def test_errors_are_schedlang_errors_and_value_errors():
    assert issubclass(AlgorithmError, sl.SchedlangError)
    assert issubclass(AlgorithmError, ValueError)


def test_reduction_inside_a_larger_expression(tensors):
    A, _, k, n = tensors
    with pytest.raises(AlgorithmError, match=r"in compute 'B': the reduction 'sum\(A\[i, k\], "):
        sl.compute((n,), lambda i: sl.sum(A[i, k], axis=k) + 1.0, name="B")
    with pytest.raises(AlgorithmError, match="must be the whole body of a compute"):
        sl.compute((n,), lambda i: sl.exp(sl.max(A[i, k], axis=k)), name="B")


def test_reduce_axis_used_outside_its_reduction(tensors):
    A, _, k, n = tensors
    with pytest.raises(
        AlgorithmError, match=r"in compute 'B': the reduce axis 'k' is used outside a reduction"
    ):
        sl.compute((n,), lambda i: A[i, k], name="B")
    k2 = sl.reduce_axis(5, name="k2")
    with pytest.raises(AlgorithmError, match=r"reduce axis 'k2' is used outside.*axis=k2"):
        sl.compute((n,), lambda i: sl.sum(A[i, k] * A[i, k2], axis=k), name="B")


def test_wrong_number_of_indices(tensors):
    A, I, _, _ = tensors
    with pytest.raises(
        AlgorithmError, match=r"tensor 'A' has 2 dimension\(s\) but is indexed with 1 index"
    ):
        A[0] + 1  # A[0] alone is a slice to index further (A[0][j]), as in TE
    with pytest.raises(AlgorithmError, match=r"test_errors.py:\d+: give one index per dimension"):
        I[0, 1]


def test_slice_as_index(tensors):
    A, _, _, _ = tensors
    with pytest.raises(AlgorithmError, match=r"TensorRegion\(A\[0, 1:3\]\) at .* is a region"):
        sl.compute((3,), lambda i: A[0, 1:3] * 2)
    with pytest.raises(AlgorithmError, match="indexed with a slice in dimension 1"):
        A(0, slice(1, 3))


def test_float_index(tensors):
    A, I, _, n = tensors
    with pytest.raises(
        AlgorithmError, match=r"index 0 of 'I' is '1.5' of dtype float32 .*indices must be integers"
    ):
        I[1.5]
    with pytest.raises(AlgorithmError, match=r"index 1 of 'A' is 'A\[i, 0\]' of dtype float32"):
        sl.compute((n,), lambda i: A[i, A[i, 0]])


def test_true_division_of_integers(tensors):
    _, I, _, n = tensors
    with pytest.raises(AlgorithmError, match=r"'/' between integers in 'I\[i\] / 2': use '//'"):
        sl.compute((n,), lambda i: I[i] / 2)
    with pytest.raises(AlgorithmError, match=r"'/' between integers in 'n / \(I\[0\] \+ 1\)'"):
        n / (I[0] + 1)
    with pytest.raises(AlgorithmError, match="between integers"):
        sl.compute((n,), lambda i: 1 / i)


def test_bitwise_operator_with_a_float(tensors):
    A, I, _, _ = tensors
    with pytest.raises(
        AlgorithmError, match=r"cannot combine int32 and float32 with '&' .*need integers or bools"
    ):
        I[0] & A[0, 0]
    with pytest.raises(AlgorithmError, match="with '<<'"):
        A[0, 0] << 2
    with pytest.raises(AlgorithmError, match=r"'~' needs an integer or a bool, not float32"):
        ~A[0, 0]


def test_arithmetic_on_two_bools(tensors):
    A, _, _, _ = tensors
    p, q = A[0, 0] > 0, A[0, 1] > 0
    message = r"cannot combine bool and bool with '\+' in '\(A\[0, 0\] > 0.0\) \+ \(A\[0, 1\]"
    with pytest.raises(AlgorithmError, match=message):
        p + q
    with pytest.raises(AlgorithmError, match=r"with '\*'.*astype\('int32'\)"):
        p * q
    with pytest.raises(AlgorithmError, match="cannot negate the bool"):
        _ = -p


def test_ordering_a_bool_against_a_number(tensors):
    A, I, _, _ = tensors
    with pytest.raises(
        AlgorithmError, match=r"cannot order a bool against int32 in '\(A\[0, 0\] > 0.0\) < I\[0\]'"
    ):
        _ = (A[0, 0] > 0) < I[0]
    with pytest.raises(AlgorithmError, match="cannot order a bool against float32"):
        _ = A[0, 1] >= (A[0, 0] > 0)


def test_non_positive_extents():
    with pytest.raises(AlgorithmError, match=r"dimension 1 of 'A' is 0; extents must be positive"):
        sl.placeholder((3, 0), name="A")
    with pytest.raises(AlgorithmError, match=r"dimension 0 of 'B' is -2; extents must be positive"):
        sl.compute((-2,), lambda i: i, name="B")
    with pytest.raises(AlgorithmError, match="reduce_axis 'k' has the empty range \\[4, 4\\)"):
        sl.reduce_axis((4, 4), name="k")
    with pytest.raises(AlgorithmError, match="reduce_axis 'k' has the empty range \\[5, 2\\)"):
        sl.reduce_axis((5, 2), name="k")
    with pytest.raises(AlgorithmError, match="the extent of reduce_axis 'k' is 0"):
        sl.reduce_axis(0, name="k")


def test_extents_must_be_integer_and_static(tensors):
    A, _, _, n = tensors
    with pytest.raises(AlgorithmError, match=r"dimension 0 of 'B' is '2.5' of dtype float32"):
        sl.placeholder((2.5,), name="B")
    with pytest.raises(AlgorithmError, match="reads a tensor: extents must be static"):
        sl.placeholder((A[0, 0].astype("int32"),), name="B")
    with pytest.raises(AlgorithmError, match="'m' must have an integer dtype .* not bool"):
        sl.var("m", "bool")
    with pytest.raises(AlgorithmError, match=r"'scale\[\]' of dtype float32; sizes must be"):
        sl.placeholder((sl.var("scale", "float32"),), name="B")  # a scalar parameter


def test_lambda_arity_does_not_match_the_shape(tensors):
    A, _, _, n = tensors
    with pytest.raises(
        AlgorithmError,
        match=r"compute 'B' has a 2-dimensional shape but its function takes 1 argument\(s\) "
        r"at test_errors.py:\d+",
    ):
        sl.compute((n, 5), lambda i: A[i, 0], name="B")
    with pytest.raises(AlgorithmError, match="1-dimensional shape but its function takes 3"):
        sl.compute((n,), lambda i, j, k: A[i, j], name="B")


@pytest.mark.parametrize("use", ["if", "and", "not", "bool"])
def test_expression_used_as_a_python_bool(tensors, use):
    A, _, _, _ = tensors
    cond = A[0, 0] > 0
    match = r"cannot use the expression 'A\[0, 0\] > 0.0' as a Python bool.*sl.if_then_else"
    with pytest.raises(AlgorithmError, match=match):
        if use == "if":
            if cond:
                pass
        elif use == "and":
            _ = cond and A[0, 1] > 0
        elif use == "not":
            _ = not cond
        else:
            bool(cond)


def test_python_bool_of_an_arithmetic_expression(tensors):
    A, _, _, _ = tensors
    with pytest.raises(AlgorithmError, match=r"'A\[0, 0\] \+ 1.0' as a Python bool"):
        bool(A[0, 0] + 1)


def test_axis_of_another_compute(tensors):
    A, _, _, n = tensors
    B = sl.compute((n,), lambda i: A[i, 0], name="B")
    with pytest.raises(AlgorithmError, match=r"in compute 'C': 'i' is an axis of another compute"):
        sl.compute((n,), lambda j: A[B.op.axis[0], 0] + A[j, 1], name="C")


def test_extent_with_another_computes_axis(tensors):
    """A reduce axis may range over an expression of its own compute's axes (a triangle), not
    of another compute's."""
    A, _, _, n = tensors
    B = sl.compute((n,), lambda i: A[i, 0], name="B")
    k = sl.reduce_axis(B.op.axis[0] + 1, name="k")
    with pytest.raises(AlgorithmError, match="reduce_axis 'k' uses 'i', an axis of another"):
        sl.compute((n,), lambda j: sl.sum(A[j, k], axis=k), name="C")
    with pytest.raises(AlgorithmError, match="uses the loop variable 'i'"):
        sl.placeholder((B.op.axis[0] + 1,), name="P")


@pytest.mark.parametrize("fn", ["exp", "log", "sqrt", "tanh", "sigmoid", "erf", "sin", "rsqrt"])
def test_float_math_of_an_integer(tensors, fn):
    _, I, _, _ = tensors
    with pytest.raises(
        AlgorithmError, match=rf"sl.{fn}\(I\[0\]\) needs float arguments, got int32"
    ):
        getattr(sl, fn)(I[0])


def test_float_math_of_integers_with_two_arguments(tensors):
    _, I, _, _ = tensors
    with pytest.raises(AlgorithmError, match=r"sl.pow\(I\[0\], 2\) needs float arguments"):
        sl.pow(I[0], 2)
    with pytest.raises(AlgorithmError, match=r"sl.fma\(I\[0\], I\[1\], 1\) needs float"):
        sl.fma(I[0], I[1], 1)
    with pytest.raises(AlgorithmError, match=r"sl.floor\(I\[0\] > 0\) needs a number, not a bool"):
        sl.floor(I[0] > 0)


def test_integer_power_needs_a_constant_non_negative_exponent(tensors):
    _, I, _, _ = tensors
    with pytest.raises(
        AlgorithmError, match=r"integer power 'I\[0\] \*\* I\[1\]' needs a constant"
    ):
        I[0] ** I[1]
    with pytest.raises(AlgorithmError, match=r"integer power 'I\[0\] \*\* -1'"):
        I[0] ** -1


def test_where_that_is_not_a_bool(tensors):
    A, _, k, n = tensors
    with pytest.raises(
        AlgorithmError, match=r"where= of sl.sum must be a condition \(bool\), got int32 in 'k'"
    ):
        sl.compute((n,), lambda i: sl.sum(A[i, k], axis=k, where=k))
    with pytest.raises(AlgorithmError, match="where= of sl.max must be a condition"):
        sl.compute((n,), lambda i: sl.max(A[i, k], axis=k, where=A[i, k]))


def test_sum_and_prod_over_bools(tensors):
    A, _, k, n = tensors
    with pytest.raises(
        AlgorithmError, match=r"sl.sum over bools in 'A\[i, k\] > 0.0': cast to a number"
    ):
        sl.compute((n,), lambda i: sl.sum(A[i, k] > 0, axis=k))
    with pytest.raises(AlgorithmError, match="sl.prod over bools"):
        sl.compute((n,), lambda i: sl.prod(A[i, k] > 0, axis=k))


def test_compute_returning_an_empty_tuple(tensors):
    A, _, _, n = tensors
    with pytest.raises(AlgorithmError, match="compute 'B' returned an empty tuple"):
        sl.compute((n,), lambda i: (), name="B")


def test_compute_returning_a_tensor(tensors):
    A, _, _, n = tensors
    with pytest.raises(AlgorithmError, match=r"tensor 'A' used as a value: index it"):
        sl.compute((n,), lambda i: A, name="B")


def test_reduce_with_a_data_axis(tensors):
    A, _, k, n = tensors
    with pytest.raises(AlgorithmError, match=r"sl.sum: 'i' is a data axis .*not a reduce axis"):
        sl.compute((n,), lambda i: sl.sum(A[i, 0], axis=i))
    with pytest.raises(AlgorithmError, match=r"sl.max: 'j' is a data axis .*not a reduce axis"):
        sl.compute((n, 5), lambda i, j: sl.max(A[i, j], axis=[k, j]))
    with pytest.raises(AlgorithmError, match="sl.min: axis 3 is not a reduce axis"):
        sl.compute((n,), lambda i: sl.min(A[i, 0], axis=[3]))


def test_reduce_axis_listed_twice_or_missing(tensors):
    A, _, k, n = tensors
    with pytest.raises(AlgorithmError, match="the same reduce axis is listed twice"):
        sl.compute((n,), lambda i: sl.sum(A[i, k], axis=[k, k]))
    with pytest.raises(AlgorithmError, match=r"sl.sum\(expr\) needs axis="):
        sl.compute((n,), lambda i: sl.sum(A[i, 0]))
    with pytest.raises(AlgorithmError, match=r"sl.max\(a, b\) combines two values"):
        sl.max(A[0, 0], A[0, 1], where=A[0, 0] > 0)


def test_if_then_else_with_a_condition_that_is_not_a_bool(tensors):
    A, _, _, _ = tensors
    with pytest.raises(AlgorithmError, match="the condition of if_then_else must be a bool"):
        sl.if_then_else(A[0, 0], 1.0, 0.0)
    with pytest.raises(AlgorithmError, match=r"sl.all takes conditions \(bools\), got float32"):
        sl.all(A[0, 0] > 0, A[0, 1])
    with pytest.raises(AlgorithmError, match=r"sl.any takes conditions"):
        sl.any(A[0, 0])


def test_values_that_are_not_expressions(tensors):
    A, _, _, _ = tensors
    with pytest.raises(AlgorithmError, match="cannot use 'x' of type str in an expression"):
        A[0, 0] + "x"
    with pytest.raises(AlgorithmError, match="cannot use None"):
        sl.const(None)


def test_reducer_identity_reading_a_tensor(tensors):
    A, _, k, n = tensors
    bad = sl.comm_reducer(lambda x, y: x + y, lambda t: A[0, 0], name="bad")
    with pytest.raises(AlgorithmError, match=r"the identity of 'bad' is 'A\[0, 0\]', which reads"):
        sl.compute((n,), lambda i: bad(A[i, k], axis=k))


def test_out_of_bounds_read_names_tensor_index_and_point():
    n = sl.var("n")
    A = sl.placeholder((n,), name="A")
    B = sl.compute((n,), lambda i: A[i] + A[i + 1], name="B")
    a = random_array(rng(), (7,), "float32")
    with pytest.raises(
        AlgorithmError,
        match=r"compute 'B' reads 'A\[i \+ 1\]' out of bounds: at i=6 it reads A\[7\] "
        r"but 'A' has shape \(7,\); guard the read with sl.if_then_else",
    ):
        sl.evaluate(B, {A: a})


def test_out_of_bounds_below_zero_in_two_dimensions():
    A = sl.placeholder((13, 5), name="A")
    B = sl.compute((13, 5), lambda i, j: A[i, j - 2 * (i % 3)], name="B")
    a = random_array(rng(), (13, 5), "float32")
    with pytest.raises(
        AlgorithmError,
        match=r"reads 'A\[i, j - 2 \* \(i % 3\)\]' .*at i=1, j=0 it reads A\[1, -2\]",
    ):
        sl.evaluate(B, {A: a})


def test_out_of_bounds_in_a_reduction_names_the_reduce_axis():
    A = sl.placeholder((7, 5), name="A")
    k = sl.reduce_axis((0, 6), name="k")
    B = sl.compute((7,), lambda i: sl.sum(A[i, k], axis=k), name="B")
    with pytest.raises(AlgorithmError, match=r"at i=0, k=5 it reads A\[0, 5\]"):
        sl.evaluate(B, {A: random_array(rng(), (7, 5), "float32")})


def test_guarded_out_of_bounds_read_is_fine():
    n = sl.var("n")
    A = sl.placeholder((n,), name="A")
    B = sl.compute((n,), lambda i: sl.if_then_else(i + 1 < n, A[i + 1], 0.0) + A[i], name="B")
    a = random_array(rng(), (7,), "float32")
    np.testing.assert_array_equal(sl.evaluate(B, {A: a}), a + np.append(a[1:], np.float32(0)))
    k = sl.reduce_axis((-1, 2), name="k")
    C = sl.compute((n,), lambda i: sl.sum(A[i + k], axis=k, where=sl.all(i + k >= 0, i + k < n)))
    padded = np.pad(a, 1)
    np.testing.assert_allclose(sl.evaluate(C, {A: a}), padded[:-2] + padded[1:-1] + padded[2:])


def test_a_reducer_over_tuples_used_on_one_value_says_how_to_apply_it():
    """A combiner that returns a tuple is a reducer over tuples: applied to one value, the
    error says it takes a tuple of values, in a compute that returns the components."""
    a = sl.placeholder((4, 5), name="A")
    k = sl.reduce_axis((0, 5), name="k")
    pairs = sl.comm_reducer(lambda x, y: (x, y), lambda t: (0, 0), name="argmax")
    with pytest.raises(
        sl.AlgorithmError,
        match="the combiner of 'argmax' returns a tuple for one value: a reducer over tuples is "
        r"applied to a tuple of values, e.g. argmax\(\(idx",
    ):
        sl.compute((4,), lambda i: pairs(a[i, k], axis=k), name="B")
