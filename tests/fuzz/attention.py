"""The fuzzer's attention family: `examples/gpu_attention.py`'s definition on Hopper's tensor
cores (`wgmma_schedule`) with drawn options: masked or not, keys a step, stages of K and V,
the copy engine or ``cp.async`` (its copies issued by the block's first thread or a producer
warpgroup, whose consumers may take turns at the tensor cores), the second products overlapped
with the next step's softmax, persistent blocks taking the tiles in turn, the sums against a
lagging reference maximum (``threshold=``, the output's rescale skipped where its factors are
1; keys that grow along the sequence then make the reference move at some steps).

Each option changes the kernel's structure: the online scan's steps (below the diagonal and on
it under a causal mask), the pipeline's stages and barriers, and with persistent blocks a
pipeline counted across a block's tiles, in a register where the tiles take different numbers
of steps. Each case is a clean refusal or a kernel whose output, poisoned with NaN, the SIMT
interpreter computes within half-precision rounding of the float64 definition.
"""

from __future__ import annotations

import numpy as np
from hypothesis import note
from hypothesis import strategies as st

import schedlang as sl
from examples import gpu_attention
from tests.test_examples import attention_reference

from .verdict import FuzzFailure, Tally, lowering_verdict, watchdog

TIMEOUT_S = 120
FAMILY = "attention on the tensor cores"


def attention_interpreter_property(data, tally: Tally) -> None:
    """An attention schedule built for the cuda target, run by the SIMT interpreter."""
    draw = data.draw
    with watchdog(TIMEOUT_S):
        causal = draw(st.booleans(), label="causal")
        keys = draw(st.sampled_from([64, 128]), label="keys a step")
        n = draw(st.sampled_from([128, 256, 320, 384]), label="length")  # 320: an edge block
        heads = draw(st.sampled_from([1, 3]), label="batch x heads")
        stages = draw(st.sampled_from([1, 2, 3, 4]), label="stages")
        tma = stages >= 2 and draw(st.booleans(), label="copy engine")
        overlap = tma and draw(st.booleans(), label="second products overlapped")
        producer = tma and draw(st.booleans(), label="a producer warpgroup")
        turns = producer and draw(st.booleans(), label="consumers taking turns")
        persistent = draw(st.sampled_from([0, 0, 2, 3, 5]), label="persistent blocks")
        seed = draw(st.integers(0, 2**16), label="input seed")
        threshold = draw(st.sampled_from([None, None, 0.5, 8.0]), label="lagging reference")
        options = dict(keys=keys, stages=stages, tma=tma, persistent=persistent, overlap=overlap)
        options.update(warp_specialize=producer, turns=turns, threshold=threshold)
        note(f"attention({heads}, {n}, 64, causal={causal}) with {options}")
        tally.family = FAMILY
        tally.count(f"family: {FAMILY}")
        tensors = gpu_attention.tensor_core_attention(heads, n, 64, causal=causal)
        io = [*tensors[:3], tensors[-1]]
        try:
            kernel = sl.build(gpu_attention.wgmma_schedule(*tensors, **options), io, "cuda")
        except sl.SchedlangError as err:
            tally.count(lowering_verdict(err))
            return
        rng = np.random.default_rng(seed)
        q, k, v = (rng.standard_normal((heads, n, 64)) for _ in range(3))
        if threshold is not None:  # keys growing along the sequence pass a small threshold
            k = k * np.linspace(0.2, 3.0, n)[None, :, None]
        q, k, v = (x.astype(np.float16) for x in (q, k, v))
        out = np.full((heads, n, 64), np.nan, np.float16)
        kernel.simulate(q, k, v, out)
        want = attention_reference(q, k, v, causal)
        worst = float(np.abs(out.astype(np.float64) - want).max())
        if not worst <= 4e-3:  # NaN fails too
            raise FuzzFailure(f"attention {options} (causal={causal}) is {worst} off")
        tally.count("ran and matched")
        if ".shared.base = " in str(kernel.lowered):
            tally.count("ran, the pipeline's steps counted in a register")
        if overlap:
            tally.count("ran, the second products overlapped")
        if producer:
            tally.count("ran, a producer warpgroup issuing the copies")
        if turns:
            _check_turns(kernel, options, causal)
            tally.count("ran, the consumers taking turns")
        if threshold is not None:
            tally.count("ran, the sums against a lagging reference maximum")


def _check_turns(kernel, options: dict, causal: bool) -> None:
    """Each kernel's turns (which the interpreter does not run: they order issue only) come
    in pairs, and its PTX has one barrier operation for each."""
    from schedlang.loopir.core.nodes import Turn
    from schedlang.loopir.core.visit import walk_stmt

    turns = [n for k in kernel._compiled.plan.kernels for n in walk_stmt(k.body)]
    turns = [n for n in turns if isinstance(n, Turn)]
    takes, gives = sum(not t.give for t in turns), sum(t.give for t in turns)
    ptx = kernel.ptx
    counted = ptx.count("bar.sync z, 256;"), ptx.count("bar.arrive z, 256;")
    if not (takes == gives > 0 and counted == (takes, gives)):
        raise FuzzFailure(
            f"attention {options} (causal={causal}): {takes} takes and {gives} gives of a "
            f"turn, {counted} barrier operations for them in the PTX"
        )
