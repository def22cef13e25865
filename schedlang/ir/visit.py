"""Generic traversal and rewriting of expression trees."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from .expr import (
    Binary,
    Call,
    Cast,
    CommReducer,
    Compare,
    Expr,
    Read,
    Reduce,
    Select,
    Unary,
    Var,
)

_CHILDREN: dict[type, Callable[[Expr], tuple[Expr, ...]]] = {
    Binary: lambda e: (e.a, e.b),
    Compare: lambda e: (e.a, e.b),
    Unary: lambda e: (e.a,),
    Select: lambda e: (e.cond, e.true_value, e.false_value),
    Cast: lambda e: (e.value,),
    Call: lambda e: e.args,
    Read: lambda e: e.indices,
    Reduce: lambda e: (e.source,) if e.where is None else (e.source, e.where),
}


def children(e: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of `e` (a reduction's `where` included).

    Looked up by the node's exact type (no node class is subclassed): passes over unrolled
    code call this for every node they visit."""
    get = _CHILDREN.get(type(e))
    return () if get is None else get(e)


def walk(e: Expr) -> Iterator[Expr]:
    """Every node of `e`, parents before children."""
    stack = [e]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def rebuild(e: Expr, new_children: tuple[Expr, ...]) -> Expr:
    """`e` with its children replaced (same order as `children`); dtypes are kept."""
    if isinstance(e, Binary):
        return Binary(e.op, new_children[0], new_children[1], e.dtype)
    if isinstance(e, Compare):
        return Compare(e.op, new_children[0], new_children[1])
    if isinstance(e, Unary):
        return Unary(e.op, new_children[0], e.dtype)
    if isinstance(e, Select):
        return Select(*new_children, e.dtype)
    if isinstance(e, Cast):
        return Cast(new_children[0], e.dtype)
    if isinstance(e, Call):
        return Call(e.name, tuple(new_children), e.dtype)
    if isinstance(e, Read):
        return Read(e.tensor, tuple(new_children), e.dtype)
    if isinstance(e, Reduce):
        where = new_children[1] if len(new_children) > 1 else None
        return Reduce(e.combiner, new_children[0], e.axis, where, e.dtype, e.parts, e.value_index)
    return e


def transform(e: Expr, fn: Callable[[Expr], Expr | None]) -> Expr:
    """Rewrite `e` bottom-up: `fn(node)` returns a replacement, or None to keep the node.

    `fn` sees each node after its children have been rewritten. Unchanged subtrees are shared.
    """
    kids = children(e)
    if kids:
        new_kids = tuple(transform(k, fn) for k in kids)
        if any(n is not o for n, o in zip(new_kids, kids)):
            e = rebuild(e, new_kids)
    replaced = fn(e)
    return e if replaced is None else replaced


def substitute(e: Expr, mapping: dict) -> Expr:
    """`e` with every Var that is a key of `mapping` replaced by its value (in the reducers
    that use the compute's indices, `by_element`, too)."""

    def swap(node: Expr) -> Expr | None:
        if isinstance(node, Reduce) and by_element(node.combiner):
            return _with_combiners(node, mapping)
        return mapping.get(node) if node in mapping else None

    return transform(e, swap)


def by_element(comb: CommReducer) -> bool:
    """Whether a reducer's identity or combination uses the compute's indices (TE allows it:
    each element is then reduced with a reducer of its own)."""
    nodes = (n for e in (comb.result, comb.identity) for n in walk(e))
    return any(isinstance(n, Var) and n.kind == "axis" for n in nodes)


def _with_combiners(e: Reduce, mapping: dict) -> Reduce:
    def swapped(c: CommReducer) -> CommReducer:
        result, identity = substitute(c.result, mapping), substitute(c.identity, mapping)
        return CommReducer(c.name, c.lhs, c.rhs, result, identity)

    parts = tuple(swapped(p) for p in e.parts)
    combiner = parts[e.value_index] if parts else swapped(e.combiner)
    return Reduce(combiner, e.source, e.axis, e.where, e.dtype, parts, e.value_index)
