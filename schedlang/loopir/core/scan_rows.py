"""The call-time check that a scan's init fits its state (`ScanRows`).

A scan's init writes its rows into the first rows of the state's buffer whatever the sizes;
where the state has fewer steps than the init gives rows (two init rows, ``m = 1``), those
rows land past the buffer's end, on the heap for a temporary. The polyhedral layer refuses
a scan whose rows never fit and lists those that fit at some sizes only; a call evaluates
both sides from its sizes, as it evaluates the other expressions of sizes it checks
(`runtime.size_limits`), and the interpreter does the same before it runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import InternalError, LaunchError
from ...ir.exact import Exact, exact_int
from ...ir.expr import Const, Expr, Var
from ...ir.printer import expr_str
from ...ir.scan import rows_past_steps
from ...ir.visit import walk
from .nodes import LoweredFunc, ScanRows


class ScanRowChecks:
    """The checks of `func.scan_rows`, compiled for a call's size values (`func.sizes`
    order)."""

    def __init__(self, func: LoweredFunc) -> None:
        self.kernel = func.name
        self.sizes = func.sizes
        position = {v: k for k, v in enumerate(func.sizes)}
        self._checks: list[tuple[ScanRows, Exact, Exact]] = []
        for each in func.scan_rows:
            rows, steps = exact_int(each.rows, position), exact_int(each.steps, position)
            if rows is None or steps is None:
                raise InternalError(
                    f"the rows of scan '{each.scan}' in '{func.name}' are not integer "
                    f"expressions of its sizes ({expr_str(each.rows)}, {expr_str(each.steps)})"
                )
            self._checks.append((each, rows, steps))

    def __bool__(self) -> bool:
        return bool(self._checks)

    def check(self, values: Sequence[int]) -> None:
        """Raise LaunchError where a scan's init gives more rows than its state has steps
        at the size `values`."""
        for each, rows, steps in self._checks:
            given, extent = rows(values), steps(values)
            if given <= extent:
                continue
            sizes = ", ".join(
                f"{v.name}={values[k]}"
                for k, v in enumerate(self.sizes)
                if v in _vars(each.steps) or v in _vars(each.rows)
            )
            symbolic = "" if isinstance(each.steps, Const) else expr_str(each.steps)
            what = rows_past_steps(each.scan, each.init, each.state, given, extent, symbolic, sizes)
            raise LaunchError(f"kernel '{self.kernel}': {what}")


def _vars(e: Expr) -> set[Var]:
    return {n for n in walk(e) if isinstance(n, Var)}
