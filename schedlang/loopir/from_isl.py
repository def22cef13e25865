"""isl's AST for the placed statements, translated into the loop IR.

isl generates the loops, with exact bounds and guards for every size; at each statement instance
it also gives, as expressions of the loop iterators, the values of the statement's root variables,
its store index and the box offsets of the staged tensors it reads. Those are substituted into the
statement's expression, and tensor reads become buffer loads.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import islpy as isl

from ..errors import InternalError, LoweringError
from ..ir.expr import (
    Binary,
    Cast,
    CommReducer,
    Compare,
    Const,
    Expr,
    Read,
    Select,
    Unary,
    Var,
    const,
)
from ..ir.tensor import Operation
from ..ir.visit import by_element, substitute, transform
from ..poly.compact_schedule import compact_schedules
from ..poly.isl_calls import Callbacks, OutOfOperations, budget
from ..poly.loops import deferred_fuses, deferred_splits
from ..poly.placement import Placed
from ..poly.tensorize import TensorPlan, TileOf
from ..schedule import records as rec
from ..schedule.axis import Axis
from ..schedule.errors import AnnotationError, BindError, FactorError, message
from ..schedule.intrin import FRAGMENT_SCOPES
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from .core.nodes import Buffer, For, If, Let, Load, MatrixOp, Seq, Stmt, Store, Tile, seq
from .core.visit import walk_expr, walk_stmt
from .intrin.calls import intrinsic_calls
from .loops.deferred_loops import fused_loops, strip_mined
from .loops.unroll_limit import MAX_UNROLLED

_OPS = isl.ast_expr_op_type
_BINARY = {
    _OPS.add: "+",
    _OPS.sub: "-",
    _OPS.mul: "*",
    _OPS.div: "//",
    _OPS.fdiv_q: "//",
    _OPS.pdiv_q: "//",
    _OPS.pdiv_r: "%",
    _OPS.zdiv_r: "%",
    _OPS.max: "max",
    _OPS.min: "min",
    _OPS.and_: "and",
    _OPS.and_then: "and",
    _OPS.or_: "or",
    _OPS.or_else: "or",
}
# isl operations one statement's indices may take (`_leaf`): the examples' kernels take under
# 100 000 (the wgmma GEMM's), about a second; isl, which holds the GIL, is not interrupted by
# Ctrl-C, and a question past this many operations would take it minutes
LEAF_OPERATIONS = 1_000_000
_COMPARE = {_OPS.eq: "==", _OPS.le: "<=", _OPS.lt: "<", _OPS.ge: ">=", _OPS.gt: ">"}


@dataclass(frozen=True)
class CrossThread:
    """A reduction store whose reduce loop is bound to thread indices: `value` is combined
    into the stored element across the threads of `tags`; or, without tags, a reduction into
    a fragment, combined across the lanes that hold the element (`gpu.fragment_lanes`)."""

    combiner: CommReducer
    value: Expr
    tags: tuple[str, ...]


@dataclass
class _Leaf:
    placed: Placed
    roots: list[isl.AstExpr]
    store: list[isl.AstExpr]
    offsets: dict[Operation, list[isl.AstExpr]]
    threads: dict[int, isl.AstExpr]  # the value of each schedule dimension bound to a thread
    dims: tuple[int, ...]  # the schedule dimension of each loop of the build's space here


def _pieces(pma: isl.PwMultiAff, iter_to_dom: isl.PwMultiAff, build: isl.AstBuild):
    moved = pma.pullback_pw_multi_aff(iter_to_dom)
    return [build.expr_from_pw_aff(moved.get_pw_aff(d)) for d in range(moved.dim(isl.dim_type.out))]


def _offsets(p: Placed, op: Operation, iter_to_dom, build: isl.AstBuild, at: _Space):
    """The box offsets of `op` as `p` reads it, as expressions of the loop iterators.

    They are functions of the loops around the point where `op` is computed. Pulled back
    through the statement's domain, where a block loop split and fused with another is a
    quasi-affine function of the domain, isl may split them into many pieces (a select per
    piece, and a register tile indexed by selects lives in local memory); then they are read
    off those loops' iterators instead."""
    pma = p.offsets[op]
    if pma.n_piece() <= 1:
        return _pieces(pma, iter_to_dom, build)
    axes, on_loops = p.offsets_on_loops[op]
    wanted = [p.template.index(("dim", a)) for a in axes]
    if not all(d in at.position for d in wanted):  # a loop isl does not emit here (one value)
        return _pieces(pma, iter_to_dom, build)
    affs = isl.AffList.alloc(build.get_ctx(), len(wanted))
    for d in wanted:
        affs = affs.add(at.value(d))
    loops = isl.Space.set_from_params(at.space.params()).add_dims(isl.dim_type.set, len(wanted))
    select = isl.MultiAff.from_aff_list(at.space.map_from_domain_and_range(loops), affs)
    moved = on_loops.pullback_multi_aff(select.align_params(on_loops.get_space()))
    return [build.expr_from_pw_aff(moved.get_pw_aff(d)) for d in range(moved.dim(isl.dim_type.out))]


