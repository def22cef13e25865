"""Reverse-mode differentiation of computes (TE's ``te.gradient``).

``gradient(out, inputs, head)`` is a list of computes, one per input, each of the input's shape
(after `head`'s leading dimensions): ``sum over o of head[o] * d out[o] / d input[a]``. It walks
the computes between `out` and the inputs from `out` backwards, giving each an adjoint (the
gradient of the result with respect to it) and handing each of its inputs a share:

    share[a] = sum over o (the compute's axes) and k (its reduce axes) of
               adjoint[o] * d body(o, k) / d input[a]

where the derivative (`ir.derivative`) holds, for each read ``input[f(o, k)]``, the indicator
``f(o, k) == a``. So every read is handled the same way, affine or not (a stride, a dilation,
a reshape's division, a gather's data-dependent index), at the price of a reduction over the
compute's whole domain for each element of the input: the gradients are for the sizes at which
one checks a model, not for training it. A sum passes the adjoint to each term; a maximum or
minimum to the terms equal to the result; a product to each factor times the product of the
others. The results are ordinary computes: schedule, lower, build and evaluate them as any.
"""

from __future__ import annotations

from ..errors import AlgorithmError, entry_point
from . import dtype as dt
from .derivative import derivative
from .expr import Binary, Cast, Compare, Expr, Read, Reduce, Var, const, logical, select
from .reduce import prod, sum
from .tensor import ComputeOp, Operation, PlaceholderOp, Tensor, compute, reduce_axis
from .visit import substitute


@entry_point
def gradient(output: Tensor, inputs: object, head: Tensor | None = None) -> list[Tensor]:
    """The gradients of `output` with respect to `inputs` (a tensor or a list), weighted by
    `head`, whose shape is some leading dimensions followed by `output`'s; without `head`, the
    identity over `output`'s shape (the result is then the Jacobian, output dims first)."""
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    _check(output, inputs)
    head = _identity(output) if head is None else head
    prefix = _prefix(head, output)
    wanted = {t.op for t in inputs}
    needed = _needed(output.op, wanted)
    shares: dict[Operation, list[Tensor]] = {output.op: [head]}
    for op in reversed(_order(output.op, needed)):
        adjoint = _total(shares.get(op, []), prefix, op)
        shares[op] = [adjoint]
        if not isinstance(op, ComputeOp):
            continue
        for source in op.input_tensors:
            if source.op in needed:
                share = _share(op, adjoint, source, prefix)
                if share is not None:
                    shares.setdefault(source.op, []).append(share)
    return [_total(shares.get(t.op, []), prefix, t.op) for t in inputs]


def _check(output: Tensor, inputs: list) -> None:
    if not isinstance(output, Tensor):
        raise AlgorithmError(f"gradient: the output must be a tensor, not {output!r}")
    for t in inputs:
        if not isinstance(t, Tensor):
            raise AlgorithmError(f"gradient: the inputs must be tensors, not {t!r}")
        if not dt.is_float(t.dtype):
            raise AlgorithmError(
                f"gradient: '{t.name}' is {t.dtype}; only float tensors have gradients"
            )


def _identity(output: Tensor) -> Tensor:
    n = len(output.shape)

    def one_where_equal(*ij):
        same = logical("and", tuple(Compare("==", ij[d], ij[n + d]) for d in range(n)))
        return select(same, const(1.0, output.dtype), const(0.0, output.dtype))

    return compute(tuple(output.shape) * 2, one_where_equal, name=f"{output.name}.identity")


def _prefix(head: Tensor, output: Tensor) -> tuple[Expr, ...]:
    lead = len(head.shape) - len(output.shape)
    same = lead >= 0 and all(_same_extent(a, b) for a, b in zip(head.shape[lead:], output.shape))
    if not same:
        raise AlgorithmError(
            f"gradient: head '{head.name}' has shape {_shown(head.shape)}; it must end with "
            f"the shape of '{output.name}', {_shown(output.shape)}"
        )
    return tuple(head.shape[:lead])


def _shown(shape) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def _same_extent(a: Expr, b: Expr) -> bool:
    a, b = getattr(a, "value", a), getattr(b, "value", b)
    return a is b or (isinstance(a, int) and a == b)


def _needed(root: Operation, wanted: set[Operation]) -> set[Operation]:
    """The ops through which `root` depends on a wanted op (the wanted ones included)."""
    memo: dict[Operation, bool] = {}

    def needs(op: Operation) -> bool:
        if op not in memo:
            memo[op] = False
            reads = op.input_tensors if isinstance(op, ComputeOp) else ()
            reaches = [needs(t.op) for t in reads]  # every one, to mark all the paths
            memo[op] = op in wanted or any(reaches)
        return memo[op]

    needs(root)
    for op, yes in memo.items():
        if yes and not isinstance(op, (ComputeOp, PlaceholderOp)):
            raise AlgorithmError(
                f"gradient: '{op.name}' ({type(op).__name__}) lies between the output and an "
                "input; only computes can be differentiated"
            )
        if yes and isinstance(op, ComputeOp) and op.outputs is not None and op not in wanted:
            raise AlgorithmError(
                f"gradient: '{op.name}' is one output of a multi-output compute, which cannot "
                "be differentiated"
            )
    return {op for op, yes in memo.items() if yes}


