"""TE's tensor intrinsic whose body calls a registered function with its buffers
(``tvm.tir.call_packed("f", ins[0].data, outs[0])``): a max pooling whose 3 x 3 windows reach
past the tile loops, tensorized at the channel axis, built and checked against numpy."""

from __future__ import annotations

import numpy as np

import schedlang.tvm as tvm
from schedlang.tvm import te


@tvm.register_func("test.te_pool_tile", override=True)
def _pool_tile(x, z):
    data = x.numpy()
    rows, cols = z.shape[1:]
    windows = [data[:, a : a + rows, b : b + cols] for a in range(3) for b in range(3)]
    z.copyfrom(np.max(windows, axis=0))


def test_a_pooling_tile_handed_to_a_registered_function():
    xi = te.placeholder((6, 9, 7), name="x")
    kh = te.reduce_axis((0, 3), name="kh")
    kw = te.reduce_axis((0, 3), name="kw")
    tile = te.compute(
        (6, 7, 5), lambda c, h, w: te.max(xi[c, h + kh, w + kw], axis=[kh, kw]), name="p"
    )
    intrin = te.decl_tensor_intrin(
        tile.op,
        lambda ins, outs: tvm.tir.call_packed("test.te_pool_tile", ins[0].data, outs[0]),
        default_buffer_params={"offset_factor": 1},
    )
    a = te.placeholder((3, 6, 9, 7), name="A")
    rh = te.reduce_axis((0, 3), name="rh")
    rw = te.reduce_axis((0, 3), name="rw")
    p = te.compute(
        (3, 6, 7, 5),
        lambda n, c, h, w: te.max(a[n, c, h + rh, w + rw], axis=[rh, rw]),
        name="P",
    )
    s = te.create_schedule(p.op)
    s[p].tensorize(p.op.axis[1], intrin)
    f = tvm.build(s, [a, p])
    x = np.random.default_rng(3).uniform(-1, 1, (3, 6, 9, 7)).astype("float32")
    out = tvm.nd.array(np.full((3, 6, 7, 5), np.nan, "float32"))
    f(tvm.nd.array(x), out)
    windows = [x[:, :, i : i + 7, j : j + 5] for i in range(3) for j in range(3)]
    np.testing.assert_array_equal(out.numpy(), np.max(windows, axis=0))
