"""`sl.compare`: several schedules of one algorithm, each built, checked and timed.

The question a notebook asks after writing three schedules is "which is fastest, are they all
right, and how far from the machine's limit is the best?". `compare` answers it in one call
and one table, with the checks that make the numbers worth reading: every kernel runs first
on random non-zero inputs into outputs filled with NaN, and its result must match the
reference evaluator (`sl.evaluate`) of the unscheduled algorithm before its time means
anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import AlgorithmError, LoweringError, SchedlangError, ScheduleError
from ..htmlkit import badge, escape, page, table
from ..ir.evaluate import reference
from ..ir.tensor import Operation, PlaceholderOp, Tensor
from ..schedule.schedule import Schedule
from .ceilings import Ceilings
from .check_data import (
    TOLERANCE,
    call_arrays,
    check_inputs,
    hidden_sizes,
    relative_error,
)
from .work import count_flops


@dataclass(frozen=True)
class Measured:
    """One schedule of a comparison: its kernel, whether it matched the reference (and by how
    much it missed, relative to the largest reference value), its median time in seconds; or,
    for a schedule that could not be built, the error that said why (`failure`)."""

    name: str
    kernel: object
    verified: bool
    error: float
    seconds: float
    failure: SchedlangError | None = None

    @property
    def built(self) -> bool:
        return self.failure is None


@dataclass(frozen=True)
class Comparison:
    """What `compare` measured. Renders as a table in Jupyter (HTML) and in a terminal (str);
    ``comparison["name"]`` is one row; `plot()` draws the times."""

    rows: tuple[Measured, ...]
    flops: float
    bytes: float
    target: str
    dtype: str
    ceilings: Ceilings | None

    def __getitem__(self, name: str) -> Measured:
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(f"no schedule named {name!r}; there are {', '.join(self.names)}")

    @property
    def names(self) -> list[str]:
        return [row.name for row in self.rows]

    @property
    def built(self) -> list[Measured]:
        """The rows whose schedule built (and so ran and was timed)."""
        return [row for row in self.rows if row.built]

    def rate(self, row: Measured) -> tuple[float | None, float]:
        """(FLOP/s, or None for an algorithm of no arithmetic; bytes/s) of `row`."""
        flops = self.flops / row.seconds if self.flops else None
        return flops, self.bytes / row.seconds

    def share(self, row: Measured) -> tuple[float, str]:
        """`row`'s fraction of the best it could reach, and what that is: the roofline bound
        at its arithmetic intensity where the device's roofs are known, the bandwidth roof for
        an algorithm of no arithmetic, else the fastest schedule of the comparison."""
        flops, bandwidth = self.rate(row)
        if self.ceilings is not None:
            if flops is None:
                return bandwidth / self.ceilings.bandwidth, "of peak bandwidth"
            bound = self.ceilings.attainable(self.flops / self.bytes)
            if bound is not None:
                return flops / bound, "of the roofline"
        fastest = min(r.seconds for r in self.built)
        return fastest / row.seconds, "of the fastest"

    def _cells(self) -> tuple[list[str], list[list[str]]]:
        rate = "GFLOP/s" if self.flops else "GB/s"
        headers = ["schedule", "verified", "time (ms)", rate, "share"]
        rows = []
        for row in self.rows:
            if not row.built:
                rows.append([row.name, f"not built: {type(row.failure).__name__}", "", "", ""])
                continue
            flops, bandwidth = self.rate(row)
            share, of = self.share(row)
            shown = flops / 1e9 if flops is not None else bandwidth / 1e9
            verified = "yes" if row.verified else f"NO (error {row.error:.2g})"
            rows.append(
                [
                    row.name,
                    verified,
                    f"{row.seconds * 1e3:.3f}",
                    f"{shown:.1f}",
                    f"{share:.0%} {of}",
                ]
            )
        return headers, rows

    def failures(self) -> str:
        """The message of every schedule that could not be built, one per line."""
        return "\n".join(
            f"{row.name}: {' '.join(str(row.failure).splitlines())}"
            for row in self.rows
            if not row.built
        )

    def _caption(self) -> str:
        work = f"{self.flops / 1e9:.3g} GFLOP, " if self.flops else ""
        text = f"{len(self.rows)} schedules on {self.target} ({self.dtype}): {work}"
        text += f"{self.bytes / 1e6:.3g} MB moved at least"
        if self.ceilings is not None:
            text += f"; roofs: {self.ceilings.source}"
        return text

    def __str__(self) -> str:
        headers, rows = self._cells()
        widths = [max(len(r[k]) for r in [headers, *rows]) for k in range(len(headers))]
        lines = [self._caption()]
        for r in [headers, *rows]:
            lines.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
        failures = self.failures()
        return "\n".join(lines + ([failures] if failures else []))

    def _repr_html_(self) -> str:
        headers, rows = self._cells()
        html_rows = []
        for row, cells in zip(self.rows, rows):
            mark = badge("yes", "ok") if row.verified else badge(cells[1], "failed")
            if not row.built:
                mark = f'<span title="{escape(str(row.failure))}">{mark}</span>'
            html_rows.append([escape(cells[0]), mark, *(escape(c) for c in cells[2:])])
        numeric = (False, False, True, True, True)
        return page(escape(self._caption()), table(headers, html_rows, numeric))

    def plot(self):
        """A bar chart of the rates (GFLOP/s, or GB/s for an algorithm of no arithmetic),
        wrong results in red; returns the matplotlib Figure."""
        from .pictures import figure

        fig = figure(figsize=(6, 0.5 + 0.45 * len(self.rows)))
        ax = fig.add_subplot()
        values = []
        for row in self.rows:
            flops, bandwidth = self.rate(row) if row.built else (0.0, 0.0)
            values.append((flops if flops is not None else bandwidth) / 1e9)
        colors = ["tab:blue" if row.verified else "tab:red" for row in self.rows]
        ax.barh(self.names, values, color=colors)
        ax.invert_yaxis()
        ax.set_xlabel("GFLOP/s" if self.flops else "GB/s")
        ax.set_title(self._caption(), fontsize=8)
        fig.tight_layout()
        return fig


Scheduler = Schedule | Callable[[], Schedule]


def compare(
    schedules: Mapping[str, Scheduler],
    args: Sequence[Tensor],
    target: str = "cpu",
    inputs: Mapping[Tensor, np.ndarray] | None = None,
    sizes: Mapping[object, int] | None = None,
    flops: float | None = None,
    bytes: float | None = None,
    repeat: int = 10,
    warmup: int = 1,
    seed: int = 0,
) -> Comparison:
    """Build, check and time each schedule of one algorithm; a `Comparison` table.

    ``sl.compare({"naive": s1, "tiled": make_tiled}, [A, B, C], sizes={"M": 512, ...})``:
    `schedules` maps a name to a `Schedule`, or to a function of no arguments that makes one,
    all created from the same output tensors; `args` are the kernel's arguments as for
    `sl.build`. A schedule that cannot be built (a `ScheduleError` or `LoweringError`, e.g.
    an illegal point of a grid of schedules) becomes a row that says so, its error kept in the
    row's `failure`. The inputs are `inputs` (placeholder -> array) or random non-zero arrays of
    the shapes `sizes` gives (names or `sl.var`s -> values). Each kernel's outputs start as
    NaN and must match `sl.evaluate` within a tolerance for the dtype; a mismatch is reported
    in the table, not raised, so the others can still be compared. Times are the median of
    `repeat` calls (`Kernel.time`). Rates use `flops` and `bytes` when given, else the
    algorithm's own count (`display.work`: multiply-adds of the reductions and the
    element-wise arithmetic; each argument moved once). The share column is of the device's
    roofline on a GPU (`display.ceilings`), of the fastest schedule on a CPU.
    """
    from ..build import build, resolve_target

    built = _schedules(schedules)
    arg_ops = [_op(a) for a in args]
    placeholders = [op for op in arg_ops if isinstance(op, PlaceholderOp)]
    outputs = [op for op in arg_ops if not isinstance(op, PlaceholderOp)]
    if not outputs:
        raise ValueError("compare: args has no output tensor (only placeholders)")
    arrays, bound = check_inputs(placeholders, arg_ops, inputs, sizes, seed)
    resolved = resolve_target(target)
    runs = []
    for name, s in built.items():
        if isinstance(s, SchedlangError):  # refused while the schedule was made
            runs.append((name, s, None, float("nan")))
            continue
        try:
            kernel = build(s, list(args), target=target)
        except (ScheduleError, LoweringError, AlgorithmError) as failure:
            runs.append((name, failure, None, float("nan")))
            continue
        call = call_arrays(arg_ops, arrays, bound)
        named = hidden_sizes(kernel.lowered, bound)
        kernel(*call, **named)
        outs = [np.array(call[arg_ops.index(op)]) for op in outputs]  # before timing reruns it
        seconds = kernel.time(*call, repeat=repeat, warmup=warmup, **named)
        runs.append((name, kernel, outs, seconds))
    # The reference runs last: numpy's BLAS leaves its threads spinning for a while after a
    # call, and a parallel CPU kernel timed then would share the cores with them.
    expected = reference([Tensor(op) for op in outputs], arrays, sizes=bound)
    rows = []
    for name, made, outs, seconds in runs:
        if isinstance(made, SchedlangError):
            rows.append(Measured(name, None, False, float("nan"), seconds, made))
            continue
        errors = [relative_error(got, want) for got, want in zip(outs, expected)]
        verified = all(e <= TOLERANCE.get(op.dtype, 0.0) for e, op in zip(errors, outputs))
        rows.append(Measured(name, made, verified, max(errors), seconds))
    if flops is None:
        flops = count_flops(outputs, bound)
    if bytes is None:
        bytes = sum(a.nbytes for a in arrays.values()) + sum(e.nbytes for e in expected)
    dtype = outputs[0].dtype
    ceilings = None
    if resolved.name == "cuda":
        from .ceilings import gpu_ceilings

        ceilings = gpu_ceilings(dtype)
    return Comparison(tuple(rows), float(flops), float(bytes), resolved.name, dtype, ceilings)


def _schedules(schedules: Mapping[str, Scheduler]) -> dict[str, Schedule | SchedlangError]:
    """Each schedule, made where a function is given; a function whose primitives refuse the
    point (a grid's illegal corner, found at the call) gives its error, which becomes a row."""
    if not isinstance(schedules, Mapping) or not schedules:
        raise TypeError(
            "compare: schedules must be a non-empty dict of name -> Schedule (or a function "
            "of no arguments returning one)"
        )
    built: dict[str, Schedule] = {}
    first: tuple[str, Schedule] | None = None
    for name, made in schedules.items():
        try:
            s = made() if callable(made) and not isinstance(made, Schedule) else made
        except (ScheduleError, LoweringError, AlgorithmError) as failure:
            built[name] = failure
            continue
        if not isinstance(s, Schedule):
            raise TypeError(f"compare: schedule {name!r} is {type(s).__name__}, not a Schedule")
        if first is None:
            first = (name, s)
        elif s.roots != first[1].roots:
            theirs = ", ".join(op.name for op in s.roots)
            ours = ", ".join(op.name for op in first[1].roots)
            raise ScheduleError(
                f"compare: schedule {name!r} is of another algorithm (its outputs are "
                f"{theirs}, those of {first[0]!r} are {ours}, made by other calls of "
                "sl.compute); create every schedule from the same output tensors"
            )
        built[name] = s
    return built


def _op(arg: object) -> Operation:
    if isinstance(arg, Tensor):
        return arg.op
    raise TypeError(f"compare: args are tensors, not {type(arg).__name__}")
