"""`online(..., threshold=)`: the sums taken against a reference maximum that follows the
running one only once it has grown past it by more than the threshold (FlashAttention 4's lazy
rescale), caught up once at the end, so that the maximum, the sums and the output are the
definition's."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.schedule.errors import OnlineError

from .test_online import D, _at_row_blocks, _attention, _data, _moments, _numpy_attention

RNG = np.random.default_rng(43)


def _growing(n: int, magnitude: float) -> list[np.ndarray]:
    """Q, K and V whose keys grow along the sequence: a row's maximum keeps growing, by more
    than a small threshold from block to block and by less than a large one."""
    q, k, v = _data(n)
    k = k * np.linspace(0.2, magnitude, n, dtype=np.float32)[:, None]
    return [q, k.astype(np.float32), v]


def _wide(q, k, causal=False):
    scores = (q.astype(np.float64) @ k.T.astype(np.float64)) * 0.35
    if causal:
        scores = np.where(np.tril(np.ones(scores.shape, bool)), scores, -np.inf)
    return scores


@pytest.mark.parametrize("threshold", [0.0, 0.5, 3.0, 8.0])
@pytest.mark.parametrize("causal", [False, True])
def test_the_maximum_sum_and_output_are_the_definitions(threshold, causal):
    """M, Z and O as outputs beside the attention: Z and O caught up to the true maximum."""
    n = 43
    inputs, (m, z, o), out = _attention(n, causal=causal)
    s = sl.create_schedule([out.op, m.op, z.op])
    states = s.online([m, z, o], factor=8, threshold=threshold)
    assert [t.name for t in states] == ["M.run", "Z.run", "O.run"]
    arrays = _growing(n, 6.0)
    results = [np.full(shape, np.nan, np.float32) for shape in ((n, D), n, n)]
    sl.build(s, [*inputs, out, m, z])(*arrays, *results)
    scores = _wide(*arrays[:2], causal)
    top = scores.max(axis=1)
    want_z = np.exp(scores - top[:, None]).sum(axis=1)
    want = _numpy_attention(*arrays, causal=causal)
    np.testing.assert_allclose(results[0], want, rtol=5e-5, atol=2e-6)
    # a dot product's float32 rounding is relative to its terms, not to a sum near zero
    np.testing.assert_allclose(results[1], top, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(results[2], want_z, rtol=5e-5)


def test_a_lagging_reference_rescales_less_often_and_stays_below_the_bound():
    """Counted in the reference evaluator's states: with threshold 3 the reference moves at
    fewer steps than the maximum, and lags it by at most 3 at every step."""
    n, factor, threshold = 64, 8, 3.0
    inputs, chain, out = _attention(n)
    s = sl.create_schedule(out)
    states = s.online(list(chain), factor=factor, threshold=threshold)
    scan = states[0].op.outputs.ops
    named = {op.name: op for op in scan}
    assert set(named) == {"M.run", "M.reference", "M.lag", "Z.run", "O.run"}
    arrays = _growing(n, 6.0)
    wanted = [sl.Tensor(named["M.run"]), sl.Tensor(named["M.reference"])]
    top, reference = sl.reference(wanted, dict(zip(inputs, arrays)))
    assert np.all(reference <= top) and np.all(top - reference <= threshold)
    moved = lambda x: int((np.diff(x, axis=0) != 0).sum())  # noqa: E731
    assert 0 < moved(reference[1:]) < moved(top[1:])


def test_rows_of_minus_infinity_and_large_scores():
    n = 29
    inputs, chain, out = _attention(n, mask=True)
    s = sl.create_schedule(out)
    s.online(list(chain), factor=8, threshold=8.0)
    bias = np.where(RNG.random((n, n)) < 0.5, -np.inf, 0.0).astype(np.float32)
    bias[3, :20] = -np.inf
    bias[7, :] = -np.inf  # a row masked whole: 0 / 0, as in the definition
    bias[3, 25] = 0.0
    arrays = [*_data(n, magnitude=30.0), bias]
    result = np.full((n, D), np.nan, np.float32)
    sl.build(s, [*inputs, out])(*arrays, result)
    plain = sl.reference([out], dict(zip(inputs, arrays)))[0]
    assert np.isnan(plain[7]).all() and np.isfinite(np.delete(plain, 7, axis=0)).all()
    np.testing.assert_allclose(result, plain, rtol=1e-4, atol=1e-5, equal_nan=True)


def test_a_causal_scan_at_a_block_of_rows_still_stops_at_the_diagonal():
    """The reference keeps two rows (the step before and this one), but the readers after the
    scan read its lag, of one row: the steps above the diagonal are still left out."""
    n = 29
    s, inputs, out = _at_row_blocks(n, 8)
    assert "for j.step in range(1, i.outer + 2):" in str(sl.lower(s, [*inputs, out]))
    inputs, (m, z, o), out = _attention(n, causal=True)
    s = sl.create_schedule(out)
    m_run, _, _ = s.online([m, z, o], factor=8, threshold=2.0)
    for final in (z, o):
        s[final].compute_inline()
    outer, _ = s[out].split(out.op.axis[0], factor=8)
    s[m_run].compute_at(s[out], outer)
    text = str(sl.lower(s, [*inputs, out]))
    assert "for j.step in range(1, i.outer + 2):" in text and "M.lag" in text
    arrays = _growing(n, 4.0)
    result = np.full((n, D), np.nan, np.float32)
    sl.build(s, [*inputs, out])(*arrays, result)
    want = _numpy_attention(*arrays, causal=True)
    np.testing.assert_allclose(result, want, rtol=5e-5, atol=2e-6)


def test_it_prints_undoes_and_replays():
    inputs, chain, out = _attention(19)
    s = sl.create_schedule(out)
    before = str(sl.lower(s, [*inputs, out]))
    s.online(list(chain), factor=8, threshold=8)
    assert "s.online([M, Z, O], factor=8, threshold=8)" in str(s)
    lowered = str(sl.lower(s, [*inputs, out]))
    assert "M.reference" in lowered and "M.lag" in lowered
    assert str(sl.lower(s.copy(), [*inputs, out])) == lowered
    s.undo()
    assert str(sl.lower(s, [*inputs, out])) == before


@pytest.mark.parametrize(
    "threshold, match",
    [
        (-1.0, r"threshold must be a number >= 0 \(an exponent\), got -1.0"),
        (float("inf"), "threshold must be a number >= 0"),
        ("8", "threshold must be a number >= 0"),
        (40.0, r"the terms of 'Z' reach exp\(40\) = 2.35385e\+17; give a smaller threshold"),
    ],
)
def test_thresholds_it_cannot_take_are_refused_by_name(threshold, match):
    inputs, chain, out = _attention(16)
    s = sl.create_schedule(out)
    with pytest.raises(OnlineError, match=match):
        s.online(list(chain), factor=4, threshold=threshold)


def test_a_threshold_past_the_type_a_term_is_rounded_to_is_refused():
    """Probabilities rounded to float16 for the tensor cores hold at most 65504: 2 ** 16
    passes it, 2 ** 15 does not."""
    from examples.gpu_attention import tensor_core_attention

    q, k, v, chain, p16, out = tensor_core_attention(2, 64, 16)
    s = sl.create_schedule(out)
    with pytest.raises(OnlineError, match=r"rounded to float16 \(at most 65504\)"):
        s.online(list(chain), factor=16, keep=[p16], threshold=16.0)
    s.online(list(chain), factor=16, keep=[p16], threshold=15.0)


def test_a_mean_and_variance_chain_takes_no_threshold():
    x, total, mu, q, y = _moments(16)
    s = sl.create_schedule(y)
    with pytest.raises(OnlineError, match="threshold= is for a softmax chain"):
        s.online([total, q], factor=4, threshold=8.0)
