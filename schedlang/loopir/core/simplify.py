"""Constant folding and trivial-statement removal on the loop IR.

Lowering leaves behind arithmetic on constants (``i.outer * 32 + 0``), guards that are always
true once a split divides, and loops of extent 1; unrolling leaves many more. This pass removes
them with rules that are exact under the reference semantics (`schedlang.ir.evaluate`): folding
goes through the same numpy operations on the same dtypes, so int32 wraps and ``//``/``%`` floor.
Only integer and boolean expressions are folded; float arithmetic is left to the target, whose
rounding is the one that counts. Division or modulo by a constant zero is left alone.
"""

from __future__ import annotations

import functools
import operator

import numpy as np

from ...ir import dtype as dt
from ...ir.evaluate import _BINARY, _COMPARE
from ...ir.expr import Binary, Cast, Compare, Const, Expr, Select, Unary, Var
from ...ir.printer import expr_str
from .nodes import (
    Allocate,
    AsyncCopy,
    BulkCopy,
    CallExtern,
    For,
    If,
    Let,
    Load,
    MatrixOp,
    MBarrier,
    Seq,
    Stmt,
    Store,
)
from .visit import Memo, rebuild_stmt, substitute_stmt, transform_expr

Texts = dict[int, tuple[Expr, str]]  # id(term) -> (term, its text), for the call
_EMPTY = Seq(())
_LEAVES = (Var, Const, Load)  # nothing to fold (the commonest nodes)


def simplify_expr(e: Expr) -> Expr:
    """`e` with its integer and boolean constant subexpressions folded (see the module doc).

    Guarantees: the result has the same dtype and, wherever `e` is evaluated, the same value as
    `e` under the reference semantics (it may read fewer loads, e.g. ``A[i] * 0`` for ints).
    """
    return transform_expr(e, functools.partial(_fold, texts={}))


def simplify(stmt: Stmt, memo: Memo | None = None) -> Stmt:
    """`stmt` with constant folding and trivial statements removed.

    Expects a loop-IR statement. Guarantees the same effect on memory, with: every expression
    folded by `simplify_expr`; an `If` with a constant condition replaced by the chosen branch;
    loops with a constant extent <= 0 and statements with empty bodies dropped; a loop of
    extent 1 (except one bound to a hardware index, whose extent masks threads) replaced by its
    body with the loop variable set to the loop's min; a `Let` of a constant substituted; nested
    `Seq` flattened. An empty statement is ``Seq(())``.

    Folding is a pure function of the node, so the expressions folded are remembered
    (`transform_expr`): for the call, where unrolled copies share most of their subtrees, and
    across the calls given one `memo`, where a later call finds most of its input folded.
    """
    return _Simplifier({} if memo is None else memo).stmt(stmt)


class _Simplifier:
    def __init__(self, memo: Memo) -> None:
        self.memo = memo
        self.fold = functools.partial(_fold, texts={})

    def expr(self, e: Expr) -> Expr:
        return transform_expr(e, self.fold, self.memo, settle=True)

    def stmt(self, s: Stmt) -> Stmt:
        if isinstance(s, Store):
            indices = tuple([self.expr(i) for i in s.indices])
            return Store(s.buffer, indices, self.expr(s.value))
        if isinstance(s, For):
            return self._for(s)
        if isinstance(s, If):
            return self._if(s)
        if isinstance(s, Let):
            value = self.expr(s.value)
            if isinstance(value, Const):
                return self.stmt(substitute_stmt(s.body, {s.var: value}))
            body = self.stmt(s.body)
            return _EMPTY if _empty(body) else Let(s.var, value, body)
        if isinstance(s, Allocate):
            body = self.stmt(s.body)
            return _EMPTY if _empty(body) else Allocate(s.buffer, body)
        if isinstance(s, Seq):
            flat: list[Stmt] = []
            for child in s.stmts:
                new = self.stmt(child)
                flat.extend(new.stmts if isinstance(new, Seq) else (new,))
            return flat[0] if len(flat) == 1 else Seq(tuple(flat))
        if isinstance(s, (MatrixOp, AsyncCopy, BulkCopy, MBarrier, CallExtern)):
            return rebuild_stmt(s, self.expr, self.stmt)
        return s

    def _for(self, s: For) -> Stmt:
        lo, extent = self.expr(s.min), self.expr(s.extent)
        if isinstance(extent, Const) and extent.value <= 0:
            return _EMPTY
        if isinstance(extent, Const) and extent.value == 1 and s.kind != "bound":
            return self.stmt(substitute_stmt(s.body, {s.var: lo}))
        body = self.stmt(s.body)
        if _empty(body):
            return _EMPTY
        return For(s.var, lo, extent, s.kind, body, s.thread)

    def _if(self, s: If) -> Stmt:
        cond = self.expr(s.cond)
        if isinstance(cond, Const):
            chosen = s.then if cond.value else s.otherwise
            return _EMPTY if chosen is None else self.stmt(chosen)
        then = self.stmt(s.then)
        otherwise = None if s.otherwise is None else self.stmt(s.otherwise)
        if otherwise is not None and _empty(otherwise):
            otherwise = None
        if _empty(then):
            if otherwise is None:
                return _EMPTY
            return If(Unary("not", cond, "bool"), otherwise)
        return If(cond, then, otherwise)


