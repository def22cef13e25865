"""One configuration of a task built, in a compile process: what comes back to the process
that measures.

Statuses: ``built``; ``illegal``, where schedlang refused the schedule (a primitive's check, or
isl's legality and bounds checks in the lowering, which come before any code is generated);
``failed``, where something else went wrong (the template itself raised, or an internal error):
those are reported loudly, as findings.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass

from ..errors import InternalError, SchedlangError
from .knobs import TuneError


@dataclass(frozen=True)
class Built:
    number: int
    status: str
    text: str  # the schedule as the Python that makes it ("" when none was made)
    error: str
    build_s: float
    kernel: dict | None = None  # `runtime.saved.contents` of the kernel
    cubin: bytes | None = None  # its PTX assembled for the GPU, where ptxas is installed


def build_one(task, number: int, target: str) -> Built:
    """Configuration `number` of `task` built for `target` (a resolved target string)."""
    from ..build import build
    from ..runtime.saved import contents
    from ..schedule.text import schedule_text

    start = time.perf_counter()
    text = ""
    try:
        s, args = task.instantiate(number)
        text = schedule_text(s)
        kernel = build(s, args, target=target)
        cubin = None
        if hasattr(kernel, "ptx"):
            from ..codegen.nvptx.assemble import assemble

            cubin = assemble(kernel.ptx, kernel._compiled.arch)
        saved = contents(kernel)
    except (TuneError, InternalError) as error:  # the template's mistake, or schedlang's
        return Built(number, "failed", text, _said(error), time.perf_counter() - start)
    except SchedlangError as error:
        return Built(number, "illegal", text, _said(error), time.perf_counter() - start)
    except Exception as error:  # the template raised: its bug, reported with where
        where = "".join(traceback.format_exception(error)[-3:]).strip()
        return Built(number, "failed", text, where, time.perf_counter() - start)
    seconds = time.perf_counter() - start
    return Built(number, "built", text, "", seconds, saved, cubin)


def _said(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"