class _Space:
    """The build's schedule space at a leaf: the loops around it that isl keeps there (one
    with a single value has none), each named ``c<k>`` for the schedule dimension ``dims[k]``
    of the statement's (`compact_schedules`); `position` is where each is in the space."""

    def __init__(self, build: isl.AstBuild, dims: tuple[int, ...]) -> None:
        self.space = build.get_schedule_space()
        self.dims = dims
        self.local = isl.LocalSpace.from_space(self.space)
        n = self.space.dim(isl.dim_type.set)
        depths = [int(self.space.get_dim_name(isl.dim_type.set, k)[1:]) for k in range(n)]
        # the padding after the statement's own dimensions is constant: isl keeps none of it
        self.position = {dims[depth]: k for k, depth in enumerate(depths) if depth < len(dims)}

    def value(self, d: int) -> isl.Aff:
        """Schedule dimension `d` (one of `position`) as a function of the loops."""
        return isl.Aff.var_on_domain(self.local, isl.dim_type.set, self.position[d])


def _thread_values(
    schedule: Schedule, p: Placed, iter_to_dom, build: isl.AstBuild, at: _Space
) -> dict[int, isl.AstExpr]:
    """The value of each of `p`'s schedule dimensions bound to a thread, at the leaf `build`
    is at. Where the dimension is in the build's schedule space, read off it: its iterator
    where isl emits a loop of it, else the value isl gives it there. Recovering it from the
    statement's domain (converting its schedule map, the splits' and fuses' divisions
    included) took up to a tenth of a second a statement; that is left for the dimensions
    the space leaves out."""
    dims = [
        d
        for d, entry in enumerate(p.template)
        if entry[0] == "dim"
        and schedule[entry[1].stage].binds.get(entry[1], "").startswith("threadIdx")
    ]
    if not dims:
        return {}
    n = p.sched.dim(isl.dim_type.out)
    found = {}
    for d in dims:
        if d in at.position:
            found[d] = build.expr_from_pw_aff(isl.PwAff.from_aff(at.value(d)))
            continue
        only = p.sched.project_out(isl.dim_type.out, d + 1, n - d - 1)  # one dimension at a
        only = only.project_out(isl.dim_type.out, 0, d)  # time: all of them cost more
        value = isl.PwMultiAff.from_map(only).pullback_pw_multi_aff(iter_to_dom)
        found[d] = build.expr_from_pw_aff(value.get_pw_aff(0))
    return found


def generate(
    schedule: Schedule,
    placed: list[Placed],
    extents: dict[str, dict[Axis, int | None]],
    cross_thread: set[Axis],
    params_context: isl.Set,
    param_vars: dict[str, Var],
    buffers: dict[Operation, Buffer],
    index_dtype: str = "int32",
    plans: dict[str, TensorPlan] | None = None,
) -> Stmt:
    """The loop nest of `placed` statements, and its cross-thread reductions.

    `buffers` gives each tensor's buffer and `extents` each stage's loop extents (constant
    ones) where it is computed. The stores of reductions over a loop in `cross_thread` (a
    reduce axis bound to threadIdx.*) are returned with what `lower_thread_reductions` needs.
    Loop variables and the index arithmetic isl generates have the dtype `index_dtype`
    (`index_type`); the algorithm's axes and sizes are cast where theirs differs. The
    statements of tensorized stages (`plans`, their domains already one instance per tile)
    become `MatrixOp`s at their tiles' bases.
    """
    by_name = {p.stmt.name: p for p in placed}
    leaves: list[_Leaf] = []
    # equalities made explicit first: isl's AST generation then runs about 10% faster
    compact = compact_schedules([p.sched.detect_equalities() for p in placed])

    def at_domain(node: isl.AstNode, build: isl.AstBuild) -> isl.AstNode:
        sched = isl.Map.from_union_map(build.get_schedule())
        name = sched.get_tuple_name(isl.dim_type.in_)
        p = by_name[name]
        dims = compact.dims[name]
        try:
            with budget(sched.get_ctx(), LEAF_OPERATIONS):
                leaves.append(_leaf(schedule, p, sched, build, _Space(build, dims)))
        except OutOfOperations:
            _refuse_leaf(schedule[p.stmt.stage])
        return node.set_annotation(isl.Id(f"leaf{len(leaves) - 1}"))

    build = isl.AstBuild.from_context(params_context)
    with Callbacks() as calls:
        build, _handle = build.set_at_each_domain(calls.wrap(at_domain, lambda node, _: node))
        union = compact.maps[0].to_union_map()
        for m in compact.maps[1:]:
            union = union.union(m.to_union_map())
        ast = build.node_from_schedule_map(union)
    translator = _Translator(
        schedule, extents, leaves, param_vars, buffers, cross_thread, index_dtype, plans or {}
    )
    body = translator.node(ast)
    return translator.keep_block_loops(body), translator.reductions


