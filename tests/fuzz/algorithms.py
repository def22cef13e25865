"""The algorithms the fuzzer schedules: one strategy per family, drawn with sizes that are 1,
primes, powers of two or symbolic (`sl.var`), because those are where split tails, empty
tiles and isl's parametric guards go wrong."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import strategies as st

import schedlang as sl

from .cases import Case, Sizes
from .int4 import int4


def elementwise(data, sizes: Sizes) -> Case:
    """A chain of one to three elementwise stages over one or two inputs (each stage reads
    the last input, so every input is read); sometimes an inner stage is an output too (a
    stage that may not be inlined)."""
    shape = tuple(sizes.extent() for _ in range(data.draw(st.integers(1, 2))))
    a = sl.placeholder(shape, name="A")
    inputs = [a]
    other = a
    if data.draw(st.booleans()):
        other = sl.placeholder(shape, name="B")
        inputs.append(other)
    ops: list[Callable] = [
        lambda p, q: p * 3.0 - q,
        lambda p, q: p + q,
        lambda p, q: sl.maximum(p, q) - q,
        lambda p, q: sl.sqrt(sl.abs(p)) * q,
    ]
    stages = []
    previous = a
    for k in range(data.draw(st.integers(1, 3))):
        f = data.draw(st.sampled_from(ops))
        previous = sl.compute(shape, lambda *i, f=f, p=previous: f(p[i], other[i]), name=f"P{k}")
        stages.append(previous)
    outputs = [stages[-1]]
    if len(stages) > 1 and data.draw(st.booleans()):
        outputs.insert(0, stages[0])
    return Case("elementwise", inputs, outputs)


def matmul(data, sizes: Sizes) -> Case:
    m, n, k_extent = sizes.extent(), sizes.extent(), sizes.extent()
    a = sl.placeholder((m, k_extent), name="A")
    b = sl.placeholder((k_extent, n), name="B")
    k = sl.reduce_axis((0, k_extent), name="k")
    c = sl.compute((m, n), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
    return Case("matmul", [a, b], [c])


def conv2d(data, sizes: Sizes) -> Case:
    """A padded convolution in CHW layout: the padding is a stage of its own, as in TE."""
    kh, kw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    pad = data.draw(st.integers(0, 1))
    c_in, c_out = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    h, w = sizes.extent(low=3, high=8), sizes.extent(low=3, high=8)
    a = sl.placeholder((c_in, h, w), name="A")
    wt = sl.placeholder((c_out, c_in, kh, kw), name="W")
    apad = sl.compute(
        (c_in, h + 2 * pad, w + 2 * pad),
        lambda c, y, x: sl.if_then_else(
            sl.all(y >= pad, y - pad < h, x >= pad, x - pad < w), a[c, y - pad, x - pad], 0.0
        ),
        name="Apad",
    )
    rc = sl.reduce_axis((0, c_in), name="rc")
    ry = sl.reduce_axis((0, kh), name="ry")
    rx = sl.reduce_axis((0, kw), name="rx")
    out = sl.compute(
        (c_out, h + 2 * pad - kh + 1, w + 2 * pad - kw + 1),
        lambda f, y, x: sl.sum(apad[rc, y + ry, x + rx] * wt[f, rc, ry, rx], axis=[rc, ry, rx]),
        name="Out",
    )
    return Case("conv2d", [a, wt], [out])


def stencil(data, sizes: Sizes) -> Case:
    """Halide's two-stage blur (rows, then columns), or a one-stage 3-point stencil."""
    h, w = sizes.extent(low=3), sizes.extent(low=3)
    a = sl.placeholder((h, w), name="A")
    if data.draw(st.booleans()):
        out = sl.compute(
            (h - 2, w), lambda i, j: a[i, j] + a[i + 1, j] * 2.0 + a[i + 2, j], name="S"
        )
        return Case("stencil", [a], [out])
    bx = sl.compute((h, w - 2), lambda i, j: a[i, j] + a[i, j + 1] + a[i, j + 2], name="BX")
    by = sl.compute((h - 2, w - 2), lambda i, j: bx[i, j] + bx[i + 1, j] + bx[i + 2, j], name="BY")
    return Case("stencil", [a], [by])


