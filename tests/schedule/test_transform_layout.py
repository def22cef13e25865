"""``transform_layout``: a tensor stored in another order, its loads and stores through the
map; checked against numpy on random data, inputs and outputs arriving and leaving in the
new layout, and every map that would pad or lose elements refused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedlang as sl
from schedlang.ir.expr import Var, as_expr, const
from schedlang.schedule.errors import PlacementError
from schedlang.schedule.layout import LayoutError, _enumerated, _numerals

RNG = np.random.default_rng(13)


def test_inputs_intermediates_and_outputs_in_other_layouts():
    a = sl.placeholder((3, 10), name="A")
    b = sl.compute((3, 10), lambda i, j: a[i, j] * 2.0, name="B")
    c = sl.compute((3, 10), lambda i, j: b[i, j] + b[i, 9 - j], name="C")
    s = sl.create_schedule(c.op)
    s[a].transform_layout(lambda i, j: [j, i])  # the caller passes A transposed
    s[b].transform_layout(lambda i, j: [j // 5, i, j % 5])
    s[c].transform_layout(lambda i, j: [i * 10 + j])  # flattened
    outer, inner = s[c].split(c.op.axis[1], factor=4)
    s[c].vectorize(inner)
    text = str(sl.lower(s, [a, c]))
    assert "def main(A: float32[10, 3], C: float32[30]):" in text
    assert "allocate B: float32[2, 3, 5]" in text
    x = RNG.uniform(-1, 1, (3, 10)).astype("float32")
    logical = sl.reference(c, {a: x})
    np.testing.assert_allclose(logical, 2 * x + 2 * x[:, ::-1], rtol=1e-6)
    got = np.full(30, np.nan, "float32")
    sl.build(s, [a, c])(np.ascontiguousarray(x.T), got)
    np.testing.assert_allclose(got, logical.reshape(-1), rtol=1e-6)
    assert str(sl.lower(s.copy(), [a, c])) == text  # replayed from its text
    assert "s[B].transform_layout(lambda i, j: [j // 5, i, j % 5])" in str(s)


def test_a_symbolic_tensor_is_permuted():
    n, m = sl.var("n"), sl.var("m")
    a = sl.placeholder((n, m), name="A")
    k = sl.reduce_axis((0, m), name="k")
    total = sl.compute((n,), lambda i: sl.sum(a[i, k], axis=k), name="T")
    s = sl.create_schedule(total.op)
    s[a].transform_layout(lambda i, j: [j, i])
    kernel = sl.build(s, [a, total])
    for rows, cols in ((5, 7), (1, 13)):
        x = RNG.uniform(-1, 1, (rows, cols)).astype("float32")
        got = np.full(rows, np.nan, "float32")
        kernel(np.ascontiguousarray(x.T), got)
        np.testing.assert_allclose(got, x.sum(axis=1), rtol=1e-5)
    with pytest.raises(LayoutError, match="may then only permute its dimensions"):
        s[a].transform_layout(lambda i, j: [i // 2, j, i % 2])


def test_maps_that_pad_or_lose_elements_are_refused():
    a = sl.placeholder((3, 8), name="A")
    b = sl.compute((3, 8), lambda i, j: a[i, j] + 1.0, name="B")
    s = sl.create_schedule(b.op)
    with pytest.raises(LayoutError, match=r"onto a box of shape \(3, 2, 5\): it would pad"):
        s[b].transform_layout(lambda i, j: [i, j // 5, j % 5])
    with pytest.raises(LayoutError, match="sends two elements to one place"):
        s[b].transform_layout(lambda i, j: [i, (j * 2) % 8 + j // 7])
    with pytest.raises(LayoutError, match="negative indices"):
        s[b].transform_layout(lambda i, j: [i - 1, j])
    with pytest.raises(LayoutError, match="not an integer of the index variables"):
        s[b].transform_layout(lambda i, j: [i * 0.5, j])
    assert s[b].layout is None  # nothing was recorded


def test_a_stage_in_another_layout_is_computed_at_the_root():
    a = sl.placeholder((4, 6), name="A")
    b = sl.compute((4, 6), lambda i, j: a[i, j] * 3.0, name="B")
    c = sl.compute((4, 6), lambda i, j: b[i, j] - 1.0, name="C")
    s = sl.create_schedule(c.op)
    s[b].transform_layout(lambda i, j: [j, i])
    s[b].compute_at(s[c], c.op.axis[0])
    with pytest.raises(sl.LoweringError, match="'B' is stored in another layout .* at the root"):
        sl.lower(s, [a, c])
    s[b].compute_inline()
    with pytest.raises(sl.LoweringError, match="'B' is stored in another layout .* but inlined"):
        sl.lower(s, [a, c])
    called = sl.extern((4, 6), [a], lambda ins, outs: sl.call_packed("x", ins[0], outs[0]))
    after = sl.compute((4, 6), lambda i, j: called[i, j] + 1.0, name="After")
    s2 = sl.create_schedule(after.op)
    with pytest.raises(PlacementError, match="'extern' has no buffer of its own"):
        s2[called].transform_layout(lambda i, j: [j, i])
    s2[a].transform_layout(lambda i, j: [j, i])
    with pytest.raises(sl.LoweringError, match="which the calls of extern stages"):
        sl.build(s2, [a, after])


SHAPE = (12, 24)


@st.composite
def _numeral_maps(draw):
    """The buffer's indices as sums of digits ``(x % a) // b`` of both dimensions of `SHAPE`:
    each dimension cut by a chain of divisors into a whole numeral, the digits in a drawn
    order, consecutive runs of them summed into one index with the places of a numeral
    (``[j // 4, i * 4 + j % 4]``); with ``broken``, one digit or one place redrawn."""
    cuts = []
    for d, size in enumerate(SHAPE):
        chain = [1]
        for c in sorted(draw(st.sets(st.sampled_from([n for n in range(2, size + 1)
                                                      if size % n == 0])))) + [size]:  # fmt: skip
            if c % chain[-1] == 0 and c != chain[-1]:
                chain.append(c)
        cuts += [(d, a, b) for b, a in zip(chain, chain[1:])]
    cuts = draw(st.permutations(cuts))
    broken = draw(st.booleans())
    if broken:
        at = draw(st.integers(0, len(cuts) - 1))
        cuts[at] = (cuts[at][0], draw(st.integers(1, 30)), draw(st.integers(1, 8)))
    sums, place = [[]], 1
    for k, (d, a, b) in enumerate(cuts):
        if k and draw(st.booleans()):  # start the next index
            sums.append([])
            place = 1
        sums[-1].append((place, (d, a, b)))
        place *= max(1, a // b)
    if broken and draw(st.booleans()):
        run = draw(st.integers(0, len(sums) - 1))
        term = draw(st.integers(0, len(sums[run]) - 1))
        sums[run][term] = (draw(st.integers(1, 40)), sums[run][term][1])
    return sums, broken


@given(_numeral_maps())
@settings(max_examples=120, deadline=None)
def test_a_map_of_digits_is_taken_by_its_form_as_by_its_elements(drawn):
    """Whole numerals of the dimensions, summed into numerals of the buffer's indices, are
    accepted by their form (no enumeration: any size), with the box that the elements give;
    a redrawn digit or place is accepted by its form only where the elements agree (else it
    goes to the element by element check)."""
    sums, broken = drawn
    index = tuple(Var(n, "int32", "axis") for n in "ij")
    physical = []
    for terms in sums:
        total = None
        for times, (d, a, b) in terms:
            term = ((index[d] % a) // b) * times
            total = term if total is None else total + term
        physical.append(as_expr(total))

    def fail(what):
        raise LayoutError(what)

    try:
        enumerated = _enumerated(tuple(const(n) for n in SHAPE), index, tuple(physical), fail)
    except LayoutError:
        enumerated = None
    by_form = _numerals(list(SHAPE), index, tuple(physical))
    if by_form is None:  # `layout_of` checks it element by element
        assert broken
    else:
        assert _extents(by_form) == _extents(enumerated)


def _extents(shape) -> list[int] | None:
    return None if shape is None else [int(e.value) for e in shape]


def test_a_large_tensor_split_into_digits_is_taken_by_its_form():
    """117 million packed bytes, tiled as a warpgroup's threads read them, or flattened: no
    element by element check (which stops at 2**26), the box from the digits; a map of
    another form is still refused at that size."""
    wq = sl.placeholder((14336, 8192), "uint8", name="Wq")
    out = sl.compute((14336, 8192), lambda i, j: wq[i, j] + sl.const(1, "uint8"), name="C")
    s = sl.create_schedule(out.op)
    s[wq].transform_layout(
        lambda kp, j: [kp // 8, j // 64, j % 64 // 16, j % 8, kp % 4, j % 16 // 8, kp % 8 // 4]
    )
    text = str(sl.lower(s, [wq, out]))
    assert "Wq: uint8[1792, 128, 4, 8, 4, 2, 2]" in text
    s[wq].transform_layout(lambda kp, j: [kp * 8192 + j])  # flattened: a numeral too
    assert "Wq: uint8[117440512]" in str(sl.lower(s, [wq, out]))
    with pytest.raises(LayoutError, match="checked one by one"):  # a skew: not of that form
        s[wq].transform_layout(lambda kp, j: [kp, (j + kp) % 8192])
