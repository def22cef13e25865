"""Where a kernel's shared memory regions lie: one layout per kernel, made by `nvptx.plan`,
followed by the code generator (`nvvm.shared_array`) and sized by the launcher. Plain values,
apart from LLVM, so that a kernel loaded from disk needs no compiler."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import InternalError

BUFFER_ALIGN = 16  # where every buffer of a kernel starts; runtime.cuda.arguments.ALIGN checks
SWIZZLE_ALIGN = 1024  # where a swizzled shared buffer starts: its pattern's period
STATIC_SHARED_LIMIT = 48 * 1024  # bytes a block may declare statically; more is dynamic


@dataclass(frozen=True, eq=False)
class SharedLayout:
    """Where a kernel's shared memory regions lie: `regions` maps a statement (by identity) to
    ``(offset, bytes)`` per region it owns, an `Allocate` one, a `ThreadAllReduce` one per
    source; `nbytes` is their total, the kernel's shared memory per block."""

    kernel: str
    regions: dict[int, tuple[tuple[int, int], ...]]
    nbytes: int
    dynamic: bool
    align: int = BUFFER_ALIGN  # where the regions start: 1024 where a swizzle needs it

    def region(self, owner: object, part: int = 0) -> tuple[int, int]:
        found = self.regions.get(id(owner))
        if found is None:
            raise InternalError(f"kernel '{self.kernel}': a shared buffer outside its layout")
        return found[part]


def lay_out_shared(
    kernel: str,
    owners: list[tuple[object, tuple[int, ...]]],
    align: int = BUFFER_ALIGN,
    loose: frozenset[int] = frozenset(),
    within: dict[int, int] | None = None,
) -> SharedLayout:
    """Regions for `owners` (each a statement and the bytes of its regions), one after the other
    at multiples of `align` (`BUFFER_ALIGN`, or the 1024 bytes of a swizzle's pattern, which
    the tensor cores apply to absolute addresses), each padded to one: ptxas packs static
    arrays the same way, so its count and this one agree. A statement met twice keeps its first
    regions. Where the regions are one dynamic array, those of the owners in `loose` (by
    identity: no swizzle, smaller than `align`, such as memory barriers) go after the others,
    `BUFFER_ALIGN` apart: padded to 1024 bytes each, four arrays of barriers cost 4 KB, which
    pushed attention's 224 KB of tiles past the 227 a block may have. An owner in `within`
    (by identity, to another's) takes the start of the other's region instead of one of its
    own: a buffer whose uses all come after the other's last (`loopir.memory.shared_reuse`),
    no larger than it."""
    within = within or {}
    layout = _placed(kernel, owners, align, frozenset(), within)
    if align == BUFFER_ALIGN or not layout.dynamic or not loose:
        return layout
    return _placed(kernel, owners, align, loose, within)


def _placed(
    kernel: str,
    owners: list[tuple[object, tuple[int, ...]]],
    align: int,
    loose: frozenset[int],
    within: dict[int, int],
) -> SharedLayout:
    regions: dict[int, tuple[tuple[int, int], ...]] = {}
    offset = 0
    ordered = [o for o in owners if id(o[0]) not in loose] + [
        o for o in owners if id(o[0]) in loose
    ]
    for owner, sizes in ordered:
        if id(owner) in regions or id(owner) in within:
            continue
        step = BUFFER_ALIGN if id(owner) in loose else align
        placed = []
        for size in sizes:
            padded = -(-max(size, 1) // step) * step
            placed.append((offset, padded))
            offset += padded
        regions[id(owner)] = tuple(placed)
    for owner, sizes in ordered:
        if id(owner) in within and id(owner) not in regions:
            start, room = regions[within[id(owner)]][0]
            if sum(sizes) > room:
                raise InternalError(f"kernel '{kernel}': a reused shared region is too small")
            regions[id(owner)] = tuple((start + sum(sizes[:k]), n) for k, n in enumerate(sizes))
    return SharedLayout(kernel, regions, offset, offset > STATIC_SHARED_LIMIT, align)
