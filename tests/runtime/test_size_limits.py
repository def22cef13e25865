"""Sizes and element counts past int32: refused with advice by an int32 kernel, computed right
by an int64 one, never wrapped.

The large arrays are sparse files mapped with np.memmap: the file system stores only the pages
written, and the kernels read a few elements, so a 3-billion-element array costs a few pages of
memory and disk. Tests that need one skip where the file system cannot hold a sparse file.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import schedlang as sl
from schedlang.runtime.cuda.kernel import CudaKernel
from schedlang.runtime.size_limits import SizeLimits

BIG = 3_000_000_000  # elements: past int32 (2**31 - 1) and past uint32's half
INT32_MAX = 2**31 - 1


@pytest.fixture
def sparse(tmp_path):
    """``sparse(count, dtype, shape=None, at={index: value})``: a memmap of `count` elements
    backed by a sparse file, with only the elements of `at` written."""

    def make(count: int, dtype: str = "uint8", shape=None, at=None) -> np.memmap:
        path = tmp_path / f"sparse{len(os.listdir(tmp_path))}.bin"
        nbytes = count * np.dtype(dtype).itemsize
        try:
            with open(path, "wb") as f:
                f.truncate(nbytes)
            array = np.memmap(path, dtype=dtype, mode="r+", shape=shape or (count,))
            flat = array.reshape(-1)
            for index, value in (at or {}).items():
                flat[index] = value
            array.flush()
        except (OSError, ValueError) as error:
            pytest.skip(f"this file system cannot hold a sparse file of {nbytes} bytes: {error}")
        if os.stat(path).st_blocks * 512 > 64 * 2**20:
            pytest.skip("this file system does not keep files sparse")
        return array

    return make


# (dtype, elements, the last two values): a byte array and a float32 array past int32
LARGE = [("uint8", BIG, (41, 42)), ("float32", 2**31 + 8, (1.5, -2.25))]


def _last_two(n, dtype: str = "uint8"):
    """``B[i] = A[n - 2 + i]``: the last two elements of A, with the read guarded for n < 2."""
    a = sl.placeholder((n,), dtype, name="A")
    zero = sl.const(0, dtype)
    b = sl.compute((2,), lambda i: sl.if_then_else(n >= 2, a[n - 2 + i], zero), name="B")
    return sl.build(sl.create_schedule(b), [a, b])


def test_ordinary_kernels_index_in_int32():
    kernel = _last_two(sl.var("n"))
    assert kernel.lowered.index_dtype == "int32"
    assert kernel.lowered.body.var.dtype == "int32"


@pytest.mark.parametrize(("dtype", "count", "last"), LARGE)
def test_an_int32_size_past_its_range_is_refused(sparse, dtype, count, last):
    kernel = _last_two(sl.var("n"), dtype)
    a = sparse(count, dtype, at={count - 2: last[0], count - 1: last[1]})
    out = np.zeros(2, dtype)
    with pytest.raises(
        ValueError,
        match=rf"size 'n' is {count}, which does not fit int32 \(at most 2147483647\), the "
        r"dtype of 'n' and the index type of kernel 'main'; declare it wider: "
        r'sl.var\("n", dtype="int64"\)',
    ):
        kernel(a, out)
    assert not out.any()  # nothing ran


def test_a_size_given_by_name_past_int32_is_refused():
    n = sl.var("n")
    a = sl.placeholder((4,), name="A")
    k = sl.reduce_axis((0, n), name="k")
    b = sl.compute((4,), lambda i: sl.sum(a[i], axis=k), name="B")
    kernel = sl.build(sl.create_schedule(b), [a, b])
    x = np.random.default_rng(0).random(4, dtype=np.float32)
    out = np.full(4, np.nan, np.float32)
    kernel(x, out, n=3)
    np.testing.assert_allclose(out, sl.evaluate(b, {a: x}, sizes={n: 3}), rtol=1e-6)
    with pytest.raises(ValueError, match=r"size 'n' is 2147483648, which does not fit int32"):
        kernel(x, out, n=INT32_MAX + 1)


def test_an_int32_size_in_an_int64_kernel_is_refused_by_its_own_dtype():
    n, m = sl.var("n"), sl.var("m", dtype="int64")
    a = sl.placeholder((m,), name="A")
    k = sl.reduce_axis((0, n), name="k")
    b = sl.compute((m,), lambda i: sl.sum(a[i], axis=k), name="B")
    kernel = sl.build(sl.create_schedule(b), [a, b])
    assert kernel.lowered.index_dtype == "int64"
    x = np.ones(3, np.float32)
    with pytest.raises(
        ValueError,
        match=r"size 'n' is 2147483648, which does not fit int32 \(at most 2147483647\), the "
        r"dtype of 'n'; declare it wider",
    ):
        kernel(x, np.empty_like(x), n=INT32_MAX + 1)


def test_a_size_past_int64_is_refused():
    n = sl.var("n", dtype="int64")
    a = sl.placeholder((4,), name="A")
    k = sl.reduce_axis((0, n), name="k")
    b = sl.compute((4,), lambda i: sl.sum(a[i], axis=k), name="B")
    kernel = sl.build(sl.create_schedule(b), [a, b])
    x = np.ones(4, np.float32)
    with pytest.raises(
        ValueError,
        match=r"size 'n' is 9223372036854775808, which does not fit int64 \(at most "
        r"9223372036854775807\), the dtype of 'n' and the index type of kernel 'main'; no "
        r"kernel indexes that far; pass a smaller size",
    ):
        kernel(x, np.empty_like(x), n=2**63)


def _corners(n, m):
    """``B = [A[n - 1, 0], A[n - 1, m - 1]]``: the ends of A's last row."""
    a = sl.placeholder((n, m), "uint8", name="A")
    b = sl.compute((2,), lambda i: sl.if_then_else(i == 0, a[n - 1, 0], a[n - 1, m - 1]))
    return sl.build(sl.create_schedule(b), [a, b])


