"""TE's pytest helpers (``tvm.testing.parameter``, ``parameters``, ``fixture``,
``parametrize_targets``), for test files written against TE: parametrized values and the
targets a test runs on, as plain pytest fixtures and marks (no plugin to install).

A parameter is a fixture named by the variable it is assigned to, at module or class level
(pytest names a fixture it finds by that name); its function takes the class instance, if any,
positionally, and its inputs by keyword."""

from __future__ import annotations

import inspect
import itertools
import sys
from collections.abc import Callable

from .runtime import device
from .target import CPU_KINDS


def parameter(*values: object, ids: object = None, by_dict: dict | None = None) -> Callable:
    """A fixture taking each of `values` in turn (or the values of `by_dict`, named by its
    keys)."""
    import pytest  # a test dependency, imported only by test files

    if by_dict is not None:
        values, ids = tuple(by_dict.values()), list(by_dict.keys())

    @pytest.fixture(params=values, ids=ids)
    def as_fixture(*_owner, request):
        return request.param

    return as_fixture


_correlated = itertools.count()


def parameters(*value_sets: tuple, ids: object = None) -> list[Callable]:
    """One fixture per position of the tuples in `value_sets`, taking the tuples' values
    together (``shape, transform = tvm.testing.parameters((s1, t1), (s2, t2))``): they share
    a hidden fixture of the tuple's index, put where the call is (module or class)."""
    import pytest

    index_name = f"_tvm_parameters_{next(_correlated)}"
    index = pytest.fixture(params=range(len(value_sets)), ids=ids)(_param_of)
    sys._getframe(1).f_locals[index_name] = index
    width = len(value_sets[0]) if value_sets else 0
    return [_component(value_sets, k, index_name) for k in range(width)]


def _param_of(*_owner, request):
    return request.param


def _component(value_sets: tuple, k: int, index_name: str) -> Callable:
    import pytest

    def value(*_owner, **fixtures):
        return value_sets[fixtures[index_name]][k]

    value.__signature__ = inspect.Signature(
        [
            inspect.Parameter("_owner", inspect.Parameter.VAR_POSITIONAL),
            inspect.Parameter(index_name, inspect.Parameter.KEYWORD_ONLY),
        ]
    )
    return pytest.fixture(value)


def fixture(func: Callable | None = None, *, cache_return_value: bool = False) -> Callable:
    """A pytest fixture (each test gets its own value; caching across tests is TE's
    optimisation, left out)."""
    import pytest

    return pytest.fixture if func is None else pytest.fixture(func)


def enabled_targets() -> list[str]:
    """The targets a test marked for every target runs on here."""
    from .testing import device_enabled

    return [t for t in (CPU_KINDS[0], "cuda") if device_enabled(t)]


def parametrize_targets(*targets: object) -> Callable:
    """Run the test once per target (``"llvm"``, ``"cuda"``; bare, every target usable here),
    with the `target` and, where the test takes it, `dev` (``tvm.device(target)``) it runs
    on; a target this machine cannot run is skipped."""
    if len(targets) == 1 and callable(targets[0]):
        return parametrize_targets()(targets[0])
    from .testing import device_enabled

    chosen = list(targets) or [CPU_KINDS[0], "cuda"]

    def mark(test: Callable) -> Callable:
        import pytest

        names = inspect.signature(test).parameters
        cases = []
        for target in chosen:
            skip = pytest.mark.skipif(
                not device_enabled(target), reason=f"'{target}' cannot run here"
            )
            with_dev = "dev" in names
            values = (target, device(str(target)) if with_dev and device_enabled(target) else None)
            cases.append(
                pytest.param(*(values if with_dev else values[:1]), marks=skip, id=str(target))
            )
        return pytest.mark.parametrize("target,dev" if "dev" in names else "target", cases)(test)

    return mark
