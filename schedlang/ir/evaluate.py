"""The numpy reference evaluator: any tensor computed straight from its definition.

This is the oracle every schedule on every target is tested against, so it is deliberately
simple: each compute is evaluated over its whole index grid at once with numpy broadcasting
(axis ``d`` is an ``arange`` along grid dimension ``d``, reduce axes take trailing dimensions),
in row chunks that keep the grid under `GRID_LIMIT` elements. ``if_then_else`` evaluates each
branch only where it is chosen (a mask travels down the tree), so guarded padding reads are fine,
while a read that is out of bounds where its value is used is an `AlgorithmError`. A read at a
data-dependent index is clamped into its tensor along that dimension (see `data_index`), as
every target does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..errors import AlgorithmError, entry_point
from . import dtype as dt
from .accumulate import REDUCTIONS, Step, builtin_op, fold_in_order, fold_pairwise, rounds_each_step
from .data_index import is_data_dependent
from .exact import exact_int
from .expr import (
    Binary,
    Call,
    Cast,
    CommReducer,
    Compare,
    Const,
    Expr,
    Read,
    Reduce,
    Select,
    Unary,
    Var,
)
from .extern import ExternOp
from .graph import post_order, together
from .hybrid.nodes import HybridOp
from .integers import as_int
from .intrinsics import EXTERN, INTRIN, reference_function
from .printer import expr_str
from .scan import ScanOp, body_ops, body_sources, check_rows
from .tensor import ComputeOp, IterVar, Operation, PlaceholderOp, Tensor
from .visit import by_element, walk

GRID_LIMIT = 1 << 24

_BINARY = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "/": np.true_divide,
    "//": np.floor_divide,
    "%": np.remainder,
    "min": np.minimum,
    "max": np.maximum,
    "&": np.bitwise_and,
    "|": np.bitwise_or,
    "<<": np.left_shift,
    ">>": np.right_shift,
    "and": np.logical_and,
    "or": np.logical_or,
}
_COMPARE = {
    "==": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}


def _erf(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return erf(x)


def _sigmoid(x):
    """As the code generators compute it: exp(-|x|) cannot overflow, so large negative x
    gives its tiny value instead of 0."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, np.ones_like(e), e) / (1 + e)


_MATH = {
    "exp": np.exp,
    "exp2": np.exp2,
    "fast_exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "erf": _erf,
    "sin": np.sin,
    "cos": np.cos,
    "pow": np.power,
    "abs": np.abs,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.rint,
    "popcount": lambda x: _popcount(np.asarray(x)),
}


def _popcount(x: np.ndarray) -> np.ndarray:
    """Bits set in two's complement (numpy counts a negative's absolute value)."""
    unsigned = x.astype(f"uint{x.dtype.itemsize * 8}")
    return np.bitwise_count(unsigned).astype(x.dtype)


@dataclass
class _Grid:
    """The index grid a compute is being evaluated on: one entry per grid dimension."""

    vars: list[Var]
    starts: list[int]
    shape: tuple[int, ...]


@dataclass
class _Context:
    sizes: dict[Var, int]
    values: dict[Operation, np.ndarray]
    precision: str | None
    env: dict[Var, np.ndarray] = field(default_factory=dict)
    op: ComputeOp | None = None
    grid: _Grid | None = None

    def np_dtype(self, dtype: str) -> np.dtype:
        if self.precision == "float64" and dt.is_float(dtype):
            return np.dtype("float64")
        return dt.to_numpy(dtype)

    def convert(self, values, dtype: str) -> np.ndarray:
        """`values` as `dtype` holds them here: `dt.convert`'s saturating conversions, or
        float64 for a float in a float64 evaluation."""
        if self.precision == "float64" and dt.is_float(dtype):
            return np.asarray(values).astype(np.float64, copy=False)
        return np.asarray(dt.convert(values, dtype))

    def float8(self, dtype: str) -> bool:
        """Whether arithmetic in `dtype` runs in float32 and rounds with `dt.to_float8` here:
        ml_dtypes' own 8-bit arithmetic gives NaN or infinity where the targets saturate."""
        return dt.is_float8(dtype) and self.precision != "float64"


