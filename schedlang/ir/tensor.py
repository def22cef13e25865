"""Tensors and the operations that define them: `var`, `placeholder`, `compute`, `reduce_axis`."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from ..errors import AlgorithmError, entry_point, user_location
from . import dtype as dt
from .expr import Binary, Const, Expr, Read, Reduce, Var, as_expr, const
from .integers import as_int
from .intrin_call import IntrinCall
from .tensor_region import TensorRegion
from .tensor_slice import TensorSlice, index_count_error
from .visit import walk

_NO_ATTRS: Mapping[str, object] = MappingProxyType({})


@dataclass(frozen=True, slots=True, eq=False)
class Range:
    """The half-open interval ``[min, min + extent)``."""

    min: Expr
    extent: Expr

    def __str__(self) -> str:
        from .printer import expr_str

        if _is_zero(self.min):
            end = self.extent
        elif isinstance(self.min, Const) and isinstance(self.extent, Const):
            end = const(self.min.value + self.extent.value)
        elif _is_minus(self.extent, self.min):
            end = self.extent.a  # reduce_axis((lo, hi)) stores hi - lo
        else:
            end = self.min + self.extent
        return f"[{expr_str(self.min)}, {expr_str(end)})"


def _is_zero(e: Expr) -> bool:
    return isinstance(e, Const) and e.value == 0


def _is_minus(e: Expr, lo: Expr) -> bool:
    """True if `e` is ``hi - lo``."""
    if not (isinstance(e, Binary) and e.op == "-"):
        return False
    if isinstance(e.b, Const) and isinstance(lo, Const):
        return e.b.value == lo.value
    return e.b is lo


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class IterVar(Expr):
    """A loop of an op: data-parallel (``kind == "data"``) or a reduction (``"reduce"``).

    Usable in expressions as its variable, as TE's IterVar is.
    """

    var: Var
    dom: Range
    kind: str

    @property
    def name(self) -> str:
        return self.var.name

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.var.dtype

    def __repr__(self) -> str:
        return f"IterVar({self.var.name}, {self.dom}, {self.kind})"

    # A loop a schedule made (split, fuse) is not an expression: comparing one with an IterVar
    # is plain Python equality (False), so lists mixing both (TE's ``leaf_iter_vars``) can be
    # searched and compared.
    def __eq__(self, other):  # type: ignore[override]
        if getattr(other, "is_schedule_loop", False):
            return NotImplemented
        return Expr.__eq__(self, other)

    def __ne__(self, other):  # type: ignore[override]
        if getattr(other, "is_schedule_loop", False):
            return NotImplemented
        return Expr.__ne__(self, other)

    __hash__ = Expr.__hash__


class Operation:
    """What defines a tensor. Identity-compared; usable as a dict key."""

    name: str
    shape: tuple[Expr, ...]
    dtype: str

    def output(self, index: int = 0) -> Tensor:
        """Output `index`: of the op's group where it is one of several computed together."""
        group = getattr(self, "outputs", None)
        if group is None:
            if index != 0:
                raise AlgorithmError(f"op '{self.name}' has one output, not {index + 1}")
            return Tensor(self)
        if not 0 <= index < len(group.ops):
            raise AlgorithmError(f"'{group.name}' has {len(group.ops)} outputs")
        return Tensor(group.ops[index], index)

    @property
    def num_outputs(self) -> int:
        group = getattr(self, "outputs", None)
        return 1 if group is None else len(group.ops)

    @property
    def input_tensors(self) -> tuple[Tensor, ...]:
        return ()


@dataclass(frozen=True, slots=True, eq=False)
class PlaceholderOp(Operation):
    name: str
    shape: tuple[Expr, ...]
    dtype: str


