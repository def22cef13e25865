"""Register arrays as SSA values: a local buffer whose every access names its element at
compile time gets no memory; each element is an LLVM value, and loops and branches join the
values with phis.

Unrolled register tiles (a GEMM's accumulators and operands) are read and written hundreds of
times per kernel. As stack slots, each access is an address, a load or a store that LLVM's
SROA and mem2reg turn back into values; emitted as values, LLVM has about half the
instructions to parse and optimise, and Python half to build and print. The PTX is the same.

A buffer qualifies (`promoted`) when it is local, of constant size up to `MAX_ELEMENTS`, and
every access names its element with constants; or, inside a vectorized loop that starts at a
constant, a contiguous run of elements from its first lane; or, for a read inside a counted
loop of a few constant iterations (`table_loop`), one element per iteration, chosen by the
loop's index (LLVM unrolls such loops and folds the choice). Accesses
under a lane mask (an ``If`` in a vectorized loop), in a block collective, or anywhere else
keep the buffer in memory.

Tensor-core fragments (`FRAGMENT_SCOPES`) qualify the same way: their storage is the
`fragments.lane_size` elements of one lane, and a `MatrixOp` names the run of slots of one tile
(`fragments.tile_offset`), which must be a constant. A local buffer that a `MatrixOp` reads or
writes as a tile is indexed by the lane, so it stays in memory, as does one an asynchronous
copy (`AsyncCopy`) names, which moves its elements by address.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from ...errors import InternalError
from ...ir import dtype as dt
from ...ir.expr import Binary, Const, Expr, Var
from ...loopir.core.nodes import (
    FRAGMENT_SCOPES,
    REGISTER_SCOPES,
    Allocate,
    AsyncCopy,
    Buffer,
    For,
    If,
    Load,
    MatrixOp,
    Stmt,
    Store,
    ThreadAllReduce,
)
from ...loopir.core.visit import expr_children, stmt_children, stmt_exprs, walk_stmt
from ...loopir.memory import fragments
from .lanes import MAX_LANES, access_kind, depends_on, why_scalar
from .storage import constant_count
from .types import I32, storage_type

Lookup = Callable[[Var], "int | None"]  # a variable's value, when known

MAX_ELEMENTS = 1024  # larger arrays are dynamically indexed in practice, or spill anyway

_FOLD = {
    "+": lambda x, y: x + y,
    "-": lambda x, y: x - y,
    "*": lambda x, y: x * y,
    "//": lambda x, y: x // y if y else None,
    "%": lambda x, y: x % y if y else None,
    "min": min,
    "max": max,
}


def promoted(body: Stmt) -> set[int]:
    """The local buffers (by identity) allocated in `body` that can live in SSA values (see
    the module docstring), found in one pass over `body`."""
    candidates: dict[int, int] = {}
    for s in walk_stmt(body):
        if isinstance(s, Allocate) and s.buffer.scope in REGISTER_SCOPES:
            count = element_count(s.buffer)
            if count is not None and 0 < count <= MAX_ELEMENTS:
                candidates[id(s.buffer)] = count
    refused: set[int] = set()
    if candidates:
        _Scan(candidates, refused).stmt(body, None, None, False)
    return set(candidates) - refused


def element_count(buffer: Buffer) -> int | None:
    """The elements a thread stores of `buffer`: a fragment's lane's, else its whole count."""
    if buffer.scope in FRAGMENT_SCOPES:
        return fragments.lane_size(buffer)
    return constant_count(buffer)


def table_loop(loop: For) -> bool:
    """Whether `loop` runs as a counted loop (not as vector code) over a few constant
    iterations: a register array may then be read at an element that depends on its variable,
    as one of the elements its iterations name (`RegisterFile.read`)."""
    if loop.kind == "vectorized" and why_scalar(loop) is None:
        return False
    if loop.kind not in ("serial", "unrolled", "vthread", "vectorized"):
        return False
    return _constant(loop) and 0 < int(loop.extent.value) <= MAX_LANES


class _Scan:
    """Adds to `refused` the candidates (buffer id -> element count) that a statement accesses
    at an element not known at compile time. Unrolled copies share most of their expressions,
    so each subexpression is searched for loads once per context."""

    def __init__(self, candidates: dict[int, int], refused: set[int]) -> None:
        self.candidates = candidates
        self.refused = refused
        self.seen: set[tuple] = set()

    def stmt(self, s: Stmt, lanes: For | None, table: For | None, opaque: bool) -> None:
        """`lanes` is the vector loop around `s`, `table` the innermost `table_loop`; in an
        `opaque` context (under a lane mask, in a loop that is neither, in another function)
        no access is known."""
        if isinstance(s, ThreadAllReduce):
            self.refused.update(id(x) for x in (*s.sources, *s.results))
            return
        if isinstance(s, AsyncCopy):  # copied by address (global to shared: never candidates)
            self.refused.update((id(s.dst), id(s.src)))
        if isinstance(s, MatrixOp):
            self.matrix_op(s, opaque or lanes is not None)
        if isinstance(s, If) and lanes is not None:
            opaque = True  # under a lane mask
        elif isinstance(s, For) and s.kind == "vectorized" and why_scalar(s) is None:
            if lanes is not None or not _constant(s):
                opaque = True  # (inside a `table` loop its accesses are known or not by `_known`)
            lanes = s
        elif isinstance(s, For) and table_loop(s):
            table = s
        elif isinstance(s, For) and s.kind == "parallel":
            opaque = True  # possibly outlined into another function
        context = (id(lanes), id(table), opaque)
        for e in stmt_exprs(s):
            self.expr(e, context, lanes, table, opaque)
        if isinstance(s, Store):
            self.access(s.buffer, s.indices, lanes, None, opaque)  # one element, not a table
        for kid in stmt_children(s):
            self.stmt(kid, lanes, table, opaque)

    def expr(self, e: Expr, context: tuple, lanes, table, opaque: bool) -> None:
        stack = [e]
        while stack:
            n = stack.pop()
            if type(n) in (Var, Const):
                continue
            key = (id(n), *context)
            if key in self.seen:
                continue
            self.seen.add(key)
            if type(n) is Load:
                self.access(n.buffer, n.indices, lanes, table, opaque)
            stack.extend(expr_children(n))

    def matrix_op(self, s: MatrixOp, opaque: bool) -> None:
        """A fragment tile qualifies at a constant run of slots; a memory tile never does."""
        for tile in (s.dst, *s.srcs):
            key = id(tile.buffer)
            if key not in self.candidates or key in self.refused:
                continue
            if tile.buffer.scope not in FRAGMENT_SCOPES or opaque:
                self.refused.add(key)
                continue
            shape = tuple(tile.shape)
            first = _evaluate(fragments.tile_offset(tile.buffer, shape, tuple(tile.base)), _none)
            count = fragments.slots(tile.buffer.scope, shape)
            if first is None or not 0 <= first <= self.candidates[key] - count:
                self.refused.add(key)

    def access(self, buffer: Buffer, indices, lanes, table, opaque: bool) -> None:
        if buffer.scope in FRAGMENT_SCOPES and len(indices) != 1:
            raise InternalError(
                f"fragment '{buffer.name}' is read or written at {len(indices)} indices; a "
                "thread accesses its share of a fragment at one slot"
            )
        key = id(buffer)
        if key not in self.candidates or key in self.refused:
            return
        if opaque or not _known(indices, buffer, self.candidates[key], lanes, table):
            self.refused.add(key)


def _none(var: Var) -> None:
    del var


def _constant(loop: For) -> bool:
    return isinstance(loop.min, Const) and isinstance(loop.extent, Const)


def _known(
    indices: tuple[Expr, ...], buffer: Buffer, count: int, lanes: For | None, table: For | None
) -> bool:
    """Whether `indices` name elements of `buffer` known at compile time: a run of elements
    from the first lane of `lanes`, or one element for each iteration of `table`."""
    fixed: dict[Var, int] = {}
    width = 1
    if lanes is not None and any(depends_on(i, lanes.var) for i in indices):
        if access_kind(buffer, indices, lanes.var) != "contiguous":
            return False
        fixed[lanes.var] = int(lanes.min.value)
        width = int(lanes.extent.value)
    first = slot(buffer, indices, fixed.get)
    if first is not None:
        return 0 <= first <= count - width
    if table is None or width > 1:
        return False
    slots = _table(buffer, indices, table.var, _range(table), fixed.get)
    return slots is not None and all(0 <= k < count for k in slots)


def _range(loop: For) -> range:
    first = int(loop.min.value)
    return range(first, first + int(loop.extent.value))


def _table(
    buffer: Buffer, indices: tuple[Expr, ...], var: Var, values: range, value_of: Lookup
) -> list[int] | None:
    """The element `indices` name for each value of `var` in `values`."""
    slots = []
    for value in values:
        found = slot(buffer, indices, lambda v, value=value: value if v is var else value_of(v))
        if found is None:
            return None
        slots.append(found)
    return slots


def slot(buffer: Buffer, indices: tuple[Expr, ...], value_of: Lookup) -> int | None:
    """The element `indices` names (row-major, or by the buffer's strides), variables taking
    the values `value_of` gives; None when it is not a compile-time constant."""
    values = [int(i.value) if type(i) is Const else _evaluate(i, value_of) for i in indices]
    layout = buffer.strides if buffer.strides is not None else buffer.shape[1:]
    sizes = [int(e.value) if type(e) is Const else None for e in layout]
    if None in values or None in sizes:
        return None
    if not values:
        return 0
    if buffer.strides is not None:
        return sum(i * s for i, s in zip(values, sizes))
    total = values[0]
    for extent, i in zip(sizes, values[1:]):
        total = total * extent + i
    return total


def _evaluate(e: Expr, value_of: Lookup) -> int | None:
    if isinstance(e, Const):
        return int(e.value) if dt.is_int(e.dtype) else None
    if isinstance(e, Var):
        return value_of(e)
    if isinstance(e, Binary) and e.op in _FOLD:
        x, y = _evaluate(e.a, value_of), _evaluate(e.b, value_of)
        return None if x is None or y is None else _FOLD[e.op](x, y)
    return None


class RegisterFile:
    """The current value of each element of the promoted buffers in scope, in the buffers'
    storage types."""

    def __init__(self) -> None:
        self.values: dict[Buffer, list[ir.Value]] = {}

    def open(self, buffer: Buffer) -> None:
        """`buffer` comes into scope, uninitialised (undefined, as a fresh stack slot)."""
        undefined = ir.Constant(storage_type(buffer.dtype), ir.Undefined)
        self.values[buffer] = [undefined] * element_count(buffer)

    def close(self, buffer: Buffer) -> None:
        del self.values[buffer]

    def element(self, buffer: Buffer, indices: tuple[Expr, ...], value_of: Lookup) -> int:
        found = slot(buffer, indices, value_of)
        if found is None:
            raise InternalError(f"register array '{buffer.name}' accessed at an unknown element")
        return found

    def read(
        self,
        b: ir.IRBuilder,
        buffer: Buffer,
        indices: tuple[Expr, ...],
        value_of: Lookup,
        tables: dict[Var, tuple[range, ir.Value]],
    ) -> ir.Value:
        """The element `indices` name; where it depends on the variable of a loop in `tables`
        (its values and its index), the element picked out of those its iterations name."""
        found = slot(buffer, indices, value_of)
        values = self.values[buffer]
        if found is not None:
            return values[found]
        for var, (span, index) in tables.items():
            slots = _table(buffer, indices, var, span, value_of)
            if slots is not None:  # a select per iteration: a vector picked from by a varying
                chosen = values[slots[-1]]  # index would go through the stack on NVPTX
                for value, k in zip(span[-2::-1], slots[-2::-1]):
                    match = b.icmp_signed("==", index, ir.Constant(index.type, value))
                    chosen = b.select(match, values[k], chosen)
                return chosen
        raise InternalError(f"register array '{buffer.name}' read at an unknown element")

    def snapshot(self) -> dict[Buffer, list[ir.Value]]:
        return {buffer: list(values) for buffer, values in self.values.items()}

    def restore(self, snapshot: dict[Buffer, list[ir.Value]]) -> None:
        for buffer, values in snapshot.items():
            self.values[buffer] = list(values)

    def join(self, b: ir.IRBuilder, arms: list[tuple[dict, ir.Block]]) -> None:
        """At the top of a merge block: each element as the arms (a snapshot and the block it
        leaves from, each) left it, through a phi where they disagree."""
        for buffer, current in self.values.items():
            for k in range(len(current)):
                seen = [values[buffer][k] for values, _ in arms]
                if all(v is seen[0] for v in seen):
                    current[k] = seen[0]
                    continue
                phi = b.phi(seen[0].type)
                for value, (_, block) in zip(seen, arms):
                    phi.add_incoming(value, block)
                current[k] = phi

    def written_in(self, s: Stmt) -> list[Buffer]:
        """The buffers in scope that `s` stores to."""
        if not self.values:  # nothing to look for (the CPU target never promotes)
            return []
        stored = set()
        for n in walk_stmt(s):
            if isinstance(n, Store):
                stored.add(id(n.buffer))
            elif isinstance(n, MatrixOp):
                stored.add(id(n.dst.buffer))
        return [buffer for buffer in self.values if id(buffer) in stored]

    def enter_loop(self, index: ir.PhiInstr, pre: ir.Block, written: list[Buffer]) -> list:
        """Phis in the loop header (after its `index`) for the elements of `written`, entered
        from `pre`; the loop body then sees them as the elements' values."""
        header = ir.IRBuilder()
        header.position_after(index)
        carried = []
        for buffer in written:
            current = self.values[buffer]
            for k, value in enumerate(current):
                phi = header.phi(value.type)
                phi.add_incoming(value, pre)
                current[k] = phi
                carried.append((buffer, k, phi))
        return carried

    def close_loop(self, carried: list, latch: ir.Block) -> None:
        """The back edge from `latch` brings the body's last values; after the loop (which
        leaves from its header) the elements are the header's phis."""
        for buffer, k, phi in carried:
            phi.add_incoming(self.values[buffer][k], latch)
            self.values[buffer][k] = phi


def read_elements(b: ir.IRBuilder, values: list[ir.Value], slots: list[int]) -> ir.Value:
    """The elements `slots` as one vector."""
    vector = ir.Constant(ir.VectorType(values[slots[0]].type, len(slots)), ir.Undefined)
    for k, found in enumerate(slots):
        vector = b.insert_element(vector, values[found], ir.Constant(I32, k))
    return vector


def write_vector(b: ir.IRBuilder, values: list[ir.Value], first: int, vector: ir.Value) -> None:
    for k in range(vector.type.count):
        values[first + k] = b.extract_element(vector, ir.Constant(I32, k))
