"""How long a second process takes to build a kernel another process built: the build cache.

Each run is a fresh Python process that imports schedlang, writes ``examples/gpu_gemm.py``'s
GEMM schedule (4096^3), starts CUDA where there is a GPU (``cuInit`` and the primary context:
CUDA's own start-up, the same for every CUDA program), and then times ``sl.build`` to a kernel
whose module is loaded on the GPU (the first call's work, done explicitly). The first run has
an empty cache folder and builds; the later runs find the build on disk (`build_cache`), and
the driver its own compilation of the PTX. The same is timed with the disk cache off, the cost
a process pays without it. Without a GPU the kernel is built for sm_90 and not loaded. With
``--cpu``, the kernel is a CPU GEMM (tiled, vectorized, parallel) and the later processes link
its object code from the build on disk. Target: <= 50 ms for a second process, after CUDA's
start-up.

    python benchmarks/cached_build.py [--runs 5] [--cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RUN = """
import json, sys, time
sys.path.insert(0, {root!r})
import schedlang as sl
from examples import gpu_gemm
from schedlang.runtime.cuda import driver

gpu = sl.cuda_available()
started = time.perf_counter()
if gpu:
    device = driver.device()  # CUDA's own start-up: cuInit and the primary context
cuda = time.perf_counter() - started
a, b, c = gpu_gemm.gemm(4096, 4096, 4096)
if {cpu}:
    gpu = False
    s = sl.create_schedule(c.op)
    i, j = c.op.axis
    io, jo, ii, ji = s[c].tile(i, j, 32, 32)
    s[c].vectorize(ji)
    s[c].parallel(io)
    target = "cpu"
else:
    s = gpu_gemm.schedule(a, b, c)
    target = "cuda -min-blocks-per-sm=2" if gpu else "cuda -arch=sm_90"
start = time.perf_counter()
kernel = sl.build(s, [a, b, c], target=target)
built = time.perf_counter()
if gpu:
    kernel._load(device)
loaded = time.perf_counter()
print(json.dumps({{"cuda": cuda, "build": built - start, "load": loaded - built,
                  "total": loaded - start}}))
"""


def run(cache: str, cpu: bool) -> dict[str, float]:
    env = {**os.environ, "SCHEDLANG_CACHE_DIR": cache}
    out = subprocess.run(
        [sys.executable, "-c", RUN.format(root=str(ROOT), cpu=cpu)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cpu", action="store_true", help="a CPU kernel instead of CUDA's")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="schedlang-cache-") as folder:
        first = run(folder, args.cpu)
        cached = [run(folder, args.cpu) for _ in range(args.runs)]
    uncached = [run("off", args.cpu) for _ in range(max(2, args.runs // 2))]
    print("| process | CUDA start-up ms | sl.build ms | module load ms | build + load ms |")
    print("| --- | --- | --- | --- | --- |")
    rows = [("first (empty cache)", [first]), ("later (cached)", cached), ("cache off", uncached)]
    for name, runs in rows:
        cells = [statistics.median(r[key] for r in runs) * 1e3 for key in RUN_KEYS]
        totals = [r["total"] * 1e3 for r in runs]
        spread = f" ({min(totals):.0f}-{max(totals):.0f})"
        print(f"| {name} | " + " | ".join(f"{c:.1f}" for c in cells) + spread + " |")


RUN_KEYS = ("cuda", "build", "load", "total")

if __name__ == "__main__":
    main()
