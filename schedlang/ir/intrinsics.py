"""Calls of functions by name, and rules that lower math calls per target (TE's
``call_pure_extern``, ``call_intrin`` and ``register_intrin_lowering``).

- ``sl.call_pure_extern("float32", "__expf", x)`` calls a function of the target's math library
  by its C name: the CPU's C library, or NVIDIA's libdevice on a GPU (``expf`` is
  ``__nv_expf``; the fast ``__expf`` is ``__nv_fast_expf``). The reference computes the exact
  function the name stands for (``__expf`` and ``expf`` are both exp).
- ``sl.call_intrin("float32", "mylog", x)`` is an intrinsic schedlang has no code for: a rule
  registered for the build's target must lower it, or the build says that none does.
- ``sl.register_intrin_lowering("exp", target="cuda", f=rule, level=10)``: before code is
  generated for `target`, each call of `exp` (a math function of `schedlang.ir.math`, or an
  intrinsic) is replaced by ``rule(call)``, an expression; returning the call keeps it. Of
  several rules for one name and target, the highest level wins.

Calls of both kinds are `Call` nodes whose names carry the kind (``extern:``, ``intrin:``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np

from ..errors import AlgorithmError, LoweringError, entry_point
from . import dtype as dt
from .expr import Call, Expr, as_expr

EXTERN = "extern:"
INTRIN = "intrin:"
TARGETS = ("cpu", "cuda", "opencl")

# What the reference computes for a C math name, with float's "f" and CUDA's fast "__"
# spellings taken off (``__expf``, ``expf``, ``exp``).
_REFERENCE = {
    "exp": np.exp,
    "exp2": np.exp2,
    "exp10": lambda x: np.power(10.0, x),
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sqrt": np.sqrt,
    "cbrt": np.cbrt,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "fabs": np.abs,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "pow": np.power,
    "fmin": np.fmin,
    "fmax": np.fmax,
    "atan2": np.arctan2,
    "fdividef": np.divide,
}

_RULES: dict[tuple[str, str], list[tuple[int, Callable]]] = {}


@entry_point
def call_pure_extern(dtype: object, name: str, *args: object) -> Expr:
    """A call of the target's math function `name` (its C name) on `args`, of `dtype`."""
    kind = dt.canonical(dtype)
    if not dt.is_float(kind):
        raise AlgorithmError(
            f"call_pure_extern({name!r}): math functions return floats, not {kind}"
        )
    reference_name(name)  # an unknown name is an error where it is written
    exprs = tuple(as_expr(a).astype(kind) for a in args)
    return Call(EXTERN + name, exprs, kind)


@entry_point
def call_intrin(dtype: object, name: str, *args: object) -> Expr:
    """A call of the intrinsic `name`, which a rule (`register_intrin_lowering`) lowers."""
    return Call(INTRIN + name, tuple(as_expr(a) for a in args), dt.canonical(dtype))


@entry_point
def register_intrin_lowering(
    name: str, target: str, f: Callable | None = None, level: int = 10
) -> Callable:
    """Lower each call of `name` for `target` ("cpu" or "cuda") to ``f(call)``; as a decorator
    without `f`."""
    if target not in TARGETS:
        raise LoweringError(f"register_intrin_lowering: target {target!r} is not one of {TARGETS}")

    def register(rule: Callable) -> Callable:
        rules = _RULES.setdefault((name, target), [])
        rules.append((level, rule))
        rules.sort(key=lambda entry: -entry[0])
        return rule

    return register if f is None else register(f)


def lowering_rule(name: str, target: str) -> Callable | None:
    """The rule of the highest level for calls of `name` (a math function or an intrinsic,
    without its kind) on `target`, or None."""
    rules = _RULES.get((name, target))
    return rules[0][1] if rules else None


def plain_name(call: Call) -> str:
    """The name a rule is registered under: the math function's, or the intrinsic's."""
    for kind in (EXTERN, INTRIN):
        if call.name.startswith(kind):
            return call.name[len(kind) :]
    return call.name


def rules_fingerprint() -> str:
    """What the registered rules are, for the keys of builds kept on disk: each rule's name,
    target, level and code, with what its closure holds (a rule changed between two
    processes must not reuse a build)."""
    digest = hashlib.sha256()
    for (name, target), rules in sorted(_RULES.items()):
        for level, rule in rules:
            digest.update(f"{name} {target} {level} ".encode())
            _code_digest(rule, digest, depth=3)
    return digest.hexdigest() if _RULES else ""


def _code_digest(f: object, digest, depth: int) -> None:
    """Feed `digest` with `f`'s code and constants and, `depth` functions deep, its closure."""
    code = getattr(f, "__code__", None)
    if code is None or depth == 0:
        digest.update(repr(f).encode())
        return
    digest.update(getattr(f, "__qualname__", "").encode() + code.co_code)
    digest.update(repr(code.co_consts).encode())
    for cell in getattr(f, "__closure__", None) or ():
        _code_digest(cell.cell_contents, digest, depth - 1)


def reference_name(symbol: str) -> str:
    """The function of `_REFERENCE` that the C name `symbol` stands for."""
    base = symbol.lstrip("_")
    for name in (base, base[:-1] if base.endswith("f") else None):
        if name in _REFERENCE:
            return name
    known = ", ".join(sorted(_REFERENCE))
    raise AlgorithmError(
        f"call_pure_extern: schedlang does not know the math function {symbol!r} (it knows "
        f"{known}, with an 'f' for float and CUDA's '__' for its fast versions)"
    )


def reference_function(symbol: str) -> Callable:
    return _REFERENCE[reference_name(symbol)]
