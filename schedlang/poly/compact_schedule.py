"""The placed statements' schedules without the dimensions that are constants where they are.

Placement gives every statement a schedule of the same number of dimensions (`Placed.sched`),
padded with constants: which of the stages of a loop body comes first, zeros where a statement
has no loop. isl's AST generator works through every dimension for every statement, a constant
one costing about as much as a loop: on the tensor-core attention kernel, 20 statements of 17
dimensions of which 13 are constant per statement, 0.4-0.5 s, most of it on constants (one
statement alone: 17 ms, 3 ms without them).

A dimension that has one value for every statement of a group (those that agree on the
constants before it) orders nothing in the group, and the AST has no loop of it: it is left
out of the group's maps. The dimensions after a constant where the group's statements differ
are each part's own, so each part leaves out its own. The maps are padded back to one length
with zeros at their ends (isl orders only maps of one space), which come after every loop of
the statement. The loop nest is the same, with the loops' iterators numbered by position in
the compacted maps: `CompactSchedules.dims` maps them back.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl


@dataclass(frozen=True)
class CompactSchedules:
    """`maps` for isl's AST generator (one per statement, in order) and, per statement name,
    the dimension of the placed schedule at each position of its compacted map (`dims`: isl
    names the loop at position k ``c<k>``; the positions after them are the padding)."""

    maps: list[isl.Map]
    dims: dict[str, tuple[int, ...]]


def compact_schedules(maps: list[isl.Map]) -> CompactSchedules:
    """`maps` (one per statement, all of one dimension) compacted, as the module says."""
    n = maps[0].dim(isl.dim_type.out)
    left_out: dict[str, list[int]] = {_name(m): [] for m in maps}
    _leave_out(maps, 0, n, left_out)
    compacted = []
    for m in maps:
        for d in reversed(left_out[_name(m)]):
            m = m.project_out(isl.dim_type.out, d, 1)
        compacted.append(m)
    length = max(m.dim(isl.dim_type.out) for m in compacted)
    dims = {_name(m): tuple(d for d in range(n) if d not in left_out[_name(m)]) for m in maps}
    return CompactSchedules([_padded(m, length) for m in compacted], dims)


def _leave_out(maps: list[isl.Map], d: int, n: int, left_out: dict[str, list[int]]) -> None:
    """Note, from dimension `d` on, the dimensions constant in the group `maps`."""
    while d < n:
        values = [fixed_value(m, d) for m in maps]
        if any(v is None for v in values):
            d += 1
            continue
        if len(set(values)) == 1:
            for m in maps:
                left_out[_name(m)].append(d)
            d += 1
            continue
        for value in set(values):  # each part's dimensions after this one are its own
            part = [m for m, v in zip(maps, values) if v == value]
            _leave_out(part, d + 1, n, left_out)
        return


def _padded(m: isl.Map, length: int) -> isl.Map:
    k = m.dim(isl.dim_type.out)
    m = m.add_dims(isl.dim_type.out, length - k)
    for d in range(k, length):
        m = m.fix_val(isl.dim_type.out, d, isl.Val.zero(m.get_ctx()))
    return m


def _name(m: isl.Map) -> str:
    return m.get_tuple_name(isl.dim_type.in_)


def fixed_value(m: isl.Map, d: int) -> int | None:
    """The value of output dimension `d` of `m` where its constraints state one, else None."""
    value = m.plain_get_val_if_fixed(isl.dim_type.out, d)
    return None if value.is_nan() else value.to_python()
