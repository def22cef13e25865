"""Helpers for compiled-code tests: run a lowered function through the CPU JIT like the
interpreter runs it, and check it against the reference."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

import schedlang as sl
from schedlang.ir.expr import Var
from schedlang.loopir.core.nodes import For, LoweredFunc
from schedlang.loopir.core.visit import walk_stmt
from schedlang.runtime.kernel import Kernel


def cpu_can_run(func: LoweredFunc) -> bool:
    """False for functions with loops bound to GPU indices (a LoweringError on the CPU)."""
    return not any(isinstance(s, For) and s.kind == "bound" for s in walk_stmt(func.body))


def run_cpu(func: LoweredFunc, arrays, unseen: Mapping[Var, int] | None = None) -> None:
    """Compile `func` for the CPU (cached) and run it on `arrays` in place."""
    sizes = {v.name: n for v, n in (unseen or {}).items()}
    Kernel.for_cpu(func)(*arrays, **sizes)


def check_cpu(s, inputs, outputs, values, wants, unseen=None, rtol=1e-4, atol=1e-4) -> None:
    """Lower `s`, run it compiled on `values` (placeholder -> array) with NaN-poisoned
    outputs, and compare with `wants` (the reference arrays, in `outputs` order)."""
    func = sl.lower(s, list(inputs) + list(outputs))
    results = [np.full(w.shape, np.nan, w.dtype) for w in wants]
    run_cpu(func, [values[p] for p in inputs] + results, unseen)
    for got, want in zip(results, wants):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
