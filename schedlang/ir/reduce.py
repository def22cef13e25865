"""Reducers: `sum`, `max`, `min`, `prod` and user-defined `comm_reducer`s."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import AlgorithmError, entry_point
from . import dtype as dt
from .expr import (
    CommReducer,
    Const,
    Expr,
    Read,
    Reduce,
    Var,
    _operands,
    as_expr,
    binary,
    cast,
    const,
)
from .tensor import IterVar
from .visit import walk

_TUPLES = (
    "{}: a reducer over tuples is applied to a tuple of values, "
    "e.g. argmax((idx[i, k], val[i, k]), axis=k), in a compute that returns its components"
)


class Reducer:
    """A commutative, associative reduction, as TE's ``comm_reducer``.

    ``reducer(expr, axis=k, where=cond)`` builds a reduction over `k` (an IterVar or a list);
    ``reducer(a, b)`` with two expressions combines them elementwise (``sl.max(a, b)``).
    A reduction accumulates in the dtype of `expr`, as in TE: a float16 sum rounds every
    partial sum to float16, and ``expr.astype("float32")`` asks for float32 accumulation.
    """

    def __init__(
        self,
        fcombine: Callable[[Expr, Expr], object],
        fidentity: Callable[[str], object],
        name: str,
    ) -> None:
        self.fcombine = fcombine
        self.fidentity = fidentity
        self.name = name

    def __repr__(self) -> str:
        return f"<reducer {self.name}>"

    def combiner(self, dtype: str):
        lhs, rhs = Var("x", dtype, "combiner"), Var("y", dtype, "combiner")
        combined = self.fcombine(lhs, rhs)
        if isinstance(combined, (tuple, list)):
            raise AlgorithmError(
                _TUPLES.format(f"the combiner of '{self.name}' returns a tuple for one value")
            )
        result = cast(as_expr(combined, like=dtype), dtype)
        return CommReducer(self.name, lhs, rhs, result, self._identity(dtype))

    def _identity(self, dtype: str) -> Expr:
        """A constant, or an expression of the compute's indices and sizes (TE's, checked
        against the reduce axes by `__call__`); never a tensor's element."""
        value = self.fidentity(dtype)
        if not isinstance(value, Expr) or isinstance(value, Const):
            return const(_identity_value(value), dtype)
        if any(isinstance(n, Read) for n in walk(value)):
            raise AlgorithmError(
                f"the identity of '{self.name}' is '{value}', which reads a tensor; an identity "
                "is a constant or an expression of the compute's indices and sizes"
            )
        return cast(value, dtype)

    @entry_point
    def __call__(self, expr: object, axis: object = None, where: object = None) -> Expr:
        if axis is not None and not _is_axis_list(axis):
            if where is not None:
                raise AlgorithmError(
                    f"sl.{self.name}(a, b) combines two values; it takes no where="
                )
            a, b = _operands(expr, axis)
            return _combine(self, a, b, dt.promote(a.dtype, b.dtype))
        if axis is None:
            raise AlgorithmError(
                f"sl.{self.name}(expr) needs axis=: the reduce axis (or a list of them) "
                "created with sl.reduce_axis"
            )
        axes = (axis,) if isinstance(axis, IterVar) else tuple(axis)
        for ax in axes:
            if isinstance(ax, IterVar) and ax.kind != "reduce":
                raise AlgorithmError(
                    f"sl.{self.name}: '{ax.var.name}' is a data axis (an index of the compute), "
                    "not a reduce axis; create the axis to reduce over with "
                    "sl.reduce_axis((lo, hi), name=...)"
                )
            if not isinstance(ax, IterVar):
                raise AlgorithmError(
                    f"sl.{self.name}: axis {ax!r} is not a reduce axis; create it with "
                    "sl.reduce_axis((lo, hi), name=...)"
                )
        if len({id(ax) for ax in axes}) != len(axes):
            raise AlgorithmError(f"sl.{self.name}: the same reduce axis is listed twice")
        cond = None
        if where is not None:
            cond = as_expr(where)
            if cond.dtype != "bool":
                raise AlgorithmError(
                    f"where= of sl.{self.name} must be a condition (bool), got {cond.dtype} "
                    f"in '{cond}'"
                )
        if isinstance(expr, (tuple, list)):
            return self._over_tuple([as_expr(e) for e in expr], axes, cond)
        source = as_expr(expr)
        if source.dtype == "bool" and self.name in ("sum", "prod"):
            raise AlgorithmError(
                f"sl.{self.name} over bools in '{source}': cast to a number first, "
                "e.g. (cond).astype('int32')"
            )
        comb = self.combiner(source.dtype)
        used = {n for e in (comb.identity, comb.result) for n in walk(e) if isinstance(n, Var)}
        for ax in axes:
            if ax.var in used:
                raise AlgorithmError(
                    f"the reducer '{self.name}' uses the reduce axis '{ax.var.name}' in its "
                    "identity or combination; they may use the compute's indices, not the axes "
                    "it reduces over"
                )
        return Reduce(comb, source, axes, cond, source.dtype)

    def _over_tuple(self, sources: list[Expr], axes: tuple, cond: Expr | None) -> tuple:
        """One Reduce per component of a reduction over tuples, combined together: each
        component's combiner sees the partial values of all components."""
        dtypes = [e.dtype for e in sources]
        lhs = tuple(Var(f"x{k}", t, "combiner") for k, t in enumerate(dtypes))
        rhs = tuple(Var(f"y{k}", t, "combiner") for k, t in enumerate(dtypes))
        results = self.fcombine(lhs, rhs)
        identities = self.fidentity(*dtypes)
        for what, got in (("combiner", results), ("identity", identities)):
            if not isinstance(got, (tuple, list)) or len(got) != len(sources):
                raise AlgorithmError(
                    f"sl.{self.name} is applied to {len(sources)} values, so its {what} must "
                    f"return {len(sources)} values, one per component; it returned {got!r}"
                )
        parts = tuple(
            CommReducer(
                self.name,
                lhs[k],
                rhs[k],
                cast(as_expr(results[k], like=t), t),
                const(_identity_value(identities[k]), t),
            )
            for k, t in enumerate(dtypes)
        )
        return tuple(
            Reduce(parts[k], e, axes, cond, e.dtype, parts, k) for k, e in enumerate(sources)
        )