@entry_point(also=(TypeError, ValueError))
def evaluate(
    tensor: Tensor,
    inputs: Mapping[Tensor, object],
    precision: str | None = None,
    sizes: Mapping[Var, int] | None = None,
) -> np.ndarray:
    """The value of `tensor` given arrays for the placeholders it depends on.

    Symbolic sizes are read off the input arrays; pass `sizes` for those that no input shows.
    ``precision="float64"`` evaluates every float operation in float64.
    """
    return reference([tensor], inputs, precision=precision, sizes=sizes)[0]


@entry_point(also=(TypeError, ValueError))
def reference(
    outputs: Tensor | Iterable[Tensor],
    inputs: Mapping[Tensor, object],
    precision: str | None = None,
    sizes: Mapping[Var, int] | None = None,
) -> np.ndarray | list[np.ndarray]:
    """Reference values of `outputs` (one array, or a list for a list of tensors).

    Where numpy leaves a value undefined the reference defines it as kernels compute it: a
    float cast to an integer saturates (NaN gives 0), and a float16 or bfloat16 reduction
    accumulates in its dtype, one term at a time in the order of the reduce axes."""
    single = isinstance(outputs, Tensor)
    outs = [outputs] if single else list(outputs)
    if precision not in (None, "float64"):
        raise ValueError(f"precision must be None or 'float64', not {precision!r}")
    ops = post_order([t.op for t in outs])
    stepped = {each for op in ops if isinstance(op, ScanOp) for each in together(op)}
    states = {op.state.op for op in stepped}
    arrays = _input_arrays([op for op in ops if op not in states], inputs)
    ctx = _Context(_bind_sizes(ops, arrays, sizes or {}), {}, precision)
    for op, array in arrays.items():
        ctx.values[op] = array.astype(ctx.np_dtype(op.dtype), copy=False)
    in_scans = {op for scan_op in stepped for op in _body(together(scan_op))}
    with np.errstate(all="ignore"):
        for op in ops:
            if op in in_scans or op in ctx.values:
                continue
            if isinstance(op, ComputeOp):
                ctx.values[op] = _compute(op, ctx)
            elif isinstance(op, ExternOp):
                _extern(op, ctx)
            elif isinstance(op, HybridOp):
                _hybrid(op, ctx)
            elif isinstance(op, ScanOp):
                _scan(together(op), ctx)
    results = [ctx.values[t.op] for t in outs]
    return results[0] if single else results


def _input_arrays(
    ops: list[Operation], inputs: Mapping[Tensor, object]
) -> dict[Operation, np.ndarray]:
    given = {}
    for key, value in inputs.items():
        if isinstance(key, Read) and not key.indices:  # a scalar parameter (sl.var of a float)
            key = key.tensor
        op = key.op if isinstance(key, Tensor) else key
        if not isinstance(op, PlaceholderOp) or isinstance(op, (ExternOp, HybridOp)):
            raise AlgorithmError(
                f"inputs: '{getattr(op, 'name', key)}' is not a placeholder; give arrays only "
                "for placeholders, computed tensors are evaluated"
            )
        given[op] = value
    arrays = {}
    for op in ops:
        if not isinstance(op, PlaceholderOp) or isinstance(op, (ExternOp, HybridOp)):
            continue
        if op not in given:
            raise AlgorithmError(f"no array given for placeholder '{op.name}'")
        array = np.asarray(given[op])
        if not op.shape and array.shape == () and array.dtype.kind in "biuf":  # a number
            array = array.astype(dt.to_numpy(op.dtype))
        if array.dtype != dt.to_numpy(op.dtype):
            raise TypeError(
                f"placeholder '{op.name}' is {op.dtype} but its array is {array.dtype}: "
                f"convert it with .astype({dt.to_numpy(op.dtype).name!r})"
            )
        if array.ndim != len(op.shape):
            raise ValueError(
                f"placeholder '{op.name}' has {len(op.shape)} dimension(s) but its array has "
                f"shape {array.shape}"
            )
        arrays[op] = array
    return arrays


