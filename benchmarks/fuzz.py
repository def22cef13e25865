"""Schedule fuzzing campaigns: many random schedules of the fuzzer's algorithm family, each
either an error that names the primitive or a kernel that matches the reference without
writing outside its outputs (tests/fuzz).

    python benchmarks/fuzz.py --n 10000 --target cpu --seed 1    # interpreter and CPU JIT
    python benchmarks/fuzz.py --n 5000 --target simt --seed 1    # cuda builds, SIMT interpreter
    python benchmarks/fuzz.py --n 2000 --target cuda --seed 1    # real kernels on the GPU

The examples run in chunks, each under its own hypothesis seed (derived from ``--seed``), so
a failure costs one chunk: hypothesis minimises it, the minimal example is printed, and the
campaign goes on with the next chunk. Counts include the examples run while minimising.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fuzz.properties import (  # noqa: E402 - the repository root is on the path now
    cpu_property,
    gpu_device_property,
    gpu_interpreter_property,
)
from tests.fuzz.verdict import FuzzFailure, Hang, Tally  # noqa: E402

PROPERTIES = {"cpu": cpu_property, "simt": gpu_interpreter_property, "cuda": gpu_device_property}


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
    args = parser.parse_args(argv)
    if args.target == "cuda":
        from schedlang.platform_info import cuda_available, probe_cuda

        if not cuda_available():
            print(f"--target cuda needs a usable GPU: {probe_cuda().detail}")
            return 2
    prop = PROPERTIES[args.target]
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
    schedules = sum(v for k, v in tally.counts.items() if not k.startswith("primitive"))
    print(
        f"\ntarget {args.target}, seed {args.seed}, {args.n} examples in "
        f"{time.perf_counter() - start:.0f} s"
    )
    print(f"schedules answered: {schedules}")
    for key, value in sorted(tally.counts.items()):
        print(f"  {key}: {value}")
    print(f"failures: {len(failures)}")
    for line in failures:
        print(f"  {line}")
    return 1 if failures else 0


def _outcomes(tally: Tally) -> str:
    shown = {k: v for k, v in tally.counts.items() if not k.startswith("primitive")}
    return ", ".join(f"{k}: {v}" for k, v in sorted(shown.items()))


if __name__ == "__main__":
    sys.exit(main())
