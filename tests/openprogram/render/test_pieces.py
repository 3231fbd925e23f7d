"""Each finished node is written once and its pieces shared by the renders that show it
(_pieces.py); what they send stays what a render from scratch sends (DESIGN.md §4)."""

from __future__ import annotations

from typing import Any

import pytest

from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm
from openprogram.render import _pieces
from openprogram.render._history import _uncached
from openprogram.render._messages import Writer
from openprogram.render.render import render_context, seen_by


@agentic_function(render_range={"callers": 5})
def step(i: int) -> str:
    return llm(f"step {i}")


def counted_lines(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the nodes Writer.line writes from now on."""
    written: list[str] = []
    line = Writer.line

    def counting(self: Writer, node: Any) -> str:
        written.append(node.id)
        return line(self, node)

    monkeypatch.setattr(Writer, "line", counting)
    return written


def test_a_sliding_window_writes_only_the_nodes_it_has_not_shown(monkeypatch):
    with Session() as session, Runtime(ScriptedModel(lambda request: "ok")):
        for i in range(10):
            step(i)
        written = counted_lines(monkeypatch)
        step(10)
    # the finished step that entered the window and the running frame; not the four
    # older steps the window still shows
    earlier = sorted(
        (n for n in session.dag.nodes if n.name == "step" and n.kind == "code"), key=lambda n: n.seq
    )
    assert len(written) == 2
    assert set(written) == {earlier[-2].id, earlier[-1].id}


def test_every_window_sends_what_a_window_from_scratch_sends():
    with Session() as session, Runtime(ScriptedModel(lambda request: "ok")):
        for i in range(12):
            step(i)
    dag = session.dag
    for node in [n for n in dag.nodes if n.kind == "llm"]:
        kept = seen_by(dag, node)
        with _uncached(dag):
            fresh = seen_by(dag, node)
        assert kept.messages == fresh.messages
        assert kept.messages_hash == fresh.messages_hash == node.messages_hash


def test_the_kept_pieces_stay_within_their_bound(monkeypatch):
    monkeypatch.setattr(_pieces, "_KEPT", 8)
    with Session() as session, Runtime(ScriptedModel(lambda request: "ok")):
        for i in range(40):
            step(i)
        kept = _pieces._kept[session.dag]
        assert all(len(store.pieces) <= 8 for store in kept.values())
        # a window whose older pieces went is written again, the same
        frame = max(
            (n for n in session.dag.nodes if n.name == "step" and n.kind == "code"),
            key=lambda n: n.seq,
        )
        again = render_context(session.dag, frame.id)
        with _uncached(session.dag):
            fresh = render_context(session.dag, frame.id)
        assert again.messages_hash == fresh.messages_hash


def test_the_kept_pieces_stay_within_their_size(monkeypatch):
    monkeypatch.setattr(_pieces, "_KEPT_BYTES", 20_000)

    @agentic_function(render_range={"callers": 3})
    def echo(text: str) -> str:
        return llm(text)

    with Session() as session, Runtime(ScriptedModel(lambda request: "ok")):
        for i in range(30):
            echo(f"{i} " + "x" * 2_000)
        stores = _pieces._kept[session.dag].values()
        assert all(store.bytes <= 20_000 for store in stores)
        assert all(
            store.bytes == sum(map(_pieces._size, store.pieces.values())) for store in stores
        )


def test_a_render_at_an_earlier_moment_does_not_take_a_piece_of_a_call_then_running():
    """A piece kept once a call finished is not what a render from before its end shows
    (no output then): such a render writes its own."""
    with Session() as session, Runtime(ScriptedModel(lambda request: "ok")):
        for i in range(4):
            step(i)
    dag = session.dag
    first = min(
        (n for n in dag.nodes if n.name == "step" and n.kind == "code"), key=lambda n: n.seq
    )
    during = next(n for n in dag.nodes if n.kind == "llm" and n.parent == first.id)
    render_context(dag, None)  # keeps every step's piece, outputs shown
    then = render_context(dag, None, before=during.seq)
    assert "output=" not in then.text()
    with _uncached(dag):
        assert then.messages_hash == render_context(dag, None, before=during.seq).messages_hash
