"""``s[T].pragma(axis, name, value)``: TE's pragmas, each mapped onto what schedlang has, or
refused with the reason, or, for a name schedlang acts on in no way, kept on the loop with a
warning, as TE keeps it (`Stage.pragma` documents them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import warn
from . import records as rec
from .errors import AnnotationError, message

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
    if name in (OVERLAP_PRODUCTS, TAKE_TURNS, SKIP_UNIT_SCALES):  # passes of `loopir.gpu`
        stage.pragmas.setdefault(resolved, []).append((name, value))
        stage._record(rec.Pragma(stage.name, resolved, name, value, loc))
        return
    if name == "import_llvm":  # parsed and linked by the CPU build
        if not isinstance(value, str):
            what = f"import_llvm takes LLVM IR as text, not {type(value).__name__}"
            stage._fail(AnnotationError, call, loc, what)
        stage.imports.append(value)
        stage._record(rec.ImportLlvm(stage.name, resolved, value, loc))
        return
    why = _PRAGMAS_REFUSED.get(name)
    if why is not None:
        stage._fail(AnnotationError, call, loc, why)
    if not isinstance(name, str) or not name:
        stage._fail(AnnotationError, call, loc, f"a pragma's name is a string, not {name!r}")
    # TE keeps a pragma it has no pass for on the loop, changing nothing: so does schedlang,
    # saying so (a misspelt name then shows)
    warn(
        message(
            stage.name,
            call,
            loc,
            f"schedlang acts on no pragma {name!r} (it acts on {_KNOWN}); it is kept on the "
            "loop (iter_var_attrs) and changes nothing that is computed",
        )
    )
    stage.pragmas.setdefault(resolved, []).append((name, value))
    stage._record(rec.Pragma(stage.name, resolved, name, value, loc))


OVERLAP_PRODUCTS = "overlap_products"  # an online scan's second products into the next step
TAKE_TURNS = "take_turns"  # consumer warpgroups taking turns at the tensor cores
SKIP_UNIT_SCALES = "skip_unit_scales"  # a register tile's rescale skipped where it is by 1
_KNOWN = (
    "unroll, vectorize, auto_unroll_max_step, unroll_explicit, import_llvm, overlap_products, "
    "take_turns, skip_unit_scales"
)


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
