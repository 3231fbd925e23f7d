"""_checkpoints.py: a history keeps the messages hash state only where later renders
cut, and a render continuing from anywhere else equals one from scratch."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram import ContextDAG
from openprogram.render import _history
from openprogram.render._checkpoints import SPACING
from openprogram.render.render import render_context
from tests.openprogram.render.test_render_incremental import (
    _PROPERTY,
    _run,
    assert_same_as_from_scratch,
)


@settings(_PROPERTY, max_examples=80)  # each render here rebuilds more: fewer programs
@given(data=st.data())
@pytest.mark.slow
@pytest.mark.timeout(900)  # a busy machine: pytest's default 300 s was hit once at load 25
def test_a_render_continuing_between_kept_hash_states_equals_one_from_scratch(data):
    """Only the last checkpoint of each extension keeps its hash state: every later
    render that cuts inside goes back to one (_cut) and writes the nodes between again."""
    with mock.patch.object(_history, "due", lambda tail, *_: {len(tail) - 1}):
        _run(data)


def test_a_rebuild_keeps_hash_states_only_where_later_renders_cut():
    """A change early in a long history (a top-level writer ends) re-feeds the rest: its
    checkpoints copy the messages hash only every _SPACING nodes and before open and
    stack nodes, and the render still equals one from scratch."""
    dag = ContextDAG()
    writers = [dag.add("code", "writer", input={"n": n}) for n in range(3)]
    reader = writers[-1]
    for i in range(200):
        dag.complete(dag.add("code", "work", parent=reader.id, input={"i": i}), i)
    frame = dag.add("code", "ask", parent=reader.id, input={})
    render_context(dag, frame.id)
    dag.complete(writers[0], "done")  # its line, early in the history, changes
    history = render_context(dag, frame.id)._history
    states = [point for point in history.checkpoints if point.state is not None]
    assert len(history.checkpoints) == 204  # 3 writers (the reader one), 200 calls, the frame
    # 200 // 16 spaced, before writer 2 (open) and the reader and frame (stack), the last
    assert len(states) <= 204 // SPACING + 4
    assert_same_as_from_scratch(dag, frame.id)