def _leaf(schedule: Schedule, p: Placed, sched: isl.Map, build: isl.AstBuild, at: _Space):
    """What a statement instance needs, as expressions of the loop iterators around it."""
    iter_to_dom = isl.PwMultiAff.from_map(sched.reverse())
    return _Leaf(
        p,
        _pieces(p.root_values, iter_to_dom, build),
        _pieces(p.store_index, iter_to_dom, build),
        {op: _offsets(p, op, iter_to_dom, build, at) for op in p.offsets},
        _thread_values(schedule, p, iter_to_dom, build, at),
        at.dims,
    )


def _refuse_leaf(stage: Stage) -> None:
    """isl ran out of `LEAF_OPERATIONS` recovering a statement's indices from its loops:
    loops fused across tails (a split that does not divide) give a fused index whose
    inverse has cases that multiply with every loop fused."""
    fuses = [r for r in stage.relations if isinstance(r, rec.Fuse)]
    what = (
        f"isl could not recover the indices of '{stage.name}' from its loops within "
        f"{LEAF_OPERATIONS} operations"
    )
    if not fuses:
        raise LoweringError(f"In schedule for '{stage.name}': {what}; simplify its loop nest")
    fuse = max(fuses, key=lambda r: len(r.axes))
    call = f"fuse({', '.join(a.name for a in fuse.axes)})"
    raise FactorError(
        message(
            stage.name,
            call,
            fuse.loc,
            f"{what}: the fused loops have tails (splits that do not divide), and the "
            "cases of the fused index multiply with every loop fused; fuse fewer loops, or "
            "split by factors that divide the extents",
        )
    )


