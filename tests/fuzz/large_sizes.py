"""Cases past int32 for the fuzzer: a kernel reads the last elements of an array of 2**31 or
more elements, through sizes declared int32 or int64, under a small random schedule. It must
either return exactly those elements, or, where an int32 size or index cannot hold the array,
refuse the call with the error that says to declare the size int64; a wrapped index (a read
from the wrong end of the array) is a failure.

The arrays are sparse files mapped with np.memmap, made once per element count and dtype in
`SparseArrays`: only their last page holds data, so a case costs a build and a few page reads.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from hypothesis import note
from hypothesis import strategies as st

import schedlang as sl

from .verdict import FuzzFailure, Tally, lowering_verdict

INT32_MAX = 2**31 - 1
COUNTS = (2**31 - 8, 2**31, 2**31 + 7, 3_000_000_000)  # elements: the edge and past it
COLUMNS = (1, 3, 4096, 65_536)  # a 2-d array's rows are count // columns
TAIL = 8  # elements written at the end of every array, the most a case reads
_REFUSED = re.compile(
    r"(size '\w+' is \d+, which does not fit int32|has \d+ elements, more than the int32 "
    r"indices of kernel).*sl\.var\(\"\w+\", dtype=\"int64\"\)"
)


class SparseArrays:
    """Arrays of `count` elements in sparse files under `directory`, kept for reuse; their
    last `TAIL` elements are random nonzero values, the rest zeros the file system never
    stores."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._made: dict[tuple[int, str], np.memmap] = {}

    def get(self, count: int, dtype: str) -> np.memmap:
        key = (count, dtype)
        if key not in self._made:
            path = self.directory / f"{dtype}-{count}.bin"
            with open(path, "wb") as f:
                f.truncate(count * np.dtype(dtype).itemsize)
            array = np.memmap(path, dtype=dtype, mode="r+", shape=(count,))
            rng = np.random.default_rng(count)
            array[count - TAIL :] = rng.integers(1, 100, TAIL).astype(dtype)
            array.flush()
            self._made[key] = array
        return self._made[key]


def large_size_property(data, tally: Tally, arrays: SparseArrays) -> None:
    """One drawn case, counted in `tally` as matched or refused; FuzzFailure otherwise."""
    index = data.draw(st.sampled_from(["int32", "int64"]), label="size dtype")
    dtype = data.draw(st.sampled_from(["uint8", "float32"]), label="element dtype")
    count = data.draw(st.sampled_from(COUNTS), label="elements")
    columns = data.draw(st.sampled_from((None, *COLUMNS)), label="columns (None: 1-d)")
    reads = data.draw(st.integers(1, TAIL if columns is None else min(TAIL, columns)))
    flat = arrays.get(count, dtype)
    if columns is None:
        array, sizes = flat, (count,)
    else:
        rows = count // columns
        array, sizes = flat[count - rows * columns :].reshape(rows, columns), (rows, columns)
    kernel = _build(data, tally, index, dtype, len(sizes), reads)
    if kernel is None:
        return
    out = np.full(reads, np.nan if dtype == "float32" else 0xAB, dtype)
    note(f"{index} sizes {sizes} of {dtype}, last {reads} read\n{kernel.lowered}")
    too_large = index == "int32" and array.size > INT32_MAX
    try:
        kernel(array, out)
    except ValueError as err:
        if too_large and _REFUSED.search(str(err)):
            tally.count("refused: past int32")
            return
        raise FuzzFailure(f"a call on {sizes} elements raised: {err}") from err
    if too_large:
        raise FuzzFailure(f"an int32 kernel ran on {sizes} elements without refusing")
    want = np.asarray(array).reshape(-1)[-reads:]
    if not np.array_equal(out, want):
        raise FuzzFailure(f"read {out} for the last {reads} of {sizes} elements, not {want}")
    tally.count("ran and matched")


def _build(data, tally: Tally, index: str, dtype: str, ndim: int, reads: int):
    """``B[i] = A[..., last - reads + i]`` (guarded where the sizes are small), scheduled with
    a drawn split and loop kind, built for the cpu; None after counting a refusal to lower."""
    sizes = [sl.var(name, dtype=index) for name in "nm"[:ndim]]
    a = sl.placeholder(tuple(sizes), dtype, name="A")
    zero = sl.const(0, dtype)
    last = sizes[-1]
    lead = [n - 1 for n in sizes[:-1]]
    b = sl.compute(
        (reads,),
        lambda i: sl.if_then_else(last >= reads, a[(*lead, last - reads + i)], zero),
        name="B",
    )
    s = sl.create_schedule(b)
    factor = data.draw(st.sampled_from([1, 2, 4]), label="split factor")
    _, inner = s[b].split(b.op.axis[0], factor=factor)
    kind = data.draw(st.sampled_from(["serial", "unroll", "vectorize", "parallel"]))
    if kind != "serial":
        getattr(s[b], kind)(inner)
    try:
        return sl.build(s, [a, b], target="cpu")
    except sl.SchedlangError as err:
        tally.count(lowering_verdict(err))
        return None
