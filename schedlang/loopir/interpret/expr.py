"""Expressions of the loop IR as Python source, for `schedlang.loopir.interpret`.

Outside thread loops an expression becomes numpy-scalar code built from Python operators, which
dispatch to the same ufuncs as the reference evaluator (`schedlang.ir.evaluate`), so results
agree bit for bit. Loads of global and local buffers are inline array accesses; an index that
may be negative (see `nonneg`) is checked first, because numpy would wrap it silently, while an
index past the end raises numpy's IndexError, which `run` reports with the statement. Inside
thread loops (a mask variable is in scope) values may be arrays over the threads; there loads
and ``select`` go through the runtime, which applies the mask and tracks shared-memory races.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from ...errors import InternalError
from ...ir import dtype as dt
from ...ir.evaluate import _MATH
from ...ir.expr import Binary, Call, Cast, Compare, Const, Expr, Select, Unary, Var
from ...ir.intrinsics import EXTERN, reference_function
from ...ir.printer import expr_str
from ..core.nodes import FRAGMENT_SCOPES, Buffer, For, Let, Load, LoweredFunc
from ..core.visit import walk_stmt
from ..index.nonneg import nonnegative
from .runtime import Mem, arange

_SYMBOL = {"and": "&", "or": "|"}


def _call_helper(name: str, dtype: str) -> Callable:
    """A math call with `schedlang.ir.evaluate._call`'s numerics (half types work in float32)."""
    out = dt.to_numpy(dtype)
    work = np.dtype("float32") if dt.is_float(dtype) and out.itemsize < 4 else out
    if name == "fma":

        def fma(a, b, c):
            wide = [np.asarray(x).astype(work, copy=False).astype(np.float64) for x in (a, b, c)]
            return dt.convert(wide[0] * wide[1] + wide[2], dtype)

        return fma
    if name.startswith(EXTERN):  # call_pure_extern: the function its C name stands for
        fn = reference_function(name[len(EXTERN) :])
    elif name in _MATH:
        fn = _MATH[name]
    else:
        raise InternalError(f"the interpreter does not know the math function '{name}'")

    def call(*args):
        converted = [np.asarray(a).astype(work, copy=False) for a in args]
        return dt.convert(fn(*converted), dtype)

    return call