class _Translator:
    def __init__(
        self,
        schedule,
        extents,
        leaves,
        param_vars,
        buffers,
        cross_thread=(),
        itype="int32",
        plans=None,
    ) -> None:
        self.schedule = schedule
        self.plans: dict[str, TensorPlan] = plans or {}
        self.itype = itype
        self.extents = extents
        self.cross_thread = cross_thread
        self.reductions: dict[Store, CrossThread] = {}
        self.leaves = leaves
        self.param_vars = param_vars
        self.buffers = buffers
        self.iterators: dict[str, Var] = {}
        self.auto_unrolled: dict[str, set[Axis]] = {}  # per stage, `_auto_unrolled`
        self.deferred: dict[str, dict] = {}  # per stage, its deferred splits (`_deferred`)
        self.fused_groups: dict[str, dict] = {}  # per stage, its deferred fuses (`_fused`)
        self.var_axis: dict[Var, Axis | None] = {}  # each loop variable's axis
        self.fusing: set[int] = set()  # the deferred fuses whose nests are being made
        self.used_names: set[str] = set()
        self.active: set[int] = set()  # schedule dimensions of the loops around the node
        # id of a statement -> the root slot of its stage and the blockIdx tags it is bound to
        self.block_tags: dict[int, tuple[tuple, set[str]]] = {}

    def const(self, value: int) -> Const:
        return const(value, self.itype)

    def node(self, node: isl.AstNode) -> Stmt:
        kind = node.get_type()
        if kind == isl.ast_node_type.block:
            children = node.block_get_children()
            return seq(*[self.node(children.get_at(k)) for k in range(children.n_ast_node())])
        if kind == isl.ast_node_type.for_:
            return self._for(node)
        if kind == isl.ast_node_type.if_:
            cond = self.expr(node.if_get_cond())
            then = self.node(node.if_get_then_node())
            other = self.node(node.if_get_else_node()) if node.if_has_else_node() else None
            return If(cond, then, other)
        if kind == isl.ast_node_type.user:
            return self._user(node)
        if kind == isl.ast_node_type.mark:
            return self.node(node.mark_get_node())
        raise InternalError(f"unexpected isl AST node {node}")

    def _axis_at(self, node: isl.AstNode, depth: int) -> tuple[int, Axis | None]:
        """The schedule dimension of the loop `node` at `depth` of the build's space (its
        statements' `dims`), and its axis (that of the first statement with one there)."""
        dims: list[int] = []
        found: list[Axis] = []

        def visit(n: isl.AstNode) -> bool:
            if n.get_type() == isl.ast_node_type.user and not found:
                leaf = self.leaves[int(n.get_annotation().get_name()[4:])]
                dims.append(leaf.dims[depth])  # the same at every statement under the loop
                entry = leaf.placed.template[dims[-1]]
                if entry[0] == "dim":
                    found.append(entry[1])
            return not found

        with Callbacks() as calls:  # a Ctrl-C in `visit` comes out as KeyboardInterrupt
            node.foreach_descendant_top_down(calls.wrap(visit, lambda n: False))
        return dims[0], found[0] if found else None

    def _for(self, node: isl.AstNode) -> Stmt:
        name = node.for_get_iterator().get_id().get_name()
        dim, axis = self._axis_at(node, int(name[1:]))
        split = self._deferred(axis)  # then the loop runs over the split's parent's values
        label = name if axis is None else split.parent.name if split else axis.name
        var = Var(self._unique(label), self.itype, "loop")
        self.var_axis[var] = axis
        group = self._fused(axis)  # the outermost loop isl made of a deferred fuse's
        if group is not None and id(group) in self.fusing:
            group = None
        if group is not None:
            self.fusing.add(id(group))
        self.iterators[name] = var
        low = self.expr(node.for_get_init())
        upper = self._upper(node.for_get_cond(), name)
        inc = node.for_get_inc()
        if inc.get_type() != isl.ast_expr_type.int:
            raise InternalError(f"isl produced a loop with step {inc}")
        step = int(inc.get_val().to_python())
        kind, thread = self._kind(axis)
        if step != 1:
            return self._strided(node, axis, var, name, dim, low, upper, step, kind)
        self.active.add(dim)
        body = self.node(node.for_get_body())
        self.active.discard(dim)
        extent = _fold(Binary("-", upper, low, self.itype))
        if split is not None:
            return strip_mined(self, split, var, low, upper, extent, body, kind, thread)
        if group is not None:
            self.fusing.discard(id(group))
            return fused_loops(self, group, For(var, low, extent, kind, body, thread))
        if kind == "bound":
            return self._bound(axis, var, low, _fold(upper), body)
        full_vthread = kind == "vthread" and self.extents[axis.stage].get(axis) is not None
        if (kind in ("unrolled", "vectorized") or full_vthread) and not isinstance(extent, Const):
            # a constant trip count, the tail guarded: unrolled copies, vector lanes and the
            # virtual threads' registers need one
            guard = Compare("<", var, upper)
            if not _is_zero(low):
                guard = Binary("and", Compare(">=", var, low), guard, "bool")
            return For(var, self.const(0), self._full(axis, kind, 1), kind, If(guard, body), thread)
        return For(var, low, extent, kind, body, thread)

    def _deferred(self, axis: Axis | None) -> rec.Split | None:
        """The nparts-split of a symbolic extent whose outer loop `axis` is (`poly.loops`)."""
        if axis is None:
            return None
        if axis.stage not in self.deferred:
            stage = self.schedule[axis.stage]
            self.deferred[axis.stage] = deferred_splits(stage, self.extents[stage.name])
        return self.deferred[axis.stage].get(axis)

    def _fused(self, axis: Axis | None):
        """The deferred fuse `axis` is a root loop of (`poly.loops`), or None."""
        if axis is None:
            return None
        if axis.stage not in self.fused_groups:
            stage = self.schedule[axis.stage]
            groups = deferred_fuses(stage, self.extents[stage.name])
            self.fused_groups[axis.stage] = {a: g for g in groups for a in g.components}
        return self.fused_groups[axis.stage].get(axis)

    def _full(self, axis: Axis, kind: str, step: int) -> Const:
        """The constant trip count that an unrolled or vectorized loop with a tail runs (its
        axis's full extent, the tail guarded), or an error naming the primitive."""
        full = self.extents[axis.stage].get(axis)
        if full is None:
            word = {"unrolled": "unroll", "vectorized": "vectorize"}[kind]
            record = self.schedule.record_for(rec.Annotate, axis)
            raise AnnotationError(
                message(
                    axis.stage,
                    f"{word}({axis.name})",
                    record.loc,
                    f"'{axis.name}' has no constant extent here, and {word} needs one; split it "
                    f"by a constant factor first and {word} the inner loop",
                )
            )
        return self.const(-(-full // step))

    def _kind(self, axis: Axis | None) -> tuple[str, str | None]:
        """The loop kind the schedule asked for on `axis`, and its thread tag."""
        if axis is None:
            return "serial", None
        stage = self.schedule[axis.stage]
        if axis in stage.binds:
            tag = stage.binds[axis]
            return ("vthread", None) if tag == "vthread" else ("bound", tag)
        if axis not in stage.annotations:
            if stage.name not in self.auto_unrolled:
                self.auto_unrolled[stage.name] = self._auto_unrolled(stage)
            if axis in self.auto_unrolled[stage.name]:
                return "unrolled", None
        return stage.annotations.get(axis, "serial"), None

    def _auto_unrolled(self, stage: Stage) -> set[Axis]:
        """The loops `pragma(scope, "auto_unroll_max_step", steps)` unrolls: from the innermost
        loop of the stage out to `scope`, each of constant extent and neither bound nor
        annotated, while their extents multiply to at most `steps` (and to the unroll limit)."""
        found: set[Axis] = set()
        extents = self.extents.get(stage.name, {})
        for scope, (steps, loc) in stage.auto_unroll.items():
            if scope not in stage.leaves:
                call = f'pragma({scope.name}, "auto_unroll_max_step", {steps})'
                raise AnnotationError(
                    message(
                        stage.name,
                        call,
                        loc,
                        f"'{scope.name}' was split or fused after the pragma; give it on one of "
                        "the loops that replaced it",
                    )
                )
            product = 1
            for leaf in reversed(stage.leaves[stage.leaves.index(scope) :]):
                extent = extents.get(leaf)
                if extent is None or leaf in stage.binds or leaf in stage.annotations:
                    break
                product *= extent
                if product > min(steps, MAX_UNROLLED):
                    break
                found.add(leaf)
        return found

    def _strided(self, node, axis, var: Var, name: str, dim: int, low, upper, step, kind: str):
        """A loop isl steps by `step` (a sparse domain): count iterations, scale the index.
        The count keeps the loop's kind (a thread index cannot step: that is an error)."""
        if kind == "bound":
            stage = self.schedule[axis.stage]
            raise BindError(
                message(
                    stage.name,
                    f"bind({axis.name}, {stage.binds[axis]})",
                    self.schedule.record_for(rec.Bind, axis).loc,
                    f"only every {step}th value of '{axis.name}' has work here (the loops "
                    "outside it select a strided subset), so it cannot be a thread index; "
                    "bind a loop that covers its range densely, or reorder the loops",
                )
            )
        self.iterators[name] = Binary(
            "+", low, Binary("*", self.const(step), var, self.itype), self.itype
        )
        self.active.add(dim)
        body = self.node(node.for_get_body())
        self.active.discard(dim)
        span = Binary("-", upper, low, self.itype)
        count = _fold(
            Binary(
                "//",
                Binary("+", span, self.const(step - 1), self.itype),
                self.const(step),
                self.itype,
            )
        )
        if kind in ("unrolled", "vectorized") and not isinstance(count, Const):
            guarded = If(Compare("<", var, count), body)
            return For(var, self.const(0), self._full(axis, kind, step), kind, guarded, None)
        return For(var, self.const(0), count, kind, body, None)

    def _upper(self, cond: isl.AstExpr, name: str) -> Expr:
        """The exclusive upper bound from isl's loop condition ``c <= e`` or ``c < e``."""
        op = cond.get_op_type()
        left = cond.get_op_arg(0)
        if left.get_type() != isl.ast_expr_type.id or left.get_id().get_name() != name:
            raise InternalError(f"unexpected loop condition {cond}")
        bound = self.expr(cond.get_op_arg(1))
        if op == _OPS.le:
            return _fold(Binary("+", bound, self.const(1), self.itype))
        if op == _OPS.lt:
            return bound
        raise InternalError(f"unexpected loop condition {cond}")

    def expr(self, e: isl.AstExpr) -> Expr:
        kind = e.get_type()
        if kind == isl.ast_expr_type.int:
            return const(int(e.get_val().to_python()), self.itype)
        if kind == isl.ast_expr_type.id:
            name = e.get_id().get_name()
            if name in self.iterators:
                return self.iterators[name]
            if name in self.param_vars:
                return _as(self.param_vars[name], self.itype)
            raise InternalError(f"unknown isl identifier {name}")
        op = e.get_op_type()
        args = [self.expr(e.get_op_arg(k)) for k in range(e.get_op_n_arg())]
        if op in _BINARY:
            out = "bool" if _BINARY[op] in ("and", "or") else self.itype
            result = Binary(_BINARY[op], args[0], args[1], out)
            for extra in args[2:]:
                result = Binary(_BINARY[op], result, extra, out)
            return result
        if op in _COMPARE:
            return Compare(_COMPARE[op], args[0], args[1])
        if op == _OPS.minus:
            return Unary("-", args[0], self.itype)
        if op in (_OPS.cond, _OPS.select):
            return Select(args[0], args[1], args[2], args[1].dtype)
        raise InternalError(f"unexpected isl expression {e}")

    def _user(self, node: isl.AstNode) -> Stmt:
        leaf = self.leaves[int(node.get_annotation().get_name()[4:])]
        st = leaf.placed.stmt
        roots = {v: self.expr(x) for v, x in zip(st.root_vars, leaf.roots)}
        for d, (extent, g) in leaf.placed.clamps.items():
            roots[st.root_vars[d]] = _clamped(roots[st.root_vars[d]], extent, g, self.itype)
        roots = {v: _as(x, v.dtype) for v, x in roots.items()}
        offsets = {op: [self.expr(x) for x in xs] for op, xs in leaf.offsets.items()}

        def to_load(n: Expr) -> Expr | None:
            if not isinstance(n, Read):
                return None
            shift = offsets.get(n.tensor.op)
            indices = n.indices
            if shift is not None:
                # A buffer expanded per virtual thread is indexed by those first.
                lead = tuple(shift[: len(shift) - len(indices)])
                box = shift[len(lead) :]
                indices = lead + tuple(Binary("-", i, o, self.itype) for i, o in zip(indices, box))
            kept = leaf.placed.folds.get(n.tensor.op)
            if kept is not None:  # a scan's tensor holding its last `kept` steps
                rows = Const(kept, self.itype)
                step = Binary("%", indices[0], rows, self.itype)
                indices = (Const(0, self.itype) if kept == 1 else step, *indices[1:])
            return Load(self.buffers[n.tensor.op], indices, n.dtype)

        def lower(value: Expr) -> Expr:
            return transform(substitute(value, roots), to_load)

        buffer = self.buffers[st.op]
        index = tuple(self.expr(x) for x in leaf.store)
        plan = self.plans.get(st.stage.name)
        if plan is not None and plan.call is not None:  # a declared intrinsic's calls
            n_data = len(st.stage.op.axis)
            firsts = [
                Compare("==", roots[v], _as(iv.dom.min, v.dtype))
                for v, iv in zip(st.root_vars[n_data:], st.stage.op.reduce_axis)
            ]
            store = Load(buffer, index, buffer.dtype)
            stmt = intrinsic_calls(plan, st.role, lower(st.value), store, firsts)
        elif plan is not None:
            stmt = self._matrix(plan, st.role, buffer, index, lower(st.value))
        elif len(st.writes) > 1:
            stmt = self._tuple_update(st, index, lower)
            stmt = If(lower(st.where), stmt) if st.where is not None else stmt
        elif st.role == "update":
            comb = st.stage.op.expr.combiner
            old = Load(buffer, index, buffer.dtype)
            # the combination may use the compute's indices (`visit.by_element`)
            new = substitute(lower(comb.result), {comb.lhs: old, comb.rhs: lower(st.value)})
            store = Store(buffer, index, new)
            tags = self._cross_thread_tags(leaf)
            if tags or buffer.scope in FRAGMENT_SCOPES:  # combined across threads or lanes
                if by_element(comb):
                    raise LoweringError(
                        f"'{st.stage.name}' reduces with '{comb.name}', whose identity or "
                        "combination uses the compute's indices, so threads cannot combine "
                        "their partial results; keep its reduce loops serial"
                    )
                self.reductions[store] = CrossThread(comb, lower(st.value), tags)
            stmt = If(lower(st.where), store) if st.where is not None else store
        else:
            stmt = Store(buffer, index, lower(st.value))
        collective = () if plan is None else plan.collective
        stmt = self._single_thread(leaf, stmt, collective)
        tags = {
            tag
            for entry in leaf.placed.template
            if entry[0] == "dim"
            and (tag := self.schedule[entry[1].stage].binds.get(entry[1], "")).startswith(
                "blockIdx"
            )
        }
        self.block_tags[id(stmt)] = (leaf.placed.template[0], tags)
        return stmt

    def _tuple_update(self, st, index: tuple, lower) -> Stmt:
        """One step of a reduction over tuples: every component's new value is computed from
        all the old ones before any is stored."""
        parts = [self.buffers[op] for op in st.writes]
        combiners = st.stage.op.expr.parts
        mapping = {}
        for comb, buffer, source in zip(combiners, parts, st.sources):
            mapping[comb.lhs] = Load(buffer, index, buffer.dtype)
            mapping[comb.rhs] = lower(source)
        news = [Var(self._unique(f"{b.name}.new"), b.dtype, "let") for b in parts]
        stmt: Stmt = seq(*(Store(b, index, v) for b, v in zip(parts, news)))
        for comb, v in reversed(list(zip(combiners, news))):
            stmt = Let(v, substitute(lower(comb.result), mapping), stmt)
        return stmt

    def keep_block_loops(self, stmt: Stmt) -> Stmt:
        """isl emits no loop for a dimension with one value, so a stage whose blockIdx loop
        has extent 1 would lose it, and with it the kernel of its own that the binding asked
        for (the GPU target runs loop nests without block loops together, as one block). The
        top-level nests of each root stage (its own and those of the stages computed at its
        loops) get back, outermost, a loop of extent 1 for every blockIdx tag their statements
        are bound to but no loop carries."""
        if isinstance(stmt, If):
            other = None if stmt.otherwise is None else self.keep_block_loops(stmt.otherwise)
            return If(stmt.cond, self.keep_block_loops(stmt.then), other)
        items = stmt.stmts if isinstance(stmt, Seq) else (stmt,)
        groups: list[tuple[object, list[Stmt]]] = []
        for item in items:
            slots = {self.block_tags[id(s)][0] for s in walk_stmt(item) if id(s) in self.block_tags}
            slot = slots.pop() if len(slots) == 1 else None
            if groups and slot is not None and groups[-1][0] == slot:
                groups[-1][1].append(item)
            else:
                groups.append((slot, [item]))
        return seq(*[self._with_block_loops(seq(*group)) for _, group in groups])

    def _with_block_loops(self, stmt: Stmt) -> Stmt:
        inside = list(walk_stmt(stmt))
        wanted = set().union(
            *(self.block_tags[id(s)][1] for s in inside if id(s) in self.block_tags)
        )
        present = {s.thread for s in inside if isinstance(s, For) and s.kind == "bound"}
        for tag in sorted(wanted - present):
            var = Var(self._unique(tag.replace("blockIdx.", "b")), self.itype, "loop")
            stmt = For(var, self.const(0), self.const(1), "bound", stmt, tag)
        return stmt

    def _cross_thread_tags(self, leaf: _Leaf) -> tuple[str, ...]:
        own = leaf.placed.stmt.stage.name
        axes = [
            e[1]
            for e in leaf.placed.template
            if e[0] == "dim" and e[1] in self.cross_thread and e[1].stage == own
        ]
        return tuple(sorted(self.schedule[a.stage].binds[a] for a in axes))

    def _matrix(self, plan: TensorPlan, role: str, buffer: Buffer, index, value: Expr) -> Stmt:
        """The `MatrixOp` of one tile of a tensorized statement: `index` and the indices of
        the loads in `value` are its tiles' bases (the tile loops are at 0 here)."""
        dst = self._tile(plan.dst, buffer, index)
        kind = plan.ops[role]
        if kind == "fill":
            return MatrixOp("fill", dst, (), value)
        srcs = []
        for tile in plan.srcs:
            wanted = self.buffers[tile.op]
            load = next(n for n in walk_expr(value) if isinstance(n, Load) and n.buffer is wanted)
            srcs.append(self._tile(tile, wanted, load.indices))
        return MatrixOp(kind, dst, tuple(srcs), clipped=plan.clipped, bulk=plan.bulk)

    def _tile(self, tile: TileOf, buffer: Buffer, base: tuple) -> Tile:
        lead = len(buffer.shape) - len(base)  # a buffer expanded per virtual thread
        dims = (tile.dims[0] + lead, tile.dims[1] + lead)
        return Tile(buffer, tuple(base), dims, tile.shape)

    def _single_thread(self, leaf: _Leaf, stmt: Stmt, collective: tuple[str, ...] = ()) -> Stmt:
        """A statement instance runs on one thread. isl emits no loop for a thread dimension
        with one value, and a statement with no loop of a tag its kernel uses would run on
        every thread of that tag; both are wrapped in a loop of the tag guarded to one thread,
        except stores to "local" buffers and fragments, which every thread needs its own copy
        of. A tensor instruction runs on all threads of its `collective` tags: threadIdx.x, a
        warp's lanes, and for a warpgroup's instruction threadIdx.y too, its warps."""
        present = set()
        for dim, entry in enumerate(leaf.placed.template):
            if entry[0] != "dim":
                continue
            stage = self.schedule[entry[1].stage]
            tag = stage.binds.get(entry[1])
            if tag is None or not tag.startswith("threadIdx"):
                continue
            present.add(tag)
            if dim in self.active:
                continue
            value = self.expr(leaf.threads[dim])
            var = Var(self._unique(entry[1].name), self.itype, "loop")
            loop = self._bound(entry[1], var, self.const(0), value, stmt)  # checks the extent
            stmt = replace(loop, body=If(Compare("==", var, value), stmt))
        scope = self.buffers[leaf.placed.stmt.op].scope
        if scope == "local" or scope in FRAGMENT_SCOPES:
            return stmt  # every thread keeps its own copy: each computes it (as in TE)
        for tag, extent in sorted(leaf.placed.kernel_threads.items()):
            if tag not in present and tag not in collective:
                var = Var(self._unique(tag.replace("threadIdx.", "t")), self.itype, "loop")
                guarded = If(Compare("==", var, self.const(0)), stmt)
                stmt = For(var, self.const(0), self.const(extent), "bound", guarded, tag)
        return stmt

    def _bound(self, axis: Axis, var: Var, low: Expr, upper: Expr, body: Stmt) -> Stmt:
        """A loop bound to a hardware index runs from 0 over a fixed extent: a block's thread
        count is fixed at launch. Where isl's bounds are narrower, a guard keeps the rest idle."""
        stage = self.schedule[axis.stage]
        tag = stage.binds[axis]
        full = self.extents[axis.stage].get(axis)
        conditions = [] if _is_zero(low) else [Compare(">=", var, low)]
        if tag.startswith("threadIdx"):
            if full is None:
                raise BindError(
                    message(
                        stage.name,
                        f"bind({axis.name}, {tag})",
                        self.schedule.record_for(rec.Bind, axis).loc,
                        f"'{axis.name}' has a symbolic extent, but a thread index needs a "
                        "constant one (the block size); split it by a constant factor and bind "
                        "the inner loop",
                    )
                )
            if not (isinstance(upper, Const) and upper.value == full):
                conditions.append(Compare("<", var, upper))
            extent: Expr = self.const(full)
        else:
            extent = upper
        for cond in conditions:
            body = If(cond, body)
        return For(var, self.const(0), extent, "bound", body, tag)

    def _unique(self, label: str) -> str:
        unique, k = label, 1
        while unique in self.used_names:
            unique = f"{label}_{k}"
            k += 1
        self.used_names.add(unique)
        return unique


def _is_zero(e: Expr) -> bool:
    return isinstance(e, Const) and e.value == 0


def _fold(e: Expr) -> Expr:
    """Fold ``(a + c1) - c2`` style constant arithmetic that isl's bounds produce."""
    if isinstance(e, Binary) and e.op in ("+", "-"):
        a, b = _fold(e.a), _fold(e.b)
        if isinstance(a, Const) and isinstance(b, Const):
            return const(a.value + b.value if e.op == "+" else a.value - b.value, e.dtype)
        if isinstance(b, Const) and b.value == 0:
            return a
        return Binary(e.op, a, b, e.dtype)
    return e


def param_expr(
    pa: isl.PwAff, context: isl.Set, param_vars: dict[str, Var], index_dtype: str = "int32"
) -> Expr:
    """`pa`, a function of the sizes only, as an expression of dtype `index_dtype`."""
    build = isl.AstBuild.from_context(context)
    translator = _Translator(None, {}, [], param_vars, {}, (), index_dtype)
    return translator.expr(build.expr_from_pw_aff(pa))


def set_expr(
    s: isl.Set, context: isl.Set, param_vars: dict[str, Var], index_dtype: str = "int32"
) -> Expr:
    """The condition that parameter set `s` holds, where `context` is known."""
    build = isl.AstBuild.from_context(context)
    translator = _Translator(None, {}, [], param_vars, {}, (), index_dtype)
    return translator.expr(build.expr_from_set(s))


def _as(e: Expr, dtype: str) -> Expr:
    """`e` in `dtype` (an algorithm's int32 axis in an int64 kernel, or the reverse)."""
    return e if e.dtype == dtype else Cast(e, dtype)


def _clamped(index: Expr, extent: int, g: int, dtype: str) -> Expr:
    """``min(index, extent - g + index % g)``: `index` where it is inside the tensor, an
    element of the tensor past its end, and whole aligned vectors of `g` lanes either way
    (`poly.box_fill`)."""
    last: Expr = Const(extent - 1, dtype)
    if g > 1:
        lane = Binary("%", index, Const(g, dtype), dtype)
        last = Binary("+", Const(extent - g, dtype), lane, dtype)
    return Binary("min", index, last, dtype)
