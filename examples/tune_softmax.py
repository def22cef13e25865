"""The row softmax of `examples.gpu_rows` as a template: the threads per row, the floats per
load and whether ``exp(x - max)`` is staged in shared memory or recomputed are knobs.

    python -m examples.tune_softmax 4096 8192       # rows, columns
"""

from __future__ import annotations

import sys

import schedlang as sl
from examples import gpu_rows


@sl.tune.template
def softmax(cfg, m, n):
    tensors = gpu_rows.softmax(m, n)
    threads = cfg.choice("threads", [64, 128, 256, 512, 1024])
    lanes = cfg.choice("lanes", [1, 2, 4])
    stage_exp = cfg.flag("stage_exp")
    s = gpu_rows.softmax_schedule(*tensors, threads=threads, lanes=lanes, stage_exp=stage_exp)
    return s, [tensors[0], tensors[-1]]


def main(m: int = 4096, n: int = 8192) -> None:
    log = sl.tune.run(softmax(m, n), target="cuda", search="grid")
    print(log)
    print(log.best().text)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