def _bind_sizes(
    ops: list[Operation],
    arrays: Mapping[Operation, np.ndarray],
    given: Mapping[Var, int],
    how_to_pass: Callable[[str], str] = lambda name: f"sizes={{{name}: value}}",
) -> dict[Var, int]:
    """Every size in `ops`, from `given` and the shapes of `arrays`; a size that cannot be read
    off them is an error whose advice, ``how_to_pass(name)``, is in the caller's own terms."""
    sizes: dict[Var, int] = {}
    for v, n in given.items():
        value = as_int(n)
        if value is None:
            name = getattr(v, "name", v)
            raise TypeError(f"size '{name}' is given as {n!r}; a size is an integer")
        sizes[v] = value
    pending: list[tuple[str, Expr, int]] = []
    for op, array in arrays.items():
        for d, (extent, n) in enumerate(zip(op.shape, array.shape)):
            where = f"dimension {d} of '{op.name}'"
            if isinstance(extent, Var):
                _bind(sizes, extent, n, where)
            else:
                pending.append((where, extent, n))
    unresolved = pending
    while unresolved:
        progress = []
        for where, extent, n in unresolved:
            free = [v for v in _size_vars(extent) if v not in sizes]
            if len(free) == 1:
                value = _solve(extent, free[0], n, sizes, where, how_to_pass)
                _bind(sizes, free[0], value, where)
            elif free:
                progress.append((where, extent, n))
                continue
            if not _size_vars(extent) and _size_value(extent, sizes) != n:
                raise ValueError(
                    f"{where} must be {_size_value(extent, sizes)}, but its array has {n}"
                )
            if _size_value(extent, sizes) != n:
                raise ValueError(
                    f"{where} is {expr_str(extent)} = {_size_value(extent, sizes)} with "
                    f"{_sizes_str(extent, sizes)}, but its array has {n}"
                )
        if len(progress) == len(unresolved):
            where, extent, _ = progress[0]
            raise ValueError(f"cannot read the sizes in {where} ({expr_str(extent)}) off arrays")
        unresolved = progress
    for op in ops:
        for extent in _op_extents(op):
            for v in _size_vars(extent):
                if v not in sizes:
                    raise ValueError(
                        f"size '{v.name}' of '{op.name}' is not the size of any input array; "
                        f"pass it as {how_to_pass(v.name)}"
                    )
    return sizes


def _op_extents(op: Operation) -> list[Expr]:
    extents = list(op.shape)
    if isinstance(op, ComputeOp):
        for iv in op.reduce_axis:
            extents += [iv.dom.min, iv.dom.extent]
    return extents


def _bind(sizes: dict[Var, int], v: Var, n: int, where: str) -> None:
    if v in sizes and sizes[v] != n:
        raise ValueError(
            f"size '{v.name}' is {sizes[v]} from an earlier array but {n} from {where}: "
            "arrays that share a size must agree"
        )
    sizes[v] = n


def _size_vars(e: Expr) -> list[Var]:
    found: dict[Var, None] = {}
    for node in walk(e):
        if isinstance(node, Var):
            found[node] = None
    return list(found)


def _size_value(e: Expr, sizes: Mapping[Var, int]) -> int:
    """`e` with `sizes` bound, exactly: in its own dtype a size expression wraps or overflows
    just where a call's sizes are too large, and the message saying so needs its value."""
    order = list(sizes)
    exact = exact_int(e, {v: k for k, v in enumerate(order)})
    if exact is not None:
        return exact([sizes[v] for v in order])
    ctx = _Context(dict(sizes), {}, None)
    return int(_eval(e, ctx, None))


def _solve(
    e: Expr, v: Var, n: int, sizes: dict[Var, int], where: str, how_to_pass: Callable[[str], str]
) -> int:
    """The value of `v` that makes the affine extent `e` equal `n`."""
    at = [_size_value(e, {**sizes, v: x}) for x in (0, 1, 2)]
    slope = at[1] - at[0]
    if slope == 0 or at[2] - at[1] != slope or (n - at[0]) % slope:
        raise ValueError(
            f"{where} is {expr_str(e)}, from which '{v.name}' cannot be read off the size {n}; "
            f"pass it as {how_to_pass(v.name)}"
        )
    return (n - at[0]) // slope


def _sizes_str(e: Expr, sizes: Mapping[Var, int]) -> str:
    return ", ".join(f"{v.name}={sizes[v]}" for v in _size_vars(e))


def _extern(op: ExternOp, ctx: _Context) -> None:
    """The arrays `op`'s function writes (of `op` and the outputs computed with it), given
    its inputs' values."""
    from .packed import call_extern

    for out in together(op):
        shape = tuple(_size_value(n, ctx.sizes) for n in out.shape)
        ctx.values[out] = np.zeros(shape, ctx.np_dtype(out.dtype))
    call_extern(op, ctx.values)


