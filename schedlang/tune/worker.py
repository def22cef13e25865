"""A compile process: ``python -m schedlang.tune.worker``, driven by `pool.Compilers` over its
standard input and output.

It loads what builds need as soon as it starts, then reads tasks (cloudpickled, so a template
written in a notebook or a script travels by value) with their targets, each once, and
configuration numbers of them, answering each with a pickled `Built`. It never starts CUDA:
the kernels run in the process that measures them.
"""

from __future__ import annotations

import os
import sys

from .messages import receive, send


def main() -> None:
    from ..runtime.cuda import start

    start.compile_only()
    if hasattr(os, "nice"):
        # the lowest priority: the processes that measure (checks, launches) and compute the
        # reference come first; at nice 5 a measuring worker sharing a core with a compile
        # kept three quarters of it, and a 216-point run on one H100 took 4% longer
        os.nice(19)
    requests = sys.stdin.buffer
    # the answers go to a copy of the pipe; whatever else writes to standard output (a
    # template's print, a library's C code) goes to standard error instead
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _warm()
    send(answers, ("ready",))
    tasks: dict[int, tuple] = {}  # by job: the task (or why it could not be read) and target
    while True:
        try:
            message = receive(requests)
        except EOFError:
            return
        if message[0] == "task":
            _, job, blob, target = message
            tasks[job] = (_read(blob), target)
        else:
            _, job, number = message
            task, target = tasks[job]
            send(answers, _build(task, number, target))


def _warm() -> None:
    """What every first build would load (schedlang's lowering, LLVM and its targets), loaded
    before the first task arrives."""
    from ..build import build  # noqa: F401
    from ..codegen.cpu import jit
    from ..codegen.nvptx import compile  # noqa: F401
    from ..platform_info import probe_nvptx

    jit.host()
    probe_nvptx()


def _read(blob: bytes):
    import cloudpickle

    try:
        return cloudpickle.loads(blob)
    except Exception as error:  # noqa: BLE001 - each of its builds says why
        return error


def _build(task, number: int, target: str):
    from .building import Built, build_one

    if isinstance(task, Exception):
        why = f"the compile process could not read the task: {type(task).__name__}: {task}"
        return Built(number, "failed", "", why, 0.0)
    return build_one(task, number, target)


if __name__ == "__main__":
    main()
