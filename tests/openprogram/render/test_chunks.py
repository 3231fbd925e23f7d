"""Chunks behaves as the list it stands for, whatever the cuts and growth."""

from __future__ import annotations

import bisect

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openprogram.render._chunks import Chunks


@given(
    st.lists(st.tuples(st.integers(0, 200), st.lists(st.integers(0, 5), max_size=70)), max_size=8),
    st.lists(st.integers(0, 200), max_size=5),
)
@pytest.mark.slow
def test_chunks_cut_and_grown_equal_the_list_cut_and_grown(steps, probes):
    chunks: Chunks[int] = Chunks()
    mirror: list[int] = []
    for cut, more in steps:
        cut = min(cut, len(mirror))
        earlier = chunks
        before = list(mirror)
        chunks = chunks.prefix(cut)
        mirror = mirror[:cut]
        chunks.extend(more)
        mirror.extend(more)
        assert earlier.tolist() == before  # a cut never changes what it was cut from
        assert chunks.tolist() == list(chunks) == mirror and len(chunks) == len(mirror)
        for index in range(len(mirror)):
            assert chunks[index] == mirror[index]
            assert list(chunks.since(index)) == mirror[index:]
        if mirror:
            assert chunks[-1] == mirror[-1]
    ordered: Chunks[int] = Chunks()
    values = sorted(mirror)
    ordered.extend(values)
    for probe in probes:
        assert ordered.bisect(probe, int) == bisect.bisect_left(values, probe)
        assert ordered.bisect(probe, int, right=True) == bisect.bisect_right(values, probe)
