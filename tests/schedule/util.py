"""Helpers for schedule tests: random inputs, NaN-poisoned outputs, each backend vs reference.

`check` runs every schedule through the loop-IR interpreter and through the CPU JIT (skipped
only for functions with loops bound to GPU threads, which the CPU rejects).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

import schedlang as sl
from schedlang.ir import dtype as dt
from schedlang.ir.expr import Read, Var
from schedlang.loopir.interpret import run
from tests.codegen.util import cpu_can_run, run_cpu

SEED = 20240611


def concrete_shape(tensor, sizes: Mapping[str, int]) -> tuple[int, ...]:
    """The shape of `tensor` with each symbolic size replaced by ``sizes[name]``; a scalar
    parameter (``sl.var(name, "float32")``) is its 0-d input."""
    if isinstance(tensor, Read):
        tensor = tensor.tensor
    return tuple(sizes[d.name] if isinstance(d, Var) else int(d) for d in tensor.shape)


def random_inputs(placeholders, sizes: Mapping[str, int], seed: int = SEED) -> dict:
    """Random values in [0.5, 2] or [-2, -0.5] (never zero), in its dtype, for each float
    placeholder (0-d for a scalar parameter); an integer placeholder (indices) gets integers
    from -2 to 17, which run past small extents on both sides, and a uint8 one (the bytes of
    packed int4 weights) any byte, so both nibbles take every value 0..15."""
    gen = np.random.default_rng(seed)
    out = {}
    for p in placeholders:
        shape = concrete_shape(p, sizes)
        if p.dtype == "uint8":
            out[p] = gen.integers(0, 256, size=shape).astype(np.uint8)
            continue
        if p.dtype.startswith(("int", "uint")):
            low = 0 if p.dtype.startswith("uint") else -2
            out[p] = gen.integers(low, 18, size=shape).astype(p.dtype)
            continue
        mag = gen.uniform(0.5, 2.0, size=shape)
        sign = np.where(gen.random(shape) < 0.5, -1.0, 1.0)
        out[p] = np.asarray(mag * sign, dtype=dt.to_numpy(p.dtype))  # 0-d for a scalar
    return out


def check(
    s,
    inputs,
    outputs,
    sizes: Mapping[str, int] | None = None,
    seed: int = SEED,
    unseen: Mapping[Var, int] | None = None,
    given: Mapping | None = None,
):
    """Lower `s`, run it on random inputs with NaN-poisoned outputs, compare with the reference.

    `sizes` gives each symbolic input size by name; `unseen` the sizes no array shows; `given`
    the arrays of inputs that random floats do not fit (index tensors).
    """
    sizes = dict(sizes or {})
    given = dict(given or {})
    func = sl.lower(s, list(inputs) + list(outputs))
    values = {**random_inputs([p for p in inputs if p not in given], sizes, seed), **given}
    wants = [sl.evaluate(t, values, sizes=unseen) for t in outputs]
    backends = [("interpreter", lambda arrays: run(func, arrays, sizes=unseen))]
    if cpu_can_run(func):
        backends.append(("cpu", lambda arrays: run_cpu(func, arrays, unseen)))
    for backend, execute in backends:
        results = [np.full(want.shape, np.nan, np.float32) for want in wants]
        execute([values[p] for p in inputs] + results)
        for got, want in zip(results, wants):
            np.testing.assert_allclose(
                got, want, rtol=1e-4, atol=1e-4, err_msg=f"backend: {backend}"
            )
    return func
