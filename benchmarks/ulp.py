"""Maximum error in ulps of schedlang's own float math (`schedlang.codegen.nvptx.softmath`), the
functions the CUDA target uses where NVIDIA's libdevice is missing.

The library's LLVM IR, the same the GPU runs, is compiled for this CPU and applied to:

- float32, one argument: every 61st bit pattern (70 million points, all exponents and signs),
  every float in [1/2, 2) and (-2, -1/2], and the special values; ``--full`` takes all 2**32
  bit patterns instead (about 15 minutes per function on one core).
- float32 pow: 10 million random pairs (x log-uniform over the positive floats, y with
  ``|y log2 x| < 150``; the same with negative x and integer y) and all special pairs.
- float64, one argument: 10 million points, half random bit patterns over the whole range,
  half uniform over the function's working interval, plus the special values.

References and the error measure are `schedlang.codegen.nvptx.softmath.accuracy`'s: numpy's float64
functions for float32, long double (x87) ones for float64. Errors count against the exact
value, so a correctly rounded result has error <= 0.5.

    python -m benchmarks.ulp [--full] [--quick] [--only exp,log]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from schedlang.codegen.nvptx.softmath import FUNCTIONS, host
from schedlang.codegen.nvptx.softmath.accuracy import reference, ulp_error

UNARY = [f for f in FUNCTIONS if f != "pow"]
CHUNK = 1 << 22
DOMAIN64 = {  # where each float64 function is neither constant nor overflowing
    "exp": (-746.0, 710.0),
    "exp2": (-1075.0, 1024.0),
    "log": (0.0, 4.0),
    "log2": (0.0, 4.0),
    "sin": (-1e4, 1e4),
    "cos": (-1e4, 1e4),
    "tanh": (-20.0, 20.0),
    "erf": (-6.0, 6.0),
}


def specials(dtype: str) -> np.ndarray:
    info = np.finfo(dtype)
    values = [
        0.0,
        1.0,
        2.0,
        0.5,
        10.0,
        np.pi,
        np.pi / 2,
        info.tiny,
        info.tiny / 2**10,
        info.smallest_subnormal,
        info.max,
        np.inf,
        np.nan,
        88.72283,
        88.72284,
        -103.97208,
        -87.33655,
        709.782712893384,
        709.7827128933841,
        -745.1332191019411,
        1024.0,
        -1074.0,
        -149.0,
        128.0,
        1e22,
        2.0**20,
        2.0**60,
        6381956970095103 * 2.0**797,
    ]
    with np.errstate(over="ignore"):
        values = np.array(values, dtype=np.float64).astype(dtype)
    return np.concatenate([values, -values])


def samples32(full: bool, quick: bool):
    """Chunks of float32 arguments."""
    stride = 1 if full else (61 * 64 if quick else 61)
    step = CHUNK * stride
    for start in range(0, 1 << 32, step):
        bits = np.arange(start, min(start + step, 1 << 32), stride, dtype=np.uint64)
        yield bits.astype(np.uint32).view(np.float32)
    near_one = np.arange(0x3F000000, 0x40000000, 64 if quick else 1, dtype=np.uint32)
    yield near_one.view(np.float32)
    yield -near_one.view(np.float32)
    yield specials("float32")


def samples64(name: str, quick: bool, seed: int = 1):
    gen = np.random.default_rng(seed)
    remaining = 200_000 if quick else 5_000_000
    lo, hi = DOMAIN64[name]
    while remaining > 0:
        n = min(remaining, CHUNK // 2)
        yield gen.integers(0, 1 << 64, n, dtype=np.uint64, endpoint=False).view(np.float64)
        yield gen.uniform(lo, hi, n)
        remaining -= n
    yield specials("float64")


def pow_samples(quick: bool, seed: int = 2):
    gen = np.random.default_rng(seed)
    n = 100_000 if quick else 5_000_000
    x = np.exp2(gen.uniform(-149, 128, n)).astype(np.float32)
    y = gen.uniform(-150, 150, n) / np.maximum(np.abs(np.log2(x.astype(np.float64))), 1e-3)
    yield x, y.astype(np.float32)
    xi = -np.exp2(gen.uniform(-10, 10, n)).astype(np.float32)
    yi = np.round(gen.uniform(-30, 30, n)).astype(np.float32)
    yield xi, yi
    s = specials("float32")
    xs, ys = np.meshgrid(
        np.concatenate([s, [-1.0, 1.0, -2.0, 3.0]]),
        np.concatenate([s, [0.5, -0.5, 3.0, -3.0, 1.5]]),
    )
    yield xs.ravel().astype(np.float32), ys.ravel().astype(np.float32)


class Worst:
    def __init__(self) -> None:
        self.error, self.at, self.points = 0.0, None, 0

    def update(self, error: np.ndarray, args: tuple[np.ndarray, ...]) -> None:
        self.points += error.size
        k = int(np.argmax(error))
        if error[k] > self.error:
            self.error, self.at = float(error[k]), tuple(a[k] for a in args)


def measure(name: str, dtype: str, chunks) -> Worst:
    mine = host.function(name, dtype)
    exact = reference(name, dtype)
    worst = Worst()
    for args in chunks:
        args = args if isinstance(args, tuple) else (args,)
        with np.errstate(all="ignore"):
            worst.update(ulp_error(mine(*args), exact(*args)), args)
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="all 2**32 float32 bit patterns")
    parser.add_argument("--quick", action="store_true", help="a 1/64 sample, for a smoke test")
    parser.add_argument("--only", default="", help="comma-separated function names")
    opts = parser.parse_args()
    names = [n for n in FUNCTIONS if not opts.only or n in opts.only.split(",")]
    print(f"{'function':10} {'dtype':8} {'points':>12} {'max ulp':>9}  worst argument   seconds")
    for dtype in ("float32", "float64"):
        for name in names:
            if name == "pow" and dtype == "float64":
                continue
            start = time.perf_counter()
            if name == "pow":
                chunks = pow_samples(opts.quick)
            elif dtype == "float32":
                chunks = samples32(opts.full, opts.quick)
            else:
                chunks = samples64(name, opts.quick)
            worst = measure(name, dtype, chunks)
            at = ", ".join(repr(float(a)) for a in worst.at or ())
            seconds = time.perf_counter() - start
            print(
                f"{name:10} {dtype:8} {worst.points:12d} {worst.error:9.3f}  {at:16} "
                f"{seconds:7.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