ROWS = COLS = 50_000  # each fits int32, their product does not


def test_an_array_with_more_elements_than_int32_indices_reach_is_refused(sparse):
    kernel = _corners(sl.var("n"), sl.var("m"))
    big = sparse(ROWS * COLS, shape=(ROWS, COLS))
    with pytest.raises(
        ValueError,
        match=r"argument 'A' has 2500000000 elements, more than the int32 indices of kernel "
        r"'main' reach \(at most 2147483647\); declare its sizes 64-bit: "
        r'sl.var\("m", dtype="int64"\), sl.var\("n", dtype="int64"\)',
    ):
        kernel(big, np.zeros(2, np.uint8))


def test_the_same_array_is_read_right_with_int64_sizes(sparse):
    kernel = _corners(sl.var("n", dtype="int64"), sl.var("m", dtype="int64"))
    last_row = (ROWS - 1) * COLS
    big = sparse(ROWS * COLS, shape=(ROWS, COLS), at={last_row: 7, ROWS * COLS - 1: 9})
    out = np.zeros(2, np.uint8)
    kernel(big, out)
    np.testing.assert_array_equal(out, [7, 9])


def test_a_temporary_past_int32_is_refused(sparse):
    n = sl.var("n")
    a = sl.placeholder((n,), "uint8", name="A")
    padded = sl.compute(
        (n + 1,), lambda i: sl.if_then_else(i < n, a[sl.min(i, n - 1)], 0), name="Padded"
    )
    b = sl.compute((2,), lambda i: padded[n - 1 + i], name="B")
    kernel = sl.build(sl.create_schedule(b), [a, b])
    assert "Padded" in str(kernel.lowered)
    x = np.random.default_rng(1).integers(1, 255, 5, dtype=np.uint8)
    out = np.zeros(2, np.uint8)
    kernel(x, out)
    np.testing.assert_array_equal(out, [x[-1], 0])
    with pytest.raises(
        ValueError,
        match=r"the temporary buffer 'Padded' of kernel 'main' is 2147483648 with n=2147483647, "
        r"more than its int32 indices reach \(at most 2147483647\); declare the size 64-bit: "
        r'sl.var\("n", dtype="int64"\)',
    ):
        kernel(sparse(INT32_MAX), out)


@pytest.mark.parametrize(("dtype", "count", "last"), LARGE)
def test_an_int64_size_reads_past_int32(sparse, dtype, count, last):
    kernel = _last_two(sl.var("n", dtype="int64"), dtype)
    assert kernel.lowered.index_dtype == "int64"
    assert kernel.lowered.body.var.dtype == "int64"
    a = sparse(count, dtype, at={count - 2: last[0], count - 1: last[1]})
    out = np.full(2, 99, dtype)
    kernel(a, out)
    np.testing.assert_array_equal(out, np.array(last, dtype))