def _hybrid(op: HybridOp, ctx: _Context) -> None:
    """The outputs of `op`'s script call, run as Python on copies of its inputs' values."""
    from .hybrid.runtime import run_script

    def value(arg: object) -> object:
        if isinstance(arg, (list, tuple)):
            return [value(a) for a in arg]
        if isinstance(arg, Tensor):
            return ctx.values[arg.op].copy()  # a script may write its inputs
        if isinstance(arg, Expr):
            return _size_value(arg, ctx.sizes)
        return arg

    results = run_script(op.call.func, tuple(value(a) for a in op.call.args))
    if len(results) != len(op.call.ops):
        raise AlgorithmError(
            f"hybrid script '{op.call.name}' returned {len(results)} array(s) when run on "
            f"arrays, but {len(op.call.ops)} tensor(s) when called on tensors"
        )
    for out, array in zip(op.call.ops, results):
        ctx.values[out] = np.asarray(array).astype(ctx.np_dtype(out.dtype), copy=False)


def _scan(scan_ops: tuple[ScanOp, ...], ctx: _Context) -> None:
    """The states of one scan, step by step: each step evaluates the row of every body op at
    that step, reading the states' earlier rows (an element read before it is computed, or
    outside the steps, reads NaN or the dtype's lowest value)."""
    rows = _size_value(scan_ops[0].init.shape[0], ctx.sizes)
    steps = _size_value(scan_ops[0].shape[0], ctx.sizes)
    check_rows(scan_ops[0], rows, steps, _sizes_str(scan_ops[0].shape[0], ctx.sizes))
    body = _body(scan_ops)
    for op in [*scan_ops, *body]:
        shape = tuple(_size_value(e, ctx.sizes) for e in op.shape)
        ctx.values[op] = np.full(shape, _unset(ctx.np_dtype(op.dtype)), ctx.np_dtype(op.dtype))
    for op in scan_ops:
        first = ctx.values[op.init.op]
        ctx.values[op][: len(first)] = first
        ctx.values[op.state.op] = ctx.values[op]  # the update reads the result's rows so far
    states_of: dict[Operation, list[ScanOp]] = {}
    for op in scan_ops:
        states_of.setdefault(op.update.op, []).append(op)
    for t in range(rows, steps):
        for op in body:
            shape = ctx.values[op].shape
            starts = [_size_value(iv.dom.min, ctx.sizes) for iv in op.reduce_axis]
            red = tuple(_size_value(iv.dom.extent, ctx.sizes) for iv in op.reduce_axis)
            row = _compute_chunk(op, ctx, t, t + 1, shape, starts, red)
            ctx.values[op][t : t + 1] = np.broadcast_to(row, (1,) + shape[1:])
            for state in states_of.get(op, ()):  # later updates of this step may read it
                ctx.values[state][t] = ctx.values[op][t]


def _body(scan_ops: tuple[ScanOp, ...]) -> list[Operation]:
    """The body ops in the order a step computes them: each update after those whose state
    it reads (`ScanOp.group_inputs`)."""
    updates = [t.op for t in scan_ops[0].group_inputs()[len(scan_ops) :]]
    return body_ops(updates, body_sources(scan_ops))


def _unset(dtype: np.dtype):
    return np.nan if dtype.kind in "fc" else (np.iinfo(dtype).min if dtype.kind in "iu" else 0)


