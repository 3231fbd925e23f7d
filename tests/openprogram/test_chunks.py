"""Chunks behaves as the list it stands for, whatever the cuts and growth."""

from __future__ import annotations

import bisect
import copy
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openprogram._chunks import Chunks, Frozen


@given(
    st.lists(st.tuples(st.integers(0, 200), st.lists(st.integers(0, 5), max_size=70)), max_size=8),
    st.lists(st.integers(0, 200), max_size=5),
)
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


@given(st.lists(st.integers(0, 9), max_size=100), st.integers(0, 9), st.integers(-120, 120))
def test_a_frozen_chunks_reads_as_the_list_it_was(items, probe, position):
    chunks: Chunks[int] = Chunks()
    chunks.extend(items)
    frozen = chunks.freeze()
    chunks.extend([1, 2, 3])  # growing the Chunks leaves what was frozen as it was
    assert frozen == items and items == frozen and frozen == tuple(items)
    assert frozen != [*items, 0] and frozen != "not a list"
    assert list(frozen) == items and len(frozen) == len(items) and repr(frozen) == repr(items)
    assert frozen[position:] == items[position:] and frozen[::2] == items[::2]
    if -len(items) <= position < len(items):
        assert frozen[position] == items[position]
    else:
        with pytest.raises(IndexError):
            frozen[position]
    assert (probe in frozen) == (probe in items)
    if probe in items:
        assert frozen.index(probe) == items.index(probe)
        start = min(1, len(items))
        if probe in items[start:]:
            assert frozen.index(probe, start) == items.index(probe, start)
    else:
        with pytest.raises(ValueError):
            frozen.index(probe)
    assert pickle.loads(pickle.dumps(frozen)) == items
    assert copy.deepcopy(frozen) == items


def test_frozen_snapshots_share_their_full_chunks():
    chunks: Chunks[int] = Chunks()
    chunks.extend(range(100))
    first = chunks.freeze()
    chunks.append(100)
    second = chunks.freeze()
    assert isinstance(first, Frozen)
    assert all(a is b for a, b in zip(first._full, second._full, strict=True))
