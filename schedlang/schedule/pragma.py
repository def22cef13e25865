"""``s[T].pragma(axis, name, value)``: TE's pragmas, each mapped onto what schedlang has, or
refused with the reason (`Stage.pragma` documents them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import records as rec
from .errors import AnnotationError

if TYPE_CHECKING:
    from .stage import Stage


def apply_pragma(stage: Stage, axis: object, name: str, value: object, loc: str) -> None:
    call = f"pragma({getattr(axis, 'name', axis)}, {name!r})"
    if name in ("unroll", "vectorize"):
        stage._annotate(axis, name)
        return
    stage._require_compute(call, loc)
    resolved = stage._axis(axis, call, loc)
    if name == "auto_unroll_max_step":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            stage._fail(
                AnnotationError, call, loc, f"the step count must be an int >= 0, not {value!r}"
            )
        stage.auto_unroll[resolved] = (value, loc)
        stage._record(rec.AutoUnroll(stage.name, resolved, value, loc))
        return
    if name == "unroll_explicit":
        if not isinstance(value, (bool, int)):
            stage._fail(AnnotationError, call, loc, f"the value is a bool, not {value!r}")
        return
    if name == "import_llvm":  # parsed and linked by the CPU build
        if not isinstance(value, str):
            what = f"import_llvm takes LLVM IR as text, not {type(value).__name__}"
            stage._fail(AnnotationError, call, loc, what)
        stage.imports.append(value)
        stage._record(rec.ImportLlvm(stage.name, resolved, value, loc))
        return
    why = _PRAGMAS_REFUSED.get(name)
    if why is None:
        known = "unroll, vectorize, auto_unroll_max_step, unroll_explicit, import_llvm"
        why = f"schedlang does not know this pragma (it knows {known})"
    stage._fail(AnnotationError, call, loc, why)


_IMPORTED_CODE = (
    "it compiles C code for the kernel, which needs a C compiler; compile the functions to "
    'LLVM IR yourself (clang -S -emit-llvm) and pass that with pragma(axis, "import_llvm", ir)'
)
_THREAD_POOL = (
    "an option of TVM's CPU thread pool; schedlang's parallel loops run on its own threads "
    "(s[T].parallel(axis)) and end together"
)
_PRAGMAS_REFUSED = {
    "import_c": _IMPORTED_CODE,
    "debug_skip_region": "schedlang computes every stage it is given; it skips no region",
    "parallel_launch_point": _THREAD_POOL,
    "parallel_stride_pattern": _THREAD_POOL,
    "parallel_barrier_when_finish": _THREAD_POOL,
}
