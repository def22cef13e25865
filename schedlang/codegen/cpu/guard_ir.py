"""The guard of `trampoline` as LLVM IR: what it reads of a call's arguments and checks, in
the order `trampoline`'s docstring gives. Apart from the runtime, which links a guard the disk
cache already holds without making any IR."""

from __future__ import annotations

from llvmlite import ir

from ..llvm.control import for_range
from . import jit as cpu_jit
from .guard_spec import GuardSpec
from .trampoline import C_CONTIGUOUS, NAME, UNUSUAL, WRITEABLE, ArrayLayout

_I8P = ir.PointerType(ir.IntType(8))
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)


def guard_text(spec: GuardSpec, layout: ArrayLayout) -> str:
    """The guard's LLVM IR."""
    count, sizes = len(spec.params), len(spec.size_limits)
    module = ir.Module(name="guard")
    module.triple = cpu_jit.host().target.triple
    module.data_layout = str(cpu_jit.host().machine.target_data)
    fn = ir.Function(module, ir.FunctionType(_I32, [_I64, _I64]), NAME)
    start = fn.append_basic_block("entry")
    unusual = fn.append_basic_block("unusual")
    ir.IRBuilder(unusual).ret(ir.Constant(_I32, UNUSUAL))
    b = ir.IRBuilder(start)
    pointers = b.alloca(_I8P, ir.Constant(_I32, max(1, count)))
    values = b.alloca(_I64, ir.Constant(_I32, max(1, sizes)))
    starts = b.alloca(_I64, ir.Constant(_I32, max(1, count)))  # each array's bytes
    ends = b.alloca(_I64, ir.Constant(_I32, max(1, count)))
    steps = iter(range(1 << 30))

    def require(cond: ir.Value) -> None:
        go = fn.append_basic_block(f"ok{next(steps)}")
        b.cbranch(cond, go, unusual)
        b.position_at_end(go)

    def field(obj: ir.Value, offset: int, typ: ir.Type) -> ir.Value:
        address = b.add(obj, ir.Constant(_I64, offset))
        return b.load(b.inttoptr(address, typ.as_pointer()))

    args, table = fn.args
    constants = b.inttoptr(table, _I64.as_pointer())

    def constant(k: int) -> ir.Value:  # entry 0, array type 1, dtype of parameter k - 2
        return b.load(b.gep(constants, [ir.Constant(_I32, k)]))

    require(b.icmp_signed("==", field(args, layout.tuple_size, _I64), _const(count)))
    found: dict[int, ir.Value] = {}
    for k, (dtype, written, dims) in enumerate(spec.params):
        obj = field(args, layout.tuple_items + 8 * k, _I64)
        require(b.icmp_unsigned("==", field(obj, layout.type, _I64), constant(1)))
        require(b.icmp_unsigned("==", field(obj, layout.descr, _I64), constant(2 + k)))
        require(b.icmp_signed("==", field(obj, layout.ndim, _I32), ir.Constant(_I32, len(dims))))
        need = C_CONTIGUOUS | (WRITEABLE if written else 0)
        flags = b.and_(field(obj, layout.flags, _I32), ir.Constant(_I32, need))
        require(b.icmp_unsigned("==", flags, ir.Constant(_I32, need)))
        shape = b.inttoptr(field(obj, layout.dims, _I64), _I64.as_pointer())
        elements = _const(1)
        for d, (value, size) in enumerate(dims):
            extent = b.load(b.gep(shape, [ir.Constant(_I32, d)]))
            if size < 0:
                require(b.icmp_signed("==", extent, _const(value)))
            elif size in found:
                require(b.icmp_signed("==", extent, found[size]))
            else:
                require(b.icmp_signed("<=", extent, _const(spec.size_limits[size])))
                found[size] = extent
                b.store(extent, b.gep(values, [ir.Constant(_I32, size)]))
            elements = b.mul(elements, extent)  # an array's own: numpy keeps its bytes < 2**63
        if spec.count_limit is not None:
            require(b.icmp_signed("<=", elements, _const(spec.count_limit)))
        data = field(obj, layout.data, _I64)
        b.store(b.inttoptr(data, _I8P), b.gep(pointers, [ir.Constant(_I32, k)]))
        end = b.add(data, b.mul(elements, _const(dtype.itemsize)))
        b.store(data, b.gep(starts, [ir.Constant(_I32, k)]))
        b.store(end, b.gep(ends, [ir.Constant(_I32, k)]))
    _require_apart(b, module, spec, starts, ends, require)
    entry_t = ir.FunctionType(_I32, [_I8P, _I8P])
    target = b.inttoptr(constant(0), entry_t.as_pointer())
    b.ret(b.call(target, [b.bitcast(pointers, _I8P), b.bitcast(values, _I8P)]))
    return str(module)


def _require_apart(b: ir.IRBuilder, module: ir.Module, spec: GuardSpec, starts, ends, require):
    """No output's bytes overlap another argument's (empty ranges overlap nothing). A loop
    over the outputs and the arguments rather than a check per pair: a kernel of a hundred
    outputs would otherwise give LLVM ten thousand branches to optimise (a minute)."""
    outputs = [k for k, (_, written, _) in enumerate(spec.params) if written]
    if not outputs:
        return
    table_t = ir.ArrayType(_I32, len(outputs))
    table = ir.GlobalVariable(module, table_t, "outputs")
    table.global_constant, table.linkage = True, "internal"
    table.initializer = ir.Constant(table_t, outputs)
    zero = ir.Constant(_I32, 0)
    with for_range(b, zero, ir.Constant(_I32, len(outputs)), "output") as o:
        k = b.load(b.gep(table, [zero, o]))
        lo, hi = (b.load(b.gep(bound, [k])) for bound in (starts, ends))
        with for_range(b, zero, ir.Constant(_I32, len(spec.params)), "other") as j:
            other_lo, other_hi = (b.load(b.gep(bound, [j])) for bound in (starts, ends))
            apart = b.or_(b.icmp_unsigned("<=", hi, other_lo), b.icmp_unsigned("<=", other_hi, lo))
            empty = b.or_(b.icmp_unsigned("==", lo, hi), b.icmp_unsigned("==", other_lo, other_hi))
            require(b.or_(b.or_(apart, empty), b.icmp_signed("==", j, k)))


def _const(value: int) -> ir.Constant:
    return ir.Constant(_I64, value)
