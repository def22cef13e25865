"""The fuzzer's tensor-core family: `examples/gpu_gemm_fp16.py`'s GEMM (float16 or bfloat16
operands, or float32 ones run as TF32; float32 accumulation; a float32 or operand-dtype output)
under the example's schedule with drawn parameters, and under variants of it with one defect
each, drawn on purpose.

The example's schedule is what users copy and retune, so its parameter space is where the
tensor-core path (tensorize's isl checks, fragments, ldmatrix, mma.sync, cp.async pipelines,
swizzled tiles, stores clipped at the edge) meets sizes it was not written for, symbolic ones
included. The defects are the mistakes a user makes while retuning it: a tile loop split by 8,
fragments in the wrong scope, float32 data without TF32, lanes that are not the 32 of a warp,
a k step that cuts a tile, a pipelined copy of 2 bytes, a size that is not a multiple of 16.
Each case is answered like every fuzz case: a clean refusal (see `verdict.lowering_verdict`)
or a kernel whose output, poisoned with NaN between guard zones, matches `sl.reference` within
half-precision rounding. Some defects can never make a right kernel (`Defect.must_refuse`): a
kernel built for one of those is a finding too.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

import schedlang as sl
from examples import gpu_gemm_fp16 as example
from examples import gpu_gemm_wgmma
from schedlang.ir import dtype as dt

from .guards import DeviceGuarded, Guarded
from .tensor_core_schedule import TILE, Defect, schedule_with
from .verdict import FuzzFailure, Tally, known_finding, lowering_verdict, watchdog

TIMEOUT_S = 60
SIZES = (16, 32, 48, 64, 80, 96)  # small: the SIMT interpreter runs every lane of every warp
# the rounding of one result to the output dtype: two roundings of nearly equal sums differ by
# at most one unit in the last place
OUTPUT_EPS = {"float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}


@dataclass
class TensorCoreCase:
    """A GEMM of `shape` (m, n, k) and the schedule to answer: the example's (`defect` None)
    or the mirror with `defect`. float32 operands run as TF32 (``options["tf32"]``)."""

    shape: tuple[int, int, int]
    dtype: str
    out_dtype: str
    options: dict = field(default_factory=dict)
    defect: Defect | None = None
    symbolic: tuple[str, ...] = ()  # the sizes ("m", "n", "k") that are `sl.var`s
    wgmma: bool = False  # `examples/gpu_gemm_wgmma.py`'s schedule (warpgroups, sm_90a)

    @property
    def family(self) -> str:
        if self.wgmma:
            return "tensor_cores: wgmma"
        return "tensor_cores" if self.defect is None else f"tensor_cores: {self.defect.kind}"

    @property
    def k_tile(self) -> int:
        """The reduction of one instruction: 8 for TF32, else 16."""
        return 8 if self.options.get("tf32") else TILE

    def describe(self) -> str:
        defect = f", defect {self.defect}" if self.defect else ""
        symbolic = f" symbolic {self.symbolic}" if self.symbolic else ""
        kind = " (wgmma)" if self.wgmma else ""
        return (
            f"gemm{self.shape}{symbolic}{kind} {self.dtype} -> {self.out_dtype}, "
            f"options {self.options}{defect}"
        )

    def tensors(self) -> tuple[sl.Tensor, sl.Tensor, sl.Tensor]:
        sizes = [sl.var(d) if d in self.symbolic else v for d, v in zip("mnk", self.shape)]
        return example.gemm(*sizes, self.dtype, self.out_dtype)

    def schedule(self, a: sl.Tensor, b: sl.Tensor, c: sl.Tensor) -> sl.Schedule:
        if self.wgmma:
            return gpu_gemm_wgmma.schedule(a, b, c, **self.options)
        if self.defect is None:
            return example.schedule(a, b, c, **self.options)
        return schedule_with(self.defect, a, b, c, **self.options)


# -- drawing --------------------------------------------------------------------------------


def draw_case(data) -> TensorCoreCase:
    """A GEMM and the example's parameters: float16, bfloat16 or (as TF32) float32 operands,
    warp tiles of 16 to 64, one or two warps each way (the block a multiple of the warp, as
    the example needs), k steps of 16 to 64, no pipeline or 2 to 4 stages, double buffering,
    swizzled or padded shared tiles; now and then symbolic sizes (isl must prove the tiles
    whole for every value, or the edge clipped); about a third of the cases with a defect.
    One case in five is the warpgroup example's instead (`_wgmma_case`)."""
    draw = data.draw
    if draw(st.integers(0, 4), label="wgmma") == 0:
        return _wgmma_case(data)
    shape = tuple(draw(st.sampled_from(SIZES), label=f"size {d}") for d in "mnk")
    dtype = draw(st.sampled_from(["float16", "bfloat16", "float32"]), label="operands")
    out_dtype = draw(st.sampled_from(sorted({"float32", dtype})), label="output")
    warp_rows = draw(st.sampled_from([16, 32, 48, 64]), label="warp rows")
    warp_cols = draw(st.sampled_from([16, 32, 48, 64]), label="warp cols")
    options = dict(
        block_rows=warp_rows * draw(st.sampled_from([1, 2]), label="warps y"),
        block_cols=warp_cols * draw(st.sampled_from([1, 2]), label="warps x"),
        warp_rows=warp_rows,
        warp_cols=warp_cols,
        step=draw(st.sampled_from([16, 32, 64]), label="step"),
        stages=draw(st.sampled_from([0, 2, 3, 4]), label="stages"),
        double_buffer=draw(st.booleans(), label="double buffer"),
        layout=draw(st.sampled_from(["swizzle", "pad"]), label="shared layout"),
        tf32=dtype == "float32",
    )
    sizes = [(), (), (), ("m",), ("n",), ("m", "n"), ("k",)]
    symbolic = draw(st.sampled_from(sizes), label="symbolic sizes")
    case = TensorCoreCase(shape, dtype, out_dtype, options, symbolic=symbolic)
    if draw(st.integers(0, 2), label="defective") == 0:
        kind = draw(st.sampled_from(sorted(DEFECTS)), label="defect")
        DEFECTS[kind](data, case)
        case.defect = replace(case.defect, kind=kind)
    return case