class Outputs:
    """The outputs of one multi-output compute (TE's ``B0, B1 = te.compute(..., lambda i:
    (a, b))``): one op per output, sharing their axes, computed in the same loops by one
    stage. `ops` are the ops as created; a schedule may rewire them into new ops that keep
    this object, which is how it finds them together."""

    __slots__ = ("name", "ops")

    def __init__(self, name: str) -> None:
        self.name = name
        self.ops: tuple[ComputeOp, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class ComputeOp(Operation):
    """An output defined elementwise: each element is `expr` at the element's `axis` values
    (TE's ``body[value_index]``; `body` is TE's list of every output's expression)."""

    name: str
    tag: str
    axis: tuple[IterVar, ...]
    reduce_axis: tuple[IterVar, ...]
    expr: Expr
    outputs: Outputs | None = None  # set for one output of a multi-output compute
    value_index: int = 0  # which output of `outputs` this op is
    # TE's ``attrs=``: annotations for the user's own code, read-only; they change nothing that
    # is computed (and so are left out of a schedule's canonical text).
    attrs: Mapping[str, object] = field(default_factory=lambda: _NO_ATTRS, repr=False)
    # A tensor intrinsic called in the body (`intrin_call`): the stage's inner loops run it.
    intrin_call: object = field(default=None, repr=False)

    # A read-only mapping does not pickle; its items do (TE's schedules and ops pickle).
    def __getstate__(self) -> tuple:
        return tuple(dict(v) if f == "attrs" else v for f, v in self._fields())

    def __setstate__(self, state: tuple) -> None:
        for (name, _), value in zip(self._fields(), state):
            object.__setattr__(self, name, MappingProxyType(value) if name == "attrs" else value)

    def _fields(self) -> list[tuple[str, object]]:
        return [(f, getattr(self, f, None)) for f in self.__dataclass_fields__]

    @property
    def shape(self) -> tuple[Expr, ...]:  # type: ignore[override]
        return tuple(iv.dom.extent for iv in self.axis)

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.expr.dtype

    @property
    def body(self) -> tuple[Expr, ...]:
        """TE's ``op.body``: the expression of each output computed together, in order (one
        for a single output; a tuple reduction's components as `Reduce`s of their own). This
        op's own is its current one; the others' are the algorithm's, which a schedule that
        rewires the outputs' reads (``cache_read``) gives new ops of its own, in its stage."""
        if self.outputs is None:
            return (self.expr,)
        own = self.value_index
        return tuple(self.expr if k == own else op.expr for k, op in enumerate(self.outputs.ops))

    @property
    def input_tensors(self) -> tuple[Tensor, ...]:
        """The tensors the expression reads, in order of first appearance."""
        seen: dict[Operation, Tensor] = {}
        for node in walk(self.expr):
            if isinstance(node, Read) and node.tensor.op not in seen:
                seen[node.tensor.op] = node.tensor
        return tuple(seen.values())


@dataclass(frozen=True, slots=True, eq=False)
class Tensor:
    """The result of an op. Index it (``A[i, j]``) to read an element in an expression."""

    op: Operation
    value_index: int = 0

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def shape(self) -> tuple[Expr, ...]:
        return self.op.shape

    @property
    def dtype(self) -> str:
        return self.op.dtype

    @property
    def ndim(self) -> int:
        return len(self.op.shape)

    def __hash__(self) -> int:
        return hash(self.op)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tensor) and other.op is self.op

    def __iter__(self):
        # Without this, Python would iterate through __getitem__ (A[0], A[1], ...) forever.
        raise TypeError(f"tensor '{self.name}' is not iterable: index it, e.g. {self.name}[i]")

    @entry_point
    def __call__(self, *indices: object) -> Expr:
        """``A(i, j)``, TE's other spelling of ``A[i, j]``."""
        return self._read(indices)

    @entry_point
    def __getitem__(self, indices: object) -> Expr | TensorSlice | TensorRegion:
        """``A[i, j]``; with fewer indices than dimensions, a `TensorSlice` to index further
        (``A[i][j]``, as in TE); with slices, a region for a tensor intrinsic
        (``A[i, 0:16]``, `tensor_region`)."""
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) < self.ndim:
            return TensorSlice(self, indices, user_location())
        if len(indices) == self.ndim and any(isinstance(i, slice) for i in indices):
            return TensorRegion(self, indices, user_location())
        return self._read(indices)

    def _read(self, indices: tuple) -> Expr:
        if len(indices) != self.ndim:
            raise index_count_error(self, len(indices), user_location())
        exprs = []
        for position, index in enumerate(indices):
            if isinstance(index, slice):
                raise AlgorithmError(
                    f"tensor '{self.name}' indexed with a slice in dimension {position}: "
                    "index with one expression per dimension"
                )
            e = as_expr(index)
            if not dt.is_int(e.dtype):
                raise AlgorithmError(
                    f"index {position} of '{self.name}' is '{e}' of dtype {e.dtype} at "
                    f"{user_location()}: indices must be integers; convert with "
                    ".astype('int32') (floor() first if you meant to round down)"
                )
            exprs.append(e)
        return Read(self, tuple(exprs), self.dtype)

    # Whole-tensor arithmetic (tensor_ops.py): each operator defines a new compute, as TE's.
    # Comparisons stay identity (tensors are dict keys), as TE's are.
    __array_ufunc__ = None  # numpy's scalars and arrays defer to the reflected operators

    @entry_point
    def __add__(self, other: object) -> Tensor:
        return _arithmetic("+", self, other)

    @entry_point
    def __radd__(self, other: object) -> Tensor:
        return _arithmetic("+", other, self)

    @entry_point
    def __sub__(self, other: object) -> Tensor:
        return _arithmetic("-", self, other)

    @entry_point
    def __rsub__(self, other: object) -> Tensor:
        return _arithmetic("-", other, self)

    @entry_point
    def __mul__(self, other: object) -> Tensor:
        return _arithmetic("*", self, other)

    @entry_point
    def __rmul__(self, other: object) -> Tensor:
        return _arithmetic("*", other, self)

    @entry_point
    def __truediv__(self, other: object) -> Tensor:
        return _arithmetic("/", self, other)

    @entry_point
    def __rtruediv__(self, other: object) -> Tensor:
        return _arithmetic("/", other, self)

    @entry_point
    def __floordiv__(self, other: object) -> Tensor:
        return _arithmetic("//", self, other)

    @entry_point
    def __rfloordiv__(self, other: object) -> Tensor:
        return _arithmetic("//", other, self)

    @entry_point
    def __mod__(self, other: object) -> Tensor:
        return _arithmetic("%", self, other)

    @entry_point
    def __rmod__(self, other: object) -> Tensor:
        return _arithmetic("%", other, self)

    @entry_point
    def __neg__(self) -> Tensor:
        from .tensor_ops import tensor_negative

        return tensor_negative(self)

    def __str__(self) -> str:
        from .printer import tensor_str

        return tensor_str(self)

    def __repr__(self) -> str:
        from .printer import expr_str

        shape = ", ".join(expr_str(s) for s in self.shape)
        return f"Tensor({self.name}, shape=({shape}), {self.dtype})"

    def _repr_markdown_(self) -> str:
        return f"```\n{self}\n```"