def test_a_constant_shape_past_int32_indexes_in_int64(sparse):
    a = sl.placeholder((BIG,), "uint8", name="A")
    start = sl.const(BIG - 2, "int64")
    b = sl.compute((2,), lambda i: a[start + i] + (start + i).astype("uint8"), name="B")
    kernel = sl.build(sl.create_schedule(b), [a, b])
    assert kernel.lowered.index_dtype == "int64"
    x = sparse(BIG, at={BIG - 2: 41, BIG - 1: 42})
    out = np.zeros(2, np.uint8)
    kernel(x, out)
    expected = (np.array([41, 42]) + np.array([BIG - 2, BIG - 1]) % 256) % 256
    np.testing.assert_array_equal(out, expected)


def test_int64_sizes_match_the_reference_on_a_vectorized_schedule():
    n = sl.var("n", dtype="int64")
    a = sl.placeholder((n,), name="A")
    c = sl.compute((n,), lambda i: a[i] * 2.0 + i.astype("float32"), name="C")
    s = sl.create_schedule(c)
    _, inner = s[c].split(c.op.axis[0], factor=8)
    s[c].vectorize(inner)
    kernel = sl.build(s, [a, c])
    x = np.random.default_rng(2).random(37, dtype=np.float32)
    out = np.full(37, np.nan, np.float32)
    kernel(x, out)
    np.testing.assert_allclose(out, sl.evaluate(c, {a: x}), rtol=1e-6)


def test_a_cuda_kernel_refuses_before_touching_the_gpu(sparse):
    n = sl.var("n")
    a = sl.placeholder((n,), "uint8", name="A")
    b = sl.compute((n,), lambda i: a[i], name="B")
    s = sl.create_schedule(b)
    outer, inner = s[b].split(b.op.axis[0], factor=64)
    s[b].bind(outer, sl.thread_axis("blockIdx.x"))
    s[b].bind(inner, sl.thread_axis("threadIdx.x"))
    kernel = sl.build(s, [a, b], target="cuda")
    assert isinstance(kernel, CudaKernel)
    big = sparse(BIG)
    with pytest.raises(ValueError, match=r"size 'n' is 3000000000, which does not fit int32"):
        kernel(big, big)


def test_checks_are_listed_at_build():
    n = sl.var("n")
    a = sl.placeholder((n, 8), name="A")
    b = sl.compute((n, 8), lambda i, j: a[i, j] + 1.0, name="B")
    limits = SizeLimits(sl.lower(sl.create_schedule(b), [a, b]))
    assert [v.name for _, v, _ in limits._sizes] == ["n"]
    assert [b.name for _, b in limits._arrays] == ["A", "B"]
    constant = sl.placeholder((4, 8), name="K")
    k2 = sl.compute((4, 8), lambda i, j: constant[i, j], name="K2")
    assert SizeLimits(sl.lower(sl.create_schedule(k2), [constant, k2]))._arrays == ()


def _gpu_pattern(index: str):
    """``B[i] = i % 251`` over an `index` size, one thread per element."""
    n = sl.var("n", dtype=index)
    b = sl.compute((n,), lambda i: (i % 251).astype("uint8"), name="B")
    s = sl.create_schedule(b)
    outer, inner = s[b].split(b.op.axis[0], factor=256)
    s[b].bind(outer, sl.thread_axis("blockIdx.x"))
    s[b].bind(inner, sl.thread_axis("threadIdx.x"))
    return sl.build(s, [b], target="cuda")


def test_an_int64_cuda_kernel_assembles():
    from tests.cuda.ptxas import assemble

    kernel = _gpu_pattern("int64")
    assert kernel.lowered.index_dtype == "int64"
    assemble(kernel.ptx)


@pytest.mark.gpu
def test_a_gpu_kernel_writes_past_int32_with_int64_sizes_and_refuses_with_int32():
    count = 2**31 + 8
    out = sl.empty((count,), "uint8", "cuda")
    with pytest.raises(ValueError, match=r"size 'n' is 2147483656, which does not fit int32"):
        _gpu_pattern("int32")(out)
    _gpu_pattern("int64")(out)
    host = out.numpy()
    for window in (np.arange(16), np.arange(count - 16, count), np.arange(2**31 - 8, 2**31 + 8)):
        np.testing.assert_array_equal(host[window], (window % 251).astype(np.uint8))
