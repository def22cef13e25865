"""Measuring built configurations: each checked against the reference before it is timed.

One `Bench` per task and device holds the data: random inputs away from zero (as `sl.compare`
draws them), the reference evaluator's outputs, computed once, and on a GPU the inputs already
on the device. Each kernel writes into outputs filled with NaN, so an element it forgets shows;
its result must be within the dtype's tolerance of the reference (relative to the largest
reference value) before its median time counts. A wrong kernel is a finding: its status says
``wrong`` and the runner reports it, it never wins.
"""

from __future__ import annotations

import threading

import numpy as np

from ..display.check_data import TOLERANCE, check_inputs, hidden_sizes
from ..errors import InternalError, SchedlangError
from ..ir import dtype as dt
from ..ir.evaluate import reference
from ..ir.tensor import PlaceholderOp, Tensor
from .building import Built

# One kernel at a time per device: a process measures on its one device, and the threads of a
# Dask worker take turns.
_measuring = threading.Lock()


class Bench:
    """The data `task`'s kernels are checked and timed on, for `device` ("cpu" or "cuda")."""

    def __init__(self, task, device: str, seed: int = 0, sizes=None, repeat: int = 10) -> None:
        task.space  # noqa: B018 (runs the template once: its algorithm and arguments)
        _, args = task._first
        self.repeat = repeat
        self.device = device
        self.arg_ops = [a.op for a in args]
        placeholders = [op for op in self.arg_ops if isinstance(op, PlaceholderOp)]
        self.outputs = [op for op in self.arg_ops if not isinstance(op, PlaceholderOp)]
        arrays, self.bound = check_inputs(placeholders, self.arg_ops, None, sizes, seed, "tune")
        expected = reference([Tensor(op) for op in self.outputs], arrays, sizes=self.bound)
        # C order, as the kernels write: a transposed reference makes every check a strided
        # walk (a quarter of a second for a 4096x4096 result)
        self.expected = expected = [np.ascontiguousarray(e) for e in expected]
        self.scratch = [np.empty(e.shape, np.result_type(e.dtype, np.float32)) for e in expected]
        self.scales = [max(float(np.abs(e).max(initial=0.0)), 1.0) for e in expected]
        self.poisoned = [_poisoned(e, op.dtype) for e, op in zip(expected, self.outputs)]
        by_op = {t.op: a for t, a in arrays.items()}
        self.inputs = {op: self._placed(by_op[op]) for op in placeholders}

    def _placed(self, host: np.ndarray):
        from ..runtime.arrays import aligned_copy

        if self.device == "cuda":
            from ..runtime.device_array import array

            return array(host, device="cuda")
        return aligned_copy(host)

    def measure(self, built: Built, best: float | None = None) -> tuple[str, float | None, str]:
        """``(status, seconds, error)`` of a built configuration: ``ok`` with its median time,
        ``wrong`` with how far it is off, or ``failed`` where it would not load or run. A
        kernel whose first three runs take over twice `best` (the best time so far) is not
        timed further: it cannot win, and its median of three says how far it is."""
        from ..runtime.saved import revive

        try:
            kernel = revive(built.kernel, f"configuration {built.number}")
            if built.cubin is not None:
                from ..runtime.cuda_driver import offer_cubin

                offer_cubin(kernel.ptx, kernel._compiled.arch, built.cubin)
            with _measuring:
                return self._measure(kernel, best)
        except InternalError as error:
            return "failed", None, f"{type(error).__name__}: {error}"
        except SchedlangError as error:  # it does not fit this device (too much shared memory)
            return "failed", None, f"{type(error).__name__}: {error}"

    def _measure(self, kernel, best: float | None) -> tuple[str, float | None, str]:
        outs = [self._placed(p) for p in self.poisoned]
        by_op = dict(self.inputs)
        by_op.update(zip(self.outputs, outs))
        call = [by_op[op] for op in self.arg_ops]
        named = hidden_sizes(kernel.lowered, self.bound)
        kernel(*call, **named)
        checked = zip(self.outputs, outs, self.expected, self.scales, self.scratch)
        for op, out, want, scale, scratch in checked:
            got = out.numpy() if self.device == "cuda" else out
            error = _relative_error(got, want, scale, scratch)
            if not error <= TOLERANCE.get(op.dtype, 0.0):
                return "wrong", None, f"output {op.name} is off by {error:.3g} of its largest value"
        seconds = kernel.time(*call, repeat=min(3, self.repeat), **named)
        if self.repeat > 3 and (best is None or seconds <= 2 * best):
            seconds = kernel.time(*call, repeat=self.repeat, warmup=0, **named)
        return "ok", seconds, ""


def _poisoned(expected: np.ndarray, dtype: str) -> np.ndarray:
    """An output's starting values: NaN, or for integers a value no kernel leaves by chance."""
    out = np.empty_like(expected)
    out[...] = np.nan if dt.is_float(dtype) else np.array(-123456789).astype(out.dtype)
    return out


def _relative_error(got: np.ndarray, want: np.ndarray, scale: float, scratch) -> float:
    """The largest difference over the largest reference value; inf for NaN. Computed in
    `scratch` (float32 for float32 and narrower outputs): no allocation per check."""
    if got.dtype == np.bool_:
        return float(np.count_nonzero(got != want))
    np.subtract(got, want, out=scratch, dtype=scratch.dtype)
    np.abs(scratch, out=scratch)
    largest = float(scratch.max(initial=0.0))
    return float("inf") if np.isnan(largest) else largest / scale