def reduction(data, sizes: Sizes) -> Case:
    """A sum, max or min over rows or over columns, or over a range of each row that depends
    on the row (a triangle, a band), sometimes followed by an elementwise stage that reads it."""
    rows, cols = sizes.extent(), sizes.extent()
    a = sl.placeholder((rows, cols), name="A")
    reducer = data.draw(st.sampled_from([sl.sum, sl.max, sl.min]))
    shape = data.draw(st.sampled_from(["rows", "columns", "triangle", "band"]), label="shape")
    if shape in ("triangle", "band"):

        def partial(i):
            lo = 0 if shape == "triangle" else sl.min(i, cols - 1)
            k = sl.reduce_axis((lo, sl.min(i + (1 if shape == "triangle" else 3), cols)), name="k")
            return reducer(a[i, k], axis=k)

        r = sl.compute((rows,), partial, name="R")
        family = f"row_{shape}"
    elif shape == "rows":
        k = sl.reduce_axis((0, cols), name="k")
        r = sl.compute((rows,), lambda i: reducer(a[i, k], axis=k), name="R")
        family = "row_reduction"
    else:
        k = sl.reduce_axis((0, rows), name="k")
        r = sl.compute((cols,), lambda j: reducer(a[k, j], axis=k), name="R")
        family = "column_reduction"
    if data.draw(st.booleans()):
        return Case(family, [a], [r])
    out = sl.compute(r.shape, lambda i: r[i] * 2.0 + 1.0, name="Out")
    return Case(family, [a], [out])


def softmax(data, sizes: Sizes) -> Case:
    """Five stages over rows: two reductions and three elementwise stages between them."""
    m, n = sizes.extent(), sizes.extent()
    a = sl.placeholder((m, n), name="A")
    k1 = sl.reduce_axis((0, n), name="k1")
    k2 = sl.reduce_axis((0, n), name="k2")
    mx = sl.compute((m,), lambda i: sl.max(a[i, k1], axis=k1), name="Max")
    e = sl.compute((m, n), lambda i, j: sl.exp(a[i, j] - mx[i]), name="E")
    total = sl.compute((m,), lambda i: sl.sum(e[i, k2], axis=k2), name="Sum")
    inv = sl.compute((m,), lambda i: 1.0 / total[i], name="Inv")
    out = sl.compute((m, n), lambda i, j: e[i, j] * inv[i], name="Out")
    return Case("softmax", [a], [out])


def attention(data, sizes: Sizes) -> Case:
    """Attention as its definition (scores, their maximum, the exponentials, their sum and
    the weighted sum of values, divided), sometimes under a mask that lets row i see the keys
    up to i + c (a causal one where c = 0, never a row with none): the chain online fuses,
    whose masked steps a scan computed at a loop leaves out."""
    n, d = sizes.extent(), sizes.extent(high=4)
    q, k, v = (sl.placeholder((n, d), name=name) for name in "QKV")
    e = sl.reduce_axis((0, d), name="e")
    s = sl.compute((n, n), lambda i, j: sl.sum(q[i, e] * k[j, e], axis=e), name="S")
    offset = data.draw(st.sampled_from([None, 0, 1, 3]), label="mask offset")

    def seen(i, j):
        return None if offset is None else j <= i + offset

    j1, j2, j3 = (sl.reduce_axis((0, n), name=name) for name in ("j1", "j2", "j3"))
    m = sl.compute((n,), lambda i: sl.max(s[i, j1], axis=j1, where=seen(i, j1)), name="M")
    p = sl.compute((n, n), lambda i, j: sl.exp(s[i, j] - m[i]), name="P")
    z = sl.compute((n,), lambda i: sl.sum(p[i, j2], axis=j2, where=seen(i, j2)), name="Z")
    o = sl.compute(
        (n, d), lambda i, c: sl.sum(p[i, j3] * v[j3, c], axis=j3, where=seen(i, j3)), name="O"
    )
    out = sl.compute((n, d), lambda i, c: o[i, c] / z[i], name="Out")
    return Case("attention" if offset is None else "masked_attention", [q, k, v], [out])


