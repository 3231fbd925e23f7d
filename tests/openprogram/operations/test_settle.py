"""Settling an `unknown` operation: session.settle, `sessions settle`, a runtime's asker."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from openprogram import EffectUnknown, Runtime, ScriptedModel, Session, UsageError, llm
from openprogram.errors import RunWaiting
from tests.openprogram.operations.test_tool import _crash_in_once, _once_then_answer


def _unknown(tmp_path):
    """A session `s` whose one operation (test.append_once "x") is unknown."""
    path = str(tmp_path / "s.db")
    once = _crash_in_once(path, tmp_path, [])
    with (
        Session.open(path, "s", resume=True),
        Runtime(ScriptedModel(_once_then_answer)),
        pytest.raises(EffectUnknown) as caught,
    ):
        llm("go", tools=[once])
    (record,) = Session.open(path, "s").operations()
    assert record.state == "unknown" and caught.value.key == record.id
    assert f"sessions settle s {record.id}" in str(caught.value)
    return path, once, record


def test_session_settle_takes_an_operation_id(tmp_path):
    path, once, record = _unknown(tmp_path)
    session = Session.open(path, "s")  # not entered: settle takes the lease for the moment
    node = session.settle(record.id, "x was appended")
    assert node.name == "once" and node.id == record.node
    assert session.settle(record.id, "x was appended") is not None  # the same again: no-op
    with pytest.raises(UsageError, match="is done, not unknown"):
        session.settle(record.id, rerun=True)
    session.close()
    with Session.open(path, "s", resume=True) as resumed, Runtime(ScriptedModel(_once_then_answer)):
        assert llm("go", tools=[once]) == "after"
    (node,) = resumed.dag.find("once")
    assert node.status == "completed" and node.output == "x was appended"
    assert not (tmp_path / "log").exists()  # never run


def test_session_settle_an_operation_to_run_again(tmp_path):
    path, once, record = _unknown(tmp_path)
    with Session.open(path, "s") as session:
        with pytest.raises(UsageError, match=f"the operations: \\['{record.id}'\\]"):
            session.settle("op-none", rerun=True)
        session.settle(record.id, rerun=True)
    with Session.open(path, "s", resume=True), Runtime(ScriptedModel(_once_then_answer)):
        assert llm("go", tools=[once]) == "after"
    assert (tmp_path / "log").read_text() == "start x\nend x\n"


def test_the_cli_settles_an_operation(tmp_path, monkeypatch):
    from openprogram.cli import cli

    path, _, record = _unknown(tmp_path)
    monkeypatch.setenv("OPENPROGRAM_STORE", path)
    result = CliRunner().invoke(
        cli, ["sessions", "settle", "s", record.id, "--result", '"by hand"'], prog_name="op"
    )
    assert result.exit_code == 0, result.output
    assert result.output == (
        f'settled operation {record.id} of once ({record.node}) with "by hand" in session s\n'
    )
    (settled,) = Session.open(path, "s").operations()
    assert (settled.state, settled.result) == ("done", "by hand")


def test_a_runtimes_asker_settles_an_unknown_operation(tmp_path):
    path, once, record = _unknown(tmp_path)
    asked = []

    def person(question):
        asked.append(str(question))
        return '{"appended": "x"}'

    with (
        Session.open(path, "s", resume=True) as session,
        Runtime(ScriptedModel(_once_then_answer), ask=person),
    ):
        assert llm("go", tools=[once]) == "after"
    assert len(asked) == 1 and record.id in asked[0] and "test.append_once" in asked[0]
    (node,) = session.dag.find("once")
    assert node.output == {"appended": "x"}
    assert not (tmp_path / "log").exists()


def test_an_asker_saying_not_now_suspends_and_an_answer_reruns_it(tmp_path):
    path, once, record = _unknown(tmp_path)
    with (
        pytest.raises(RunWaiting) as caught,
        Session.open(path, "s", resume=True),
        Runtime(ScriptedModel(_once_then_answer), ask=lambda question: None),
    ):
        llm("go", tools=[once])
    assert record.id in caught.value.question.text
    Session.open(path, "s").answer(caught.value.question.id, "rerun")
    with (
        Session.open(path, "s", resume=True),
        Runtime(ScriptedModel(_once_then_answer), ask=lambda question: None),
    ):
        assert llm("go", tools=[once]) == "after"
    assert (tmp_path / "log").read_text() == "start x\nend x\n"
    (done,) = Session.open(path, "s").operations()
    assert (done.state, done.attempts) == ("done", 2)
