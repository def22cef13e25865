"""``tvm.ir``: registering how an intrinsic is lowered for a target (`register_intrin_lowering`)
and TE's op attributes (`register_op_attr`)."""

from __future__ import annotations

from collections.abc import Callable

import schedlang as _sl

from ..errors import LoweringError
from .ir_module import IRModule  # noqa: F401 - TE's tvm.ir.IRModule
from .target import as_target
from .tir import Call, CallEffectKind, _schedlang_name

_EVERY_TARGET = ("cpu", "cuda", "opencl")  # what TE's "default" target means here


def register_op_attr(op_name: str, attr_key: str, value: object = None, level: int = 10):
    """TE's attributes of an op. schedlang knows one, ``TCallEffectKind``, and every call it
    makes is pure (it may compute a call once for equal arguments, or not at all when unused):
    declaring a call pure states what schedlang assumes; any other effect is refused."""
    if attr_key != "TCallEffectKind":
        raise LoweringError(
            f"register_op_attr({op_name!r}, {attr_key!r}): schedlang reads no op attribute but "
            "TCallEffectKind"
        )
    if value != CallEffectKind.Pure:
        raise LoweringError(
            f"register_op_attr({op_name!r}, 'TCallEffectKind', {value!r}): schedlang's calls are "
            "all pure (no side effect, no state), so only CallEffectKind.Pure can be declared"
        )


def register_intrin_lowering(
    op_name: str, target: str = "default", f: Callable | None = None, level: int = 10
):
    """Lower calls of `op_name` (``"tir.exp"``) for `target` (``"default"``: every target)
    with ``f(call)``, where `call` is a `tvm.tir.Call`; as a decorator without `f`."""
    targets = _EVERY_TARGET if target == "default" else [as_target(target).schedlang.split()[0]]
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
