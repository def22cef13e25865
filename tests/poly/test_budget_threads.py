"""isl's operation budget (`poly.isl_calls.budget`) is the context's, shared by threads: budgets
opened by two threads at once must leave no limit behind (a limit left set made every later
isl call in the process fail once the count reached it)."""

from __future__ import annotations

import threading

import islpy as isl

from schedlang.poly.isl_calls import budget


def test_budgets_of_two_threads_leave_no_limit_behind():
    """The second thread's budget opens while the first's is open and would close after it:
    restoring the limit it found (the first's) would leave that one set for good."""
    ctx = isl.DEFAULT_CONTEXT
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with budget(ctx, 10**7):
            first_in.set()
            second_in.wait(1.0)  # waits in vain where budgets take turns
        first_out.set()

    def second() -> None:
        first_in.wait(5.0)
        with budget(ctx, 10**6):
            second_in.set()
            first_out.wait(5.0)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ctx.get_max_operations() == 0
    assert isl.Set("{ [i] : 0 <= i < 10 }").lexmin().is_singleton()
