"""The constants of the soft math library, derived here from exact integer arithmetic.

Nothing is typed in from a table except the erf approximations (see `erf`): pi and ln 2 come
from their classic series in fixed point with ample guard bits, the Taylor coefficients are exact
rationals, and every double is the correctly rounded value of an exact `Fraction` (Python's
``float(Fraction)`` rounds correctly), so anyone can rerun the derivation and get the same bits.
Constants that stand for one real number in more precision than a double carry are split into
a sum of doubles, ``hi + lo (+ lo2)``, each the rounding of what the previous ones leave.
"""

from __future__ import annotations

from fractions import Fraction
from math import factorial

_BITS = 1400  # fixed-point precision of pi and ln 2; the 2/pi table needs about 1300 bits


def _arctan_inverse(n: int, bits: int) -> int:
    """atan(1/n) * 2**bits, truncated (the alternating series, to below one unit)."""
    total, term, k = 0, (1 << bits) // n, 0
    while term:
        total += term // (2 * k + 1) if k % 2 == 0 else -(term // (2 * k + 1))
        term //= n * n
        k += 1
    return total


def _artanh_inverse(n: int, bits: int) -> int:
    """artanh(1/n) * 2**bits, truncated."""
    total, term, k = 0, (1 << bits) // n, 0
    while term:
        total += term // (2 * k + 1)
        term //= n * n
        k += 1
    return total


_GUARD = 64
# Machin: pi = 16 atan(1/5) - 4 atan(1/239); ln 2 = 2 artanh(1/3). Both exact to about 2**-1450.
PI = Fraction(
    16 * _arctan_inverse(5, _BITS + _GUARD) - 4 * _arctan_inverse(239, _BITS + _GUARD),
    1 << (_BITS + _GUARD),
)
LN2 = Fraction(2 * _artanh_inverse(3, _BITS + _GUARD), 1 << (_BITS + _GUARD))


def split(value: Fraction, parts: int = 2) -> tuple[float, ...]:
    """`value` as `parts` doubles whose exact sum is `value` to about 53 * parts bits."""
    out = []
    for _ in range(parts):
        out.append(float(value))
        value -= Fraction(out[-1])
    return tuple(out)


PIO2 = split(PI / 2, 3)
TWO_OVER_PI = float(2 / PI)
LN2_PARTS = split(LN2)
INV_LN2 = split(1 / LN2)
INV_LN2_ROUNDED = float(1 / LN2)


def exp_tail() -> list[float]:
    """Q with ``exp(r) - 1 = r + r**2 Q(r)``: Taylor's 1/n! for n = 2..13. On ``|r| <= ln2/2``
    the first term left out, r**14/14!, is below 2**-57 of the result."""
    return [float(Fraction(1, factorial(n))) for n in range(2, 14)]


def log_tail() -> list[float]:
    """R/z with ``log(1+f) = 2s + s R``, ``s = f/(2+f)``, ``z = s**2``: the series of 2 artanh s
    gives R = sum 2 z**n / (2n+1), n = 1..10; on ``|s| <= 0.1716`` (``f`` in ``[sqrt(1/2)-1,
    sqrt(2)-1]``) the rest is below 2**-60 of the result."""
    return [float(Fraction(2, 2 * n + 1)) for n in range(1, 11)]


def sin_tail() -> list[float]:
    """P with ``sin r = r + r z P(z)``, ``z = r**2``: (-1)**n/(2n+1)! for n = 1..9 (the rest is
    below 2**-66 of the result on ``|r| <= pi/4``)."""
    return [float(Fraction((-1) ** n, factorial(2 * n + 1))) for n in range(1, 10)]


def cos_tail() -> list[float]:
    """P with ``cos r = 1 - z/2 + z**2 P(z)``: (-1)**n/(2n)! for n = 2..9 (the rest is below
    2**-62 on ``|r| <= pi/4``)."""
    return [float(Fraction((-1) ** n, factorial(2 * n))) for n in range(2, 10)]


def two_over_pi_words(count: int) -> tuple[int, ...]:
    """64 zero bits, then the bits of 2/pi after the binary point, as `count` 64-bit words (most
    significant first): the table the large-argument reduction reads its window from."""
    bits = 64 * count - 64
    scaled = (2 * (1 << bits) * PI.denominator) // PI.numerator  # floor(2/pi * 2**bits)
    words = [0]
    for k in range(count - 1):
        words.append((scaled >> (bits - 64 * (k + 1))) & ((1 << 64) - 1))
    return tuple(words)


SQRT2_MANTISSA = 0x6A09E667F3BCD  # the 52 fraction bits of sqrt(2), rounded down
