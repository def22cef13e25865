"""Local buffers are per thread: a value a thread stores there is read by that thread only.

A stage with scope "local" whose loop is bound to ``threadIdx.*`` is computed in parts, one per
thread, each into that thread's own copy of the buffer. Any other thread that reads one of those
elements finds its own, unwritten copy: nothing orders or moves the value between threads, and
no barrier can help. Stages computed at another stage's loop already refuse thread loops of
their own when local (`Placement._check_local_threads`); for one computed at the root the
question is exactly which thread reads each element, so it is answered by isl: every pair of a
write and a read of one element must have the same value of each thread index. A statement
without a loop of some thread tag runs on thread 0 of it (or, when it is local itself, on every
thread), as `loopir.from_isl` lowers it.
"""

from __future__ import annotations

import islpy as isl

from ..schedule import records as rec
from ..schedule.errors import LegalityError, message
from ..schedule.schedule import Schedule
from .legality import describe_instance, dim_relation, sample_values
from .placement import Placed, Placement
from .space import Params


def check_local_reads(schedule: Schedule, placement: Placement, params: Params) -> None:
    """Raise `LegalityError` when a thread reads an element of a root local stage's buffer
    that another thread computed."""
    everything = placement.all()
    for src in everything:
        if src.prefix_len or placement.scope(src.stmt.stage) != "local":
            continue
        threads = _thread_dims(schedule, src)
        if not threads:
            continue
        write = isl.Map.from_pw_multi_aff(src.store_index).intersect_domain(src.domain)
        for dst in everything:
            for acc in dst.stmt.reads:
                if acc.op in src.stmt.writes:
                    _check_read(schedule, placement, params, src, write, threads, dst, acc)


def _check_read(schedule, placement, params, src: Placed, write, threads, dst: Placed, acc):
    """Every element `dst` reads through `acc` was written on the reading thread."""
    read = dst.to_root.apply_range(acc.relation).intersect_domain(dst.domain)
    stored = write.set_tuple_name(isl.dim_type.out, read.get_tuple_name(isl.dim_type.out))
    pairs = stored.apply_range(read.reverse()).intersect_params(params.context)
    times = pairs.apply_domain(src.sched).apply_range(dst.sched)
    n = times.dim(isl.dim_type.in_)
    dst_local = placement.scope(dst.stmt.stage) == "local"
    for position, axis, tag in threads:
        everywhere = dst_local and not any(_tag(schedule, e) == tag for e in dst.template)
        crossing = times if everywhere else times.intersect(dim_relation(n, position, "!="))
        if not crossing.is_empty():
            raise LegalityError(_describe(schedule, pairs, crossing, src, dst, axis, tag))


def _thread_dims(schedule: Schedule, p: Placed) -> list:
    """(schedule dimension, axis, tag) of the statement's data loops bound to ``threadIdx.*``.
    A reduce axis bound to a thread is a cross-thread reduction: its result reaches every
    thread, so it restricts nothing."""
    dims = []
    for position, entry in enumerate(p.template):
        tag = _tag(schedule, entry)
        if tag is not None and tag.startswith("threadIdx") and entry[1].kind == "data":
            dims.append((position, entry[1], tag))
    return dims


def _tag(schedule: Schedule, entry) -> str | None:
    if entry[0] != "dim":
        return None
    return schedule[entry[1].stage].binds.get(entry[1])


def _describe(schedule, pairs, crossing, src: Placed, dst: Placed, axis, tag) -> str:
    pair = pairs.intersect(src.sched.apply_range(crossing).apply_range(dst.sched.reverse()))
    sizes, coords = sample_values(pair.wrap().sample_point())
    n_src = src.domain.dim(isl.dim_type.set)
    writer = describe_instance(src, coords[:n_src], sizes)
    reader = describe_instance(dst, coords[n_src:], sizes)
    name = src.stmt.stage.name
    record = schedule.record_for(rec.Bind, axis)
    return message(
        name,
        f"bind({axis.name}, {tag})",
        record.loc,
        f"'{name}' has scope 'local' (a copy per thread), but {reader} reads the value "
        f"{writer} stores on another thread; make '{name}' 'shared' so the block shares it, "
        "or bind the reader's loop to the same thread index so each thread reads its own part",
    )