def _order(root: Operation, needed: set[Operation]) -> list[Operation]:
    """The needed ops, each after the ops it reads."""
    done: list[Operation] = []
    seen: set[Operation] = set()

    def visit(op: Operation) -> None:
        if op in seen or op not in needed:
            return
        seen.add(op)
        for t in op.input_tensors if isinstance(op, ComputeOp) else ():
            visit(t.op)
        done.append(op)

    visit(root)
    return done


def _total(shares: list[Tensor], prefix: tuple[Expr, ...], op: Operation) -> Tensor:
    """The sum of the shares an op received (zeros where it received none)."""
    tensor = Tensor(op)
    if len(shares) == 1:
        return shares[0]
    shape = prefix + tuple(tensor.shape)
    name = f"{op.name}.grad"
    if not shares:
        return compute(shape, lambda *_: const(0.0, tensor.dtype), name=name)

    def added(*index):
        total = shares[0][index]
        for s in shares[1:]:
            total = total + s[index]
        return total

    return compute(shape, added, name=name)


def _share(op: ComputeOp, adjoint: Tensor, source: Tensor, prefix: tuple) -> Tensor | None:
    """What `op` adds to the adjoint of `source` (see the module), or None if nothing."""
    body = op.expr
    reduce = body if isinstance(body, Reduce) else None
    value = body if reduce is None else reduce.source
    element = tuple(Var(f"a{d}", "int32", "axis") for d in range(len(source.shape)))
    slope = derivative(value, source.op, element)
    if slope is None:
        return None
    if reduce is not None:
        slope = _through_reduction(op, reduce, slope)
    outer = tuple(iv.var for iv in op.axis)
    own = op.axis + (() if reduce is None else reduce.axis)

    def share(*index):
        lead, at = index[: len(prefix)], index[len(prefix) :]
        loops = [
            reduce_axis((iv.dom.min, iv.dom.min + iv.dom.extent), name=f"{iv.var.name}.r")
            for iv in own
        ]
        mapping = {iv.var: loop.var for iv, loop in zip(own, loops)}
        mapping.update({e: a.var for e, a in zip(element, at)})
        weight = adjoint[(*lead, *(mapping[v] for v in outer))]
        return sum(substitute(weight * slope, mapping), axis=loops)

    return compute(tuple(prefix) + tuple(source.shape), share, name=f"{source.name}.grad.{op.name}")


def _through_reduction(op: ComputeOp, reduce: Reduce, slope: Expr) -> Expr:
    """The slope of the reduction's result, given the slope of one of its terms."""
    if reduce.parts:
        raise AlgorithmError(f"gradient: '{op.name}' reduces over tuples, which has no gradient")
    kind = _combiner_kind(reduce)
    zero = const(0.0, reduce.dtype)
    if kind == "+":
        term = slope
    elif kind in ("max", "min"):
        result = Read(Tensor(op), tuple(iv.var for iv in op.axis), op.dtype)
        term = select(Compare("==", reduce.source, result), slope, zero)
    elif kind == "*":
        term = slope * _others(op, reduce)
    else:
        raise AlgorithmError(
            f"gradient: '{op.name}' reduces with '{reduce.combiner.name}', whose combiner is "
            "not a sum, product, maximum or minimum"
        )
    return term if reduce.where is None else select(reduce.where, term, zero)


def _combiner_kind(reduce: Reduce) -> str | None:
    c = reduce.combiner
    result = c.result.value if isinstance(c.result, Cast) else c.result
    if isinstance(result, Binary) and {result.a, result.b} == {c.lhs, c.rhs}:
        return result.op
    return None


def _others(op: ComputeOp, reduce: Reduce) -> Expr:
    """``prod over k' != k of term(k')`` as a read of a compute over the axes and k."""
    axes = op.axis + reduce.axis
    extents = [iv.dom.extent for iv in axes]

    def without(*index):
        at, skip = index[: len(op.axis)], index[len(op.axis) :]
        loops = [
            reduce_axis((iv.dom.min, iv.dom.min + iv.dom.extent), name=f"{iv.var.name}.o")
            for iv in reduce.axis
        ]
        mapping = {iv.var: a for iv, a in zip(op.axis, at)}
        mapping.update({iv.var: loop.var for iv, loop in zip(reduce.axis, loops)})
        skipped = [
            Compare("==", loop.var, s + iv.dom.min) for loop, s, iv in zip(loops, skip, reduce.axis)
        ]
        term = substitute(reduce.source, mapping)
        one = const(1.0, reduce.dtype)
        return prod(select(logical("and", tuple(skipped)), one, term), axis=loops)

    others = compute(tuple(extents), without, name=f"{op.name}.others")
    index = tuple(iv.var for iv in op.axis) + tuple(iv.var - iv.dom.min for iv in reduce.axis)
    return others[index]
