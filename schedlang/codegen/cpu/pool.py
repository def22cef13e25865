"""The CPU's parallel runtime, generated as LLVM IR: a fork-join over a small pool of threads.

Compiled kernels call ``schedlang_parallel_for(task, closure, n)`` for each ``parallel`` loop
(`parallel`). This module writes that function and its pool in LLVM IR, so the runtime needs
no C compiler on the user's machine, never enters Python (the GIL stays released for the whole
kernel call) and costs a few microseconds a loop instead of a Python thread pool's tens.

How a loop runs. ``[0, n)`` is cut into ``parts = min(threads, n)`` contiguous chunks of
near-equal size. The caller publishes the loop (task, closure, n, parts) and a new generation
number, then every participant (the caller and the workers) claims chunks until none is left:
one 64-bit word holds the generation (high half) and the next unclaimed chunk (low half), and a
chunk is claimed by a compare-and-swap on that word, so a worker still looking at an earlier
loop cannot claim a chunk of the next one. The caller returns when every chunk is done; chunks
of workers still asleep are simply claimed by whoever is awake. Statuses are combined by max.

Workers spin for a while after a loop (the next loop of a kernel usually follows at once) and
then sleep on a condition variable; the caller wakes them only when some are asleep.

Nested or concurrent loops: the pool serves one loop at a time. A loop that finds it busy (a
``parallel`` loop inside another's task, or a second thread calling a kernel meanwhile) runs
whole in its own thread, which is what nested parallelism reduces to on a pool of this size.

Fork: a child process has none of its parent's worker threads. A ``pthread_atfork`` handler
resets the pool in the child, which then starts its own workers on its first parallel loop.
Workers are started on first use, so a process that never runs a parallel loop has none.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from llvmlite import ir

from ..llvm.types import I8, I32, I64, PTR
from .pool_abi import PARALLEL_FOR, SETUP, STARTED

SPINS_BEFORE_SLEEP = 1 << 16  # a worker's pauses (tens of ns each) before it sleeps
SPINS_BEFORE_YIELD = 1 << 12  # the caller's pauses while others finish, before yielding
LOCK_BYTES = 64  # room for a glibc pthread_mutex_t / pthread_cond_t (40 / 48 bytes)

# a task: (closure, lo, hi) -> status; typed so that llvmlite can call through the pointer
TASK = ir.FunctionType(I32, [PTR, I64, I64]).as_pointer()


def pool_module(triple: str, atfork: str) -> str:
    """The runtime as LLVM IR text for the host `triple`; `atfork` names the C library's
    function that registers fork handlers (`ATFORK_NAMES`)."""
    module = ir.Module(name="schedlang_pool")
    module.triple = triple
    _Pool(module, triple.startswith(("x86_64", "i686", "i386")), atfork)
    return str(module)


class _Pool:
    def __init__(self, module: ir.Module, x86: bool, atfork: str) -> None:
        self.m = module
        self.x86 = x86
        self.atfork = atfork
        g = self._global
        self.threads = g("threads", I32)  # participants a loop may have: workers + caller
        self.started = g("started", I32)  # workers running
        self.busy = g("busy", I32)  # 1 while a loop runs
        self.word = g("word", I64)  # generation << 32 | next chunk
        self.done = g("done", I32)  # chunks finished in this generation
        self.status = g("status", I32)
        self.task = g("task", TASK)
        self.closure = g("closure", PTR)
        self.n = g("n", I64)
        self.parts = g("parts", I32)
        self.sleepers = g("sleepers", I32)
        self.mutex = g("mutex", ir.ArrayType(I8, LOCK_BYTES))
        self.cond = g("cond", ir.ArrayType(I8, LOCK_BYTES))
        self.registered = g("registered", I32)
        self.run = self._run_chunks()
        self.worker = self._worker()
        self.start = self._start()
        self._parallel_for()
        self._setup()
        self._started()

    # helpers

    def _global(self, name: str, t: ir.Type) -> ir.GlobalVariable:
        var = ir.GlobalVariable(self.m, t, f"pool.{name}")
        var.linkage = "internal"
        var.initializer = ir.Constant(t, None)
        var.align = 64 if isinstance(t, ir.ArrayType) else 8
        return var

    def _extern(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        existing = self.m.globals.get(name)
        return existing or ir.Function(self.m, ir.FunctionType(ret, args), name)

    def _function(self, name: str, ret: ir.Type, args: list[ir.Type], public=False):
        fn = ir.Function(self.m, ir.FunctionType(ret, args), name)
        if not public:
            fn.linkage = "internal"
        return fn, ir.IRBuilder(fn.append_basic_block("entry"))

    def _relax(self, b: ir.IRBuilder) -> None:
        """A spin-wait hint to the core (x86's ``pause``); nothing elsewhere."""
        if self.x86:
            b.call(self._extern("llvm.x86.sse2.pause", ir.VoidType(), []), [])

    def _get(self, b: ir.IRBuilder, var: ir.GlobalVariable, order="monotonic") -> ir.Value:
        return b.load_atomic(var, order, _size(var.value_type), typ=var.value_type)

    def _put(self, b: ir.IRBuilder, var: ir.GlobalVariable, value, order="monotonic") -> None:
        if not isinstance(value, ir.Value):
            value = ir.Constant(var.value_type, value)
        b.atomic_rmw("xchg", var, value, order)  # llvmlite's store_atomic wants typed pointers

    def _lock_call(self, b: ir.IRBuilder, name: str, *objects: ir.Value) -> None:
        b.call(self._extern(name, I32, [PTR] * len(objects)), list(objects))

    # the runtime's functions

    def _run_chunks(self) -> ir.Function:
        """``run(gen, task, closure, n, parts)``: claim and run chunks of loop `gen` until none
        is left or the pool has moved on to another loop."""
        fn, b = self._function("pool.run", ir.VoidType(), [I32, TASK, PTR, I64, I32])
        gen, task, closure, n, parts = fn.args
        with _loop(b) as (again, leave):
            word = self._get(b, self.word)
            same = b.icmp_unsigned("==", b.trunc(b.lshr(word, _i64(32)), I32), gen)
            chunk = b.trunc(word, I32)
            open_ = b.and_(same, b.icmp_unsigned("<", chunk, parts))
            _unless(b, open_, leave)
            claimed = b.extract_value(
                b.cmpxchg(self.word, word, b.add(word, _i64(1)), "acq_rel", "monotonic"), 1
            )
            _unless(b, claimed, again)
            k, count = b.zext(chunk, I64), b.zext(parts, I64)
            size, extra = b.udiv(n, count), b.urem(n, count)
            lo = b.add(b.mul(k, size), _umin(b, k, extra))
            hi = b.add(lo, b.add(size, b.zext(b.icmp_unsigned("<", k, extra), I64)))
            result = b.call(task, [closure, lo, hi])
            b.atomic_rmw("max", self.status, result, "monotonic")
            b.atomic_rmw("add", self.done, _i32(1), "release")
        b.ret_void()
        return fn

    def _worker(self) -> ir.Function:
        """A worker thread: wait for a new generation (spin, then sleep), run its chunks."""
        fn, b = self._function("pool.worker", PTR, [PTR])
        seen, spins = b.alloca(I32), b.alloca(I32)
        b.store(b.ptrtoint(fn.args[0], I32), seen)
        with _loop(b):
            mine = b.load(seen, typ=I32)
            b.store(_i32(0), spins)
            with _loop(b) as (_, spin_leave):  # spin for a while
                _unless(b, b.icmp_unsigned("==", self._generation(b, "acquire"), mine), spin_leave)
                count = b.add(b.load(spins, typ=I32), _i32(1))
                b.store(count, spins)
                _unless(b, b.icmp_unsigned("<", count, _i32(SPINS_BEFORE_SLEEP)), spin_leave)
                self._relax(b)
            self._sleep_while_generation_is(b, mine)
            gen = self._generation(b, "acquire")
            b.store(gen, seen)
            values = [self._get(b, v) for v in (self.task, self.closure, self.n, self.parts)]
            b.call(self.run, [gen, *values])
        b.unreachable()
        return fn

    def _generation(self, b: ir.IRBuilder, order: str) -> ir.Value:
        return b.trunc(b.lshr(self._get(b, self.word, order), _i64(32)), I32)

    def _sleep_while_generation_is(self, b: ir.IRBuilder, mine: ir.Value) -> None:
        """Sleep on the condition variable while no new loop is published. The caller reads
        `sleepers` after publishing and a sleeper reads the generation after counting itself,
        both sequentially consistent: one of the two sees the other."""
        self._lock_call(b, "pthread_mutex_lock", self.mutex)
        b.atomic_rmw("add", self.sleepers, _i32(1), "seq_cst")
        with _loop(b) as (_, leave):
            _unless(b, b.icmp_unsigned("==", self._generation(b, "seq_cst"), mine), leave)
            self._lock_call(b, "pthread_cond_wait", self.cond, self.mutex)
        b.atomic_rmw("sub", self.sleepers, _i32(1), "seq_cst")
        self._lock_call(b, "pthread_mutex_unlock", self.mutex)

    def _start(self) -> ir.Function:
        """``start(wanted)``: start workers until `wanted` run (fewer if the system refuses
        threads: their chunks are then claimed by the others)."""
        fn, b = self._function("pool.start", ir.VoidType(), [I32])
        create = self._extern("pthread_create", I32, [PTR, PTR, PTR, PTR])
        detach = self._extern("pthread_detach", I32, [I64])
        handle = b.alloca(I64)
        with _loop(b) as (_, leave):
            running = b.load(self.started, typ=I32)
            _unless(b, b.icmp_signed("<", running, fn.args[0]), leave)
            gen = b.inttoptr(self._generation(b, "monotonic"), PTR)
            ok = b.icmp_signed("==", b.call(create, [handle, _null(), self.worker, gen]), _i32(0))
            _unless(b, ok, leave)
            b.call(detach, [b.load(handle, typ=I64)])
            b.store(b.add(running, _i32(1)), self.started)
        b.ret_void()
        return fn

    def _parallel_for(self) -> None:
        fn, b = self._function(PARALLEL_FOR, I32, [TASK, PTR, I64], public=True)
        task, closure, n = fn.args
        spins = b.alloca(I32)
        threads = self._get(b, self.threads)
        alone = b.or_(b.icmp_signed("<=", threads, _i32(1)), b.icmp_signed("<=", n, _i64(1)))
        serial = b.append_basic_block("serial")
        pooled = b.append_basic_block("pooled")
        b.cbranch(alone, serial, pooled)
        b.position_at_end(serial)
        b.ret(b.call(task, [closure, _i64(0), _max0(b, n)]))
        b.position_at_end(pooled)
        took = b.extract_value(b.cmpxchg(self.busy, _i32(0), _i32(1), "acquire", "monotonic"), 1)
        run = b.append_basic_block("run")
        b.cbranch(took, run, serial)  # busy: a nested or concurrent loop runs whole here
        b.position_at_end(run)
        b.call(self.start, [b.sub(threads, _i32(1))])
        parts = b.trunc(_umin(b, b.sext(threads, I64), n), I32)
        for var, value in ((self.task, task), (self.closure, closure), (self.n, n)):
            self._put(b, var, value)
        self._put(b, self.parts, parts)
        self._put(b, self.done, 0)
        self._put(b, self.status, 0)
        gen = b.add(self._generation(b, "monotonic"), _i32(1))
        self._put(b, self.word, b.shl(b.zext(gen, I64), _i64(32)), "seq_cst")
        sleeping = b.icmp_signed(">", self._get(b, self.sleepers, "seq_cst"), _i32(0))
        wake = b.append_basic_block("wake")
        work = b.append_basic_block("work")
        b.cbranch(sleeping, wake, work)
        b.position_at_end(wake)
        self._lock_call(b, "pthread_mutex_lock", self.mutex)
        self._lock_call(b, "pthread_cond_broadcast", self.cond)
        self._lock_call(b, "pthread_mutex_unlock", self.mutex)
        b.branch(work)
        b.position_at_end(work)
        b.call(self.run, [gen, task, closure, n, parts])
        self._wait_for_chunks(b, parts, spins)
        result = self._get(b, self.status)
        self._put(b, self.busy, 0, "release")
        b.ret(result)

    def _wait_for_chunks(self, b: ir.IRBuilder, parts: ir.Value, spins: ir.Value) -> None:
        """Spin until every chunk is done, yielding the core after a while (a worker may be
        running a long chunk)."""
        yield_ = self._extern("sched_yield", I32, [])
        b.store(_i32(0), spins)
        with _loop(b) as (_, leave):
            finished = b.icmp_unsigned("==", self._get(b, self.done, "acquire"), parts)
            _unless(b, b.not_(finished), leave)
            count = b.add(b.load(spins, typ=I32), _i32(1))
            b.store(count, spins)
            with b.if_else(b.icmp_unsigned("<", count, _i32(SPINS_BEFORE_YIELD))) as (spin, give):
                with spin:
                    self._relax(b)
                with give:
                    b.call(yield_, [])

    def _setup(self) -> None:
        """``setup(threads)``: the loop's participants, and the fork handler (once)."""
        fn, b = self._function(SETUP, I32, [I32], public=True)
        self._put(b, self.threads, fn.args[0])
        first = b.extract_value(
            b.cmpxchg(self.registered, _i32(0), _i32(1), "seq_cst", "seq_cst"), 1
        )
        register = b.append_basic_block("register")
        done = b.append_basic_block("done")
        b.cbranch(first, register, done)
        b.position_at_end(register)
        child, cb = self._function("pool.child", ir.VoidType(), [])
        self._reset(cb)
        if self.atfork == "__register_atfork":  # glibc's pthread_atfork is a static wrapper
            atfork = self._extern(self.atfork, I32, [PTR, PTR, PTR, PTR])
            b.ret(b.call(atfork, [_null(), _null(), child, _null()]))
        else:
            atfork = self._extern(self.atfork, I32, [PTR, PTR, PTR])
            b.ret(b.call(atfork, [_null(), _null(), child]))
        b.position_at_end(done)
        b.ret(_i32(0))

    def _reset(self, b: ir.IRBuilder) -> None:
        """In a forked child: no workers, no loop running, fresh locks."""
        for var in (self.started, self.busy, self.sleepers, self.done):
            self._put(b, var, 0)
        for var in (self.mutex, self.cond):
            b.store(ir.Constant(var.value_type, None), var)
        b.ret_void()

    def _started(self) -> None:
        fn, b = self._function(STARTED, I32, [], public=True)
        b.ret(b.load(self.started, typ=I32))


def _size(t: ir.Type) -> int:
    return 4 if t == I32 else 8


def _i32(v: int) -> ir.Constant:
    return ir.Constant(I32, v)


def _i64(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def _null() -> ir.Constant:
    return ir.Constant(PTR, None)


def _umin(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_unsigned("<", x, y), x, y)


def _max0(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed(">", x, _i64(0)), x, _i64(0))


def _unless(b: ir.IRBuilder, cond: ir.Value, target: ir.Block) -> None:
    """Go on when `cond` holds, else jump to `target`."""
    go_on = b.append_basic_block()
    b.cbranch(cond, go_on, target)
    b.position_at_end(go_on)


@contextmanager
def _loop(b: ir.IRBuilder) -> Iterator[tuple[ir.Block, ir.Block]]:
    """An endless loop around the ``with`` block; yields its head (to go round again) and
    its exit. Code after the ``with`` continues at the exit."""
    head = b.append_basic_block("loop")
    leave = b.append_basic_block("loop.end")
    b.branch(head)
    b.position_at_end(head)
    yield head, leave
    if not b.block.is_terminated:
        b.branch(head)
    b.position_at_end(leave)
