"""online: a maximum and the sums taken against it fused into one pass over blocks of their axis
(`schedule.online`), checked against the plain definition on random data: attention and softmax
at sizes the block does not divide, masks (causal, and rows of -inf scores), large magnitudes,
exp2 with a scale folded in; in the reference evaluator, on the CPU and in the GPU simulator;
and every broken precondition refused with the expression that breaks it."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir.tensor import ComputeOp, Tensor
from schedlang.schedule.errors import OnlineError

RNG = np.random.default_rng(41)
D = 8


def _attention(n, causal=False, mask=False, fn=sl.exp, scale=1.0):
    """Attention as its definition; `mask` adds a tensor of additive scores (-inf masks)."""
    q, k, v = (sl.placeholder((n, D), name=name) for name in "QKV")
    inputs = [q, k, v]
    d = sl.reduce_axis((0, D), name="d")
    s = sl.compute((n, n), lambda i, j: sl.sum(q[i, d] * k[j, d] * 0.35, axis=d), name="S")
    if mask:
        bias = sl.placeholder((n, n), name="B")
        inputs.append(bias)
        raw = s
        s = sl.compute((n, n), lambda i, j: raw[i, j] + bias[i, j], name="SB")

    def kept(i, j):
        return j <= i if causal else None

    j = sl.reduce_axis((0, n), name="j")
    m = sl.compute((n,), lambda i: sl.max(s[i, j], axis=j, where=kept(i, j)), name="M")
    p = sl.compute((n, n), lambda i, j: fn((s[i, j] - m[i]) * scale), name="P")
    jz = sl.reduce_axis((0, n), name="jz")
    z = sl.compute((n,), lambda i: sl.sum(p[i, jz], axis=jz, where=kept(i, jz)), name="Z")
    jo = sl.reduce_axis((0, n), name="jo")
    o = sl.compute(
        (n, D), lambda i, e: sl.sum(p[i, jo] * v[jo, e], axis=jo, where=kept(i, jo)), name="O"
    )
    out = sl.compute((n, D), lambda i, e: o[i, e] / z[i], name="Out")
    return inputs, (m, z, o), out


def _numpy_attention(q, k, v, bias=None, causal=False, base=np.e, scale=1.0):
    scores = (q.astype(np.float64) @ k.T.astype(np.float64)) * 0.35
    if bias is not None:
        scores = scores + bias
    if causal:
        scores = np.where(np.tril(np.ones(scores.shape, bool)), scores, -np.inf)
    with np.errstate(invalid="ignore"):
        top = scores.max(axis=1, keepdims=True)
        p = base ** ((scores - top) * scale)
        return (p @ v) / p.sum(axis=1, keepdims=True)


def _data(n, magnitude=1.0):
    return [(RNG.standard_normal((n, D)) * magnitude).astype(np.float32) for _ in range(3)]


def _run(s, inputs, out, arrays, n, **sizes):
    kernel = sl.build(s, [*inputs, out])
    result = np.full((n, D), np.nan, np.float32)
    kernel(*arrays, result)
    rewritten = sl.reference([Tensor(s[out].op)], dict(zip(inputs, arrays)), sizes=sizes)[0]
    return result, rewritten


@pytest.mark.parametrize("n, factor", [(37, 8), (64, 16), (5, 8), (1, 4), (33, 1)])
def test_attention_in_one_pass_matches_its_definition(n, factor):
    inputs, chain, out = _attention(n)
    s = sl.create_schedule(out)
    states = s.online(list(chain), factor=factor)
    assert len(states) == 3 and states[0].shape[0].value == -(-n // factor) + 1
    arrays = _data(n)
    result, rewritten = _run(s, inputs, out, arrays, n)
    want = _numpy_attention(*arrays)
    np.testing.assert_allclose(result, want, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(rewritten, want, rtol=2e-5, atol=2e-6)
    plain = sl.reference([out], dict(zip(inputs, arrays)))[0]  # the definition, unchanged
    np.testing.assert_allclose(plain, want, rtol=2e-5, atol=2e-6)


def test_a_causal_mask_and_large_scores():
    n = 45
    inputs, chain, out = _attention(n, causal=True)
    s = sl.create_schedule(out)
    s.online(list(chain), factor=8)
    arrays = _data(n, magnitude=30.0)  # scores in the thousands: exp overflows without the max
    result, rewritten = _run(s, inputs, out, arrays, n)
    want = _numpy_attention(*arrays, causal=True)
    assert np.isfinite(want).all()
    np.testing.assert_allclose(result, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(rewritten, want, rtol=1e-4, atol=1e-5)


def test_rows_of_minus_infinity_scores():
    """Scores masked by -inf: blocks with nothing but -inf leave the state as it is, and a row
    masked whole is 0 / 0, as in the definition."""
    n = 29
    inputs, chain, out = _attention(n, mask=True)
    s = sl.create_schedule(out)
    s.online(list(chain), factor=8)
    bias = np.where(RNG.random((n, n)) < 0.5, -np.inf, 0.0).astype(np.float32)
    bias[3, :20] = -np.inf  # the first blocks of a row masked: its maximum comes late
    bias[7, :] = -np.inf  # a row masked whole
    bias[3, 25] = 0.0
    arrays = [*_data(n), bias]
    result, rewritten = _run(s, inputs, out, arrays, n)
    plain = sl.reference([out], dict(zip(inputs, arrays)))[0]
    assert np.isnan(plain[7]).all() and np.isfinite(np.delete(plain, 7, axis=0)).all()
    np.testing.assert_allclose(result, plain, rtol=2e-5, atol=2e-6, equal_nan=True)
    np.testing.assert_allclose(rewritten, plain, rtol=2e-5, atol=2e-6, equal_nan=True)


@pytest.mark.parametrize("fn", [sl.exp2, sl.fast_exp2])
def test_exp2_with_the_scale_folded_in(fn):
    n = 23
    log2e = 1.4426950408889634
    inputs, chain, out = _attention(n, fn=fn, scale=log2e)
    s = sl.create_schedule(out)
    s.online(list(chain), factor=4)
    arrays = _data(n)
    result, _ = _run(s, inputs, out, arrays, n)
    np.testing.assert_allclose(result, _numpy_attention(*arrays), rtol=2e-5, atol=2e-6)


def test_a_symbolic_length():
    n = sl.var("n")
    inputs, chain, out = _attention(n)
    s = sl.create_schedule(out)
    s.online(list(chain), factor=8)
    kernel = sl.build(s, [*inputs, out])
    for size in (1, 8, 19):
        arrays = _data(size)
        result = np.full((size, D), np.nan, np.float32)
        kernel(*arrays, result)
        np.testing.assert_allclose(result, _numpy_attention(*arrays), rtol=2e-5, atol=2e-6)


def test_softmax_keeps_its_maximum_for_the_readers_after_it():
    n = 21
    x = sl.placeholder((n, n), name="X")
    j = sl.reduce_axis((0, n), name="j")
    m = sl.compute((n,), lambda i: sl.max(x[i, j], axis=j), name="M")
    jz = sl.reduce_axis((0, n), name="jz")
    z = sl.compute((n,), lambda i: sl.sum(sl.exp(x[i, jz] - m[i]), axis=jz), name="Z")
    y = sl.compute((n, n), lambda i, j: sl.exp(x[i, j] - m[i]) / z[i], name="Y")
    s = sl.create_schedule(y)
    s.online([m, z], factor=4)
    data = (RNG.standard_normal((n, n)) * 10).astype(np.float32)
    result = np.full((n, n), np.nan, np.float32)
    sl.build(s, [x, y])(data, result)
    e = np.exp(data - data.max(axis=1, keepdims=True))
    np.testing.assert_allclose(result, e / e.sum(axis=1, keepdims=True), rtol=2e-5, atol=1e-7)


def test_the_stages_it_makes_are_scheduled_as_any_and_run_in_the_gpu_simulator():
    n = 37
    inputs, chain, out = _attention(n)
    s = sl.create_schedule(out)
    s.online(list(chain), factor=8)
    bx, tx = sl.thread_axis("blockIdx.x"), sl.thread_axis("threadIdx.x")
    for stage in s.stages:
        if not isinstance(stage.op, ComputeOp):  # the inputs, and the scan (no loops)
            continue
        stepped = stage.op.name.startswith("M.online")  # block or step first, then the rows
        rows = stage.op.axis[1] if stepped else stage.op.axis[0]
        outer, inner = s[stage].split(rows, factor=16)
        s[stage].bind(outer, bx)
        s[stage].bind(inner, tx)
    kernel = sl.build(s, [*inputs, out], target="cuda")
    arrays = _data(n)
    result = np.full((n, D), np.nan, np.float32)
    kernel.simulate(*arrays, result)
    np.testing.assert_allclose(result, _numpy_attention(*arrays), rtol=2e-5, atol=2e-6)


def test_it_prints_undoes_and_replays():
    inputs, chain, out = _attention(19)
    s = sl.create_schedule(out)
    before = str(sl.lower(s, [*inputs, out]))
    s.online(list(chain), factor=8)
    assert "s.online([M, Z, O], factor=8)" in str(s)
    lowered = str(sl.lower(s, [*inputs, out]))
    assert "M.online.block_max" in lowered and "P[" not in lowered
    assert str(sl.lower(s.copy(), [*inputs, out])) == lowered
    s.undo()
    assert str(sl.lower(s, [*inputs, out])) == before
    assert s[chain[0]].name == "M"


def test_a_stage_it_folded_away_asked_for_in_args_is_refused_with_the_way_out():
    inputs, chain, out = _attention(9)
    s = sl.create_schedule(out)
    s.online(list(chain), factor=4)
    p = next(t for t in out.op.input_tensors[0].op.input_tensors if t.name == "P")
    with pytest.raises(sl.LoweringError, match=r"'P' was taken out .* keep=\[P\]"):
        sl.build(s, [*inputs, out, p])


def test_the_stages_it_took_out_are_the_users_again_after_undo():
    """online takes the maximum's stage out (nothing reads it after); undo brings it back, and
    the Stage objects the user holds name the stages again, so the same call applies again."""
    inputs, chain, out = _attention(19)
    s = sl.create_schedule(out)
    stages = [s[t] for t in chain]
    s.online(stages, factor=8)
    with pytest.raises(sl.ScheduleError, match="'M' is not part of this schedule"):
        s[stages[0]].split(stages[0].op.axis[0], factor=2)
    s.undo()
    assert s[stages[0]] is stages[0] and stages[0].op is chain[0].op
    s.online(stages, factor=8)
    arrays = _data(19)
    result, _ = _run(s, inputs, out, arrays, 19)
    np.testing.assert_allclose(result, _numpy_attention(*arrays), rtol=2e-5, atol=2e-6)


N = 16


def _softmax(z_source, z_extent=N):
    """A maximum and a sum over its axis whose source is ``z_source(x, m, i, k)``."""
    x = sl.placeholder((N, N), name="X")
    j = sl.reduce_axis((0, N), name="j")
    m = sl.compute((N,), lambda i: sl.max(x[i, j], axis=j), name="M")
    k = sl.reduce_axis((0, z_extent), name="k")
    z = sl.compute((N,), lambda i: sl.sum(z_source(x, m, i, k), axis=k), name="Z")
    y = sl.compute((N,), lambda i: z[i] + m[i], name="Y")
    return sl.create_schedule(y), m, z


@pytest.mark.parametrize(
    "z_source, match",
    [
        (lambda x, m, i, k: x[i, k] - m[i], r"reads 'M' in 'X\[i, k\] - M\[i\]'; the sums"),
        (
            lambda x, m, i, k: sl.exp(x[i, k] * 2.0 - m[i]),
            r"takes 'X\[i, k\] \* 2.0' against the maximum of 'X\[i, k\]'",
        ),
        (
            lambda x, m, i, k: sl.exp((x[i, k] - m[i]) * -0.5),
            "times a positive constant",
        ),
        (
            lambda x, m, i, k: sl.exp(x[i, k] - m[k]),
            "at a point that moves with the reduce axis 'k'",
        ),
        (
            lambda x, m, i, k: sl.exp(x[i, k] - m[i]) * sl.exp(x[i, k] - m[i]),
            r"has 2 factors exp\(x - M\[...\]\)",
        ),
        (lambda x, m, i, k: sl.exp(x[i, k]), "'Z' does not read 'M'"),
    ],
)
def test_what_rescaling_does_not_repair_is_refused_by_name(z_source, match):
    s, m, z = _softmax(z_source)
    with pytest.raises(OnlineError, match=match):
        s.online([m, z], factor=4)


@pytest.mark.parametrize(
    "exponent, written",
    [
        (lambda x, m: x * 0.5 + m * -0.5, "* 0.5 + M.run["),
        (lambda x, m: x * 0.5 - m * 0.5, "* 0.5 - M.run["),
    ],
    ids=["plus minus c", "minus c"],
)
def test_a_scale_distributed_over_the_difference_is_rescaled_in_the_users_form(exponent, written):
    """``exp2(x * c + m * -c)`` (FlashAttention's exponent: a fused multiply-add each) and
    ``exp2(x * c - m * c)`` are ``exp2((x - m) * c)``: the rewrite accepts them, keeps them as
    written in the blocks' sums, and rescales by ``exp2((m - m') * c)``. The scales must be
    the same constant."""
    x = sl.placeholder((N, N), name="X")
    j = sl.reduce_axis((0, N), name="j")
    m = sl.compute((N,), lambda i: sl.max(x[i, j], axis=j), name="M")
    k = sl.reduce_axis((0, N), name="k")
    z = sl.compute((N,), lambda i: sl.sum(sl.fast_exp2(exponent(x[i, k], m[i])), axis=k), name="Z")
    y = sl.compute((N,), lambda i: z[i] + m[i], name="Y")
    s = sl.create_schedule(y)
    s.online([m, z], factor=5)
    assert written in str(sl.lower(s, [x, y]))
    data = np.random.default_rng(2).standard_normal((N, N)).astype(np.float32) * 30
    out = np.full(N, np.nan, np.float32)
    sl.build(s, [x, y])(data, out)
    peak = data.max(axis=1)
    want = np.exp2(data * 0.5 - peak[:, None] * 0.5).sum(axis=1) + peak
    np.testing.assert_allclose(out, want, rtol=1e-5)


@pytest.mark.parametrize(
    "exponent",
    [lambda x, m: x * 0.5 - m * 0.25, lambda x, m: x * 0.5 + m * 0.5],
    ids=["other scale", "plus"],
)
def test_a_distributed_scale_must_be_the_same_constant(exponent):
    s, m, z = _softmax(lambda x, m, i, k: sl.exp(exponent(x[i, k], m[i])))
    with pytest.raises(OnlineError, match="times a positive constant"):
        s.online([m, z], factor=4)


def test_the_chain_must_start_with_a_maximum_or_a_sum_over_one_range():
    x = sl.placeholder((N, N), name="X")
    j = sl.reduce_axis((0, N), name="j")
    low = sl.compute((N,), lambda i: sl.min(x[i, j], axis=j), name="L")
    k = sl.reduce_axis((0, N), name="k")
    z = sl.compute((N,), lambda i: sl.sum(sl.exp(x[i, k] - low[i]), axis=k), name="Z")
    s = sl.create_schedule(z)
    with pytest.raises(OnlineError, match="'L' reduces with min; the first reduction"):
        s.online([low, z], factor=4)
    s, m, z = _softmax(lambda x, m, i, k: sl.exp(x[i, k] - m[i]), z_extent=8)
    with pytest.raises(OnlineError, match=r"'Z' reduces over \[0, 8\) and 'M' over \[0, 16\)"):
        s.online([m, z], factor=4)


def test_arguments_and_schedules_it_cannot_take():
    s, m, z = _softmax(lambda x, m, i, k: sl.exp(x[i, k] - m[i]))
    with pytest.raises(OnlineError, match="factor must be a positive integer"):
        s.online([m, z], factor=0)
    with pytest.raises(OnlineError, match="at least one reduction"):
        s.online([m], factor=4)
    with pytest.raises(OnlineError, match="'Y' is not a reduction"):
        s.online([m, s.stages[-1]], factor=4)
    s[z].split(z.op.axis[0], factor=4)
    with pytest.raises(OnlineError, match="'Z' is scheduled already; call online first"):
        s.online([m, z], factor=4)


def _moments(n):
    """Layer norm as its definition: the sum, the mean, the squares about it, normalised."""
    rows = 5
    x = sl.placeholder((rows, n), name="X")
    j = sl.reduce_axis((0, n), name="j")
    total = sl.compute((rows,), lambda i: sl.sum(x[i, j], axis=j), name="T")
    extent = sl.const(n, "float32") if isinstance(n, int) else n.astype("float32")
    mu = sl.compute((rows,), lambda i: total[i] / extent, name="MU")
    k = sl.reduce_axis((0, n), name="k")
    q = sl.compute((rows,), lambda i: sl.sum((x[i, k] - mu[i]) ** 2, axis=k), name="Q")
    y = sl.compute(
        (rows, n), lambda i, j: (x[i, j] - mu[i]) / sl.sqrt(q[i] / extent + 1e-5), name="Y"
    )
    return x, total, mu, q, y


def _layer_norm(data):
    wide = data.astype(np.float64)
    centred = wide - wide.mean(axis=1, keepdims=True)
    return centred / np.sqrt(wide.var(axis=1, keepdims=True) + 1e-5)


@pytest.mark.parametrize("n, factor", [(37, 8), (64, 16), (5, 8), (1, 4)])
def test_mean_and_variance_in_one_pass(n, factor):
    x, total, mu, q, y = _moments(n)
    s = sl.create_schedule(y)
    s.online([total, q], factor=factor)
    data = (RNG.standard_normal((5, n)) * 3 + 1000).astype(np.float32)  # a large offset
    out = np.full((5, n), np.nan, np.float32)
    sl.build(s, [x, y])(data, out)
    np.testing.assert_allclose(out, _layer_norm(data), atol=2e-4)
    rewritten = sl.reference([Tensor(s[y].op)], {x: data})[0]
    np.testing.assert_allclose(rewritten, _layer_norm(data), atol=2e-4)


def test_mean_and_variance_of_a_symbolic_length():
    n = sl.var("n")
    x, total, mu, q, y = _moments(n)
    s = sl.create_schedule(y)
    s.online([total, q], factor=8)
    kernel = sl.build(s, [x, y])
    for size in (3, 8, 21):
        data = RNG.standard_normal((5, size)).astype(np.float32)
        out = np.full((5, size), np.nan, np.float32)
        kernel(data, out)
        np.testing.assert_allclose(out, _layer_norm(data), atol=2e-5)


@pytest.mark.parametrize(
    "change, match",
    [
        ({"masked": True}, "'T' has a mask \\(where=\\)"),
        ({"mean": lambda total: lambda i: total[i] / 2.0}, "is not the mean T\\[...\\] / 16"),
        ({"square": lambda x, mu: lambda i, k: sl.abs(x[i, k] - mu[i])}, "rescales only"),
        (
            {"square": lambda x, mu: lambda i, k: (x[i, k] * 2.0 - mu[i]) ** 2},
            "is taken about the mean of 'X\\[i, k\\]'",
        ),
    ],
)
def test_what_the_one_pass_variance_cannot_take_is_refused_by_name(change, match):
    n = 16
    rows = 5
    x = sl.placeholder((rows, n), name="X")
    j = sl.reduce_axis((0, n), name="j")
    where = (j > 0) if change.get("masked") else None
    total = sl.compute((rows,), lambda i: sl.sum(x[i, j], axis=j, where=where), name="T")
    mean = change.get("mean", lambda total: lambda i: total[i] / 16.0)(total)
    mu = sl.compute((rows,), mean, name="MU")
    k = sl.reduce_axis((0, n), name="k")
    square = change.get("square", lambda x, mu: lambda i, k: (x[i, k] - mu[i]) ** 2)(x, mu)
    q = sl.compute((rows,), lambda i: sl.sum(square(i, k), axis=k), name="Q")
    s = sl.create_schedule(q)
    with pytest.raises(OnlineError, match=match):
        s.online([total, q], factor=4)


def _rounded_attention(n, causal=False):
    """Attention with the probabilities rounded to float16 for the weighted sum (a stage of
    their own, `P16`), as the tensor cores take them; the sum of the unrounded ones."""

    def kept(i, j):
        return j <= i if causal else None

    q, k, v = (sl.placeholder((n, D), name=name) for name in "QKV")
    d = sl.reduce_axis((0, D), name="d")
    s = sl.compute((n, n), lambda i, j: sl.sum(q[i, d] * k[j, d], axis=d), name="S")
    j = sl.reduce_axis((0, n), name="j")
    m = sl.compute((n,), lambda i: sl.max(s[i, j], axis=j, where=kept(i, j)), name="M")
    p = sl.compute((n, n), lambda i, j: sl.exp((s[i, j] - m[i]) * 0.35), name="P")
    p16 = sl.compute((n, n), lambda i, j: p[i, j].astype("float16"), name="P16")
    jz, jo = sl.reduce_axis((0, n), name="jz"), sl.reduce_axis((0, n), name="jo")
    z = sl.compute((n,), lambda i: sl.sum(p[i, jz], axis=jz, where=kept(i, jz)), name="Z")
    o = sl.compute(
        (n, D),
        lambda i, e: sl.sum(p16[i, jo].astype("float32") * v[jo, e], axis=jo, where=kept(i, jo)),
        name="O",
    )
    out = sl.compute((n, D), lambda i, e: o[i, e] / z[i], name="Out")
    return [q, k, v], (m, z, o), p16, out


@pytest.mark.parametrize("n, factor", [(37, 8), (64, 16)])
def test_probabilities_rounded_and_kept_a_block_at_a_time(n, factor):
    """A factor rounded to float16 is rescaled as the factor it rounds (exact up to that
    rounding), and `keep` computes P16 one block per step, which the weighted sum reads."""
    inputs, chain, p16, out = _rounded_attention(n)
    s = sl.create_schedule(out)
    s.online(list(chain), factor=factor, keep=[p16])
    assert f"s.online([M, Z, O], factor={factor}, keep=[P16])" in str(s)
    block = next(st for st in s.stages if st.name == "M.online.P16_block")
    assert [int(x.value) for x in block.op.shape] == [-(-n // factor) + 1, n, factor]
    weighted = next(st for st in s.stages if st.name == "M.online.O_block")
    assert "M.online.P16_block[j.step, i, j.inner]" in str(weighted.op.expr)
    arrays = _data(n)
    result, rewritten = _run(s, inputs, out, arrays, n)
    want = _numpy_attention(*arrays)
    np.testing.assert_allclose(result, want, rtol=2e-3, atol=2e-3)  # float16 probabilities
    np.testing.assert_allclose(rewritten, want, rtol=2e-3, atol=2e-3)
    replayed = s.copy()
    assert str(sl.lower(replayed, [*inputs, out])) == str(sl.lower(s, [*inputs, out]))


def test_a_causal_mask_moves_into_the_kept_probabilities():
    """The weighted sum's mask becomes the kept block's zeros (its product then takes no mask,
    as a tensor-core tile needs); the sum of the unrounded ones keeps its own."""
    n = 29
    inputs, chain, p16, out = _rounded_attention(n, causal=True)
    s = sl.create_schedule(out)
    s.online(list(chain), factor=8, keep=[p16])
    bodies = {st.name: str(getattr(st.op, "expr", "")) for st in s.stages}
    assert "j.inner <= i" in bodies["M.online.P16_block"]
    assert "<= i" not in bodies["M.online.O_block"] and "<= i" in bodies["M.online.Z_block"]
    arrays = _data(n)
    result, rewritten = _run(s, inputs, out, arrays, n)
    want = _numpy_attention(*arrays, causal=True)
    np.testing.assert_allclose(result, want, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(rewritten, want, rtol=2e-3, atol=2e-3)


def test_only_stages_between_the_maximum_and_the_sums_are_kept():
    inputs, chain, p16, out = _rounded_attention(16)
    s = sl.create_schedule(out)
    with pytest.raises(OnlineError, match="'Out' is not an elementwise stage between 'M'"):
        s.online(list(chain), factor=4, keep=[out])
    with pytest.raises(OnlineError, match="'M' is not an elementwise stage between 'M'"):
        s.online(list(chain), factor=4, keep=[chain[0]])
    x, total, mu, q, y = _moments(16)
    s = sl.create_schedule(y)
    with pytest.raises(OnlineError, match="keep= names stages of a softmax chain"):
        s.online([total, q], factor=4, keep=[mu])


def _at_row_blocks(n, rows, read_max=False):
    """Causal attention fused by online, its scan computed per block of `rows` query rows;
    with `read_max`, the output also reads the maximum (a log-sum-exp beside it)."""
    inputs, (m, z, o), out = _attention(n, causal=True)
    if read_max:
        out = sl.compute((n, D), lambda i, e: o[i, e] / z[i] + m[i] * 1e-3, name="Out2")
    s = sl.create_schedule(out)
    m_run, _, _ = s.online([m, z, o], factor=rows)
    for final in (m, z, o) if read_max else (z, o):
        s[final].compute_inline()
    outer, _ = s[out].split(out.op.axis[0], factor=rows)
    s[m_run].compute_at(s[out], outer)
    return s, inputs, out


@pytest.mark.parametrize("n", [29, 32])
def test_a_causal_scan_at_a_block_of_rows_stops_at_the_diagonal(n):
    """Steps whose keys are all masked for the block's rows change nothing: the step loop of
    the scan computed per block of 8 rows runs to the block's diagonal, not over every key."""
    s, inputs, out = _at_row_blocks(n, 8)
    text = str(sl.lower(s, [*inputs, out]))
    assert "for j.step in range(1, i.outer + 2):" in text
    arrays = _data(n)
    result = np.full((n, D), np.nan, np.float32)
    sl.build(s, [*inputs, out])(*arrays, result)
    np.testing.assert_allclose(result, _numpy_attention(*arrays, causal=True), rtol=2e-5, atol=2e-6)


def test_a_causal_scan_whose_maximum_is_read_after_it_runs_every_step():
    """The maximum's state keeps two rows (the step before and this one); a reader after the
    scan reads the last step's row, which a bounded loop would not have written: every step
    runs."""
    n = 29
    s, inputs, out = _at_row_blocks(n, 8, read_max=True)
    text = str(sl.lower(s, [*inputs, out]))
    assert "for j.step in range(1, 5):" in text
    arrays = _data(n)
    result = np.full((n, D), np.nan, np.float32)
    sl.build(s, [*inputs, out])(*arrays, result)
    scores = (arrays[0].astype(np.float64) @ arrays[1].T.astype(np.float64)) * 0.35
    top = np.where(np.tril(np.ones((n, n), bool)), scores, -np.inf).max(axis=1)
    want = _numpy_attention(*arrays, causal=True) + top[:, None] * 1e-3
    np.testing.assert_allclose(result, want, rtol=2e-5, atol=2e-6)