def _empty(s: Stmt) -> bool:
    return isinstance(s, Seq) and not s.stmts


def _foldable(dtype: str) -> bool:
    return dt.is_int(dtype) or dt.is_bool(dtype)


def _value(c: Const):
    """`c` as a numpy scalar of its dtype (what the reference evaluator computes with)."""
    return np.array(c.value, dtype=dt.to_numpy(c.dtype))[()]


def _const(value, dtype: str) -> Const:
    return Const(bool(value) if dtype == "bool" else int(value), dtype)


def _is(e: Expr, value: int) -> bool:
    return isinstance(e, Const) and not isinstance(e.value, float) and e.value == value


def _fold(e: Expr, texts: Texts | None = None) -> Expr | None:
    """`e` folded at its root, or None; `texts`: the terms printed so far (`_printed`)."""
    if type(e) in _LEAVES:
        return None
    if isinstance(e, Select) and isinstance(e.cond, Const):
        return e.true_value if e.cond.value else e.false_value
    if not _foldable(e.dtype):
        return None
    if isinstance(e, Binary):
        return _fold_binary(e, {} if texts is None else texts)
    if isinstance(e, Compare):
        if isinstance(e.a, Const) and isinstance(e.b, Const) and _foldable(e.a.dtype):
            with np.errstate(all="ignore"):
                return _const(_COMPARE[e.op](_value(e.a), _value(e.b)), "bool")
        if dt.is_int(e.a.dtype) and e.a.dtype == e.b.dtype and _same_sum(e.a, e.b, texts):
            return _const(e.op in ("==", "<=", ">="), "bool")
        return None
    if isinstance(e, Unary) and isinstance(e.a, Const):
        a = _value(e.a)
        with np.errstate(all="ignore"):
            result = np.negative(a) if e.op == "-" else np.invert(a)
        return _const(result, e.dtype)
    if isinstance(e, Cast) and isinstance(e.value, Const) and _foldable(e.value.dtype):
        with np.errstate(all="ignore"):
            return _const(_value(e.value).astype(dt.to_numpy(e.dtype)), e.dtype)
    return None


def _fold_binary(e: Binary, texts: Texts) -> Expr | None:
    a, b = e.a, e.b
    if isinstance(a, Const) and isinstance(b, Const):
        return _fold_constants(e.op, a, b, e.dtype)
    if e.dtype == "bool":
        return _fold_logic(e)
    if e.op in ("+", "-"):
        cancelled = _cancel(e, texts)
        return cancelled if cancelled is not None else _fold_offsets(e)
    if e.op == "*":
        if _is(b, 1):
            return a
        if _is(a, 1):
            return b
        if _is(a, 0) or _is(b, 0):
            return _const(0, e.dtype)
    if e.op == "//" and _is(b, 1):
        return a
    if e.op == "%" and _is(b, 1):
        return _const(0, e.dtype)
    return None


def _cancel(e: Binary, texts: Texts) -> Expr | None:
    """A sum whose terms cancel or merge, rewritten: ``8 * k + 7 - 8 * k -> 7`` (the box
    offsets of staged buffers produce these). Exact: integer +, - and * by constants form a
    ring modulo 2**bits. Sums that do not shrink are left as they are."""
    terms: dict[str, list] = {}
    count = _collect(e, 1, terms, texts)
    constant = terms.pop("", [None, 0, None, 0])[1]
    live = [entry for entry in terms.values() if _wrap(entry[1], e.dtype) != 0]
    if len(live) + (constant != 0) >= count:
        return None
    result: Expr | None = None
    for term, k, written, factor in live:
        k = _wrap(k, e.dtype)
        if k in (factor, -factor):
            scaled, positive = written, k == factor  # as the user or isl wrote it
        else:
            positive = k > 0
            scaled = term if abs(k) == 1 else Binary("*", _const(abs(k), e.dtype), term, e.dtype)
        if result is None:
            result = scaled if positive else Unary("-", scaled, e.dtype)
        else:
            result = Binary("+" if positive else "-", result, scaled, e.dtype)
    if result is None:
        return _const(_wrap(constant, e.dtype), e.dtype)
    return _add_constant(result, constant, e.dtype)


def _same_sum(a: Expr, b: Expr, texts: Texts | None) -> bool:
    """Whether sums `a` and `b` have the same terms and constant (``i + 2`` and ``2 + i``):
    the same value, overflow or not, so a comparison of them is decided
    (``i.outer + 2 < i.outer + 2``, left by a loop split at its last step)."""
    terms: dict[str, list] = {}
    texts = {} if texts is None else texts
    _collect(a, 1, terms, texts)
    _collect(b, -1, terms, texts)
    return all(_wrap(entry[1], a.dtype) == 0 for entry in terms.values())