def gather(data, sizes: Sizes) -> Case:
    """Rows read at indices read from another tensor (take, an embedding lookup), of the input
    or of a stage computed from it: the read covers the tensor's whole extent along that
    dimension, and each index is clamped into it (the indices drawn run past small extents)."""
    rows, cols, count = sizes.extent(), sizes.extent(), sizes.extent()
    a = sl.placeholder((rows, cols), name="A")
    index = sl.placeholder((count,), "int32", name="I")
    source = a
    if data.draw(st.booleans(), label="gather a stage"):
        source = sl.compute((rows, cols), lambda i, j: a[i, j] * 2.0 + 1.0, name="T")
    out = sl.compute((count, cols), lambda i, j: source[index[i], j], name="G")
    return Case("gather", [a, index], [out])


def norm(data, sizes: Sizes) -> Case:
    """Layer norm over rows as its definition: a sum, the mean, the squares about it, and the
    normalised rows (the chain that online computes in one pass)."""
    m, n = sizes.extent(), sizes.extent()
    a = sl.placeholder((m, n), name="A")
    k1 = sl.reduce_axis((0, n), name="k1")
    k2 = sl.reduce_axis((0, n), name="k2")
    count = n.astype("float32") if not isinstance(n, int) else float(n)
    total = sl.compute((m,), lambda i: sl.sum(a[i, k1], axis=k1), name="Sum")
    mean = sl.compute((m,), lambda i: total[i] / count, name="Mean")
    sq = sl.compute((m,), lambda i: sl.sum((a[i, k2] - mean[i]) ** 2, axis=k2), name="Sq")
    out = sl.compute(
        (m, n), lambda i, j: (a[i, j] - mean[i]) / sl.sqrt(sq[i] / count + 1e-5), name="Out"
    )
    return Case("norm", [a], [out])


def transpose(data, sizes: Sizes) -> Case:
    """A transposed read, alone or through a transposed intermediate stage."""
    rows, cols = sizes.extent(), sizes.extent()
    a = sl.placeholder((rows, cols), name="A")
    if data.draw(st.booleans()):
        out = sl.compute((cols, rows), lambda i, j: a[j, i] * 2.0, name="T")
        return Case("transpose", [a], [out])
    t = sl.compute((cols, rows), lambda i, j: a[j, i] + 1.0, name="T")
    out = sl.compute((rows, cols), lambda i, j: t[j, i] * a[i, j], name="Out")
    return Case("transpose", [a], [out])


def casts(data, sizes: Sizes) -> Case:
    """A float-to-integer or float-to-8-bit-float cast, saturating for the larger scales, then
    a row sum accumulated in a narrower float. The pairs are chosen so that every partial sum
    is one the accumulator holds exactly, so that any order the schedule sums in gives the same
    value: float16 holds integers to 2048 (16 int8 values), bfloat16 to 256 (16 values of at
    most 8); float32 holds every sum of 16 float8_e4m3fn values (multiples of 2**-9 below
    2**13), float64 every sum of 16 float8_e5m2 values (multiples of 2**-16 below 2**20)."""
    rows, cols = sizes.extent(), sizes.extent()
    a = sl.placeholder((rows, cols), name="A")
    target, scale, accumulator = data.draw(
        st.sampled_from(
            [
                ("int8", 4.0, "float16"),
                ("int8", 100.0, "float16"),
                ("int8", 1e3, "float16"),
                ("uint8", -3.0, "float16"),
                ("int8", 4.0, "bfloat16"),
                ("int16", 1e5, "float32"),
                ("int32", 1e12, "float32"),
                ("uint32", 1e12, "float32"),
                ("float8_e4m3fn", 100.0, "float32"),
                ("float8_e5m2", 3e4, "float64"),
            ]
        ),
        label="cast",
    )
    q = sl.compute((rows, cols), lambda i, j: (a[i, j] * scale).astype(target), name="Q")
    k = sl.reduce_axis((0, cols), name="k")
    r = sl.compute((rows,), lambda i: sl.sum(q[i, k].astype(accumulator), axis=k), name="R")
    out = sl.compute((rows,), lambda i: r[i].astype("float32"), name="Out")
    return Case("casts", [a], [out])


def tuple_outputs(data, sizes: Sizes) -> Case:
    """A compute with two outputs, either both outputs of the kernel or both read by a last
    stage (so that the pair is placed, inlined or cached as one stage)."""
    shape = tuple(sizes.extent() for _ in range(data.draw(st.integers(1, 2))))
    a = sl.placeholder(shape, name="A")
    p, q = sl.compute(shape, lambda *i: (a[i] * 2.0 - 1.0, sl.sqrt(sl.abs(a[i])) + a[i]), name="P")
    if data.draw(st.booleans()):
        return Case("tuple_outputs", [a], [p, q])
    c = sl.compute(shape, lambda *i: p[i] * q[i], name="C")
    return Case("tuple_outputs", [a], [c])


