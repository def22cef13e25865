"""``tensorize``: proving that a stage's innermost loops compute what a tensor instruction does.

A stage tensorized at a loop hands the loops from there inwards (its *tile loops*) to one
warp-wide instruction (`schedlang.schedule.intrin`). That is only right if, for every instance of
the loops outside, those loops run a full tile and read and write exactly the elements the
instruction does. isl answers both questions exactly, for every size:

- each tile loop steps one of the stage's root variables by one (it is that variable, or the
  inner loop of splits of it), and its extent is the instruction's;
- every access moves by a fixed unit step along one tensor dimension per tile loop: the deltas
  of each access relation under a step of each root variable are single points (so an access
  ``A[i, k]`` of an mma tile is a 16 x 16 tile of A, and which dimension carries its rows);
- the tile loops' values cover the whole tile wherever the outer loops have any work (a tile
  cut by the edge of the domain is refused, naming one such point).

What lowering needs afterwards is `TensorPlan`: which operation each statement becomes, and
along which dimensions of which buffers its tiles lie. `restrict_to_tiles` then keeps one
instance per tile (the tile loops at 0) for the AST generator, and `loopir.from_isl` turns each
into a `MatrixOp`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import islpy as isl

from ..ir.dtype import FLOAT8
from ..ir.expr import Binary, Cast, Const, Expr, Read, Reduce
from ..ir.tensor import Operation
from ..schedule import records as rec
from ..schedule.axis import Axis
from ..schedule.errors import TensorizeError, message
from ..schedule.intrin import FRAGMENT_SCOPES, K_FLOAT8
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from .affine import affine_condition
from .fragment_stages import check_fragment_stages
from .placement import Placed, Placement
from .space import Params
from .user_tensorize import UserCall, plan_user

OPERANDS = ("float16", "bfloat16")
ACCUMULATORS = ("float32", "float16")


@dataclass(frozen=True)
class TileOf:
    """A tile of tensor `op` along its dimensions `dims` (rows, columns)."""

    op: Operation
    dims: tuple[int, int]
    shape: tuple[int, int]


@dataclass(frozen=True)
class TensorPlan:
    """What the statements of a tensorized stage become: `ops` maps a statement's role
    (``init``, ``update``, ``compute``) to the `MatrixOp` kind, `dst` is the stage's own tile
    and `srcs` the tiles read (in the order `MatrixOp` takes them)."""

    stage: str
    inner: tuple[Axis, ...]
    ops: dict[str, str]
    dst: TileOf
    srcs: tuple[TileOf, ...]
    clipped: bool = False  # a store cut by the edge of its tensor: only what lies inside
    warpgroup: bool = False  # run by a warpgroup (threadIdx.y's 4 warps) rather than a warp
    bulk: bool = False  # a store by the copy engine via shared memory (`loopir.memory.bulk_store`)
    call: UserCall | None = None  # a declared intrinsic's calls (`user_tensorize`)

    @property
    def collective(self) -> tuple[str, ...]:
        """The thread tags whose threads all run each instruction together."""
        return ("threadIdx.x", "threadIdx.y") if self.warpgroup else ("threadIdx.x",)


def plan_tensorize(
    schedule: Schedule, placement: Placement, params: Params, draft: bool = False
) -> dict[str, TensorPlan]:
    """The plan of every tensorized stage, each checked; fragments used untensorized are
    refused too, except in a `draft` (a loop nest to read, never built)."""
    if not draft:
        check_fragment_stages(schedule, placement)
    stages = [s for s in schedule.stages if s.tensorized is not None and s.name in placement.placed]
    # the mma's loops decide its operands' tiles: its mismatches are named first
    stages.sort(key=lambda s: ("mma", "store", "load", "user").index(s.tensorized.intrin.kind))
    checkers = [_Checker(schedule, placement, params, stage) for stage in stages]
    plans = {c.stage.name: c.plan() for c in checkers}
    for c in checkers:  # what the kernel as a whole must give the tensorized stages
        c.check_threads()
        plans[c.stage.name] = c.check_tiles(plans[c.stage.name])
    return plans


def restrict_to_tiles(placement: Placement, plans: dict[str, TensorPlan]) -> None:
    """Keep, for the AST generator, one instance of each tensorized statement per tile: the
    one whose tile loops are all 0 (its indices are the tile's base)."""
    for name, plan in plans.items():
        for p in placement.placed[name]:
            if plan.ops.get(p.stmt.role) is None:  # nothing to run (a body computes it all)
                p.sched = p.sched.intersect_domain(isl.Set.empty(p.sched.domain().get_space()))
                continue
            p.sched = p.sched.intersect_domain(_origins(p, plan))


def _origins(p: Placed, plan: TensorPlan) -> isl.Set:
    """The instances of `p` at the first element of each tile (its tile loops all 0)."""
    count = _tile_loop_count(p, plan)
    n = p.loops.dim(isl.dim_type.out)
    vs = [f"v{k}" for k in range(n)]
    zero = " and ".join(f"{v} = 0" for v in vs[n - count :])
    at = isl.Set(f"{{ [{', '.join(vs)}] : {zero} }}").align_params(p.loops.get_space())
    return p.loops.intersect_range(at).domain()


def _tile_loop_count(p: Placed, plan: TensorPlan) -> int:
    if p.stmt.role == "init":
        return sum(1 for a in plan.inner if a.kind == "data")
    return len(plan.inner)


class _Checker:
    def __init__(self, schedule: Schedule, placement: Placement, params: Params, stage: Stage):
        self.schedule = schedule
        self.placement = placement
        self.params = params
        self.stage = stage
        self.record: rec.Tensorize = stage.tensorized
        self.intrin = self.record.intrin
        self.extents = placement.extents[stage.name]

    def fail(self, what: str) -> TensorizeError:
        call = f"tensorize({self.record.axis.name}, {self.intrin!r})"
        return TensorizeError(message(self.stage.name, call, self.record.loc, what))

    def plan(self) -> TensorPlan:
        stage = self.stage
        if self.record.axis not in stage.leaves:
            raise self.fail(
                f"'{self.record.axis.name}' is no longer a loop of '{stage.name}' (it was split "
                "or fused after tensorize); tensorize one of its loops now"
            )
        inner = tuple(stage.leaves[stage.leaves.index(self.record.axis) :])
        self._check_loops(inner)
        roots = [self._root_of(a) for a in inner]
        kind = self.intrin.kind
        if len(inner) != len(self.intrin.shape):
            names = ", ".join(a.name for a in inner)
            raise self.fail(
                f"{len(inner)} loops from '{self.record.axis.name}' inwards ({names}), but "
                f"{self.intrin!r} replaces {len(self.intrin.shape)}; split and reorder so "
                f"that its {' x '.join(map(str, self.intrin.shape))} tile is innermost"
            )
        for axis, need in zip(inner, self.intrin.shape):
            have = self.extents.get(axis)
            if have != need:
                shown = "a symbolic extent" if have is None else f"extent {have}"
                whole = ""
                if have is not None and have < need and self._whole_dimension(axis, have):
                    whole = (
                        ", or, as the whole dimension is shorter than the tile, give its size "
                        "as a size variable (sl.var): the tile is then cut where the size ends "
                        "(a decoding batch's rows)"
                    )
                raise self.fail(
                    f"the loop '{axis.name}' has {shown}, the intrinsic needs {need}; "
                    f"split it by {need}{whole}"
                )
        if kind == "user":
            return plan_user(self, inner, roots)
        if kind == "mma":
            return self._mma(inner, roots)
        if kind == "load":
            return self._load(inner, roots)
        return self._store(inner, roots)

    # -- the loops ---------------------------------------------------------------------

    def _check_loops(self, inner: tuple[Axis, ...]) -> None:
        stage = self.stage
        for axis in inner:
            how = stage.binds.get(axis) or stage.annotations.get(axis)
            if how is not None:
                raise self.fail(
                    f"'{axis.name}' is {how}; the loops a tensor instruction replaces cannot "
                    "also be bound or annotated"
                )
        for other in self.schedule.stages:
            attach = other.attach
            if isinstance(attach, rec.ComputeAt) and attach.target == stage.name:
                if attach.axis in inner:
                    raise self.fail(
                        f"'{other.name}' is computed at '{attach.axis.name}', inside the loops "
                        "the tensor instruction replaces; compute it at an outer loop"
                    )
        for axis, tag in stage.binds.items():
            if tag == "threadIdx.x":
                raise self.fail(
                    f"'{axis.name}' is bound to threadIdx.x, but threadIdx.x is the lane of the "
                    "warp that runs the instruction together; bind warps to threadIdx.y/z"
                )
            if tag == "threadIdx.y" and self.intrin.warpgroup:
                raise self.fail(
                    f"'{axis.name}' is bound to threadIdx.y, but threadIdx.y is the warp of the "
                    "warpgroup (4 warps) that runs the instruction together; bind warpgroups "
                    "to threadIdx.z"
                )

    def _whole_dimension(self, leaf: Axis, extent: int) -> bool:
        """Whether `leaf`, an inner loop of splits, runs the whole of the axis it was split
        from (the split's factor past the axis's extent)."""
        axis = leaf
        while axis not in self.stage.root_axes:
            made = next(
                (r for r in self.stage.relations if isinstance(r, rec.Split) and r.inner == axis),
                None,
            )
            if made is None:
                return False
            axis = made.parent
        return self.extents.get(axis) == extent

    def _root_of(self, leaf: Axis) -> Axis:
        """The root axis `leaf` steps by one, or an error: the tile must be contiguous."""
        axis = leaf
        while axis not in self.stage.root_axes:
            made = next(
                r
                for r in self.stage.relations
                if (isinstance(r, rec.Split) and axis in (r.outer, r.inner))
                or (isinstance(r, rec.Fuse) and axis == r.fused)
            )
            if isinstance(made, rec.Fuse) or axis == made.outer:
                how = "a fused loop" if isinstance(made, rec.Fuse) else "the outer loop of a split"
                raise self.fail(
                    f"'{leaf.name}' comes from {how} ('{axis.name}'), so its steps are not unit "
                    "steps of one index; the tile loops must be inner loops of splits"
                )
            axis = made.parent
        return axis

    def check_threads(self) -> None:
        if self.intrin.kind == "user":  # a function on the CPU: no warp runs it
            return
        for p in self.placement.placed[self.stage.name]:
            lanes = p.kernel_threads.get("threadIdx.x")
            if lanes != 32:
                have = "no loop bound to threadIdx.x" if lanes is None else f"{lanes} threads"
                raise self.fail(
                    f"a warp's 32 lanes run the instruction together, so the block needs "
                    f"threadIdx.x of extent 32, and it has {have}; bind another stage's loop "
                    "of 32 (e.g. the shared-memory copy's) to threadIdx.x"
                )
            warps = p.kernel_threads.get("threadIdx.y")
            if self.intrin.warpgroup and warps != 4:
                have = "no loop bound to threadIdx.y" if warps is None else f"{warps} threads"
                raise self.fail(
                    "a warpgroup's 4 warps run the instruction together, so the block needs "
                    f"threadIdx.y of extent 4, and it has {have}; bind another stage's loop of "
                    "4 (e.g. the shared-memory copy's) to threadIdx.y, warpgroups to threadIdx.z"
                )

    def check_tiles(self, plan: TensorPlan) -> TensorPlan:
        """Whole tiles along the reduction; along the data axes, a tile that the edge of the
        domain cuts is computed whole where the extra elements are harmless: in fragments and
        staged buffers whose boxes hold whole tiles (their extra rows and columns are never
        read back), and stored to a tensor only within its shape (`clipped`)."""
        self._check_fragment_boxes(plan)
        cut = False
        for p in self.placement.placed[self.stage.name]:
            self._keep_where(p)
            cut |= self._cut(p, plan.inner)
        if not cut:
            return plan
        if plan.call is not None:
            raise self.fail(
                "the edge of the domain cuts a tile, and the function computes whole tiles; "
                "make the sizes multiples of the tile"
            )
        if plan.ops.get("compute") == "load":
            self._inside(plan.srcs[0], _origins(p, plan), p, plan)
            return plan
        if plan.warpgroup and plan.ops.get("update") == "mma":  # operands read from shared
            (p,) = (q for q in self.placement.placed[self.stage.name] if q.stmt.role == "update")
            for src in plan.srcs:
                self._inside(src, _origins(p, plan), p, plan)
            return plan
        if plan.ops.get("compute") == "store":
            if self.placement.scope(self.stage) == "global":
                return replace(plan, clipped=True)
            self._inside(plan.dst, _origins(p, plan), p, plan)
        return plan

    def _keep_where(self, p: Placed) -> None:
        """A reduction's affine ``where`` (a split of the reduction that does not divide, as
        `rfactor` of one makes) restricts the statement's domain, but a stage computed at
        another's loop is placed over its whole box: its body tests the condition element by
        element, which an instruction computing whole tiles cannot. The update's instances are
        restricted to the domain here, so that the tiles the condition leaves out are not run
        and one it cuts is refused (`_cut`)."""
        body = self.stage.op.expr
        if p.stmt.role != "update" or not isinstance(body, Reduce) or body.where is None:
            return
        inside = p.to_root.intersect_range(p.stmt.domain).domain()
        p.loops = p.loops.intersect_domain(inside)
        p.sched = p.sched.intersect_domain(inside)

    def _cut(self, p: Placed, inner: tuple[Axis, ...]) -> bool:
        """Whether the edge of the domain cuts some tile of `p`, or an error where it cuts
        one along the reduction (which would add the extra elements' products)."""
        ctx = self.params.context
        tile = [a for a in inner if p.stmt.role != "init" or a.kind == "data"]
        count, shape = len(tile), [self.extents[a] for a in tile]
        values = p.loops.range().intersect_params(ctx)
        n = values.dim(isl.dim_type.set)
        for d, (axis, need) in enumerate(zip(tile, shape)):
            runs = values.dim_max_val(n - count + d)
            if runs.is_int() and int(runs.to_python()) + 1 < need:
                raise self.fail(
                    f"the loop '{axis.name}' runs at most {int(runs.to_python()) + 1} "
                    f"times, the intrinsic needs {need}: the loop it was split from is "
                    "shorter than the tile"
                )
        outer = values.project_out(isl.dim_type.set, n - count, count)
        vs = [f"v{k}" for k in range(count)]
        bounds = " and ".join(f"0 <= {v} < {e}" for v, e in zip(vs, shape))
        box = isl.Set(f"{{ [{', '.join(vs)}] : {bounds} }}").align_params(outer.get_space())
        full = outer.flat_product(box)
        missing = full.subtract(values)
        if missing.is_empty():
            return False
        data = [n - count + d for d, a in enumerate(tile) if a.kind == "data"]
        if len(data) < count:  # the reduction's tile loops must be whole
            short = values
            for dim in reversed(data):
                short = short.project_out(isl.dim_type.set, dim, 1)
                full = full.project_out(isl.dim_type.set, dim, 1)
            cut = full.subtract(short)
            if not cut.is_empty():
                names = ", ".join(f"'{a.name}'" for a in tile if a.kind == "reduce")
                raise self.fail(
                    f"the reduction's tile loop {names} runs part of a tile{_sample(cut)}: the "
                    "instruction would add the products past the end of the reduction; make "
                    "its length a multiple of the tile, padding the operands with zeros "
                    "(sl.if_then_else(k < n, A[i, k], 0))"
                )
        return True

    def _inside(self, tile: TileOf, origins: isl.Set, p: Placed, plan: TensorPlan) -> None:
        """A tile cut by the edge of the domain is read or written whole: it must lie in its
        buffer, a staged box (never a tensor in global memory, past whose end it would reach),
        whose extents grow to hold it where they are short (the rows and columns past the
        footprint are never filled, and feed only outputs that are not stored)."""
        stage = self.schedule[tile.op]
        storage = self.placement.storage.get(tile.op)
        scope = self.placement.scope(stage)
        if storage is None or scope == "global" or storage.leads:
            raise self.fail(
                f"the edge of the domain cuts a tile, which the instruction moves whole, and "
                f"'{stage.name}' is a tensor in {scope} memory, past whose end it would reach; "
                "stage it in shared memory (cache_read) or make the sizes multiples of the tile"
            )
        if tile.op is self.stage.op:
            where = isl.Map.from_pw_multi_aff(p.store_index)
        else:
            access = next(a for a in p.stmt.reads if a.op is tile.op)
            read = p.to_root.apply_range(access.relation).reset_tuple_id(isl.dim_type.out)
            shift = isl.Map.from_pw_multi_aff(p.offsets[tile.op]).reset_tuple_id(isl.dim_type.out)
            where = read.sum(shift.neg())
        reach = where.intersect_domain(origins).range().intersect_params(self.params.context)
        for dim, size in zip(tile.dims, tile.shape):
            last = reach.dim_max_val(dim)
            box = storage.constant[dim]
            if box is None or not last.is_int():
                raise self.fail(
                    f"the edge of the domain cuts a tile, which the instruction moves whole, "
                    f"and the box of '{stage.name}' has no constant extent along its dimension "
                    f"{dim} to hold it; compute it at a loop of constant tiles"
                )
            storage.constant[dim] = max(box, int(last.to_python()) + size)

    def _check_fragment_boxes(self, plan: TensorPlan) -> None:
        for tile in (plan.dst, *plan.srcs):
            stage = self.schedule[tile.op]
            if self.placement.scope(stage) not in FRAGMENT_SCOPES:
                continue
            storage = self.placement.storage.get(tile.op)
            extents = (
                list(storage.constant)
                if storage is not None
                else [_constant_extent(n) for n in tile.op.shape]
            )
            for dim, size in zip(tile.dims, tile.shape):
                if extents[dim] is None or extents[dim] % size:
                    held = "a symbolic number of" if extents[dim] is None else extents[dim]
                    raise self.fail(
                        f"the fragment '{stage.name}' holds {held} elements along its "
                        f"dimension {dim}, not a multiple of its tiles' {size}; compute it at "
                        "a loop whose tiles are whole multiples of the instruction's"
                    )

    # -- what each intrinsic needs --------------------------------------------------------

    def _mma(self, inner: tuple[Axis, ...], roots: list[Axis]) -> TensorPlan:
        stage, op = self.stage, self.stage.op
        body = op.expr
        if not isinstance(body, Reduce) or body.combiner.name != "sum":
            raise self.fail(f"'{stage.name}' is not a sum; mma_sync computes C += A @ B")
        if body.where is not None and not affine_condition(body.where):
            raise self.fail(
                "a reduction whose where= is not affine cannot run as an mma tile; the "
                "instances an affine one leaves out must not cut a tile"
            )
        group = self.intrin.warpgroup
        accumulator = "wgmma.accumulator" if group else "wmma.accumulator"
        self._scope(stage, accumulator, "the accumulator (s.cache_write(C, ...))")
        if op.dtype not in (("float32",) if group else ACCUMULATORS):
            raise self.fail(
                f"the accumulator is {op.dtype}; {self.intrin!r} accumulates in float32"
            )
        m, n, k = roots
        nd = len(op.axis)
        data = list(stage.root_axes[:nd])
        if m.kind != "data" or n.kind != "data" or k.kind != "reduce":
            raise self.fail(
                "the tile loops must be the rows (a data axis), the columns (a data axis) and "
                "the reduction (a reduce axis), in this order"
            )
        if (data.index(m), data.index(n)) != (nd - 2, nd - 1):
            raise self.fail(
                f"the accumulator's tile must lie along its last two dimensions (rows, "
                f"columns); '{inner[0].name}' and '{inner[1].name}' run along dimensions "
                f"{data.index(m)} and {data.index(n)}"
            )
        update = next(p for p in self.placement.placed[stage.name] if p.stmt.role == "update")
        reads = _product_reads(update.stmt.value)
        if reads is None:
            raise self.fail(
                "mma_sync computes sum(A[i, k] * B[k, j]); the reduction's source is not a "
                "product of two reads (each maybe cast to the accumulator's dtype)"
            )
        tiles = []
        for read in reads:
            steps = self._steps(update, read, roots)
            tiles.append((read, steps))
        a = next((t for t in tiles if t[1][1] is None), None)
        b = next((t for t in tiles if t[1][0] is None), None)
        if a is None or b is None or a is b:
            raise self.fail("one operand must not depend on the columns and one not on the rows")
        m_tile, n_tile, k_tile = self.intrin.shape
        a_scope, b_scope = ("shared", "shared") if group else ("wmma.matrix_a", "wmma.matrix_b")
        if group and self.placement.scope(self.schedule[a[0].tensor.op]) == accumulator:
            a_scope = accumulator  # A computed by the threads, held in registers
        a_tile = self._operand(a, a_scope, (0, 2), (m_tile, k_tile))
        b_tile = self._operand(b, b_scope, (2, 1), (k_tile, n_tile))
        dtypes = {a[0].tensor.op.dtype, b[0].tensor.op.dtype}
        self._operand_dtypes(dtypes)
        if group and self.intrin.shape[2] == K_FLOAT8:
            self._float8_k_major(a_tile, b_tile)
        if self.intrin.tf32 and op.dtype != "float32":
            raise self.fail(f"the accumulator is {op.dtype}; TF32 products sum in float32")
        dst = TileOf(op, (nd - 2, nd - 1), (m_tile, n_tile))
        return TensorPlan(
            stage.name,
            inner,
            {"init": "fill", "update": "mma"},
            dst,
            (a_tile, b_tile),
            warpgroup=group,
        )

    def _operand_dtypes(self, dtypes: set[str]) -> None:
        """float16 or bfloat16 operands, or float32 ones where TF32 was asked for: never a
        silent change of precision (8-bit floats: a warpgroup's k = 32 instruction)."""
        shown = " and ".join(sorted(dtypes))
        if self.intrin.warpgroup and (self.intrin.shape[2] == K_FLOAT8 or dtypes & set(FLOAT8)):
            self._float8_dtypes(dtypes, shown)
            return
        if self.intrin.tf32:
            if dtypes != {"float32"}:
                raise self.fail(f"the operands are {shown}; a TF32 instruction takes float32 data")
            return
        if dtypes == {"float32"}:
            raise self.fail(
                "the operands are float32, which the tensor cores multiply only as TF32 "
                "(a 10-bit mantissa); ask for it with tf32=True in the intrinsics, or keep "
                "this product on the CUDA cores"
            )
        if len(dtypes) != 1 or not dtypes <= set(OPERANDS):
            raise self.fail(
                f"the operands are {shown}; mma_sync multiplies two float16 or two bfloat16 "
                "matrices (or, with tf32=True, two float32 ones)"
            )

    def _float8_dtypes(self, dtypes: set[str], shown: str) -> None:
        """8-bit floats, either kind for each operand, take the k = 32 instruction, and only
        they do."""
        k = self.intrin.shape[2]
        if not dtypes <= set(FLOAT8):
            raise self.fail(
                f"the operands are {shown}; wgmma(k={K_FLOAT8}) multiplies 8-bit floats "
                "(float8_e4m3fn, float8_e5m2) and wgmma(k=16), the default, float16 or "
                "bfloat16 ones: give both operands dtypes of one kind and use its intrinsic"
            )
        if k != K_FLOAT8:
            raise self.fail(
                f"the operands are {shown}, which wgmma multiplies {K_FLOAT8} along k at a "
                f"time (32 bytes of a row); use sl.intrin.wgmma(n={self.intrin.shape[1]}, "
                f"k={K_FLOAT8}) and split the reduction by {K_FLOAT8}"
            )

    def _float8_k_major(self, a: TileOf, b: TileOf) -> None:
        """wgmma transposes only 16-bit operands in shared memory: 8-bit ones have K as
        their last (contiguous) dimension."""
        for tile, name, k, stored in ((a, "A", 1, "[M, K]"), (b, "B", 0, "[N, K]")):
            if tile.dims[k] != len(tile.op.shape) - 1:
                raise self.fail(
                    f"operand {name} ('{tile.op.name}') of 8-bit floats runs along K across "
                    "its rows (MN-major), and wgmma reads 8-bit operands only K-major, K "
                    f"contiguous; store {name} as {stored} (C[i, j] += A[i, k] * B[j, k])"
                )

    def _operand(self, found, scope: str, which: tuple[int, int], shape) -> TileOf:
        read, steps = found
        producer = self.schedule[read.tensor.op]
        self._scope(producer, scope, f"operand '{producer.name}'")
        nd = len(read.tensor.op.shape)
        dims = (steps[which[0]], steps[which[1]])
        if scope == "shared":  # wgmma reads the staged tile itself, either way round
            if sorted(d for d in dims if d is not None) != [nd - 2, nd - 1]:
                raise self.fail(
                    f"'{producer.name}' holds its tile along dimensions {dims}; the tile must "
                    "lie along its last two dimensions"
                )
            if producer.swizzle_bytes != 128:
                raise self.fail(
                    f"wgmma reads '{producer.name}' from shared memory in the 128-byte "
                    f"swizzled layout; ask for it with s[{producer.name}].swizzle(128)"
                )
            return TileOf(read.tensor.op, dims, shape)
        if dims != (nd - 2, nd - 1):
            raise self.fail(
                f"'{producer.name}' holds its tile along dimensions {dims}; a fragment's tile "
                "lies along its last two dimensions, rows first"
            )
        return TileOf(read.tensor.op, dims, shape)

    def _load(self, inner: tuple[Axis, ...], roots: list[Axis]) -> TensorPlan:
        stage, op = self.stage, self.stage.op
        self._scope(stage, self.intrin.scope, "the fragment this loads")
        dims = self._own_dims(inner, roots)
        (p,) = self.placement.placed[stage.name]
        read = _copied_read(p.stmt.value)
        if read is None or read.dtype != op.dtype:
            raise self.fail("load_matrix copies a tensor: the stage's body must be one read")
        if self.intrin.scope != "wmma.accumulator":
            self._operand_dtypes({op.dtype})
        steps = self._steps(p, read, roots)
        src = TileOf(read.tensor.op, (steps[0], steps[1]), self.intrin.shape)
        return TensorPlan(
            stage.name, inner, {"compute": "load"}, TileOf(op, dims, src.shape), (src,)
        )

    def _store(self, inner: tuple[Axis, ...], roots: list[Axis]) -> TensorPlan:
        stage, op = self.stage, self.stage.op
        dims = self._own_dims(inner, roots, fragment=False)
        (p,) = self.placement.placed[stage.name]
        read = _copied_read(p.stmt.value)
        if read is None:
            raise self.fail("store_matrix copies an accumulator: the body must be one read")
        producer = self.schedule[read.tensor.op]
        accumulator = "wgmma.accumulator" if self.intrin.warpgroup else "wmma.accumulator"
        self._scope(producer, accumulator, f"the stored '{producer.name}'")
        steps = self._steps(p, read, roots)
        nd = len(read.tensor.op.shape)
        if (steps[0], steps[1]) != (nd - 2, nd - 1):
            raise self.fail(f"the tile of '{producer.name}' must be its last two dimensions")
        src = TileOf(read.tensor.op, (nd - 2, nd - 1), self.intrin.shape)
        if self.intrin.tma:
            self._bulk_store(dims)
        return TensorPlan(
            stage.name,
            inner,
            {"compute": "store"},
            TileOf(op, dims, src.shape),
            (src,),
            warpgroup=self.intrin.warpgroup,
            bulk=self.intrin.tma,
        )

    def _bulk_store(self, dims: tuple[int, int]) -> None:
        """The copy engine stores boxes of a tensor in global memory whose rows run along its
        last dimension."""
        scope = self.placement.scope(self.stage)
        if scope != "global":
            raise self.fail(
                f"store_matrix(tma=True) stores to a tensor in global memory, but "
                f"'{self.stage.name}' is in {scope} memory; use store_matrix without tma"
            )
        last = len(self.stage.op.shape) - 1
        if dims[1] != last:
            raise self.fail(
                f"store_matrix(tma=True) stores rows of the tile along '{self.stage.name}''s "
                "last dimension, but its columns run along another; reorder the tile loops "
                "or use store_matrix without tma"
            )

    def _own_dims(self, inner, roots, fragment: bool = True) -> tuple[int, int]:
        data = list(self.stage.root_axes[: len(self.stage.op.axis)])
        if any(r.kind != "data" for r in roots):
            raise self.fail("a copy's tile loops are data axes")
        dims = (data.index(roots[0]), data.index(roots[1]))
        nd = len(data)
        if fragment and dims != (nd - 2, nd - 1):
            raise self.fail(
                f"'{inner[0].name}' and '{inner[1].name}' must run along the fragment's last two "
                "dimensions, rows first (reorder them)"
            )
        return dims

    def _scope(self, stage: Stage, scope: str, what: str) -> None:
        have = self.placement.scope(stage)
        if have != scope:
            raise self.fail(f"{what} '{stage.name}' has scope '{have}'; it must be '{scope}'")

    def _steps(self, p: Placed, read: Read, roots: list[Axis]) -> list[int | None]:
        """For each tile loop's root variable, the tensor dimension a unit step of it moves
        `read` along (by exactly one), or None where the read does not move."""
        access = next(a for a in p.stmt.reads if a.read is read)
        rel = access.relation
        names = self.stage.root_axes
        n = rel.dim(isl.dim_type.in_)
        xs = [f"x{k}" for k in range(n)]
        found: list[int | None] = []
        for root in roots:
            k = names.index(root)
            moved = [f"{x} + 1" if j == k else x for j, x in enumerate(xs)]
            space = p.stmt.root_space
            step = isl.Map(f"{{ {space}[{', '.join(xs)}] -> {space}[{', '.join(moved)}] }}")
            step = step.align_params(rel.get_space())
            pairs = rel.range_product(step.apply_range(rel)).range().unwrap()
            deltas = pairs.deltas().intersect_params(self.params.context)
            found.append(self._unit(deltas, read, root))
        return found

    def _unit(self, deltas: isl.Set, read: Read, root: Axis) -> int | None:
        if deltas.is_empty():
            return None
        point = deltas.sample_point() if deltas.is_singleton() else None
        values = None
        if point is not None:
            n = deltas.dim(isl.dim_type.set)
            values = [
                int(point.get_coordinate_val(isl.dim_type.set, d).to_python()) for d in range(n)
            ]
        moved = None if values is None else [d for d, v in enumerate(values) if v]
        if values is None or len(moved) > 1 or any(values[d] != 1 for d in moved or []):
            raise self.fail(
                f"the read of '{read.tensor.op.name}' does not move by one element along one "
                f"dimension when '{root.name}' steps by one; a tile must be a dense 2-D block"
            )
        return moved[0] if moved else None


def _constant_extent(n: Expr) -> int | None:
    return int(n.value) if isinstance(n, Const) else None


def _coordinate(point: isl.Point, d: int) -> int:
    return int(point.get_coordinate_val(isl.dim_type.set, d).to_python())


def _product_reads(source: Expr) -> tuple[Read, Read] | None:
    if not isinstance(source, Binary) or source.op != "*":
        return None
    reads = []
    for side in (source.a, source.b):
        while isinstance(side, Cast):
            side = side.value
        if not isinstance(side, Read):
            return None
        reads.append(side)
    return reads[0], reads[1]


def _copied_read(body: Expr) -> Read | None:
    while isinstance(body, Cast):
        body = body.value
    return body if isinstance(body, Read) else None


def _sample(missing: isl.Set) -> str:
    point = missing.sample_point()
    params = [
        f"{missing.get_dim_name(isl.dim_type.param, d)} = "
        f"{point.get_coordinate_val(isl.dim_type.param, d).to_python()}"
        for d in range(missing.dim(isl.dim_type.param))
    ]
    return f" (e.g. where {', '.join(params)})" if params else ""