def _collect(e: Expr, sign: int, terms: dict[str, list], texts: Texts) -> int:
    """Add ``sign * e`` to `terms` (printed term -> [term, coefficient, how it was first
    written, with which factor]; "" is the constant); returns how many terms `e` had."""
    if isinstance(e, Binary) and e.op in ("+", "-"):
        right = sign if e.op == "+" else -sign
        return _collect(e.a, sign, terms, texts) + _collect(e.b, right, terms, texts)
    if isinstance(e, Unary) and e.op == "-":
        return _collect(e.a, -sign, terms, texts)
    if isinstance(e, Const):
        terms.setdefault("", [None, 0, None, 0])[1] += sign * int(e.value)
        return 1
    factor, term = 1, e
    if isinstance(e, Binary) and e.op == "*" and isinstance(e.a, Const):
        factor, term = int(e.a.value), e.b
    elif isinstance(e, Binary) and e.op == "*" and isinstance(e.b, Const):
        factor, term = int(e.b.value), e.a
    entry = terms.setdefault(_printed(term, texts), [term, 0, e, factor])
    entry[1] += sign * factor
    return 1


def _printed(e: Expr, texts: Texts) -> str:
    """`expr_str(e)`, remembered by id for the pass (`e` kept alive with it): the sums of
    unrolled copies share their terms, and each sum folded collects its terms again."""
    if type(e) is Var:
        return e.name
    hit = texts.get(id(e))
    if hit is None:
        hit = texts[id(e)] = (e, expr_str(e))
    return hit[1]


def _fold_offsets(e: Binary) -> Expr | None:
    """``x + 0``, ``x - 0`` and chains of constant offsets: ``(x + 3) - 1 -> x + 2``,
    ``2 + (n - 2) -> n`` (exact under wrap-around: addition is a ring modulo 2**bits)."""
    a, b = e.a, e.b
    if _is(b, 0):
        return a
    if e.op == "+" and _is(a, 0):
        return b
    sign = 1 if e.op == "+" else -1
    if isinstance(b, Const) and _offset(a) is not None:
        rest, k = _offset(a)
        return _add_constant(rest, k + sign * int(b.value), e.dtype)
    if e.op == "+" and isinstance(a, Const) and _offset(b) is not None:
        rest, k = _offset(b)
        return _add_constant(rest, int(a.value) + k, e.dtype)
    return None


def _offset(e: Expr) -> tuple[Expr, int] | None:
    """``(x, c)`` for ``e = x + c`` with a constant c (``x - c`` gives ``-c``)."""
    if not isinstance(e, Binary) or e.op not in ("+", "-"):
        return None
    if isinstance(e.b, Const):
        return e.a, int(e.b.value) if e.op == "+" else -int(e.b.value)
    if e.op == "+" and isinstance(e.a, Const):
        return e.b, int(e.a.value)
    return None


def _add_constant(x: Expr, k: int, dtype: str) -> Expr:
    """``x + k`` wrapped to `dtype`, written ``x - |k|`` for a negative k."""
    k = _wrap(k, dtype)
    if k == 0:
        return x
    if k < 0 and _wrap(-k, dtype) == -k:
        return Binary("-", x, _const(-k, dtype), dtype)
    return Binary("+", x, _const(k, dtype), dtype)


def _wrap(k: int, dtype: str) -> int:
    bits = dt.bits(dtype)
    lo = dt.min_value(dtype)
    return (k - lo) % (1 << bits) + lo


def _fold_logic(e: Binary) -> Expr | None:
    if e.op not in ("and", "or"):
        return None
    absorbing = e.op == "or"
    for const_side, other in ((e.a, e.b), (e.b, e.a)):
        if isinstance(const_side, Const):
            return const_side if bool(const_side.value) == absorbing else other
    return None


def _fold_constants(op: str, a: Const, b: Const, dtype: str) -> Const | None:
    """`a op b` as a constant, or None where the targets disagree (by zero, shift too far)."""
    if op in _INT_ARITH and dt.is_int(dtype):
        return _fold_int(op, int(a.value), int(b.value), dtype)
    x, y = _value(a), _value(b)
    if op in ("//", "%") and y == 0:
        return None
    if op in ("<<", ">>") and not 0 <= int(y) < dt.bits(dtype):
        return None
    with np.errstate(all="ignore"):
        if op == "^":
            result = np.logical_xor(x, y) if dtype == "bool" else np.bitwise_xor(x, y)
        else:
            result = _BINARY[op](x, y)
    return _const(result, dtype)


_INT_ARITH = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "%": operator.mod,
    "min": min,
    "max": max,
}


def _fold_int(op: str, x: int, y: int, dtype: str) -> Const | None:
    """The commonest folds (index arithmetic) in Python integers, wrapped to `dtype`: the
    same as numpy's, whose integer arithmetic is exact modulo 2**bits and whose ``//`` and
    ``%`` floor, as Python's do."""
    if op in ("//", "%") and y == 0:
        return None
    return Const(_wrap(_INT_ARITH[op](x, y), dtype), dtype)
