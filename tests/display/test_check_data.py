"""The random inputs kernels are checked on: away from zero, of both signs, the same for a seed
whatever the machine; a large array is drawn in chunks on threads."""

from __future__ import annotations

import numpy as np
import pytest

from schedlang.display import check_data
from schedlang.display.check_data import random_array


@pytest.mark.parametrize(
    "shape, dtype",
    [
        ((7, 5), "float32"),
        ((1000, 1001), "float32"),
        ((3, 200001), "float64"),
        ((513, 1025), "float16"),
        ((600, 900), "bfloat16"),
    ],  # fmt: skip
)
def test_values_are_away_from_zero_of_both_signs(shape, dtype):
    values = random_array(shape, dtype, np.random.default_rng(3))
    assert values.shape == shape and str(values.dtype) == dtype
    magnitude = np.abs(values.astype(np.float64))
    assert magnitude.min() >= 0.5 and magnitude.max() <= 1.5
    assert 0.3 < (values < 0).mean() < 0.7
    again = random_array(shape, dtype, np.random.default_rng(3))
    assert np.array_equal(values.astype(np.float64), again.astype(np.float64))


def test_a_large_array_is_the_same_drawn_on_one_thread(monkeypatch):
    wanted = random_array((1100, 1300), "float32", np.random.default_rng(5))
    monkeypatch.setattr(check_data, "usable_cores", lambda: 1)
    alone = random_array((1100, 1300), "float32", np.random.default_rng(5))
    assert np.array_equal(wanted, alone)
    chunks = -(-1100 * 1300 // check_data._CHUNK)
    seeds = np.random.default_rng(5).integers(2**63, size=chunks)
    for k in (0, 1):  # each chunk is drawn from a seed of its own
        part = np.random.default_rng(seeds[k]).random(check_data._CHUNK, dtype=np.float32)
        part = part * 2 - 1
        part += np.copysign(np.float32(0.5), part)
        drawn = wanted.reshape(-1)[k * check_data._CHUNK : (k + 1) * check_data._CHUNK]
        assert np.array_equal(drawn, part)


def test_different_seeds_draw_different_values():
    a = random_array((1024, 1024), "float32", np.random.default_rng(0))
    b = random_array((1024, 1024), "float32", np.random.default_rng(1))
    assert (a != b).mean() > 0.99
