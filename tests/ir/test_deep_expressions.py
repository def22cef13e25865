"""Expressions as deep as a sum of 2000 terms, or a chain of 600 inlined stages, evaluate, print,
lower and build: schedlang's walks recurse a few frames per level, and its entry points and
printers allow `DEEP_RECURSION` frames (Python's default of 1000 ended a 400-term sum)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np

import schedlang as sl
from schedlang.errors import DEEP_RECURSION, entry_point

RNG = np.random.default_rng(11)


def _sum_of_terms(n: int):
    a = sl.placeholder((7,), name="A")

    def terms(i):
        e = a[i]
        for k in range(n):
            e = e + a[i] * float(k % 3 + 1)
        return e

    return a, sl.compute((7,), terms, name="B")


def _inlined_chain(n: int):
    def plus_one(prev):
        return lambda i: prev[i] * 0.5 + 1.0

    a = sl.placeholder((7,), name="A")
    t = a
    for k in range(n):
        t = sl.compute((7,), plus_one(t), name=f"T{k}")
    s = sl.create_schedule(t)
    for stage in s.stages:
        if stage.name.startswith("T") and stage.name != t.op.name:
            stage.compute_inline()
    return s, a, t


def _built_matches(s, a, out) -> None:
    x = RNG.uniform(0.5, 2.0, 7).astype("float32")
    got = np.full(7, np.nan, "float32")
    sl.build(s, [a, out], target="cpu")(x, got)
    np.testing.assert_allclose(got, sl.evaluate(out, {a: x}), rtol=1e-5)


def test_a_sum_of_2000_terms_prints_lowers_and_builds():
    a, b = _sum_of_terms(2000)
    assert str(b.op.expr).count("A[i]") == 2001
    s = sl.create_schedule(b)
    assert "A[i]" in str(sl.lower(s, [a, b]))
    _built_matches(s, a, b)


def test_600_inlined_stages_lower_print_and_build():
    s, a, t = _inlined_chain(600)
    assert str(sl.lower(s, [a, t])).count("* 0.5") == 600
    _built_matches(s, a, t)


def test_the_recursion_limit_is_raised_inside_entry_points_only():
    outside = sys.getrecursionlimit()

    @entry_point
    def inside() -> int:
        return sys.getrecursionlimit()

    assert inside() >= DEEP_RECURSION
    assert sys.getrecursionlimit() == outside


def test_an_expression_too_deep_to_walk_is_refused_not_a_crash():
    """Walks that recurse through C take C stack too: past what the stack holds the process
    crashed (a 20 000-term sum); schedlang refuses it by name instead."""
    script = textwrap.dedent(
        """
        import schedlang as sl

        a = sl.placeholder((8,), name="A")

        def body(i):
            e = a[i]
            for t in range(20_000):
                e = e + a[i] * float(t % 7)
            return e

        c = sl.compute((8,), body, name="C")
        try:
            sl.build(sl.create_schedule(c), [a, c])
        except sl.AlgorithmError as error:
            print(error)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "the algorithm is deeper than schedlang walks" in done.stdout