class ExprCompiler:
    """Naming, scopes and expression translation shared by the statement compiler."""

    def __init__(self, func: LoweredFunc) -> None:
        self.func = func
        self.ns: dict[str, object] = {"_np": np, "_Mem": Mem, "_arange": arange}
        self.names: dict[object, str] = {}
        self.free: dict[Var, None] = {}
        self.scope: dict[Var, None] = {}
        self.live: dict[Buffer, None] = {}
        self.counter = 0
        self.filename = f"<loopir {func.name} {id(self)}>"
        self.positive: dict[Var, None] = {}
        self.consts: dict[tuple[str, str], str] = {}
        self.binders = {s.var: None for s in walk_stmt(func.body) if isinstance(s, (For, Let))}
        self.extents: dict[str, list[Expr]] = {}
        for s in walk_stmt(func.body):
            if isinstance(s, For) and s.kind == "bound" and str(s.thread).startswith("threadIdx"):
                self.extents.setdefault(s.thread, []).append(s.extent)
        self.threaded = bool(self.extents)

    # -- naming ---------------------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def name(self, obj: Var | Buffer) -> str:
        key = id(obj)
        if key not in self.names:
            clean = re.sub(r"\W", "_", obj.name)
            self.names[key] = f"{'v' if isinstance(obj, Var) else 'b'}{len(self.names)}_{clean}"
            self.ns.setdefault("_keep", []).append(obj)
        return self.names[key]

    def constant(self, value: object, label: str) -> str:
        key = f"_k_{label}"
        if key not in self.ns:
            self.ns[key] = value
        return key

    def np_dtype(self, dtype: str) -> str:
        return self.constant(dt.to_numpy(dtype), f"d_{dtype}")

    def buffer(
        self, buffer: Buffer, indices: tuple[Expr, ...], what: str, matrix: bool = False
    ) -> str:
        """`buffer`'s name in the generated code, after checking it is live and `indices` fit
        it; a fragment's element outside `matrix` ops by one index, the running thread's slot
        (`fragments`)."""
        slot = buffer.scope in FRAGMENT_SCOPES and not matrix
        if slot and len(indices) != 1:
            raise InternalError(
                f"{what} fragment '{buffer.name}' ({buffer.scope}) at {len(indices)} indices: "
                "a thread reads its own share of a fragment, at one slot"
            )
        if buffer not in self.live and not any(buffer is p for p in self.func.params):
            raise InternalError(
                f"{what} buffer '{buffer.name}' outside its Allocate (not a parameter either)"
            )
        if not slot and len(indices) != len(buffer.shape):
            raise InternalError(
                f"{what} '{buffer.name}' with {len(indices)} indices; it has "
                f"{len(buffer.shape)} dimension(s)"
            )
        for i in indices:
            if not dt.is_int(i.dtype):
                raise InternalError(f"index {expr_str(i)} of '{buffer.name}' is {i.dtype}")
        return self.name(buffer)

    def check_dtype(self, e: Expr, dtype: str, what: str) -> None:
        if e.dtype != dtype:
            raise InternalError(f"{what} is {e.dtype}, expected {dtype}: {expr_str(e)}")

    def expr(self, e: Expr, mask: str | None) -> str:
        if isinstance(e, Const):
            key = (e.dtype, repr(e.value))
            if key not in self.consts:
                self.consts[key] = self.constant(dt.convert(e.value, e.dtype), self.fresh(""))
            return self.consts[key]
        if isinstance(e, Var):
            if e not in self.scope:
                if e.kind == "loop" or e in self.binders:
                    raise InternalError(f"variable '{e.name}' is used outside its loop or let")
                self.free.setdefault(e, None)
            return self.name(e)
        if isinstance(e, Load):
            return self.load(e, mask)
        if isinstance(e, (Binary, Unary)) and dt.is_float8(e.dtype):
            return self.float8(e, mask)
        if isinstance(e, Binary):
            a, b = self.expr(e.a, mask), self.expr(e.b, mask)
            if e.op in ("min", "max"):
                if mask is None and not dt.is_float(e.dtype):
                    return f"{e.op}({a}, {b})"
                return f"_np.{'minimum' if e.op == 'min' else 'maximum'}({a}, {b})"
            return f"({a} {_SYMBOL.get(e.op, e.op)} {b})"
        if isinstance(e, Compare):
            return f"({self.expr(e.a, mask)} {e.op} {self.expr(e.b, mask)})"
        if isinstance(e, Unary):
            return f"({'-' if e.op == '-' else '~'}{self.expr(e.a, mask)})"
        if isinstance(e, Select):
            return self.select(e, mask)
        if isinstance(e, Cast):
            inner = self.expr(e.value, mask)
            if e.value.dtype == e.dtype:
                return inner
            if dt.is_float(e.value.dtype) and dt.is_int(e.dtype) or dt.is_float8(e.dtype):
                return f"{self.constant(dt.convert, 'convert')}({inner}, {e.dtype!r})"
            return f"{inner}.astype({self.np_dtype(e.dtype)})"
        if isinstance(e, Call):
            helper = self.constant(
                _call_helper(e.name, e.dtype), "call_" + re.sub(r"\W", "_", e.name) + f"_{e.dtype}"
            )
            return f"{helper}({', '.join(self.expr(a, mask) for a in e.args)})"
        raise InternalError(f"the interpreter cannot evaluate {type(e).__name__} '{expr_str(e)}'")

    def float8(self, e: Binary | Unary, mask: str | None) -> str:
        """8-bit float arithmetic as the reference computes it: in float32, then rounded with
        `dt.to_float8` (the Python operators on ml_dtypes' scalars give NaN or infinity where
        the targets saturate)."""
        a = Cast(e.a, "float32")
        if isinstance(e, Binary):
            wide = Binary(e.op, a, Cast(e.b, "float32"), "float32")
        else:
            wide = Unary(e.op, a, "float32")
        rounded = self.constant(dt.to_float8, "to_float8")
        return f"{rounded}({self.expr(wide, mask)}, {e.dtype!r})"

    def select(self, e: Select, mask: str | None) -> str:
        cond = self.expr(e.cond, mask)
        if mask is None:
            yes, no = self.expr(e.true_value, None), self.expr(e.false_value, None)
            return f"({yes} if {cond} else {no})"
        m = self.fresh("_m")
        yes, no = self.expr(e.true_value, m), self.expr(e.false_value, m)
        return f"_sel({cond}, {mask}, lambda {m}: {yes}, lambda {m}: {no})"

    def load(self, e: Load, mask: str | None) -> str:
        b = self.buffer(e.buffer, e.indices, "load from")
        self.check_dtype(e, e.buffer.dtype, f"a load from '{e.buffer.name}'")
        indices = [self.expr(i, mask) for i in e.indices]
        if mask is not None or e.buffer.scope == "shared":
            return f"_load({b}, {mask}, ({tuple_code(indices)}))"
        if not indices:
            return f"{b}_a[{'0' if self.lanes(e.buffer) else '()'}]"
        items = self.checked(e.indices, indices)
        lanes = "0, " if self.lanes(e.buffer) else ""
        final = [t if t in items else i for t, i in zip(self.temp_names, indices)]
        access = f"{b}_a[{lanes}{tuple_code(final)}]"
        if not items:
            return access
        test = " | ".join(f"({t} := {i})" for t, i in items.items())
        return f"({access} if ({test}) >= 0 else _oob({b}, ({tuple_code(final)})))"

    def lanes(self, buffer: Buffer) -> bool:
        return buffer.scope == "local" and self.threaded or buffer.scope in FRAGMENT_SCOPES

    def checked(self, exprs: tuple[Expr, ...], code: list[str]) -> dict[str, str]:
        """Temporaries for the indices that may be negative (numpy would wrap them silently;
        an index past the end raises numpy's IndexError, which `run` reports)."""
        self.temp_names = [self.fresh("_t") for _ in exprs]
        return {
            t: c
            for t, c, e in zip(self.temp_names, code, exprs)
            if not nonnegative(e, self.is_nonnegative)
        }

    @contextmanager
    def binding(self, var: Var, lowest: Expr) -> Iterator[None]:
        """`var` is in scope (and known >= 0 when `lowest`, its least value, is)."""
        with Scoped(self.scope, var):
            if nonnegative(lowest, self.is_nonnegative):
                with Scoped(self.positive, var):
                    yield
            else:
                yield

    def is_nonnegative(self, v: Var) -> bool:
        return v in self.positive or (v not in self.binders and v.kind != "loop")


def tuple_code(items: list[str]) -> str:
    return "".join(f"{x}, " for x in items)


class Scoped:
    """Adds a key to a dict used as an ordered set for the duration of a ``with`` block."""

    def __init__(self, table: dict, key: object) -> None:
        self.table, self.key = table, key

    def __enter__(self) -> None:
        self.table[self.key] = None

    def __exit__(self, *exc: object) -> None:
        self.table.pop(self.key, None)
