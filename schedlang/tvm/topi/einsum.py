"""``topi.einsum`` and ``topi.tensordot``: products summed over named axes, as numpy's.

A letter of an einsum subscript is one loop: the output's letters are the compute's axes, the
others its reduce axes, and a letter repeated in one operand (``"ii->i"``) reads the diagonal.
"""

from __future__ import annotations

import schedlang as _sl

from ...errors import AlgorithmError
from .tag import MATMUL


def einsum(subscripts: str, *operand):
    """numpy's ``einsum`` with explicit output subscripts (``"ij,jk->ik"``)."""
    operands = list(operand)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = list(operands[0])
    inputs, arrow, output = subscripts.replace(" ", "").partition("->")
    terms = inputs.split(",")
    if not arrow or "." in subscripts or len(terms) != len(operands):
        raise AlgorithmError(
            f"topi.einsum({subscripts!r}): give one subscript per operand ({len(operands)}) "
            "and the output after '->' (no '...')"
        )
    extent: dict[str, object] = {}
    for term, t in zip(terms, operands):
        if len(term) != len(t.shape):
            raise AlgorithmError(
                f"topi.einsum({subscripts!r}): '{term}' names {len(term)} axes of "
                f"'{t.name}', which has {len(t.shape)}"
            )
        for letter, n in zip(term, t.shape):
            extent.setdefault(letter, n)
    summed = [c for c in extent if c not in output]
    reduce = {c: _sl.reduce_axis((0, extent[c]), name=c) for c in summed}

    def product(*index):
        at = dict(zip(output, index))
        at.update({c: reduce[c].var for c in summed})
        value = operands[0][tuple(at[c] for c in terms[0])]
        for term, t in zip(terms[1:], operands[1:]):
            value = value * t[tuple(at[c] for c in term)]
        return _sl.sum(value, axis=list(reduce.values())) if summed else value

    shape = tuple(extent[c] for c in output)
    return _sl.compute(shape, product, name="T_einsum", tag=MATMUL)


def tensordot(a, b, axes):
    """numpy's ``tensordot``: `a`'s last `axes` dimensions summed against `b`'s first (an
    int), or the dimensions of ``axes = (a_axes, b_axes)`` against each other."""
    if isinstance(axes, int):
        a_axes = list(range(len(a.shape) - axes, len(a.shape)))
        b_axes = list(range(axes))
    else:
        a_axes, b_axes = ([x] if isinstance(x, int) else list(x) for x in axes)
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    a_term = [next(letters) for _ in a.shape]
    b_term = [next(letters) for _ in b.shape]
    for i, j in zip(a_axes, b_axes):
        b_term[j] = a_term[i]
    kept_a = [c for d, c in enumerate(a_term) if d not in a_axes]
    kept_b = [c for d, c in enumerate(b_term) if d not in b_axes]
    spec = f"{''.join(a_term)},{''.join(b_term)}->{''.join(kept_a + kept_b)}"
    return einsum(spec, a, b)