def _wgmma_case(data) -> TensorCoreCase:
    """`examples/gpu_gemm_wgmma.py`'s GEMM: float16 or bfloat16, one or two warpgroups of 64
    rows, 8 to 128 columns (the instruction's n), 1 to 4 stages, tiles copied by ``cp.async``
    or, in half the pipelined cases, by the copy engine (``tma``) from a producer warpgroup or
    from the block's first thread (``warp_specialize``), results stored by the copy engine in
    half the cases whose tiles are whole pieces of 128-byte rows (``tma_store``), in half the
    cases 2 or 3 persistent blocks taking the tiles in turn (a pipeline across a block's
    tiles), sizes cut by the tiles along m, n and k now and then. Sizes its layout cannot
    take (k steps of rows shorter than 128 bytes: k under 64) must be refused clearly."""
    draw = data.draw
    dtype = draw(st.sampled_from(["float16", "bfloat16"]), label="operands")
    out_dtype = draw(st.sampled_from(["float32", dtype]), label="output")
    m = draw(st.sampled_from([64, 128, 96, 130, 200]), label="size m")
    n = draw(st.sampled_from([64, 128, 72, 136, 200]), label="size n")
    k = draw(st.sampled_from([64, 128, 192, 48, 208]), label="size k")
    options = dict(
        block_rows=draw(st.sampled_from([64, 128]), label="block rows"),
        block_cols=draw(st.sampled_from([16, 64, 128]), label="block cols"),
        stages=draw(st.sampled_from([1, 2, 3, 4]), label="stages"),
    )
    if options["stages"] >= 2:
        options["tma"] = draw(st.booleans(), label="copy engine")
        if options["tma"]:
            options["warp_specialize"] = draw(st.booleans(), label="producer warpgroup")
    if options["block_cols"] % (128 // dt.itemsize(out_dtype)) == 0:  # whole pieces
        options["tma_store"] = draw(st.booleans(), label="stores by the copy engine")
    blocks = draw(st.sampled_from([0, 0, 2, 3]), label="persistent blocks")
    if blocks:
        options["persistent"] = blocks
    symbolic = draw(st.sampled_from([(), (), ("m",)]), label="symbolic sizes")
    return TensorCoreCase((m, n, k), dtype, out_dtype, options, symbolic=symbolic, wgmma=True)


def _cuts(k: int, step: int, k_tile: int) -> bool:
    """Whether some step of the reduction ends inside a tile of the instruction."""
    return any(min(step, k - s) % k_tile for s in range(0, k, step))


def _tile(data, case: TensorCoreCase) -> None:
    """A tile loop split by other than the instruction's extent (8; 16 for TF32's k)."""
    loop = data.draw(st.sampled_from(["store_tile", "mma_tile", "k_tile", "load_tile"]))
    wrong = 16 if loop == "k_tile" and case.k_tile == 8 else 8
    case.defect = Defect(f"{loop} split by {wrong}", must_refuse=True, **{loop: wrong})


def _wrong_scope(data, case: TensorCoreCase) -> None:
    """A fragment in another fragment's scope or in ordinary memory, or loaded as the other
    operand: the instruction would read a layout that is not its own."""
    change = data.draw(
        st.sampled_from(
            [
                {"a_scope": "wmma.matrix_b", "a_intrinsic": "wmma.matrix_b"},
                {"a_intrinsic": "wmma.matrix_b"},
                {"b_scope": "wmma.matrix_a"},
                {"a_scope": "local"},
                {"b_scope": "shared"},
                {"acc_scope": "local"},
                {"acc_scope": "shared"},
            ]
        )
    )
    name = ", ".join(f"{k}={v}" for k, v in change.items())
    case.defect = Defect(f"scope {name}", must_refuse=True, **change)


def _wrong_precision(data, case: TensorCoreCase) -> None:
    """float32 data without asking for TF32 (a silent loss of precision if it ran), or half
    data with the TF32 intrinsics."""
    case.options["tf32"] = not case.options["tf32"]
    case.defect = Defect(f"{case.dtype} with tf32={case.options['tf32']}", must_refuse=True)


def _lanes(data, case: TensorCoreCase) -> None:
    """The shared copies bind threadIdx.x to other than the 32 lanes the mma stages need."""
    lanes = data.draw(st.sampled_from([8, 16, 64]))
    case.defect = Defect(f"threadIdx.x of {lanes}", must_refuse=True, lanes=lanes)


def _partial_k_step(data, case: TensorCoreCase) -> None:
    """A k step that is not a multiple of 16: refused where a step cuts a tile of k (TF32's
    tiles of 8 fit steps of 8, 24 and 40)."""
    step = data.draw(st.sampled_from([8, 24, 40]))
    case.options["step"] = step
    cut = _cuts(case.shape[2], step, case.k_tile)
    case.defect = Defect(f"k step {step}", must_refuse=cut)


def _unvectorized_copy(data, case: TensorCoreCase) -> None:
    """A pipelined shared copy of one element per thread: cp.async moves 4, 8 or 16 bytes, so
    2-byte halves are refused and 4-byte floats are right. With a single k step nothing is
    copied ahead, and plain copies are right too."""
    case.options["stages"] = data.draw(st.sampled_from([2, 3, 4]))
    refilled = case.shape[2] > case.options["step"]
    halves = case.dtype != "float32"
    case.defect = Defect("pipelined copy of 1 element", must_refuse=refilled and halves, vector=1)


def _ragged_size(data, case: TensorCoreCase) -> None:
    """A size that is not a multiple of 16. Where it cuts a tile of k the last mma would add
    products past the end, so it is refused; along m or n the edge tiles may be computed whole
    in fragments and shared tiles and stored clipped, so either answer is right if the values
    are."""
    shape = list(case.shape)
    for d in data.draw(st.sampled_from([(0,), (1,), (0, 1), (2,)])):
        whole = data.draw(st.sampled_from([1, 2, 3, 4, 5, 0]))  # tiles, then the cut one
        shape[d] = TILE * whole + data.draw(st.sampled_from([1, 7, 8, 15]))
    case.shape = tuple(shape)
    cut = shape[2] % case.k_tile > 0
    case.defect = Defect(f"sizes {tuple(shape)}", must_refuse=cut)


def _narrow_swizzle(data, case: TensorCoreCase) -> None:
    """Not a mistake: a swizzle of 64- or 32-byte lines, which the example does not use, and
    which must still give every lane its own elements (or be refused)."""
    line = data.draw(st.sampled_from([32, 64]))
    case.options["layout"] = "swizzle"
    case.defect = Defect(f"swizzle({line})", swizzle_bytes=line)


def _loop_order(data, case: TensorCoreCase) -> None:
    """Not a mistake either: the k tiles inside the accumulator's tile loops (fragments
    reloaded per tile), or the fragments of a whole k step loaded at once (buffering of the
    shared tiles is then refused: the step's loop reads one tile before it fills the other)."""
    change = data.draw(
        st.sampled_from(
            [
                {"k_inside": True},
                {"fragments_at_step": True},
                {"k_inside": True, "fragments_at_step": True},
            ]
        )
    )
    case.defect = Defect(", ".join(change), **change)


DEFECTS: dict[str, Callable] = {
    "tile": _tile,
    "wrong scope": _wrong_scope,
    "wrong precision": _wrong_precision,
    "lanes": _lanes,
    "partial k step": _partial_k_step,
    "unvectorized copy": _unvectorized_copy,
    "ragged size": _ragged_size,
    "narrow swizzle": _narrow_swizzle,
    "loop order": _loop_order,
}


# -- the properties ---------------------------------------------------------------------------

Runner = Callable[[object, list[Guarded]], None]


def simulate(kernel, guarded: list[Guarded]) -> None:
    """The SIMT interpreter: each lane its own part of every fragment, copies in flight until
    their wait, races reported (an InternalError, so a finding)."""
    kernel.simulate(*[g.view for g in guarded])


def on_device(kernel, guarded: list[Guarded]) -> None:
    placed = [DeviceGuarded(g) for g in guarded]
    kernel(*[p.window for p in placed])
    for p in placed:
        p.fetch()


def tensor_core_interpreter_property(data, tally: Tally) -> None:
    """A tensor-core schedule built for the cuda target, its PTX assembled by ptxas where it
    is installed, run by the SIMT interpreter."""
    with watchdog(TIMEOUT_S):
        case = draw_case(data)
        check(case, tally, simulate, _seed(data), assemble=True)


def tensor_core_device_property(data, tally: Tally) -> None:
    """A tensor-core schedule run on the GPU."""
    with watchdog(TIMEOUT_S):
        case = draw_case(data)
        check(case, tally, on_device, _seed(data))


def _seed(data) -> int:
    return data.draw(st.integers(0, 2**16), label="input seed")


def check(
    case: TensorCoreCase, tally: Tally, execute: Runner, seed: int = 0, assemble: bool = False
) -> None:
    """`case` refused cleanly, or built and run by `execute` to match the reference."""
    tally.family = case.family
    tally.count(f"family: {case.family}")
    _note(case.describe())
    a, b, c = case.tensors()
    try:
        s = case.schedule(a, b, c)
        _note(str(s))
        kernel = sl.build(s, [a, b, c], target="cuda")
    except sl.SchedlangError as err:
        tally.count(lowering_verdict(err))
        return
    if case.defect is not None and case.defect.must_refuse:
        raise FuzzFailure(f"the defect '{case.defect.name}' was not refused:\n{s}")
    if assemble and shutil.which("ptxas"):
        from tests.cuda.ptxas import assemble as ptxas

        ptxas(kernel.ptx)
    try:
        compare(case, kernel, (a, b, c), execute, seed)
    except sl.InternalError as err:  # a race, or a known finding
        known = known_finding(err)
        if known is None:
            raise
        tally.count(known)
        return
    tally.count("ran and matched")


def _note(text: str) -> None:
    """hypothesis's note, which prints with a failing example; `check` runs outside a test
    too (tests/fuzz/test_regressions.py replays cases), where there is nothing to note."""
    try:
        note(text)
    except InvalidArgument:
        pass


def inputs(case: TensorCoreCase, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Operands in [0.5, 2] or [-2, -0.5] (never zero) rounded to `case.dtype`; float32 ones are
    not TF32 values, so that the kernel's rounding to TF32 is checked too."""
    m, n, k = case.shape
    rng = np.random.default_rng(seed)
    values = []
    for shape in ((m, k), (k, n)):
        magnitude = rng.uniform(0.5, 2.0, shape)
        sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
        values.append((magnitude * sign).astype(dt.to_numpy(case.dtype)))
    return values[0], values[1]


def tf32(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to TF32 as ``cvt.rna.tf32.f32`` rounds them: 10 of the 23
    mantissa bits kept, to nearest, ties away from zero (written here from the PTX manual, not
    taken from the interpreter, so that the two are checked against each other)."""
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def compare(case: TensorCoreCase, kernel, tensors, execute: Runner, seed: int) -> None:
    """Guarded operands and a NaN-poisoned output run by `execute`; the output must equal the
    reference (of the operands rounded to TF32, for TF32) within what float32 sums in another
    order and one rounding to the output dtype can differ by: ``2 k 2^-24 sum |a b|`` plus one
    unit in the last place of the output."""
    a, b, c = tensors
    x, y = inputs(case, seed)
    rounded = (tf32(x), tf32(y)) if case.options.get("tf32") else (x, y)
    want = np.asarray(sl.reference(c, dict(zip((a, b), rounded)))).astype(np.float64)
    guarded = [Guarded(x.shape, x, case.dtype), Guarded(y.shape, y, case.dtype)]
    guarded.append(Guarded(want.shape, None, case.out_dtype))
    execute(kernel, guarded)
    for name, g in zip("ABC", guarded):
        damage = g.damage()
        if damage is not None:
            raise FuzzFailure(f"'{name}' {damage}")
    for name, g in zip("AB", guarded):
        if g.changed():
            raise FuzzFailure(f"the input '{name}' was written")
    got = guarded[2].view.astype(np.float64)
    sums = np.abs(x.astype(np.float64)) @ np.abs(y.astype(np.float64))
    bound = 2 * case.shape[2] * 2.0**-24 * sums + OUTPUT_EPS[case.out_dtype] * np.abs(want)
    wrong = ~(np.abs(got - want) <= bound)  # NaN (an output never written) is wrong too
    if wrong.any():
        where = np.argwhere(wrong)
        first = tuple(int(v) for v in where[0])
        raise FuzzFailure(
            f"'C' differs from the reference at {len(where)} of {want.size} elements; at "
            f"{first} it is {got[first]}, expected {want[first]} (within {bound[first]:.3g})"
        )
