"""The fuzzer's packed int4 family: weights of two 4-bit values a byte with a scale and a
zero per group of rows (`sl.packed_int4`, docs/concepts.md "Packed int4 weights"), dequantised
as `examples/gpu_gemm_int4.py` does, and the layouts that must be refused."""

from __future__ import annotations

import re
from collections.abc import Callable

from hypothesis import strategies as st

import schedlang as sl

from .cases import Case, Sizes
from .verdict import FuzzFailure


def int4(data, sizes: Sizes) -> Case:
    """Packed int4 weights (`sl.packed_int4`, docs/concepts.md): a weight of K rows, K even
    and a multiple of its group of 2 to 16 rows, dequantised in the activations' dtype
    (float16, bfloat16 or float32), either a stage of its own (which moves place, inline,
    cache or give a scope) or written into the product, times activations (m x K) summed in
    float64. float64 holds every product and partial sum of float16 or bfloat16 values here
    exactly (products on a grid of 2**-35, sums below 2**12), so any order the schedule sums
    in gives one value; float32 values it sums far closer than the comparison asks. Now and
    then the nibbles are used elementwise instead (`_int4_elementwise`), and a layout
    `packed_int4` must refuse is asked for first (`_refused_layout`)."""
    checked = []
    if data.draw(st.integers(0, 3), label="int4 layout refused") == 0:
        checked.append(_refused_layout(data))
    group = data.draw(st.integers(2, 16), label="int4 group")
    k = group * data.draw(st.integers(1, 2), label="int4 groups")
    k *= 1 + k % 2  # a byte holds two rows
    m, n = sizes.extent(), sizes.extent()
    dtype = data.draw(st.sampled_from(["float16", "bfloat16", "float32"]), label="int4 dtype")
    wq, scale, zero = sl.packed_int4((k, n), group, dtype)

    def dequantised(r, j):
        q = sl.unpack_int4(wq[r // 2, j], r % 2)
        return (q - zero[r // group, j]) * scale[r // group, j]

    inlined = data.draw(st.booleans(), label="int4 weight inlined")
    w = None if inlined else sl.compute((k, n), dequantised, name="W")

    def weight(r, j):
        return dequantised(r, j) if w is None else w[r, j]

    packed = [wq, scale, zero]
    if data.draw(st.integers(0, 3), label="int4 elementwise") == 0:
        case = _int4_elementwise(data, packed, weight, (k, n))
        case.checked = checked
        return case
    a = sl.placeholder((m, k), dtype, name="A")
    rk = sl.reduce_axis((0, k), name="k")
    acc = sl.compute(
        (m, n),
        lambda i, j: sl.sum(a[i, rk].astype("float64") * weight(rk, j).astype("float64"), axis=rk),
        name="acc",
    )
    c = sl.compute((m, n), lambda i, j: acc[i, j].astype("float32"), name="C")
    return Case("int4", [a, *packed], [c], checked=checked)


def _int4_elementwise(data, packed: list[sl.Tensor], weight: Callable, shape: tuple) -> Case:
    """The dequantised weight as float32, the bytes with their nibbles swapped (integer
    arithmetic alone), or the rows of a weight of odd K packed by hand into K // 2 bytes:
    its last row's byte is a read outside the packed tensor, which every build must refuse."""
    wq = packed[0]
    k, n = shape
    use = data.draw(st.sampled_from(["dequantised", "swapped", "odd K"]), label="int4 use")
    if use == "dequantised":
        out = sl.compute(shape, lambda r, j: weight(r, j).astype("float32"), name="Out")
        return Case("int4", packed, [out])
    if use == "swapped":

        def swapped(p, j):
            return sl.unpack_int4(wq[p, j], 0) * 16 + sl.unpack_int4(wq[p, j], 1)

        out = sl.compute(wq.shape, lambda p, j: swapped(p, j).astype("float32"), name="Out")
        return Case("int4", [wq], [out])
    by_hand = sl.placeholder((k // 2, n), "uint8", name="Wq")
    out = sl.compute(
        (k + 1, n),
        lambda r, j: sl.unpack_int4(by_hand[r // 2, j], r % 2).astype("float32"),
        name="Out",
    )
    # through caches: of the reader ('Out.global', its loops 'r.c'), of the bytes ('Wq.local')
    refusal = r"compute 'Out[.\w]*' reads 'Wq[.\w]*\[r[.\w]* // 2, j[.\w]*\]' out of bounds"
    return Case("int4", [by_hand], [out], lowering_refusal=refusal)


def _refused_layout(data) -> str:
    """Asks `sl.packed_int4` for an odd K or a group that does not divide K: it must refuse it
    when the algorithm is defined, saying which. Returns the tally key of the refusal."""
    if data.draw(st.booleans(), label="int4 odd K"):
        k, group = 2 * data.draw(st.integers(0, 16)) + 1, data.draw(st.integers(1, 16))
        reason = rf"K = {k} is odd, but a byte holds the int4 values of two rows"
    else:
        group = data.draw(st.integers(3, 16))
        k = data.draw(st.sampled_from([r for r in range(2, 33, 2) if r % group]))
        reason = rf"group {group} does not divide K = {k}, which would leave a last group"
    try:
        sl.packed_int4((k, 5), group, "float16")
    except sl.AlgorithmError as err:
        if not re.search(reason, str(err)):
            raise FuzzFailure(f"packed_int4 refused K = {k}, group {group} thus: {err}") from err
        return "int4 layout refused when defined"
    raise FuzzFailure(f"packed_int4 accepted K = {k} in groups of {group}")
