"""One CLI grammar for nodes: every `sessions` command that takes a NODE (render, fork,
diff's two calls, settle, answer) takes it as NAME#K, llm:NAME#K, a unique id prefix or
a full id, and means the same node by each. (settle's and answer's forms are also run
end to end in tests/openprogram/session/test_settle_once.py and store/test_answers.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm
from openprogram.cli import cli


@agentic_function
def draft(topic: str) -> str:
    return llm(f"Draft about {topic}.")


@agentic_function(effect="once")
def send(text: str) -> str:
    return "sent"


@pytest.fixture
def store(tmp_path: Path) -> tuple[str, dict[str, str]]:
    """A store with session "s": two draft calls and a once call, and their node ids."""
    path = str(tmp_path / "runs.db")
    with Session(path, id="s") as session, Runtime(ScriptedModel(["One.", "Two."])):
        draft("tea")
        draft("coffee")
        send("hi")
    drafts = session.dag.find(name="draft", kind="code")
    exchanges = [n for n in session.dag.nodes if n.kind == "llm"]
    ids = {"draft#2": drafts[1].id, "llm:draft#1": exchanges[0].id,
           "send#1": session.dag.find(name="send")[0].id}  # fmt: skip
    return path, ids


def run(*arguments: str) -> str:
    result = CliRunner().invoke(cli, list(arguments), prog_name="openprogram")
    assert result.exit_code in (0, 1), result.output  # diff exits 1 when calls differ
    return result.output


def forms(name: str, node_id: str) -> list[str]:
    return [name, node_id[:8], node_id]


def test_render_takes_every_node_form(store):
    path, ids = store
    for name in ("draft#2", "llm:draft#1"):
        shown = {run("sessions", "render", "s", f, "--store", path) for f in forms(name, ids[name])}
        assert len(shown) == 1, shown  # the same node, however it was named


def test_fork_takes_every_node_form(store):
    path, ids = store
    for number, form in enumerate(forms("draft#2", ids["draft#2"])):
        run("sessions", "fork", "s", form, "--id", f"f{number}", "--store", path)
    trees = {
        run("sessions", "show", f"f{number}", "--store", path).split("\n", 1)[1]
        for number in range(3)
    }
    assert len(trees) == 1, trees


def test_diff_takes_every_node_form_for_its_two_calls(store):
    path, ids = store
    first = forms("llm:draft#1", ids["llm:draft#1"])
    second = forms("draft#2", ids["draft#2"])
    outputs = {run("sessions", "diff", "s", a, b, "--store", path).split("\n", 2)[2]
               for a, b in zip(first, second, strict=True)}  # fmt: skip
    assert len(outputs) == 1, outputs


def test_settle_takes_every_node_form(store):
    path, ids = store
    node = ids["send#1"]
    for form in forms("send#1", node):
        output = run("sessions", "settle", "s", form, "--result", '"sent"', "--store", path)
        # the same node each time, found and named by its id (it finished: nothing to settle)
        assert f"send (node {node}) is completed, not waiting to be settled" in output, output
