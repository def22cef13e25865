"""C identifiers for the loop IR's variables and buffers, one kernel at a time.

Loop-IR names are for reading (``i.outer``, ``A.shared``) and two objects may share one (the
variables of two stages' ``i``), while C needs identifiers, each meaning one thing, and none an
OpenCL C keyword or built-in function. So each variable or buffer gets its name with every
character C does not allow made ``_``, and a numbered suffix where the result is taken by
another object or by the language.
"""

from __future__ import annotations

import re

_RESERVED = frozenset(
    """
    auto bool break case char const constant continue default do double else enum extern float
    for global goto half if inline int kernel local long private read_only register restrict
    return short signed sizeof static struct switch typedef uchar uint ulong union unsigned
    ushort void volatile while write_only
    barrier get_group_id get_local_id get_global_id exp exp2 log log2 sqrt rsqrt sin cos tanh
    erf pow fabs floor ceil rint fma min max fmin fmax abs popcount isnan select vload_half
    vstore_half_rte convert_float as_float as_uint
    """.split()
)


_VECTOR_TYPE = re.compile(r"(u?char|u?short|u?int|u?long|float|double|half)(2|3|4|8|16)")


class Names:
    """Each object (by identity) its identifier."""

    def __init__(self) -> None:
        self._given: dict[int, str] = {}
        self._taken: set[str] = set(_RESERVED)
        self._kept: list[object] = []  # the named objects, alive while their ids are keys

    def __call__(self, obj: object, name: str) -> str:
        """The identifier of `obj`, made from `name` the first time it is asked for."""
        found = self._given.get(id(obj))
        if found is not None:
            return found
        base = re.sub(r"\W", "_", name) or "v"
        if base[0].isdigit() or base.startswith("sl_"):  # sl_: the helpers' (`helpers`)
            base = f"v{base}"
        found, k = base, 0
        while found in self._taken or _VECTOR_TYPE.fullmatch(found):
            k += 1
            found = f"{base}_{k}"
        self._taken.add(found)
        self._given[id(obj)] = found
        self._kept.append(obj)
        return found

    def fresh(self, name: str) -> str:
        """An identifier of the code generator's own, unlike any other."""
        return self(object(), name)
