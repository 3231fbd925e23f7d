"""The built-in tools: bash (through the sandbox), view_image, use_skill."""

from __future__ import annotations

import threading

import pytest
from PIL import Image as PILImage

from openprogram import Image, Runtime, ScriptedModel, Session, UsageError, llm
from openprogram.operations import (
    LocalOperations,
    OperationContext,
    ProcessOperations,
    bash,
    read_skills,
    skills_tool,
    view_image_tool,
)
from openprogram.operations.builtins import BASH_OUTPUT_LIMIT, run_bash


def call(tool, **arguments):
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


@pytest.fixture
def sandbox():
    manager = ProcessOperations(sandbox="rlimits")
    yield manager
    manager.close()


@pytest.mark.slow
def test_bash_runs_in_the_sandbox_and_its_result_reaches_the_model(sandbox, tmp_path):
    # bash's parent is its reaper (_reaper.py), whose parent is the sandbox
    command = "cut -d' ' -f4 /proc/$PPID/stat; echo oops >&2; exit 3"
    model = ScriptedModel([call("bash", command=command), "ok"])
    with Session(str(tmp_path / "s.db")) as session, Runtime(model, operations=sandbox):
        llm("run it", tools=[bash])
    (node,) = [n for n in session.dag.nodes if n.name == "bash"]
    parent, oops = node.output["output"].splitlines()
    assert int(parent) == sandbox.pid and oops == "oops"
    assert node.output["exit_code"] == 3 and node.output["timed_out"] is False
    (record,) = session.operations()
    assert (record.kind, record.effect, record.state) == ("bash", "once", "done")
    tool_message = [m for m in model.requests[-1].messages if m["role"] == "tool"]
    assert '"exit_code": 3' in tool_message[0]["content"]


@pytest.mark.slow
def test_bash_runs_in_a_process_sandbox_by_default(tmp_path):
    import os

    model = ScriptedModel([call("bash", command="echo $PPID"), "ok"])
    with Session() as session, Runtime(model):
        llm("run it", tools=[bash])
    (node,) = [n for n in session.dag.nodes if n.name == "bash"]
    assert int(node.output["output"]) != os.getpid()


def test_bash_output_is_bounded_keeping_both_ends():
    command = f"echo first; head -c {BASH_OUTPUT_LIMIT * 5} /dev/zero | tr '\\0' x; echo; echo last"
    result = run_bash({"command": command}, OperationContext("op-1"))
    assert len(result["output"]) <= BASH_OUTPUT_LIMIT + 100
    assert result["output"].startswith("first") and result["output"].rstrip().endswith("last")


def test_bash_has_a_time_limit_and_stops_the_whole_process_group():
    result = run_bash({"command": "sleep 30 & sleep 30; echo never", "timeout_s": 0.2},
                      OperationContext("op-1"))  # fmt: skip
    assert result["timed_out"] is True and result["exit_code"] is None
    assert "never" not in result["output"]


def test_bash_is_cancelled():
    context = OperationContext("op-1")
    outcome = {}
    thread = threading.Thread(
        target=lambda: outcome.setdefault("r", _cancelled(context)), daemon=True
    )
    thread.start()
    context.cancelled.set()
    thread.join(30)
    assert outcome["r"] == "cancelled"


def _cancelled(context):
    from openprogram.operations import OperationCancelled

    try:
        run_bash({"command": "sleep 30"}, context)
    except OperationCancelled:
        return "cancelled"
    return "finished"


def test_bash_refuses_an_empty_command_to_the_model():
    model = ScriptedModel([call("bash", command="  "), "ok"])
    with Session() as session, Runtime(model, operations=LocalOperations()):
        llm("run", tools=[bash])
    (node,) = [n for n in session.dag.nodes if n.name == "bash"]
    assert node.output.startswith("error: the command is empty")
    assert session.operations() == []


def test_view_image_records_an_allowed_image_and_refuses_others(tmp_path):
    allowed = tmp_path / "pictures"
    allowed.mkdir()
    PILImage.new("RGB", (4, 3), "red").save(allowed / "red.png")
    (tmp_path / "secret.png").write_bytes((allowed / "red.png").read_bytes())
    (allowed / "link.png").symlink_to(tmp_path / "secret.png")
    (allowed / "notes.txt").write_text("not an image")
    view_image = view_image_tool([allowed])
    model = ScriptedModel([
        {"tool_calls": [
            {"name": "view_image", "arguments": {"path": str(allowed / "red.png")}},
            {"name": "view_image", "arguments": {"path": str(tmp_path / "secret.png")}},
            {"name": "view_image", "arguments": {"path": str(allowed / "link.png")}},
            {"name": "view_image", "arguments": {"path": str(allowed / "notes.txt")}},
        ]},
        "seen",
    ])  # fmt: skip
    with Session() as session, Runtime(model):
        llm("look", tools=[view_image])
    red, secret, link, notes = [n for n in session.dag.nodes if n.name == "view_image"]
    image = session.dag.blobs.get(red.output.sha256)
    assert isinstance(image, Image) and image.size == (4, 3)
    assert "outside the folders" in secret.error and "outside the folders" in link.error
    assert notes.status == "error"
    with pytest.raises(UsageError, match="is not a folder"):
        view_image_tool([tmp_path / "missing"])


def test_use_skill_lists_skills_in_its_spec_and_loads_one(tmp_path):
    for name, description in [("pdf-forms", "Fill in PDF forms"), ("release", "Cut a release")]:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {description}\n---\n# {name}\nStep one.\n"
        )
    use_skill = skills_tool(tmp_path)
    assert use_skill.spec["name"] == "use_skill"
    assert "pdf-forms: Fill in PDF forms." in use_skill.spec["description"]
    assert use_skill.spec["parameters"]["properties"]["name"]["enum"] == ["pdf-forms", "release"]
    model = ScriptedModel([call("use_skill", name="release"), call("use_skill", name="nope"), "ok"])
    with Session() as session, Runtime(model):
        llm("release it", tools=[use_skill])
    loaded, refused = [n for n in session.dag.nodes if n.name == "use_skill"]
    assert loaded.output.endswith("# release\nStep one.")
    assert refused.status == "error"  # not one of the options: the model is told


def test_skills_without_front_matter_or_with_one_name_twice_are_usage_errors(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "SKILL.md").write_text("# no front matter\n")
    with pytest.raises(UsageError, match="needs front matter"):
        read_skills(tmp_path)
    (tmp_path / "a" / "SKILL.md").write_text("---\nname: x\ndescription: one\n---\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "SKILL.md").write_text("---\nname: x\ndescription: two\n---\n")
    with pytest.raises(UsageError, match="two skills are named 'x'"):
        read_skills(tmp_path)
