"""``tvm.ir``: registering how an intrinsic is lowered for a target (`register_intrin_lowering`)
and TE's op attributes (`register_op_attr`)."""

from __future__ import annotations

from collections.abc import Callable

import schedlang as _sl

from .target import as_target
from .tir import Call, _schedlang_name

_ATTRS: dict[tuple[str, str], object] = {}
_sl_targets = ["cpu", "cuda"]


def register_op_attr(op_name: str, attr_key: str, value: object = None, level: int = 10):
    """Record an attribute of an op, as TE does; schedlang reads none of them (its calls are all
    pure), so registering is all there is to do."""
    _ATTRS[(op_name, attr_key)] = value
    return value


def register_intrin_lowering(
    op_name: str, target: str = "default", f: Callable | None = None, level: int = 10
):
    """Lower calls of `op_name` (``"tir.exp"``) for `target` (``"default"``: every target)
    with ``f(call)``, where `call` is a `tvm.tir.Call`; as a decorator without `f`."""
    targets = _sl_targets if target == "default" else [as_target(target).schedlang.split()[0]]
    name = _schedlang_name(op_name)

    def register(rule: Callable) -> Callable:
        def lower(call):
            view = Call(call)
            result = rule(view)
            return call if result is view else result

        for chosen in targets:
            _sl.register_intrin_lowering(name, chosen, lower, level)
        return rule

    return register if f is None else register(f)
