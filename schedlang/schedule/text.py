"""A schedule printed as the Python that builds it.

Records are replayed one by one on a fresh schedule while they are printed, so a root axis is
written as ``s[X].op.axis[k]`` of the op that stage has *at that point* (cache_write and rfactor
give stages new ops).
"""

from __future__ import annotations

import re

from ..ir.printer import expr_str
from . import records as rec
from .axis import Axis
from .layout import TransformLayout


def _ident(name: str) -> str:
    return re.sub(r"\W", "_", name)


def _axis_ident(axis: Axis) -> str:
    return _ident(f"{axis.stage}_{axis.name}")


def schedule_text(s) -> str:
    outputs = ", ".join(_ident(op.name) for op in s.roots)
    lines = [f"s = sl.create_schedule([{outputs}])"]
    lines += [line for _, line in schedule_lines(s)]
    return "\n".join(lines)


def schedule_lines(s) -> list[tuple[object, str]]:
    """Each record of `s` with the Python line that applies it, in order (the lines of
    `schedule_text` after ``create_schedule``)."""
    from .schedule import Schedule, apply_record

    lines = []
    shadow = Schedule(s.roots)

    def ref(axis: Axis) -> str:
        stage = shadow[axis.stage]
        if axis in stage.root_axes:
            k = stage.root_axes.index(axis)
            n_data = len(stage.op.axis)
            field = f"axis[{k}]" if k < n_data else f"reduce_axis[{k - n_data}]"
            return f"s[{_ident(stage.name)}].op.{field}"
        return _axis_ident(axis)

    for r in s.records:
        lines.append((r, _line(r, f"s[{_ident(r.stage)}]", ref)))
        apply_record(shadow, r)
    return lines


def _line(r, st: str, ref) -> str:
    if isinstance(r, rec.Split):
        amount = f"factor={r.factor}" if r.nparts is None else f"nparts={r.nparts}"
        outer, inner = _axis_ident(r.outer), _axis_ident(r.inner)
        return f"{outer}, {inner} = {st}.split({ref(r.parent)}, {amount})"
    if isinstance(r, rec.Fuse):
        return f"{_axis_ident(r.fused)} = {st}.fuse({', '.join(ref(a) for a in r.axes)})"
    if isinstance(r, rec.Reorder):
        return f"{st}.reorder({', '.join(ref(a) for a in r.order)})"
    if isinstance(r, rec.Annotate):
        return f"{st}.{r.kind}({ref(r.axis)})"
    if isinstance(r, rec.AutoUnroll):
        return f'{st}.pragma({ref(r.axis)}, "auto_unroll_max_step", {r.max_step})'
    if isinstance(r, rec.ImportLlvm):
        return f'{st}.pragma({ref(r.axis)}, "import_llvm", {r.code!r})'
    if isinstance(r, rec.Pragma):
        return f"{st}.pragma({ref(r.axis)}, {r.name!r}, {r.value!r})"
    if isinstance(r, rec.Bind):
        return f'{st}.bind({ref(r.axis)}, sl.thread_axis("{r.tag}"))'
    if isinstance(r, rec.ComputeAt):
        return f"{st}.compute_at(s[{_ident(r.target)}], {ref(r.axis)})"
    if isinstance(r, rec.ComputeInline):
        return f"{st}.compute_inline()"
    if isinstance(r, rec.ComputeRoot):
        return f"{st}.compute_root()"
    if isinstance(r, rec.CacheRead):
        readers = ", ".join(_ident(name) for name in r.readers)
        return f'{_ident(r.cache)} = s.cache_read({_ident(r.stage)}, "{r.scope}", [{readers}])'
    if isinstance(r, rec.CacheWrite):
        return f'{_ident(r.cache)} = s.cache_write({_ident(r.stage)}, "{r.scope}")'
    if isinstance(r, rec.Tensorize):
        return f"{st}.tensorize({ref(r.axis)}, {r.intrin.name})"
    if isinstance(r, rec.RFactor):
        args = f"{_ident(r.stage)}, {ref(r.axis)}, factor_axis={r.factor_axis}"
        return f"{_ident(r.factored)} = s.rfactor({args})"
    if isinstance(r, rec.Online):
        listed = ", ".join(_ident(name) for name in r.stages)
        kept = ", ".join(_ident(name) for name in r.keep)
        shown = f", keep=[{kept}]" if kept else ""
        shown += f", threshold={r.threshold:g}" if r.threshold is not None else ""
        return f"s.online([{listed}], factor={r.factor}{shown})"
    if isinstance(r, rec.DoubleBuffer):
        return f"{st}.double_buffer()"
    if isinstance(r, rec.Pipeline):
        return f"{st}.{r.call}"
    if isinstance(r, rec.Swizzle):
        return f"{st}.swizzle({r.bytes})"
    if isinstance(r, rec.SetScope):
        return f'{st}.set_scope("{r.scope}")'
    if isinstance(r, rec.StorageAlign):
        return f"{st}.storage_align({ref(r.axis)}, {r.factor}, {r.offset})"
    if isinstance(r, rec.StorePredicate):
        return f"{st}.set_store_predicate({_predicate_text(r.predicate)})"
    if isinstance(r, TransformLayout):
        names = ", ".join(v.name for v in r.index)
        return f"{st}.transform_layout(lambda {names}: [{', '.join(map(expr_str, r.physical))}])"
    raise TypeError(f"no text for record {r!r}")


def _predicate_text(e) -> str:
    """`e` as Python that makes it again: hardware indices as ``sl.thread_axis(tag).var``,
    sizes by name, ``and``/``or`` as ``sl.all``/``sl.any``."""
    from ..ir.expr import Binary, Cast, Compare, Const, Select, Unary, Var

    if isinstance(e, Var):
        return f'sl.thread_axis("{e.name}").var' if e.kind == "thread" else _ident(e.name)
    if isinstance(e, Const):
        return f'sl.const({e.value!r}, "{e.dtype}")'
    if isinstance(e, Binary) and e.op in ("and", "or"):
        name = "sl.all" if e.op == "and" else "sl.any"
        return f"{name}({_predicate_text(e.a)}, {_predicate_text(e.b)})"
    if isinstance(e, Binary) and e.op in ("min", "max"):
        return f"sl.{e.op}({_predicate_text(e.a)}, {_predicate_text(e.b)})"
    if isinstance(e, (Binary, Compare)):
        return f"({_predicate_text(e.a)} {e.op} {_predicate_text(e.b)})"
    if isinstance(e, Unary):
        op = "~" if e.op == "not" else e.op
        return f"({op}{_predicate_text(e.a)})"
    if isinstance(e, Select):
        parts = (e.cond, e.true_value, e.false_value)
        return f"sl.if_then_else({', '.join(_predicate_text(x) for x in parts)})"
    if isinstance(e, Cast):
        return f'{_predicate_text(e.value)}.astype("{e.dtype}")'
    raise TypeError(f"no text for the expression {e!r} in a store predicate")