def _arithmetic(op: str, a: object, b: object) -> Tensor:
    from .tensor_ops import tensor_binary  # which builds computes of this module

    return tensor_binary(op, a, b)


@entry_point
def var(name: str = "n", dtype: object = "int32") -> Expr:
    """A symbolic size (an integer dtype): its value is read off the arrays a kernel or the
    reference is given, or passed by name. Of a floating dtype, a scalar parameter: a value
    the kernel is called with (``kernel(a, 2.5, c)``, listed in `args` where the call passes
    it), which is a 0-d input tensor read (``placeholder((), dtype, name)[()]``)."""
    kind = dt.canonical(dtype)
    if dt.is_float(kind):
        return placeholder((), kind, name)[()]
    if not dt.is_int(kind):
        raise AlgorithmError(
            f"variable '{name}' must have an integer dtype (a size) or a floating one (a scalar "
            f"parameter), not {kind}"
        )
    return Var(name, kind, "size")


def axis_dtype(*bounds: Expr) -> str:
    """The dtype of an axis over `bounds`: int32, or int64 where a bound is wider (an int64
    size, a constant past int32), so that the axis holds every value it takes, as in TE."""
    wide = any(dt.bits(b.dtype) >= 32 and b.dtype != "int32" for b in bounds)
    return "int64" if wide else "int32"


