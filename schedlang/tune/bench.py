"""Measuring built configurations: each checked against the reference before it is timed.

One `Bench` per task and device holds the data: random inputs away from zero (as `sl.compare`
draws them), the reference evaluator's outputs, computed once, and on a GPU the inputs already
on the device. Each kernel writes into outputs filled with NaN, so an element it forgets shows;
its result must be within the dtype's tolerance of the reference (relative to the largest
reference value) before its median time counts. A wrong kernel is a finding: its status says
``wrong`` and the runner reports it, it never wins.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from ..display.check_data import TOLERANCE, check_inputs, hidden_sizes, relative_error
from ..ir.evaluate import reference
from ..ir.tensor import PlaceholderOp, Tensor
from ..runtime.device_array import DeviceArray, array
from .building import Built

# One kernel at a time per device: a process measures on its one device, and the threads of a
# Dask worker take turns.
_measuring = threading.Lock()


def bench_data(task, seed: int = 0, sizes=None) -> tuple[list, list]:
    """The inputs (random, away from zero) and the reference outputs of `task`'s algorithm,
    in the order of its arguments: computed once, then handed to every `Bench` (each worker
    of a cluster gets them rather than computing the reference again)."""
    inputs, bound = bench_inputs(task, seed, sizes)
    return inputs, bench_reference(task, inputs, bound)


def bench_inputs(task, seed: int = 0, sizes=None) -> tuple[list, dict]:
    """`task`'s random inputs, in the order of its placeholders, and the sizes they bind (a
    cluster sends them on while the reference is being computed)."""
    arg_ops, placeholders, _ = _parts(task)
    arrays, bound = check_inputs(placeholders, arg_ops, None, sizes, seed, "tune")
    by_op = {t.op: a for t, a in arrays.items()}
    return [by_op[op] for op in placeholders], bound


def bench_reference(task, inputs: list, bound: dict) -> list:
    """The reference evaluator's outputs of `task` on `inputs`."""
    _, placeholders, outputs = _parts(task)
    given = {Tensor(op): a for op, a in zip(placeholders, inputs)}
    expected = reference([Tensor(op) for op in outputs], given, sizes=bound)
    # C order, as the kernels write: a transposed reference makes every check a strided walk
    # (a quarter of a second for a 4096x4096 result)
    return [np.ascontiguousarray(e) for e in expected]


def _parts(task) -> tuple[list, list, list]:
    """The operations of `task`'s arguments: all, its inputs (placeholders), its outputs."""
    arg_ops = [a.op for a in task.made[1]]
    placeholders = [op for op in arg_ops if isinstance(op, PlaceholderOp)]
    return arg_ops, placeholders, [op for op in arg_ops if not isinstance(op, PlaceholderOp)]


class Bench:
    """The data `task`'s kernels are checked and timed on, for `device` ("cpu" or "cuda"):
    `data` from `bench_data`."""

    def __init__(self, task, device: str, data: tuple, sizes=None, repeat: int = 10) -> None:
        self.repeat = repeat
        # seconds of timed runs a kernel gets beyond its first: a kernel of a second is timed
        # once (its run-to-run spread is far below what a search tells apart), which matters
        # most for a run's first kernels, measured before any best time is known
        self.timing_budget = 1.0
        self.device = device
        self.best = math.inf  # the best time measured here, or told of by the run
        self.arg_ops, placeholders, self.outputs = _parts(task)
        inputs, self.expected = data
        given = {Tensor(op): a for op, a in zip(placeholders, inputs)}
        _, self.bound = check_inputs(placeholders, self.arg_ops, given, sizes, 0, "tune")
        self.scratch = [
            np.empty(e.shape, np.result_type(e.dtype, np.float32)) for e in self.expected
        ]
        self.scales = [max(float(np.abs(e).max(initial=0.0)), 1.0) for e in self.expected]
        self.inputs = {op: array(a, device=device) for op, a in zip(placeholders, inputs)}
        shapes = [(e.shape, op.dtype) for e, op in zip(self.expected, self.outputs)]
        self.outs = [DeviceArray(shape, dtype, device) for shape, dtype in shapes]
        self.hosts = [np.empty(o.shape, o.dtype) for o in self.outs]  # where results come back

    def measure(self, built: Built, best: float = math.inf) -> tuple[str, float | None, str]:
        """``(status, seconds, error)`` of a built configuration: ``ok`` with its median time,
        ``wrong`` with how far it is off, ``illegal`` where this GPU cannot launch its blocks,
        or ``failed`` where it would not load or run. A kernel that cannot win is not timed
        on: one run over four times the best time so far, or a median of three over twice,
        says how far it is. That best is this bench's own or `best`, the run's when the kernel
        was handed over (measured on any of its devices), whichever is less. Nor is a kernel
        timed on whose repeats would take over `timing_budget` seconds."""
        from ..runtime.saved import revive

        try:
            kernel = revive(built.kernel, f"configuration {built.number}")
            unfit = _unfit(kernel)
            if unfit:
                return "illegal", None, unfit
            if built.cubin is not None:
                from ..runtime.cuda.driver import offer_cubin

                offer_cubin(kernel.ptx, kernel._compiled.arch, built.cubin)
            with _measuring:
                return self._measure(kernel, best)
        except Exception as error:  # noqa: BLE001 - a kernel that will not load or run is a finding
            return "failed", None, f"{type(error).__name__}: {error}"

    def _measure(self, kernel, best: float) -> tuple[str, float | None, str]:
        by_op = dict(self.inputs)
        by_op.update(zip(self.outputs, self.outs))
        call = [by_op[op] for op in self.arg_ops]
        for out in self.outs:
            out.poison()
        named = hidden_sizes(kernel.lowered, self.bound)
        kernel(*call, **named)
        checked = zip(self.outputs, self.outs, self.hosts, self.expected, self.scales, self.scratch)
        for op, out, got, want, scale, scratch in checked:
            out.copy_to_host(got)
            error = relative_error(got, want, scale, scratch)
            if not error <= TOLERANCE.get(op.dtype, 0.0):
                return "wrong", None, f"output {op.name} is off by {error:.3g} of its largest value"
        seconds = kernel.time(*call, repeat=1, warmup=0, **named)  # the check warmed it up
        for repeat, slower in ((3, 4.0), (self.repeat, 2.0)):
            if repeat <= 1 or seconds > slower * min(best, self.best):
                break
            if seconds * repeat > self.timing_budget:
                break
            seconds = kernel.time(*call, repeat=repeat, warmup=0, **named)
        self.best = min(self.best, seconds)
        return "ok", seconds, ""


def _unfit(kernel) -> str:
    """Why this GPU cannot launch `kernel`'s blocks (too many threads, too much shared
    memory), or "": such a point is illegal here, as one refused before any code was made."""
    if not hasattr(kernel, "ptx"):
        return ""
    from ..errors import LaunchError
    from ..runtime.cuda import driver
    from ..runtime.cuda.launch import check_block

    try:
        for part in kernel._compiled.plan.kernels:
            check_block(part, f"{kernel.lowered.name}/{part.name}", driver.device())
    except LaunchError as error:
        return f"LaunchError: {error}"
    return ""