def _compute(op: ComputeOp, ctx: _Context) -> np.ndarray:
    shape = tuple(_size_value(e, ctx.sizes) for e in op.shape)
    fast = _einsum(op, ctx, shape)
    if fast is not None:
        return fast
    starts = [_size_value(iv.dom.min, ctx.sizes) for iv in op.reduce_axis]
    red = tuple(_size_value(iv.dom.extent, ctx.sizes) for iv in op.reduce_axis)
    out = np.empty(shape, dtype=ctx.np_dtype(op.dtype))
    if not shape:
        return _compute_chunk(op, ctx, 0, 0, (), starts, red).reshape(())
    row = int(np.prod(shape[1:] + red, dtype=np.int64))
    step = max(1, GRID_LIMIT // max(row, 1))
    for lo in range(0, shape[0], step):
        hi = min(shape[0], lo + step)
        value = _compute_chunk(op, ctx, lo, hi, shape, starts, red)
        out[lo:hi] = np.broadcast_to(value, (hi - lo,) + shape[1:])
    return out


def _compute_chunk(op, ctx, lo, hi, shape, starts, red) -> np.ndarray:
    data_shape = (hi - lo,) + tuple(shape[1:]) if shape else ()
    grid_shape = data_shape + red
    nd = len(grid_shape)
    axes = [iv.var for iv in op.axis] + [iv.var for iv in op.reduce_axis]
    origins = ([lo] + [0] * (len(shape) - 1) if shape else []) + list(starts)
    env = {}
    for d, (v, origin, n) in enumerate(zip(axes, origins, grid_shape)):
        view = [1] * nd
        view[d] = n
        env[v] = np.arange(origin, origin + n, dtype=dt.to_numpy(v.dtype)).reshape(view)
    ctx.env, ctx.op, ctx.grid = env, op, _Grid(axes, origins, grid_shape)
    return ctx.convert(_eval(op.expr, ctx, None), op.dtype)


def _eval(e: Expr, ctx: _Context, mask: np.ndarray | None):
    """Value of `e` on the current grid; `mask` marks the grid points where it is needed."""
    if isinstance(e, Const):
        return ctx.convert(e.value, e.dtype)
    if isinstance(e, Var):
        if e in ctx.env:
            return ctx.env[e]
        if e in ctx.sizes:
            return np.array(ctx.sizes[e], dtype=dt.to_numpy(e.dtype))
        raise AlgorithmError(f"the variable '{e.name}' has no value here")
    if isinstance(e, IterVar):
        return _eval(e.var, ctx, mask)
    if isinstance(e, Binary):
        a, b = _eval(e.a, ctx, mask), _eval(e.b, ctx, mask)
        if e.op == "^":
            return np.logical_xor(a, b) if e.dtype == "bool" else np.bitwise_xor(a, b)
        if ctx.float8(e.dtype):
            return dt.to_float8(_BINARY[e.op](*_wide(a, b)), e.dtype)
        return _BINARY[e.op](a, b)
    if isinstance(e, Compare):
        return _COMPARE[e.op](_eval(e.a, ctx, mask), _eval(e.b, ctx, mask))
    if isinstance(e, Unary):
        a = _eval(e.a, ctx, mask)
        if e.op == "-":
            if ctx.float8(e.dtype):
                return dt.to_float8(np.negative(*_wide(a)), e.dtype)
            return np.negative(a)
        return np.logical_not(a) if e.op == "not" else np.invert(a)
    if isinstance(e, Select):
        cond = _eval(e.cond, ctx, mask)
        yes = _eval(e.true_value, ctx, cond if mask is None else mask & cond)
        no = _eval(e.false_value, ctx, ~cond if mask is None else mask & ~cond)
        return np.where(cond, yes, no)
    if isinstance(e, Cast):
        return ctx.convert(_eval(e.value, ctx, mask), e.dtype)
    if isinstance(e, Call):
        return _call(e, ctx, [_eval(a, ctx, mask) for a in e.args])
    if isinstance(e, Read):
        return _read(e, ctx, mask)
    if isinstance(e, Reduce):
        return _reduce(e, ctx, mask)
    raise AlgorithmError(f"cannot evaluate {e!r}")


def _wide(*values) -> list[np.ndarray]:
    """8-bit float values in float32, where their arithmetic is computed (exactly for a
    product of two of them)."""
    return [np.asarray(v).astype(np.float32) for v in values]


def _call(e: Call, ctx: _Context, args: list) -> np.ndarray:
    out = ctx.np_dtype(e.dtype)
    work = np.dtype("float32") if dt.is_float(e.dtype) and out.itemsize < 4 else out
    args = [np.asarray(a).astype(work, copy=False) for a in args]
    if e.name == "fma":
        wide = [a.astype(np.float64) for a in args]
        return ctx.convert(wide[0] * wide[1] + wide[2], e.dtype)
    if e.name.startswith(EXTERN):
        return ctx.convert(reference_function(e.name[len(EXTERN) :])(*args), e.dtype)
    if e.name.startswith(INTRIN):
        raise AlgorithmError(
            f"the intrinsic {e.name[len(INTRIN) :]!r} (call_intrin) has no reference: only the "
            "lowering rule registered for a target says what it computes"
        )
    return ctx.convert(_MATH[e.name](*args), e.dtype)


def _read(e: Read, ctx: _Context, mask) -> np.ndarray:
    array = ctx.values[e.tensor.op]
    indices = [np.asarray(_eval(i, ctx, mask)) for i in e.indices]
    indices = [
        np.clip(index, 0, n - 1) if is_data_dependent(i) else index
        for i, index, n in zip(e.indices, indices, array.shape)
    ]
    bad = None
    for d, index in enumerate(indices):
        outside = (index < 0) | (index >= array.shape[d])
        bad = outside if bad is None else bad | outside
    if bad is not None and np.any(bad):
        if mask is not None:
            bad = bad & mask
        if np.any(bad):
            _report_out_of_bounds(e, ctx, indices, bad, array.shape)
        indices = [np.clip(i, 0, n - 1) for i, n in zip(indices, array.shape)]
    return array[tuple(indices)]


def _report_out_of_bounds(e: Read, ctx: _Context, indices, bad, shape) -> None:
    grid = ctx.grid
    full = np.broadcast_to(bad, grid.shape)
    point = tuple(int(p) for p in np.argwhere(full)[0])
    values = ", ".join(f"{v.name}={o + p}" for v, o, p in zip(grid.vars, grid.starts, point))
    read_at = ", ".join(str(int(np.broadcast_to(i, grid.shape)[point])) for i in indices)
    raise AlgorithmError(
        f"compute '{ctx.op.name}' reads '{expr_str(e)}' out of bounds: at {values} it reads "
        f"{e.tensor.name}[{read_at}] but '{e.tensor.name}' has shape "
        f"{tuple(int(n) for n in shape)}; guard the read with sl.if_then_else or shrink the "
        "compute's domain"
    )


def _reduce(e: Reduce, ctx: _Context, mask) -> np.ndarray:
    grid = ctx.grid
    n_red = len(e.axis)
    red_dims = tuple(range(len(grid.shape) - n_red, len(grid.shape)))
    if e.where is not None:
        cond = np.broadcast_to(_eval(e.where, ctx, mask), grid.shape)
        inner = cond if mask is None else mask & cond
    else:
        cond, inner = None, mask
    if e.parts:
        return _reduce_tuple(e, ctx, inner, cond)
    source = np.broadcast_to(_eval(e.source, ctx, inner), grid.shape)
    if by_element(e.combiner):
        return _reduce_by_element(e, ctx, source, cond)
    identity = ctx.convert(e.combiner.identity.value, e.dtype)
    if cond is not None:
        source = np.where(cond, source, identity)
    builtin = builtin_op(e.combiner)
    step = _step(e.combiner, ctx)
    if rounds_each_step(identity.dtype) and builtin not in ("max", "min"):
        return fold_in_order(e.combiner, step, source, red_dims, identity)
    if builtin is not None:
        extra = {"dtype": source.dtype} if builtin in ("+", "*") else {}
        return REDUCTIONS[builtin](source, axis=red_dims, initial=identity, **extra)
    return fold_pairwise(step, source, red_dims, identity)


def _reduce_by_element(e: Reduce, ctx: _Context, source: np.ndarray, cond) -> np.ndarray:
    """A reduction whose reducer uses the compute's indices (`visit.by_element`): from each
    element's identity, its terms combined one at a time in the order of the reduce axes,
    those where `where` is false skipped (as the unscheduled loop nest does; such a reducer
    need not be associative)."""
    grid = ctx.grid
    n_data = len(grid.shape) - len(e.axis)
    data = grid.shape[:n_data]
    first = (slice(None),) * n_data + (0,) * len(e.axis)
    saved = ctx.env
    ctx.env = {v: np.broadcast_to(a, grid.shape)[first] for v, a in saved.items()}
    kind = ctx.np_dtype(e.dtype)
    try:
        total = np.broadcast_to(_eval(e.combiner.identity, ctx, None), data).astype(kind)
        terms = source.reshape(data + (-1,))
        keep = None if cond is None else np.broadcast_to(cond, grid.shape).reshape(data + (-1,))
        outer = ctx.env
        for r in range(terms.shape[-1]):
            ctx.env = {**outer, e.combiner.lhs: total, e.combiner.rhs: terms[..., r]}
            new = np.broadcast_to(_eval(e.combiner.result, ctx, None), data).astype(kind)
            total = new if keep is None else np.where(keep[..., r], new, total)
    finally:
        ctx.env = saved
    return total


def _reduce_tuple(e: Reduce, ctx: _Context, inner, cond) -> np.ndarray:
    """Component `e.value_index` of a reduction over tuples: all components are folded
    together, one term at a time in the order of the reduce axes (as the unscheduled loop
    nest does; an argmax then keeps the first of equal values, as numpy's does)."""
    grid = ctx.grid
    data = grid.shape[: len(grid.shape) - len(e.axis)]
    sources = []
    for op, part in zip(ctx.op.outputs.ops, e.parts):
        kind = ctx.np_dtype(part.dtype)
        term = np.broadcast_to(_eval(op.expr.source, ctx, inner), grid.shape).astype(kind)
        if cond is not None:
            term = np.where(cond, term, np.array(part.identity.value, dtype=kind))
        sources.append(term.reshape(data + (-1,)))
    acc = [np.full(data, p.identity.value, dtype=ctx.np_dtype(p.dtype)) for p in e.parts]
    saved = ctx.env
    try:
        for r in range(sources[0].shape[-1]):
            ctx.env = dict(saved)
            for p, a, src in zip(e.parts, acc, sources):
                ctx.env[p.lhs], ctx.env[p.rhs] = a, src[..., r]
            acc = [
                np.broadcast_to(_eval(p.result, ctx, None), data).astype(a.dtype)
                for p, a in zip(e.parts, acc)
            ]
    finally:
        ctx.env = saved
    return acc[e.value_index]


def combine(comb: CommReducer, values: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """`values` combined along `axes` with `comb`, as a reduction over them computes it."""
    last = tuple(range(values.ndim - len(axes), values.ndim))
    moved = np.moveaxis(values, axes, last)
    identity = np.array(comb.identity.value, dtype=values.dtype)
    if not axes:
        return moved.copy()
    return fold_pairwise(_step(comb, _Context({}, {}, None)), moved, last, identity)


def _step(comb: CommReducer, ctx: _Context) -> Step:
    """The reducer's combination of two arrays of partial results, evaluated in `ctx`."""

    def step(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        saved = ctx.env
        ctx.env = {**saved, comb.lhs: lhs, comb.rhs: rhs}
        try:
            return _eval(comb.result, ctx, None)
        finally:
            ctx.env = saved

    return step


def _einsum(op: ComputeOp, ctx: _Context, shape: tuple[int, ...]) -> np.ndarray | None:
    """Sums of products of plainly indexed reads (matmul and kin) through `np.einsum`."""
    body = op.expr
    if not isinstance(body, Reduce) or body.where is not None or body.parts:
        return None
    if builtin_op(body.combiner) != "+" or not dt.is_float(body.dtype):
        return None
    if rounds_each_step(ctx.np_dtype(body.dtype)):
        return None
    ranges = {iv.var: (0, n) for iv, n in zip(op.axis, shape)}
    for iv in op.reduce_axis:
        lo = _size_value(iv.dom.min, ctx.sizes)
        ranges[iv.var] = (lo, _size_value(iv.dom.extent, ctx.sizes))
    letters = {v: chr(ord("a") + k) for k, v in enumerate(ranges)}
    operands, subscripts = [], []
    for factor in _factors(body.source):
        read = factor.value if isinstance(factor, Cast) else factor
        if not isinstance(read, Read) or len(set(read.indices)) != len(read.indices):
            return None
        array = ctx.values[read.tensor.op]
        view = []
        for index, n in zip(read.indices, array.shape):
            if index not in ranges:
                return None
            lo, extent = ranges[index]
            if lo < 0 or lo + extent > n:
                return None
            view.append(slice(lo, lo + extent))
        operands.append(array[tuple(view)].astype(ctx.np_dtype(body.dtype), copy=False))
        subscripts.append("".join(letters[i] for i in read.indices))
    out = "".join(letters[iv.var] for iv in op.axis)
    if set(letters.values()) - set("".join(subscripts)):
        return None  # an axis no factor reads: einsum would drop it (sum over k of A[i] is K*A[i])
    result = np.einsum(f"{','.join(subscripts)}->{out}", *operands, optimize=True)
    return result.astype(ctx.np_dtype(body.dtype), copy=False)  # einsum widens bfloat16


def _factors(e: Expr) -> list[Expr]:
    if isinstance(e, Binary) and e.op == "*":
        return _factors(e.a) + _factors(e.b)
    return [e]