def _argmax_reducer():
    """(index, value) pairs: the larger value, and on equal values the smaller index, so that
    any order of combining gives one answer."""

    def combine(x, y):
        keep = sl.any(x[1] > y[1], sl.all(x[1] == y[1], x[0] < y[0]))
        return sl.if_then_else(keep, x[0], y[0]), sl.if_then_else(keep, x[1], y[1])

    return sl.comm_reducer(
        combine, lambda t0, t1: (sl.max_value(t0), sl.min_value(t1)), name="argmax"
    )


def argmax(data, sizes: Sizes) -> Case:
    """A reduction over (index, value) pairs along rows: the column of each row's largest
    value (as a float, the fuzzer's arrays being float32) and the value."""
    rows, cols = sizes.extent(), sizes.extent()
    a = sl.placeholder((rows, cols), name="A")
    k = sl.reduce_axis((0, cols), name="k")
    index, value = sl.compute(
        (rows,), lambda i: _argmax_reducer()((k.var.astype("float32"), a[i, k]), axis=k), name="T"
    )
    return Case("argmax", [a], [index, value])


def scan(data, sizes: Sizes) -> Case:
    """A recurrence over the rows whose first one to three rows the init gives (S[t] =
    S[t - 1] * 0.5 + S[t - rows] * 0.25 + X[t]), its step computed directly or through a body
    stage that reads the state. Now and then the state has fewer steps than the init gives
    rows at the call's size: the kernel and the reference must refuse it (`Case.refusal`);
    constant extents that cannot fit are refused when the scan is written, and not drawn."""
    rows = data.draw(st.sampled_from([3, 2, 1]), label="scan init rows")  # several first
    width = sizes.extent()
    if rows > 1 and data.draw(st.integers(0, 2), label="scan steps short of its rows") == 0:
        steps = sl.var(f"n{len(sizes.values)}")
        sizes.values[steps.name] = data.draw(st.integers(1, rows - 1))
    else:
        steps = sizes.extent()
    refusal = None
    if isinstance(steps, int):
        rows = min(rows, steps)
    elif sizes.values[steps.name] < rows:
        refusal = (
            f"the init 'init' gives {rows} rows, but the state 'state' has "
            f"{sizes.values[steps.name]} rows? along its steps"
        )
    first = sl.placeholder((rows, width), name="first")
    x = sl.placeholder((steps, width), name="X")
    state = sl.placeholder((steps, width), name="state")
    init = sl.compute((rows, width), lambda t, i: first[t, i], name="init")

    def far(t, i):
        return state[t - rows, i] * 0.25 if rows > 1 else 0.0

    if data.draw(st.booleans()):
        update = sl.compute(
            (steps, width), lambda t, i: state[t - 1, i] * 0.5 + far(t, i) + x[t, i], name="update"
        )
    else:
        half = sl.compute((steps, width), lambda t, i: state[t - 1, i] * 0.5, name="half")
        update = sl.compute(
            (steps, width), lambda t, i: half[t, i] + far(t, i) + x[t, i], name="update"
        )
    return Case("scan", [first, x], [sl.scan(init, update, state)], refusal=refusal)


FAMILIES = {
    "elementwise": elementwise,
    "matmul": matmul,
    "conv2d": conv2d,
    "stencil": stencil,
    "reduction": reduction,
    "softmax": softmax,
    "attention": attention,
    "gather": gather,
    "norm": norm,
    "transpose": transpose,
    "casts": casts,
    "tuple_outputs": tuple_outputs,
    "argmax": argmax,
    "scan": scan,
    "int4": int4,
}


def draw_case(data, families: tuple[str, ...] = tuple(FAMILIES)) -> Case:
    """One algorithm of a family drawn from `families`, about a third of them with symbolic
    sizes."""
    family = data.draw(st.sampled_from(families), label="family")
    sizes = Sizes(data, symbolic=data.draw(st.integers(0, 2), label="symbolic") == 0)
    case = FAMILIES[family](data, sizes)
    case.sizes = dict(sizes.values)
    return case
