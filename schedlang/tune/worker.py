"""A compile process: ``python -m schedlang.tune.worker``, driven by `pool.Workers` over its
standard input and output.

It reads the task (cloudpickled, so a template written in a notebook or a script travels by
value) and the target once, then configuration numbers, and answers each with a pickled
`Built`. It never starts CUDA: the kernels run in the process that measures them.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
from typing import BinaryIO

HEADER = struct.Struct("<Q")


def send(stream: BinaryIO, value: object) -> None:
    data = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(data)) + data)
    stream.flush()


def receive(stream: BinaryIO) -> object:
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        raise EOFError("the other end closed the pipe")
    (size,) = HEADER.unpack(header)
    return pickle.loads(stream.read(size))


def main() -> None:
    import cloudpickle

    from ..runtime import cuda_start
    from .building import build_one

    cuda_start.compile_only()
    if hasattr(os, "nice"):
        os.nice(5)  # the process that measures comes first: its timings and checks wait less
    requests = sys.stdin.buffer
    # the answers go to a copy of the pipe; whatever else writes to standard output (a
    # template's print, a library's C code) goes to standard error instead
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    task_blob, target = receive(requests)
    task = cloudpickle.loads(task_blob)
    while True:
        try:
            number = receive(requests)
        except EOFError:
            return
        send(answers, build_one(task, number, target))


if __name__ == "__main__":
    main()