def _extent(value: object, what: str, axes: bool = False) -> Expr:
    """A shape entry or extent: a positive constant, or an expression of size variables (and,
    with `axes`, of a compute's axes: a reduction whose range depends on the element)."""
    e = as_expr(value)
    if not dt.is_int(e.dtype):
        raise AlgorithmError(f"{what} is '{e}' of dtype {e.dtype}; sizes must be integers")
    if isinstance(e, Const):
        if e.value <= 0:
            raise AlgorithmError(f"{what} is {e.value}; extents must be positive")
        return const(e.value)  # int32, or int64 past int32's range
    for node in walk(e):
        if isinstance(node, Var) and node.kind != "size" and not (axes and node.kind == "axis"):
            raise AlgorithmError(
                f"{what} is '{e}', which uses the loop variable '{node.name}': "
                "extents may only use constants and sl.var sizes"
            )
        if isinstance(node, Read):
            raise AlgorithmError(f"{what} is '{e}', which reads a tensor: extents must be static")
    return e


def _shape(shape: object, owner: str) -> tuple[Expr, ...]:
    if not isinstance(shape, (tuple, list)):
        shape = (shape,)
    return tuple(_extent(s, f"dimension {d} of '{owner}'") for d, s in enumerate(shape))


@entry_point
def placeholder(shape: object, dtype: object = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor of the algorithm."""
    return Tensor(PlaceholderOp(name, _shape(shape, name), dt.canonical(dtype)))


@entry_point
def reduce_axis(dom: object, name: str = "rv") -> IterVar:
    """A reduction axis over ``[lo, hi)`` (``dom = (lo, hi)``) or ``[0, dom)``. The bounds may
    use the axes of the compute that reduces over it: ``reduce_axis((0, i + 1))`` sums a
    triangle, and its loops run exactly the triangle's points."""
    if isinstance(dom, (tuple, list)):
        if len(dom) != 2:
            raise AlgorithmError(f"reduce_axis '{name}': give (lo, hi) or hi, not {dom!r}")
        lo, hi = as_expr(dom[0]), as_expr(dom[1])
        if isinstance(lo, Const) and isinstance(hi, Const) and hi.value <= lo.value:
            raise AlgorithmError(
                f"reduce_axis '{name}' has the empty range [{lo.value}, {hi.value}); "
                "the upper bound must exceed the lower"
            )
        if isinstance(lo, Const) and isinstance(hi, Const):
            extent = const(hi.value - lo.value)
        else:
            extent = hi if _is_zero(lo) else hi - lo
        what = f"the extent of reduce_axis '{name}'"
        rng = Range(_start(lo, name), _extent(extent, what, axes=True))
        kind = axis_dtype(rng.min, rng.extent, hi)
    else:
        rng = Range(const(0), _extent(dom, f"the extent of reduce_axis '{name}'", axes=True))
        kind = axis_dtype(rng.extent)
    return IterVar(Var(name, kind, "reduce"), rng, "reduce")


def _start(lo: Expr, name: str) -> Expr:
    if not dt.is_int(lo.dtype):
        raise AlgorithmError(f"reduce_axis '{name}' starts at '{lo}' of dtype {lo.dtype}")
    return const(lo.value) if isinstance(lo, Const) else lo


def _axis_names(fcompute: Callable, ndim: int) -> list[str]:
    """The names of the axes `fcompute` takes: one per dimension, or fewer (the outer ones of
    a compute calling a tensor intrinsic, `intrin_call`)."""
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        return [f"i{d}" for d in range(ndim)]
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return [f"i{d}" for d in range(ndim)]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [p.name for p in positional]


def _arity_error(name: str, ndim: int, given: int) -> AlgorithmError:
    return AlgorithmError(
        f"compute '{name}' has a {ndim}-dimensional shape but its function takes {given} "
        f"argument(s) at {user_location()}: give one index argument per dimension (or, for a "
        "tensor intrinsic called in the body, one per dimension outside its output)"
    )


@entry_point(also=(TypeError,))
def compute(
    shape: object,
    fcompute: Callable[..., object],
    name: str = "compute",
    tag: str = "",
    attrs: Mapping[str, object] | None = None,
) -> Tensor:
    """A tensor defined elementwise by ``fcompute(*indices)``; the axes take its argument names.

    A function returning a tuple defines one tensor per value, computed together in the same
    loops (a list of tensors; TE's multi-output compute). `attrs` (TE's) are kept, read-only,
    as ``T.op.attrs``."""
    if not callable(fcompute):
        raise TypeError(
            f"compute '{name}': fcompute must be a function of the indices "
            f"(e.g. lambda i: A[i] * 2), not {fcompute!r}"
        )
    extents = _shape(shape, name)
    names = _axis_names(fcompute, len(extents))
    if len(names) > len(extents):
        raise _arity_error(name, len(extents), len(names))
    axis = tuple(
        IterVar(Var(n, axis_dtype(ext), "axis"), Range(const(0), ext), "data")
        for n, ext in zip(names, extents)
    )
    kept = MappingProxyType(dict(attrs)) if attrs else _NO_ATTRS
    result = fcompute(*axis)
    if isinstance(result, IntrinCall):
        return _intrin_compute(result, axis, extents, name, tag, kept)
    if len(names) != len(extents):
        raise _arity_error(name, len(extents), len(names))
    if isinstance(result, (tuple, list)):
        return _multi_output(list(result), axis, name, tag, kept)
    body = _bounded_ranges(as_expr(result), axis, name)
    reduce_axes = _check_body(body, axis, name)
    return Tensor(ComputeOp(name, tag, axis, reduce_axes, body, attrs=kept))


def _intrin_compute(call: IntrinCall, outer, extents, name: str, tag: str, attrs) -> Tensor:
    """The compute of a tensor intrinsic's call (see `intrin_call`): its outer axes, then the
    intrinsic's axes; its reduce axes those of the call, then the intrinsic's."""
    call.check(name)
    declared = call.op
    tile = tuple(as_int(n) for n in declared.shape)
    if tuple(as_int(n) for n in extents[len(outer) :]) != tile:
        raise AlgorithmError(
            f"compute '{name}': its function takes {len(outer)} axes and calls the intrinsic "
            f"'{declared.name}', whose output is {tile}; the shape must be those {len(outer)} "
            f"extents followed by {tile}, not {tuple(str(n) for n in extents)}"
        )
    taken = {iv.var.name for iv in outer} | {iv.var.name for iv in call.reduce_axis}

    def fresh(iv: IterVar) -> IterVar:
        label = iv.var.name
        while label in taken:
            label += "_"
        taken.add(label)
        return IterVar(Var(label, iv.var.dtype, iv.var.kind), iv.dom, iv.kind)

    inner = tuple(fresh(iv) for iv in declared.axis)
    reduce_inner = tuple(fresh(iv) for iv in declared.reduce_axis)
    body = call.body(inner, reduce_inner)
    reduce_axes = _check_body(body, outer + inner, name)
    op = ComputeOp(name, tag, outer + inner, reduce_axes, body, attrs=attrs, intrin_call=call)
    return Tensor(op)


def _multi_output(
    values: list, axis: tuple[IterVar, ...], name: str, tag: str, attrs: Mapping[str, object]
):
    """The tensors of a compute whose function returns a tuple (TE's multi-output compute):
    either elementwise values, or the components of one reduction over tuples, in order."""
    if not values:
        raise AlgorithmError(f"compute '{name}' returned an empty tuple; return its values")
    bodies = [as_expr(v) for v in values]
    reductions = [b for b in bodies if isinstance(b, Reduce)]
    if reductions:
        first = reductions[0]
        parts = first.parts or (first.combiner,)
        whole = len(reductions) == len(bodies) == len(parts) and all(
            b.parts is first.parts and b.value_index == k for k, b in enumerate(bodies)
        )
        if not whole or not first.parts:
            raise AlgorithmError(
                f"compute '{name}' returns {len(bodies)} values, {len(reductions)} of them "
                "reductions: a multi-output compute returns either elementwise values or "
                "all the components of one reduction over tuples, in order (e.g. "
                "argmax((idx[i, k], val[i, k]), axis=k))"
            )
        bounded = _bounded_ranges(first, axis, name)
        bodies = [
            replace(b, axis=bounded.axis, where=bounded.where) if b is not first else bounded
            for b in bodies
        ]
    reduce_axes = [_check_body(b, axis, name) for b in bodies]
    outputs = Outputs(name)
    outputs.ops = tuple(
        ComputeOp(f"{name}.v{k}", tag, axis, reduce_axes[k], body, outputs, k, attrs)
        for k, body in enumerate(bodies)
    )
    return [Tensor(op, k) for k, op in enumerate(outputs.ops)]


def _bounded_ranges(body: Expr, axis: Sequence[IterVar], name: str) -> Expr:
    """`body` with each reduce axis whose range depends on the element (``reduce_axis((0, i +
    1))``: a triangle) replaced by one over the range's bounding interval and a `where` that
    keeps, for each element, its own range: isl then runs exactly the triangle's points."""
    if not isinstance(body, Reduce):
        return body
    ranges = {iv.var: (const(0, iv.var.dtype), iv.dom.extent - 1) for iv in axis}
    axes, conds = [], []
    for iv in body.axis:
        lo, end = iv.dom.min, iv.dom.min + iv.dom.extent
        used = [n for e in (lo, end) for n in walk(e) if isinstance(n, Var) and n.kind == "axis"]
        if not used:
            axes.append(iv)
            continue
        for v in used:
            if v not in ranges:
                raise AlgorithmError(
                    f"in compute '{name}': the range of reduce_axis '{iv.name}' uses '{v.name}', "
                    "an axis of another compute; use this compute's own index arguments"
                )
        first, _ = _interval(lo, ranges, iv.name)
        _, last = _interval(end - 1, ranges, iv.name)
        axes.append(IterVar(iv.var, Range(tidy(first), tidy(last - first + 1)), "reduce"))
        conds += [c for e, c in ((lo, iv.var >= lo), (end, iv.var < end)) if _uses_axes(e)]
    if not conds:
        return body
    where = body.where
    for c in conds:
        where = c if where is None else where & c
    return replace(body, axis=tuple(axes), where=where)


def _uses_axes(e: Expr) -> bool:
    return any(isinstance(n, Var) and n.kind == "axis" for n in walk(e))


def tidy(e: Expr) -> Expr:
    """`e` with its sums of constant multiples of sizes collected (``0 + (n - 1 + 1) - 0``
    is ``n``); other expressions as they are."""
    terms = _linear(e)
    if terms is None:
        return e
    out: Expr | None = None
    for v, k in terms.items():
        if v is None or k == 0:
            continue
        term = v if k == 1 else k * v
        out = term if out is None else out + term
    c = terms.get(None, 0)
    if out is None:
        return const(c, e.dtype)
    return out + c if c > 0 else out - (-c) if c < 0 else out


def _linear(e: Expr) -> dict[Var | None, int] | None:
    if isinstance(e, Const):
        return {None: int(e.value)}
    if isinstance(e, Var):
        return {e: 1}
    if isinstance(e, Binary) and e.op in ("+", "-"):
        a, b = _linear(e.a), _linear(e.b)
        if a is None or b is None:
            return None
        sign = 1 if e.op == "+" else -1
        for v, k in b.items():
            a[v] = a.get(v, 0) + sign * k
        return a
    if isinstance(e, Binary) and e.op == "*" and isinstance(e.b, Const):
        e = Binary("*", e.b, e.a, e.dtype)
    if isinstance(e, Binary) and e.op == "*" and isinstance(e.a, Const):
        b = _linear(e.b)
        return None if b is None else {v: int(e.a.value) * k for v, k in b.items()}
    return None


def _interval(e: Expr, ranges: dict[Var, tuple[Expr, Expr]], axis: str) -> tuple[Expr, Expr]:
    """The least and greatest values of integer `e` over the box `ranges` (inclusive bounds of
    the compute's axes), as expressions of the sizes."""
    if isinstance(e, Const) or (isinstance(e, Var) and e.kind == "size"):
        return e, e
    if isinstance(e, Var) and e in ranges:
        return ranges[e]
    if isinstance(e, Binary) and e.op in ("+", "-"):
        (a_lo, a_hi), (b_lo, b_hi) = _interval(e.a, ranges, axis), _interval(e.b, ranges, axis)
        return (a_lo + b_lo, a_hi + b_hi) if e.op == "+" else (a_lo - b_hi, a_hi - b_lo)
    if isinstance(e, Binary) and e.op == "*" and (isinstance(e.a, Const) or isinstance(e.b, Const)):
        k, x = (e.a, e.b) if isinstance(e.a, Const) else (e.b, e.a)
        lo, hi = _interval(x, ranges, axis)
        return (k * lo, k * hi) if k.value >= 0 else (k * hi, k * lo)
    if isinstance(e, Binary) and e.op == "//" and isinstance(e.b, Const) and e.b.value > 0:
        lo, hi = _interval(e.a, ranges, axis)
        return lo // e.b, hi // e.b
    if isinstance(e, Binary) and e.op in ("min", "max"):
        (a_lo, a_hi), (b_lo, b_hi) = _interval(e.a, ranges, axis), _interval(e.b, ranges, axis)
        pick = Binary(e.op, a_lo, b_lo, e.dtype), Binary(e.op, a_hi, b_hi, e.dtype)
        return pick
    raise AlgorithmError(
        f"the range of reduce_axis '{axis}' uses '{e}', which schedlang cannot bound over the "
        "compute's axes (sums, constant multiples, // by constants, min and max)"
    )


def _check_body(body: Expr, axis: Sequence[IterVar], name: str) -> tuple[IterVar, ...]:
    """Enforce the shape of a compute body; returns its reduce axes."""
    reduce_axes: tuple[IterVar, ...] = body.axis if isinstance(body, Reduce) else ()
    for node in walk(body):
        if isinstance(node, Reduce) and node is not body:
            raise AlgorithmError(
                f"in compute '{name}': the reduction '{node}' is part of a larger expression; "
                "a reduction must be the whole body of a compute: compute it as its own tensor "
                "and use that tensor here"
            )
    own = {iv.var for iv in axis} | {iv.var for iv in reduce_axes}
    for node in walk(body):
        if not isinstance(node, Var) or node in own or node.kind == "size":
            continue
        if node.kind == "reduce":
            raise AlgorithmError(
                f"in compute '{name}': the reduce axis '{node.name}' is used outside a "
                f"reduction over it in '{body}': wrap the expression in "
                f"sl.sum(..., axis={node.name}) (or another reducer)"
            )
        raise AlgorithmError(
            f"in compute '{name}': '{node.name}' is an axis of another compute; "
            "use this compute's own index arguments"
        )
    return reduce_axes
