"""The fuzzer's properties, one per way of running a schedule. Each draws an algorithm and a
schedule from hypothesis's `data`, and either counts an acceptable error in `tally` or runs
the kernel with guard zones around every argument and NaN-poisoned outputs, then compares
with the reference. A schedule drawn to be refused (`moves`) must be, and a case whose sizes
the algorithm cannot run at (`Case.refusal`) must be refused at the call by every kernel and
by the reference, its arrays untouched. Anything else raises (see `verdict`).

`test_fuzz` runs them as a bounded sample in CI; ``benchmarks/fuzz.py`` runs long campaigns.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable

import numpy as np
from hypothesis import note
from hypothesis import strategies as st

import schedlang as sl
from schedlang.loopir.interpret import run
from tests.schedule.util import concrete_shape, random_inputs

from .algorithms import FAMILIES, draw_case
from .cases import Case, intermediates
from .guards import DeviceGuarded, Guarded
from .moves import cpu_schedule, gpu_schedule
from .verdict import FuzzFailure, Tally, known_finding, lowering_verdict, watchdog

TIMEOUT_S = 60
Runner = Callable[[list[Guarded]], None]


def cpu_property(data, tally: Tally, families: tuple[str, ...] = tuple(FAMILIES)) -> None:
    """A schedule without binds, run by the loop-IR interpreter and compiled for the CPU."""
    with watchdog(TIMEOUT_S):
        case, s, refused = _scheduled(data, tally, cpu_schedule, families)
        check_cpu(case, s, tally, _seed(data), refused)


def gpu_interpreter_property(
    data, tally: Tally, families: tuple[str, ...] = tuple(FAMILIES)
) -> None:
    """A GPU schedule built for the cuda target, run by the SIMT interpreter."""
    with watchdog(TIMEOUT_S):
        case, s, refused = _scheduled(data, tally, gpu_schedule, families)
        check_simt(case, s, tally, _seed(data), refused)


def gpu_device_property(data, tally: Tally, families: tuple[str, ...] = tuple(FAMILIES)) -> None:
    """A GPU schedule run on the GPU."""
    with watchdog(TIMEOUT_S):
        case, s, refused = _scheduled(data, tally, gpu_schedule, families)
        check_device(case, s, tally, _seed(data), refused)


def check_cpu(
    case: Case, s: sl.Schedule, tally: Tally, seed: int = 0, refused: bool = False
) -> None:
    """`s` answered rightly by the interpreter and the CPU JIT (`refused`: by a refusal)."""
    kernel = _build(case, s, "cpu", tally, refused)
    if kernel is None:
        return
    runners: dict[str, Runner] = {
        "interpreter": lambda gs: run(kernel.lowered, [g.view for g in gs]),
        "cpu": lambda gs: kernel(*[g.view for g in gs]),
    }
    _compare(seed, case, runners, tally)


def check_simt(
    case: Case, s: sl.Schedule, tally: Tally, seed: int = 0, refused: bool = False
) -> None:
    """`s` built for the cuda target (no GPU needed): its PTX assembled by ptxas where ptxas
    is installed, its loop IR run by the SIMT interpreter, which also finds races and barriers
    that only some threads reach."""
    kernel = _build(case, s, "cuda", tally, refused)
    if kernel is None:
        return
    if shutil.which("ptxas"):
        from tests.cuda.ptxas import assemble

        assemble(kernel.ptx)
    runners: dict[str, Runner] = {
        "simt interpreter": lambda gs: run(kernel.lowered, [g.view for g in gs]),
    }
    _compare(seed, case, runners, tally)


def check_device(
    case: Case, s: sl.Schedule, tally: Tally, seed: int = 0, refused: bool = False
) -> None:
    """`s` run on the GPU, its arguments in guarded device buffers."""
    kernel = _build(case, s, "cuda", tally, refused)
    if kernel is None:
        return

    def on_device(gs: list[Guarded]) -> None:
        placed = [DeviceGuarded(g) for g in gs]
        kernel(*[p.window for p in placed])
        for p in placed:
            p.fetch()

    _compare(seed, case, {"cuda": on_device}, tally)


def _seed(data) -> int:
    return data.draw(st.integers(0, 2**16), label="input seed")


def _scheduled(data, tally: Tally, schedule, families) -> tuple[Case, sl.Schedule, bool]:
    """A case, its schedule, and whether the schedule must be refused."""
    case = draw_case(data, families)
    tally.family = case.family
    tally.count(f"family: {case.family}")
    for key in case.checked:
        tally.count(key)
    s = sl.create_schedule(case.outputs)
    refused = schedule(data, s, tally)
    _draw_stored(data, case, tally)
    note(f"{case.describe()}\n{s}")
    return case, s, refused


def _draw_stored(data, case: Case, tally: Tally) -> None:
    """Now and then, intermediate stages listed in args after the outputs, as TE allows: the
    kernel must leave their values whole in those arrays, wherever the schedule computes them."""
    found = intermediates(case)
    if found and data.draw(st.integers(0, 3), label="intermediates in args") == 0:
        case.stored = data.draw(st.lists(st.sampled_from(found), min_size=1, unique=True))
        tally.count("intermediates in args")


def _build(case: Case, s: sl.Schedule, target: str, tally: Tally, refused: bool = False):
    """The kernel, or None after counting an error the user can act on; a FuzzFailure where
    a schedule that must be `refused` builds, or a case with a `lowering_refusal` does."""
    try:
        kernel = sl.build(s, case.inputs + case.computed, target=target)
    except sl.SchedlangError as err:
        tally.count(_build_verdict(case, err))
        if refused:
            tally.count("scan steps at the same time: refused")
        return None
    if refused:
        raise FuzzFailure(
            "a scan whose steps run at the same time, reading each other through its body "
            "stage, was built"
        )
    if case.lowering_refusal is not None:
        raise FuzzFailure(f"built, but lowering must refuse it ({case.lowering_refusal})")
    return kernel


def _build_verdict(case: Case, err: sl.SchedlangError) -> str:
    """The tally key of an error that refused a build. A read outside a tensor is refused
    only where the case reads outside one (`lowering_refusal`, then for that reason alone):
    the other algorithms read inside their tensors, so such a refusal is the schedule's
    doing (an rfactor once read past the last part of a split)."""
    verdict = lowering_verdict(err)
    if not isinstance(err, sl.AlgorithmError):
        return verdict
    if case.lowering_refusal is None:
        if " out of bounds: " in str(err):
            raise FuzzFailure(f"a read inside its tensor refused as outside: {err}") from err
        return verdict
    if not re.search(case.lowering_refusal, str(err)):
        raise FuzzFailure(f"lowering refused with another reason: {err}") from err
    return "refused when lowered"


def _compare(seed: int, case: Case, runners: dict[str, Runner], tally: Tally) -> None:
    values = random_inputs(case.inputs, case.sizes, seed)
    if case.refusal is not None:
        _check_refusals(case, values, runners, tally)
        return
    wants = sl.reference(case.computed, values)
    for backend, execute in runners.items():
        inputs = [Guarded(values[p].shape, values[p], p.dtype) for p in case.inputs]
        outputs = [Guarded(w.shape) for w in wants]
        try:
            execute(inputs + outputs)
        except sl.InternalError as err:  # a race, or a known finding
            known = known_finding(err)
            if known is None:
                raise
            tally.count(known)
            return
        for tensor, g in zip(case.inputs + case.computed, inputs + outputs):
            damage = g.damage()
            if damage is not None:
                raise FuzzFailure(f"{backend}: '{tensor.name}' {damage}")
        for tensor, g in zip(case.inputs, inputs):
            if g.changed():
                raise FuzzFailure(f"{backend}: the input '{tensor.name}' was written")
        for tensor, g, want in zip(case.computed, outputs, wants):
            close = np.isclose(g.view, want, rtol=1e-4, atol=1e-4)
            if not close.all():
                wrong = np.argwhere(~close)
                first = tuple(int(k) for k in wrong[0])
                raise FuzzFailure(
                    f"{backend}: '{tensor.name}' differs from the reference at {len(wrong)} of "
                    f"{want.size} elements; at {first} it is {g.view[first]}, expected "
                    f"{want[first]}"
                )
    tally.count("ran and matched")


def _check_refusals(case: Case, values: dict, runners: dict[str, Runner], tally: Tally) -> None:
    """Sizes the algorithm cannot run at: the reference and every kernel refuse them, saying
    why, and no array is touched."""
    try:
        sl.reference(case.computed, values)
    except sl.AlgorithmError as err:
        if not re.search(case.refusal, str(err)):
            raise FuzzFailure(f"the reference refused with another reason: {err}") from err
    else:
        raise FuzzFailure(f"the reference ran at sizes it must refuse ({case.refusal})")
    for backend, execute in runners.items():
        inputs = [Guarded(values[p].shape, values[p], p.dtype) for p in case.inputs]
        outputs = [Guarded(concrete_shape(t, case.sizes)) for t in case.computed]
        try:
            execute(inputs + outputs)
        except sl.LaunchError as err:
            if not re.search(case.refusal, str(err)):
                raise FuzzFailure(f"{backend} refused with another reason: {err}") from err
        else:
            raise FuzzFailure(f"{backend} ran at sizes it must refuse ({case.refusal})")
        for tensor, g in zip(case.inputs + case.computed, inputs + outputs):
            if g.damage() is not None or g.changed():
                raise FuzzFailure(f"{backend}: refused, but '{tensor.name}' was written")
    tally.count("refused at the call")
