"""Schedule fuzzing campaigns: many random schedules of the fuzzer's algorithm families, each
either an error that names the primitive or a kernel that matches the reference without
writing outside its outputs (tests/fuzz).

    python benchmarks/fuzz.py --n 10000 --target cpu --seed 1    # interpreter and CPU JIT
    python benchmarks/fuzz.py --n 5000 --target simt --seed 1    # cuda builds, SIMT interpreter
    python benchmarks/fuzz.py --n 2000 --target cuda --seed 1    # real kernels on the GPU
    python benchmarks/fuzz.py --n 1000 --target simt --family matmul --family conv2d
    python benchmarks/fuzz.py --n 500 --target cpu --family int4   # packed int4 weights
    python benchmarks/fuzz.py --n 500 --target simt --family tensor_cores   # fp16 GEMMs
    python benchmarks/fuzz.py --n 500 --target cuda --family tensor_cores   # on the GPU

``--family`` (repeatable) keeps the campaign to some families (all of tests/fuzz/algorithms.py
by default); ``tensor_cores`` is the tensor-core GEMM family of tests/fuzz/tensor_cores.py, the
example's schedule with drawn parameters and deliberate defects, for the simt and cuda targets
only and on its own. The report gives the outcomes per family as well as in all: besides
kernels that matched and schedules refused when built, cases drawn at sizes their algorithm
cannot run at (a scan whose init gives more rows than the call's steps) are "refused at the
call", by every kernel and the reference, and a scan recipe whose steps run at the same time
through a body stage must be refused when built ("scan steps at the same time: refused").
The `int4` family checks refusals of its own: layouts `sl.packed_int4` cannot hold, refused
when defined ("int4 layout refused when defined"), and a weight of odd K packed by hand,
whose read past the packed tensor every build must refuse ("refused when lowered").

The examples run in chunks, each under its own hypothesis seed (derived from ``--seed``), so
a failure costs one chunk: hypothesis minimises it, the minimal example is printed, and the
campaign goes on with the next chunk. Counts include the examples run while minimising.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
import traceback
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fuzz.algorithms import FAMILIES  # noqa: E402 - the repository root is on the path
from tests.fuzz.properties import (  # noqa: E402
    cpu_property,
    gpu_device_property,
    gpu_interpreter_property,
)
from tests.fuzz.tensor_cores import (  # noqa: E402
    tensor_core_device_property,
    tensor_core_interpreter_property,
)
from tests.fuzz.verdict import OUTCOMES, FuzzFailure, Hang, Tally  # noqa: E402

PROPERTIES = {"cpu": cpu_property, "simt": gpu_interpreter_property, "cuda": gpu_device_property}
TENSOR_CORES = "tensor_cores"
TENSOR_CORE_PROPERTIES = {
    "simt": tensor_core_interpreter_property,
    "cuda": tensor_core_device_property,
}


def campaign_property(target: str, families: list[str] | None):
    """The property a campaign runs, or a str saying why there is none."""
    if not families:
        return PROPERTIES[target]
    if TENSOR_CORES in families:
        if len(families) > 1:
            return f"--family {TENSOR_CORES} runs on its own"
        if target not in TENSOR_CORE_PROPERTIES:
            return f"--family {TENSOR_CORES} needs --target simt or cuda (the tensor cores)"
        return TENSOR_CORE_PROPERTIES[target]
    return functools.partial(PROPERTIES[target], families=tuple(dict.fromkeys(families)))


def run_chunk(prop, n: int, chunk_seed: int, tally: Tally) -> BaseException | None:
    """`n` examples of `prop` under `chunk_seed`; the minimised failure, if one was found."""

    @seed(chunk_seed)
    @settings(
        max_examples=n,
        deadline=None,
        database=None,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def campaign(data):
        prop(data, tally)

    try:
        campaign()
    except Exception as err:  # the minimised failure, already printed by hypothesis
        return err
    return None


def failure_kind(err: BaseException) -> str:
    import schedlang as sl

    if isinstance(err, Hang):
        return "hang"
    if isinstance(err, FuzzFailure):
        return f"failure: {str(err).splitlines()[0][:100]}"
    if isinstance(err, sl.InternalError):
        return f"internal error: {type(err).__name__}"
    return f"crash: {type(err).__name__}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="examples in all")
    parser.add_argument("--target", choices=tuple(PROPERTIES), default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunk", type=int, default=250, help="examples per hypothesis seed")
    parser.add_argument(
        "--family",
        action="append",
        choices=(*FAMILIES, TENSOR_CORES),
        help="only this family (repeatable; default: every family of tests/fuzz/algorithms.py)",
    )
    args = parser.parse_args(argv)
    prop = campaign_property(args.target, args.family)
    if isinstance(prop, str):
        print(prop)
        return 2
    if args.target == "cuda":
        from schedlang.platform_info import cuda_available, probe_cuda

        if not cuda_available():
            print(f"--target cuda needs a usable GPU: {probe_cuda().detail}")
            return 2
    tally = Tally()
    failures: list[str] = []
    start = time.perf_counter()
    done = 0
    chunk = 0
    while done < args.n:
        n = min(args.chunk, args.n - done)
        err = run_chunk(prop, n, args.seed * 1_000_003 + chunk, tally)
        if err is not None:
            failures.append(f"chunk {chunk}: {failure_kind(err)}")
            print(f"FAILURE in chunk {chunk}:", flush=True)
            traceback.print_exception(err, file=sys.stdout)
        done += n
        chunk += 1
        print(f"[{time.perf_counter() - start:7.0f} s] {done} examples: {_outcomes(tally)}")
        sys.stdout.flush()
    drawn = sum(v for k, v in tally.counts.items() if k.startswith("family: "))
    schedules = sum(v for k, v in tally.counts.items() if k.startswith(OUTCOMES))
    families = ", ".join(args.family) if args.family else "all"
    print(
        f"\ntarget {args.target}, families {families}, seed {args.seed}, {args.n} examples in "
        f"{time.perf_counter() - start:.0f} s"
    )
    print(f"schedules answered: {schedules} (drawn: {drawn}, some while minimising a failure)")
    for key, value in sorted(tally.counts.items()):
        print(f"  {key}: {value}")
    print("per family:")
    for family, counts in sorted(tally.by_family.items()):
        print(f"  {family}: {tally.counts[f'family: {family}']}")
        for key, value in sorted(counts.items()):
            print(f"    {key}: {value}")
    print(f"failures: {len(failures)}")
    for line in failures:
        print(f"  {line}")
    return 1 if failures else 0


def _outcomes(tally: Tally) -> str:
    shown = {k: v for k, v in tally.counts.items() if not k.startswith("primitive")}
    return ", ".join(f"{k}: {v}" for k, v in sorted(shown.items()))


if __name__ == "__main__":
    sys.exit(main())
