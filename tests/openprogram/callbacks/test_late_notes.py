"""What callbacks note on a node after it completed still reaches the store."""

from __future__ import annotations

from openprogram import Callback, Runtime, ScriptedModel, Session, agentic_function


class FailsAtTheEnd(Callback):
    def on_run_end(self, node):
        raise RuntimeError("report server down")


@agentic_function
def job():
    return 1


def test_an_observer_error_after_completion_is_stored(tmp_path):
    store = str(tmp_path / "s.db")
    with Session(store) as session, Runtime(ScriptedModel([]), callbacks=[FailsAtTheEnd()]):
        job()
    session_id = session.id
    session.close()
    reopened = Session.open(store, session_id)
    (node,) = reopened.dag.nodes
    assert node.meta["callback_errors"] == [
        "FailsAtTheEnd.on_run_end: RuntimeError: report server down"
    ]
    reopened.close()
