"""``tvm.testing.plugin``, the pytest plugin TVM's own test tree loads (``pytest_plugins =
["tvm.testing.plugin"]`` in its conftest.py): the `target` and `dev` fixtures a test takes
when it runs on every target usable here, as `parametrize_targets` gives them."""

from __future__ import annotations

import pytest

from ..pytest_params import enabled_targets
from ..runtime import device


@pytest.fixture(params=enabled_targets())
def target(request) -> str:
    """Each target this machine can run: the CPU's, and CUDA where a GPU is usable."""
    return request.param


@pytest.fixture
def dev(target: str):
    """The device of `target` (``tvm.device(target)``)."""
    return device(target)
