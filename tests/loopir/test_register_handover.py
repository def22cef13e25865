"""The roles of a kernel with a producer warpgroup parted for its registers
(`gpu.register_handover`): what each side keeps, and the kernels left as they were."""

from __future__ import annotations

from schedlang.ir.expr import Compare, Var, const
from schedlang.loopir.core.nodes import Barrier, Buffer, For, If, MBarrier, Seq, SetRegisters, Store
from schedlang.loopir.core.printer import stmt_str
from schedlang.loopir.gpu.register_handover import consumer_registers, hand_over_registers
from schedlang.loopir.memory.bulk_pipeline import CONSUMER, PRODUCER

BLOCK = (32, 4, 3)  # two consumer warpgroups and a producer's
FULL = Buffer("full", (const(2),), "int64", "shared")
OUT = Buffer("out", (const(256),), "float32", "global")
LOCAL = Buffer("acc", (const(1),), "float32", "local")


def _producer_loop() -> For:
    z = Var("threadIdx.z.producer", "int32", PRODUCER)
    k = Var("k.producer", "int32", "axis")
    arrive = MBarrier("arrive", FULL, k % 2, 128)
    copies = For(k, const(0), const(8), "serial", arrive)
    picked = If(Compare("==", z, const(2)), copies)
    return For(z, const(0), const(3), "bound", picked, "threadIdx.z")


def _consumers(value: float) -> For:
    z = Var("threadIdx.z.consumer", "int32", CONSUMER)
    store = Store(OUT, (z * 128,), const(value, "float32"))
    return For(z, const(0), const(2), "bound", store, "threadIdx.z")


def test_the_roles_part_after_the_last_barrier_before_the_producers_loop():
    body = Seq((_consumers(1.0), Barrier(), _producer_loop(), _consumers(2.0), Barrier()))
    parted, registers = hand_over_registers(body, BLOCK)
    assert registers == consumer_registers(BLOCK) == 240
    text = stmt_str(parted)
    producer, consumer = text.split("else:")
    # the producer's side: its loop with 24 registers, none of the consumers' stores
    assert "set_registers(24, fewer)" in producer and "for k.producer" in producer
    assert "out[" not in producer.split("set_registers(24, fewer)")[1]
    # the consumers': their store after the barrier, the last barrier their own
    assert "set_registers(240, more)" in consumer and "out[" in consumer
    assert "barrier(first 256 threads)" in consumer and "mbarrier_arrive" not in consumer
    # what stood before the barrier (a store to memory) stays where every thread runs it
    assert text.index("= 1.0") < text.index("barrier()") < text.index("= 2.0")
    assert sum(isinstance(n, SetRegisters) for n in _walk(parted)) == 2


def test_a_statement_every_thread_runs_after_the_barrier_leaves_the_kernel_as_it_was():
    everyone = Store(LOCAL, (const(0),), const(0.0, "float32"))  # under no thread loop
    body = Seq((Barrier(), _producer_loop(), everyone))
    assert hand_over_registers(body, BLOCK) == (body, 0)


def test_blocks_whose_entry_share_is_enough_hand_nothing_over():
    assert consumer_registers((32, 4, 2)) == 0  # 256 threads: 255 registers each already
    assert consumer_registers((32, 4, 4)) == 160  # three consumer warpgroups beside it
    body = Seq((Barrier(), _producer_loop(), _consumers(2.0)))
    assert hand_over_registers(body, (32, 4, 2)) == (body, 0)


def _walk(s):
    from schedlang.loopir.core.visit import walk_stmt

    return list(walk_stmt(s))
