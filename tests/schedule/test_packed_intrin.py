"""Declared intrinsics whose body calls a registered Python function (``sl.call_packed``),
handed each tile as a numpy view of the tensor: tiles read through ``//`` and ``%``, and
windows wider than the tile loops (overlapping from one tile to the next), checked against
numpy on random data with NaN-poisoned outputs; a function's exception reaching the caller;
and a read that lies otherwise than the intrinsic's refused."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.schedule.errors import TensorizeError

RNG = np.random.default_rng(7)


def _gather_tile(x: np.ndarray, z: np.ndarray) -> None:
    i, j = np.indices(z.shape)
    z[...] = x[j // 3 + i % 3, j % 3 + i // 3]


def _max_window(x: np.ndarray, z: np.ndarray) -> None:
    rows, cols = z.shape[1:]
    windows = [x[:, a : a + rows, b : b + cols] for a in range(3) for b in range(3)]
    z[...] = np.max(windows, axis=0)


sl.register_func("test.gather_tile", _gather_tile, override=True)
sl.register_func("test.max_window", _max_window, override=True)


def _gather_intrin():
    x = sl.placeholder((5, 5), name="x")
    y = sl.compute((9, 9), lambda i, j: x[j // 3 + i % 3, j % 3 + i // 3], name="y")
    return sl.decl_tensor_intrin(
        y.op, lambda ins, outs: sl.call_packed("test.gather_tile", ins[0], outs[0])
    )


def test_a_tile_read_through_floordiv_and_mod():
    m = sl.var("m")
    a = sl.placeholder((m, 5, 5), name="A")
    b = sl.compute((m, 9, 9), lambda n, i, j: a[n, j // 3 + i % 3, j % 3 + i // 3], name="B")
    s = sl.create_schedule(b)
    s[b].tensorize(b.op.axis[1], _gather_intrin())
    text = str(sl.lower(s, [a, b]))
    assert 'call_packed("test.gather_tile", &A[n, 0, 0], &B[n, 0, 0])' in text
    x = RNG.uniform(-1, 1, (7, 5, 5)).astype("float32")
    out = np.full((7, 9, 9), np.nan, "float32")
    kernel = sl.build(s, [a, b])
    kernel(x, out)
    np.testing.assert_array_equal(out, sl.evaluate(b, {a: x}))
    np.testing.assert_array_equal(kernel(x), out)  # the function writes B only: the output


def _pool(rows: int):
    """3 x 3 max pooling of (n, 4, 10, 12) images; the intrinsic pools `rows` output rows of
    the 4 channels, reading `rows` + 2 input rows."""
    xi = sl.placeholder((4, rows + 2, 12), name="x")
    kh = sl.reduce_axis((0, 3), name="kh")
    kw = sl.reduce_axis((0, 3), name="kw")
    pi = sl.compute(
        (4, rows, 10), lambda c, h, w: sl.max(xi[c, h + kh, w + kw], axis=[kh, kw]), name="p"
    )
    intrin = sl.decl_tensor_intrin(
        pi.op, lambda ins, outs: sl.call_packed("test.max_window", ins[0], outs[0])
    )
    n = sl.var("n")
    a = sl.placeholder((n, 4, 10, 12), name="A")
    rh = sl.reduce_axis((0, 3), name="rh")
    rw = sl.reduce_axis((0, 3), name="rw")
    p = sl.compute(
        (n, 4, 8, 10),
        lambda b, c, h, w: sl.max(a[b, c, h + rh, w + rw], axis=[rh, rw]),
        name="P",
    )
    return a, p, intrin


@pytest.mark.parametrize("rows", [8, 4])
def test_windows_wider_than_the_tile_loops(rows):
    a, p, intrin = _pool(rows)
    s = sl.create_schedule(p)
    b, c, h, w = p.op.axis
    ho, hi = s[p].split(h, factor=rows)
    s[p].reorder(b, ho, c, hi, w)
    s[p].parallel(b)
    s[p].tensorize(c, intrin)
    text = str(sl.lower(s, [a, p]))
    row = "0" if rows == 8 else f"{rows} * h.outer"  # one tile of rows: no loop
    assert f'call_packed("test.max_window", &A[b, 0, {row}, 0], &P[b, 0, {row}, 0])' in text
    x = RNG.uniform(-1, 1, (5, 4, 10, 12)).astype("float32")
    out = np.full((5, 4, 8, 10), np.nan, "float32")
    sl.build(s, [a, p])(x, out)
    np.testing.assert_array_equal(out, sl.evaluate(p, {a: x}))


def test_an_exception_of_the_function_reaches_the_caller():
    def broken(x, z):
        raise RuntimeError("no tile today")

    sl.register_func("test.broken_tile", broken, override=True)
    x = sl.placeholder((5, 5), name="x")
    y = sl.compute((9, 9), lambda i, j: x[j // 3 + i % 3, j % 3 + i // 3], name="y")
    intrin = sl.decl_tensor_intrin(
        y.op, lambda ins, outs: sl.call_packed("test.broken_tile", ins[0], outs[0])
    )
    a = sl.placeholder((3, 5, 5), name="A")
    b = sl.compute((3, 9, 9), lambda n, i, j: a[n, j // 3 + i % 3, j % 3 + i // 3], name="B")
    s = sl.create_schedule(b)
    s[b].tensorize(b.op.axis[1], intrin)
    kernel = sl.build(s, [a, b])
    with pytest.raises(RuntimeError, match="no tile today"):
        kernel(RNG.uniform(-1, 1, (3, 5, 5)).astype("float32"), np.zeros((3, 9, 9), "float32"))


@pytest.mark.parametrize(
    "read, message",
    [
        (lambda a, n, i, j: a[n, j % 3 + i // 3, j // 3 + i % 3], r"dimensions \(2, 1\) where"),
        (lambda a, n, i, j: a[n, j // 3 + i % 3, j % 3], "does not move through its tensor as"),
    ],
)
def test_a_read_lying_otherwise_is_refused(read, message):
    a = sl.placeholder((2, 5, 5), name="A")
    b = sl.compute((2, 9, 9), lambda n, i, j: read(a, n, i, j), name="B")
    s = sl.create_schedule(b)
    s[b].tensorize(b.op.axis[1], _gather_intrin())
    with pytest.raises(TensorizeError, match=message):
        sl.lower(s, [a, b])