def _combine(reducer: Reducer, a: Expr, b: Expr, common: str) -> Expr:
    from .visit import substitute

    comb = reducer.combiner(common)
    return substitute(comb.result, {comb.lhs: cast(a, common), comb.rhs: cast(b, common)})


def _is_axis_list(axis: object) -> bool:
    """True if `axis` asks for a reduction (any IterVar: a data axis is then an error, as in TE)."""
    return isinstance(axis, (IterVar, list, tuple))


def _identity_value(value: object):
    if isinstance(value, Expr):
        if not hasattr(value, "value"):
            raise AlgorithmError(
                f"the identities of a reducer over tuples must be constants, got '{value}'"
            )
        return value.value
    return value


@entry_point
def comm_reducer(
    fcombine: Callable[[Expr, Expr], object],
    fidentity: Callable[[str], object],
    name: str = "reduce",
) -> Reducer:
    """A user reducer: `fcombine(x, y)` must be commutative and associative, and
    `fidentity(dtype)` its identity (``fcombine(identity, y) == y``). Each combination is
    computed in the dtype of the reduced expression (see docs/concepts.md on accumulation).
    As in TE, the identity and the combination may use the indices of the compute they
    reduce in (``lambda t: i.astype(t)``): each element is then reduced from its own
    identity, its terms combined in the order of the reduce axes.

    Over tuples (argmax), `x` and `y` are tuples, `fcombine` returns one value per component
    and `fidentity(*dtypes)` one identity per component; applied to a tuple of values, the
    reducer gives one reduction per component, the body of a compute that returns them all::

        argmax = sl.comm_reducer(
            lambda x, y: (sl.if_then_else(x[1] >= y[1], x[0], y[0]), sl.max(x[1], y[1])),
            lambda t0, t1: (sl.const(-1, t0), sl.min_value(t1)),
        )
        index, value = sl.compute((m,), lambda i: argmax((k.var, A[i, k]), axis=k))
    """
    return Reducer(fcombine, fidentity, name)


sum = comm_reducer(lambda x, y: binary("+", x, y), lambda t: 0, name="sum")  # noqa: A001
prod = comm_reducer(lambda x, y: binary("*", x, y), lambda t: 1, name="prod")
max = comm_reducer(lambda x, y: binary("max", x, y), dt.min_value, name="max")  # noqa: A001
min = comm_reducer(lambda x, y: binary("min", x, y), dt.max_value, name="min")  # noqa: A001
