"""The ranges a call's sizes must fit, worked out once per kernel.

A kernel computes each size in its own dtype and its loop variables and indices in its
`index_dtype` (`loopir.index.index_type`): int32 unless a size is declared wider or a constant shape
needs more. A size bound past either range, or a buffer with more elements than the index
type counts, would wrap silently and read or write the wrong memory, so such a call is refused
before it runs. Which values to compare, and with what, depends only on the kernel and is
listed here at build; a call then makes a few integer comparisons: each size against its
limit, each array with a symbolic shape by its element count, and in the rare kernel that
has them, the element counts of its temporaries and the ends of loops over sizes that no
array shows (``n + 1``, ``n * m``), evaluated from the sizes. A scan whose init may give more
rows than its state has steps is checked the same way (`loopir.core.scan_rows`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..ir import dtype as dt
from ..ir.exact import Exact, exact_int
from ..ir.expr import Binary, Const, Expr, Var
from ..ir.printer import expr_str
from ..ir.visit import walk
from ..loopir.core.nodes import Allocate, Buffer, For, LoweredFunc
from ..loopir.core.scan_rows import ScanRowChecks
from ..loopir.core.visit import walk_stmt


class SizeLimits:
    """The checks a call of `func` makes on its sizes (in `func.sizes` order) and arrays."""

    def __init__(self, func: LoweredFunc) -> None:
        self.kernel = func.name
        self.index_dtype = func.index_dtype
        self.limit = int(dt.max_value(func.index_dtype))
        self._sizes = tuple(
            (k, v, min(int(dt.max_value(v.dtype)), self.limit)) for k, v in enumerate(func.sizes)
        )
        narrow = self.limit < 2**63 - 1  # no buffer in memory has 2**63 elements
        position = {v: k for k, v in enumerate(func.sizes)}
        checked = {expr_str(v) for v in func.sizes}  # a count that is one size is checked
        self._arrays = tuple(
            (k, b)
            for k, b in enumerate(func.params)
            if narrow and not _constant_layout(b) and expr_str(_flat_count(b)) not in checked
        )
        checked |= {expr_str(_flat_count(b)) for b in func.params}
        self._derived: tuple[tuple[str, Expr, Exact], ...] = ()
        self._scan_rows = ScanRowChecks(func)
        if narrow:
            largest = [limit for _, _, limit in self._sizes]
            self._derived = tuple(
                check
                for check in _derived_checks(func, position, checked)
                if not _never_past(check[1], check[2], largest, self.limit)
            )

    @property
    def needed(self) -> bool:
        """Whether a call has anything to check."""
        return bool(self._sizes or self._arrays or self._derived or self._scan_rows)

    @property
    def derived(self) -> bool:
        """Whether a call must evaluate expressions of the sizes (temporaries, loop ends, a
        scan's rows)."""
        return bool(self._derived or self._scan_rows)

    def size_limits(self) -> tuple[int, ...]:
        """The largest value of each size, in `func.sizes` order."""
        return tuple(limit for _, _, limit in self._sizes)

    def count_limit(self) -> int | None:
        """The largest element count of an array, or None where no array can exceed it."""
        return self.limit if self._arrays else None

    def check(self, values: Sequence[int], shaped: Sequence[object]) -> None:
        """Raise ValueError unless every size in `values` and every count of `shaped` (one
        object with a ``.shape`` per parameter, its shape already checked) fits, and
        LaunchError unless every scan's init fits its state."""
        self._scan_rows.check(values)
        for k, v, limit in self._sizes:
            if values[k] > limit:
                raise ValueError(self._size_message(v, values[k], limit))
        for k, buffer in self._arrays:
            count = math.prod(shaped[k].shape)
            if count > self.limit:
                raise ValueError(
                    f"argument '{buffer.name}' has {count} elements, more than the "
                    f"{self.index_dtype} indices of kernel '{self.kernel}' reach (at most "
                    f"{self.limit}); {_widen(buffer.shape)}"
                )
        for what, e, evaluate in self._derived:
            try:
                value = evaluate(values)
            except ZeroDivisionError:  # a size of 0 divides: the loop or buffer is empty
                continue
            if value > self.limit:
                bound = ", ".join(f"{v.name}={values[k]}" for k, v, _ in self._sizes)
                raise ValueError(
                    f"{what} of kernel '{self.kernel}' is {value} with {bound}, more than its "
                    f"{self.index_dtype} indices reach (at most {self.limit}); {_widen((e,))}"
                )

    def _size_message(self, v: Var, value: int, limit: int) -> str:
        own = int(dt.max_value(v.dtype)) == limit
        roles = [f"the dtype of '{v.name}'"] if own else []
        if self.limit == limit:
            roles.append(f"the index type of kernel '{self.kernel}'")
        kind = v.dtype if own else self.index_dtype
        advice = f'declare it wider: sl.var("{v.name}", dtype="int64")'
        if limit == 2**63 - 1:
            advice = "no kernel indexes that far; pass a smaller size"
        return (
            f"size '{v.name}' is {value}, which does not fit {kind} (at most {limit}), "
            f"{' and '.join(roles)}; {advice}"
        )


def _widen(exprs: Sequence[Expr]) -> str:
    """Advice naming the sizes in `exprs` to declare int64."""
    names = sorted({n.name for e in exprs for n in _vars(e)})
    if not names:
        return "split the work into smaller calls"
    shown = ", ".join(f'sl.var("{name}", dtype="int64")' for name in names)
    return f"declare {'its sizes' if len(names) > 1 else 'the size'} 64-bit: {shown}"


def _vars(e: Expr) -> list[Var]:
    return [n for n in walk(e) if isinstance(n, Var)]


def _constant_layout(buffer: Buffer) -> bool:
    return all(isinstance(e, Const) for e in (*buffer.shape, *(buffer.strides or ())))


def _derived_checks(func: LoweredFunc, position: dict[Var, int], seen: set[str]):
    """(what, expression, evaluator) for each temporary with a symbolic layout and each loop
    whose bounds depend on sizes only: values a call cannot read off its arrays (those whose
    text is in `seen` it can, or another check covers)."""
    for s in walk_stmt(func.body):
        if isinstance(s, Allocate) and not _constant_layout(s.buffer):
            what, e = f"the temporary buffer '{s.buffer.name}'", _flat_count(s.buffer)
        elif isinstance(s, For):
            end = s.extent
            if not (isinstance(s.min, Const) and s.min.value == 0):
                end = Binary("+", s.min, s.extent, s.extent.dtype)
            what, e = f"the loop '{s.var.name}'", end
        else:
            continue
        evaluate = exact_int(e, position)
        text = expr_str(e)
        if evaluate is None or isinstance(e, Const) or text in seen:
            continue
        seen.add(text)
        yield what, e, evaluate


def _never_past(e: Expr, evaluate: Exact, largest: list[int], limit: int) -> bool:
    """Whether `e` stays within `limit` for every value the sizes may take (each at most its
    `largest`, checked on its own): where `e` grows with every size (sums, products, divisions
    by positive constants, minima and maxima of such, constants subtracted), its value at the
    largest sizes bounds it. ``(n - 1) // 8 + 1``, a split loop's end, never passes what ``n``
    may be, and so costs a call nothing."""
    if not _growing(e):
        return False
    try:
        return evaluate(largest) <= limit
    except ZeroDivisionError:
        return False


def _growing(e: Expr) -> bool:
    """Whether `e` never decreases when a size increases (sizes are non-negative)."""
    if isinstance(e, (Const, Var)):
        return True
    if isinstance(e, Binary):
        if e.op in ("+", "min", "max"):
            return _growing(e.a) and _growing(e.b)
        if e.op == "*":
            return _growing(e.a) and _growing(e.b) and _nonnegative(e.a) and _nonnegative(e.b)
        if e.op in ("//", "-"):
            return _growing(e.a) and isinstance(e.b, Const) and (e.op == "-" or e.b.value > 0)
    return False


def _nonnegative(e: Expr) -> bool:
    """Whether `e` (of sizes, growing) is never negative: no constant subtracted below."""
    if isinstance(e, Const):
        return e.value >= 0
    if isinstance(e, Var):
        return True
    if isinstance(e, Binary) and e.op in ("+", "*", "min", "max"):
        return _nonnegative(e.a) and _nonnegative(e.b)
    if isinstance(e, Binary) and e.op == "//":
        return _nonnegative(e.a)
    return False


def _flat_count(buffer: Buffer) -> Expr:
    """The largest flat index of `buffer` plus one (for a non-empty buffer)."""
    if buffer.strides is None:
        total = buffer.shape[0] if buffer.shape else Const(1, "int64")
        for n in buffer.shape[1:]:
            total = Binary("*", total, n, "int64")
        return total
    total: Expr = Const(1, "int64")
    for n, stride in zip(buffer.shape, buffer.strides):
        last = Binary("-", n, Const(1, "int64"), "int64")
        total = Binary("+", total, Binary("*", last, stride, "int64"), "int64")
    return total
