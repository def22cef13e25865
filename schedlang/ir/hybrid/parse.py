"""A hybrid script's Python source read into statements (`nodes`), for a call on tensors.

Loops over ``range``, ``parallel``, ``vectorize``, ``unroll`` and ``bind`` become loops of
that kind; ``const_range`` is unrolled here, its variable a Python integer (so it may index
Python lists). Names follow Python, with one rule of TE's: a name assigned once to a value
that reads no tensor stands for that value; any other assigned name is a one-element local
tensor, alive for the rest of the block that first assigns it. A call of another script is
inlined, its outputs becoming tensors of this script's own.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable

from ...errors import AlgorithmError
from .. import dtype as dt
from ..expr import Const, Expr, Read, Var, as_expr, const
from ..tensor import PlaceholderOp, Tensor
from ..visit import walk
from .expressions import LOOPS, OPERATORS, ExpressionReader
from .nodes import Check, Cond, HStmt, HybridCall, HybridOp, Local, Loop, Store, loop_itervars


def function_def(func: Callable) -> ast.FunctionDef:
    """The ``def`` of `func`, without its decorators."""
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError) as error:
        raise AlgorithmError(
            f"hybrid script '{func.__name__}': its source cannot be read ({error}); define it "
            "in a file"
        ) from None
    tree = ast.parse(source)
    fdef = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    fdef.decorator_list = []
    return fdef


def parse_call(func: Callable, args: tuple) -> tuple[Tensor, ...]:
    """The output tensors of `func` called on `args` (tensors, sizes, constants, lists)."""
    call = HybridCall(func.__name__, func, args)
    parser = _Parser(func, call)
    body, outputs = parser.inline(function_def(func), args, top=True)
    call.inputs = tuple(dict.fromkeys(t for t in _flat(args) if isinstance(t, Tensor)))
    call.body = tuple(body)
    unreturned = [op.name for op in parser.created if op not in [t.op for t in outputs]]
    if unreturned:
        raise AlgorithmError(
            f"hybrid script '{func.__name__}': output_tensor {unreturned[0]!r} is not returned; "
            "return every output tensor (or allocate it instead)"
        )
    call.ops = tuple(t.op for t in outputs)
    call.axis = loop_itervars(call.body)
    return tuple(Tensor(op, k) for k, op in enumerate(call.ops))


def _flat(values) -> list:
    out = []
    for v in values:
        out.extend(_flat(v) if isinstance(v, (list, tuple)) else [v])
    return out


class _Parser(ExpressionReader):
    def __init__(self, func: Callable, call: HybridCall) -> None:
        self.func = func
        self.call = call
        self.created: list[HybridOp] = []
        self.loop_names: dict[str, int] = {}

    # -- scripts ---------------------------------------------------------------------------

    def inline(self, fdef: ast.FunctionDef, args: tuple, top: bool, func=None):
        """The statements of `fdef` with its parameters bound to `args`, and its outputs."""
        func = self.func if func is None else func
        params = [a.arg for a in fdef.args.args]
        if len(params) != len(args):
            raise AlgorithmError(
                f"hybrid script '{fdef.name}' takes {len(params)} argument(s), got {len(args)}"
            )
        frame = ("env", "top", "fn", "where", "assigned", "outputs", "locals")
        caller = {name: getattr(self, name, None) for name in frame}  # a script calling it
        self.env = dict(zip(params, (_argument(a) for a in args)))
        self.top, self.fn, self.where = top, func, fdef.name
        self.assigned = _assignment_counts(fdef)
        self.outputs: tuple[Tensor, ...] | None = None
        self.locals: list[Tensor] = []
        try:
            body = self.block(_without_docstring(fdef.body))
            outputs = self.outputs
        finally:
            for name, value in caller.items():
                setattr(self, name, value)
        if outputs is None:
            raise AlgorithmError(f"hybrid script '{fdef.name}': return its output tensors")
        return body, outputs

    def fail(self, node: ast.AST, what: str) -> AlgorithmError:
        line = getattr(node, "lineno", 0) + self.fn.__code__.co_firstlineno - 1
        return AlgorithmError(f"hybrid script '{self.where}', line {line}: {what}")

    # -- statements ------------------------------------------------------------------------

    def block(self, stmts: list[ast.stmt]) -> list[HStmt]:
        out: list[HStmt] = []
        for k, node in enumerate(stmts):
            local = self.declaration(node)
            if local is not None:
                tensors, first = local
                body = first + self.block(stmts[k + 1 :])
                for tensor, scope in reversed(tensors):
                    body = [Local(tensor, scope, tuple(body))]
                return out + body
            out.extend(self.stmt(node))
            if self.outputs is not None:
                break
        return out

    def scoped(self, stmts: list[ast.stmt]) -> tuple[HStmt, ...]:
        saved = dict(self.env)
        try:
            return tuple(self.block(stmts))
        finally:
            self.env = saved

    def declaration(self, node: ast.stmt):
        """For a statement that brings tensors into being for the rest of its block: those
        tensors with their scopes, and the statements the assignment itself runs."""
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            return None
        target, value = node.targets[0], node.value
        if not isinstance(target, ast.Name):
            return None
        name = target.id
        callee = self.callee(value)
        if callee == "allocate":
            shape, dtype, scope = self.call_args(value, ("shape", "dtype", "scope"), 1)
            tensor = self.new_tensor(name, shape, dtype or "float32")
            self.env[name] = tensor
            return [(tensor, scope or "global")], []
        if callee == "output_tensor":
            shape, dtype = self.call_args(value, ("shape", "dtype"), 2)
            if self.top:
                op = HybridOp(name, self.shape(shape), dt.canonical(dtype), self.call)
                self.created.append(op)
                self.env[name] = Tensor(op)
                return [], []
            self.env[name] = self.new_tensor(name, shape, dtype)  # its caller allocates it
            return [], []
        if callee is not None and not isinstance(callee, str):
            body, outputs = self.inline_script(callee, value)
            self.env[name] = outputs[0] if len(outputs) == 1 else outputs
            return [(t, "global") for t in outputs], body
        if name in self.env and isinstance(self.env[name], Tensor) and name in self.scalars():
            return None
        if self.assigned.get(name, 0) > 1 or _reads(self.expr(value)):
            v = as_expr(self.expr(value))
            tensor = self.new_tensor(name, (1,), v.dtype)
            self.env[name] = tensor
            self.locals.append(tensor)
            return [(tensor, "local")], [Store(tensor, (const(0),), v)]
        return None

    def scalars(self) -> set[str]:
        return {t.name for t in self.locals}

    def stmt(self, node: ast.stmt) -> list[HStmt]:
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1:
                raise self.fail(node, "assign one target at a time")
            return self.assign(node.targets[0], self.expr(node.value), node)
        if isinstance(node, ast.AugAssign):
            op = OPERATORS.get(type(node.op))
            if op is None:
                raise self.fail(node, f"the operator {type(node.op).__name__} is not supported")
            return self.assign(node.target, op(self.expr(node.target), self.expr(node.value)), node)
        if isinstance(node, ast.For):
            return self.loop(node)
        if isinstance(node, ast.If):
            cond = self.expr(node.test)
            if not isinstance(cond, Expr):
                return list(self.scoped(node.body if cond else node.orelse))
            return [Cond(cond, self.scoped(node.body), self.scoped(node.orelse))]
        if isinstance(node, ast.Assert):
            message = node.msg.value if isinstance(node.msg, ast.Constant) else "assert failed"
            cond = self.expr(node.test)
            if not isinstance(cond, Expr):
                if not cond:
                    raise self.fail(node, f"assert: {message}")
                return []
            return [Check(cond, str(message))]
        if isinstance(node, ast.Return):
            value = self.expr(node.value) if node.value is not None else None
            outs = value if isinstance(value, tuple) else (value,)
            if not all(isinstance(t, Tensor) for t in outs):
                raise self.fail(node, "return the output tensors (or a tuple of them)")
            if self.top and not all(isinstance(t.op, HybridOp) for t in outs):
                raise self.fail(node, "return tensors made with output_tensor")
            self.outputs = outs
            return []
        if isinstance(node, ast.Pass):
            return []
        raise self.fail(node, f"the statement {type(node).__name__} is not supported")

    def assign(self, target: ast.expr, value: object, node: ast.stmt) -> list[HStmt]:
        if isinstance(target, ast.Name):
            current = self.env.get(target.id)
            if isinstance(current, Tensor) and target.id in self.scalars():
                return [self.store(current, (const(0),), value, node)]
            self.env[target.id] = value
            return []
        if isinstance(target, ast.Subscript):
            tensor, indices = self.element(target)
            return [self.store(tensor, indices, value, node)]
        raise self.fail(node, "assign to a name or to an element of a tensor")

    def store(self, tensor: Tensor, indices: tuple, value: object, node: ast.AST) -> Store:
        if not isinstance(value, (Expr, int, float, bool)):
            raise self.fail(node, f"cannot store {value!r} into '{tensor.name}'")
        v = as_expr(value, tensor.dtype)
        if v.dtype != tensor.dtype:
            v = v.astype(tensor.dtype)
        if len(indices) != len(tensor.shape):
            raise self.fail(node, f"'{tensor.name}' has {len(tensor.shape)} dimension(s)")
        return Store(tensor, tuple(as_expr(i) for i in indices), v)

    def element(self, target: ast.Subscript) -> tuple[Tensor, tuple]:
        indices = [self.expr(target.slice)]
        base = target.value
        if isinstance(indices[0], tuple):
            indices = list(indices[0])
        while isinstance(base, ast.Subscript) and not isinstance(self.expr(base), Tensor):
            indices = [self.expr(base.slice), *indices]
            base = base.value
        tensor = self.expr(base)
        if not isinstance(tensor, Tensor):
            raise self.fail(target, "store into an element of a tensor")
        return tensor, tuple(indices)

    def loop(self, node: ast.For) -> list[HStmt]:
        if not isinstance(node.target, ast.Name) or node.orelse:
            raise self.fail(node, "loop over one variable, without else")
        kind = self.callee(node.iter)
        name = node.target.id
        if kind == "const_range":
            bounds = [self.expr(a) for a in node.iter.args]
            if not all(isinstance(b, int) for b in bounds):
                raise self.fail(node, "const_range takes Python integers (it is unrolled)")
            out: list[HStmt] = []
            for value in range(*bounds):
                self.env[name] = value
                out.extend(self.scoped(node.body))
            self.env.pop(name, None)
            return out
        thread = None
        if kind == "bind":
            tag, extent = (self.expr(a) for a in node.iter.args)
            lo = 0
        elif kind in LOOPS:
            bounds = [self.expr(a) for a in node.iter.args]
            lo, hi = (0, bounds[0]) if len(bounds) == 1 else bounds[:2]
            extent = hi if isinstance(lo, int) and lo == 0 else hi - lo
        else:
            raise self.fail(
                node, "loop over range, parallel, vectorize, unroll, const_range or bind"
            )
        var = Var(self.loop_name(name), "int32", "loop")
        saved = dict(self.env)
        self.env[name] = var
        body = self.scoped(node.body)
        self.env = saved
        loop_kind = "bound" if kind == "bind" else LOOPS[kind]
        thread = tag if kind == "bind" else None
        return [Loop(var, as_expr(lo), as_expr(extent), loop_kind, body, thread)]

    def loop_name(self, name: str) -> str:
        seen = self.loop_names.get(name, 0)
        self.loop_names[name] = seen + 1
        return name if not seen else f"{name}.{seen}"

    def new_tensor(self, name: str, shape, dtype) -> Tensor:
        dims = self.shape(shape)
        return Tensor(PlaceholderOp(name, dims, dt.canonical(dtype)))

    def shape(self, shape) -> tuple[Expr, ...]:
        dims = shape if isinstance(shape, (tuple, list)) else (shape,)
        return tuple(as_expr(d) for d in dims)

    def inline_script(self, callee, value: ast.Call):
        args = tuple(self.expr(a) for a in value.args)
        return self.inline(function_def(callee.func), args, top=False, func=callee.func)


def _argument(value: object) -> object:
    if isinstance(value, (list, tuple)):
        return [_argument(v) for v in value]
    if isinstance(value, Const):
        return value.value
    return value


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        return body[1:]
    return body


def _assignment_counts(fdef: ast.FunctionDef) -> dict[str, int]:
    """How often each name is assigned in the text (``+=`` counts twice: it is a variable)."""
    counts: dict[str, int] = {}
    for node in ast.walk(fdef):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    counts[t.id] = counts.get(t.id, 0) + 1
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            counts[node.target.id] = counts.get(node.target.id, 0) + 2
    return counts


def _reads(value: object) -> bool:
    return isinstance(value, Expr) and any(isinstance(n, Read) for n in walk(value))
