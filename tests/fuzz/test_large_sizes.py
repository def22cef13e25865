"""A bounded sample of the fuzzer's cases past int32 (`large_sizes`), derandomized like
`test_fuzz`'s; each case builds a small kernel and reads a few pages of a sparse file."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .large_sizes import SparseArrays, large_size_property
from .test_fuzz import sample
from .verdict import Tally


@pytest.fixture(scope="module")
def arrays(tmp_path_factory) -> SparseArrays:
    directory = tmp_path_factory.mktemp("sparse")
    probe = directory / "probe.bin"
    try:
        with open(probe, "wb") as f:
            f.truncate(4 * 3_000_000_000)
    except OSError as error:
        pytest.skip(f"this file system cannot hold a 12 GB sparse file: {error}")
    if os.stat(probe).st_blocks * 512 > 2**20:
        pytest.skip("this file system does not keep files sparse")
    probe.unlink()
    return SparseArrays(directory)


TALLY = Tally()


@sample(40)
@given(data=st.data())
def test_sizes_past_int32_run_right_or_are_refused(arrays, data):
    large_size_property(data, TALLY, arrays)


def test_the_sample_both_ran_and_refused():
    """The sample above reached both outcomes (it runs first, in file order)."""
    if not TALLY.counts:
        pytest.skip("the sample did not run")
    assert TALLY.counts["ran and matched"] > 0
    assert TALLY.counts["refused: past int32"] > 0
