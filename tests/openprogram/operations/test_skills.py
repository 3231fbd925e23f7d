"""Skills folders under attack (issue 40, item 8): a FIFO, a binary file, a link out of
the folder, a file swapped for a link or a FIFO after listing, a 50 MB file. Each is
refused at listing (UsageError) and at use (the model is told), never hung on, never
read whole, never followed."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from openprogram import Runtime, ScriptedModel, Session, UsageError, llm
from openprogram.operations import read_skills, skills_tool
from openprogram.operations.skills import SKILL_BYTES


def skill(folder: Path, name: str = "release", body: str = "Step one.") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "SKILL.md"
    path.write_text(f"---\nname: {name}\ndescription: Cut a release\n---\n{body}\n")
    return path


def used(use_skill: Any, name: str = "release") -> Any:
    """The use_skill node of one model call asking for `name`, and what the model was told."""
    model = ScriptedModel(
        [{"tool_calls": [{"name": "use_skill", "arguments": {"name": name}}]}, "ok"]
    )
    with Session() as session, Runtime(model):
        llm("go", tools=[use_skill])
    (node,) = [n for n in session.dag.nodes if n.name == "use_skill"]
    told = [m["content"] for m in model.requests[-1].messages if m["role"] == "tool"]
    return node, told[0]


def within(seconds: float, work: Any, unblock: Any = None) -> Any:
    """work()'s outcome (value or exception) if it ends within `seconds`; else the test
    fails (unblock() then frees the thread left waiting)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:
            outcome["value"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if unblock is not None:
            unblock()
        pytest.fail(f"still waiting after {seconds} s")
    return outcome["value"]


def fifo_writer(path: Path) -> Any:
    def unblock() -> None:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)

    return unblock


def test_a_fifo_named_skill_md_is_refused_at_listing_without_waiting(tmp_path):
    (tmp_path / "pipe").mkdir()
    os.mkfifo(tmp_path / "pipe" / "SKILL.md")
    found = within(30, lambda: read_skills(tmp_path), fifo_writer(tmp_path / "pipe" / "SKILL.md"))
    assert isinstance(found, UsageError) and "not a regular file" in str(found)


def test_a_skill_swapped_for_a_fifo_after_listing_is_an_error_the_model_is_told(tmp_path):
    path = skill(tmp_path / "release")
    use_skill = skills_tool(tmp_path)
    path.unlink()
    os.mkfifo(path)
    node, told = within(30, lambda: used(use_skill), fifo_writer(path))
    assert node.status == "error" and "not a regular file" in told


def test_a_binary_skill_md_is_a_usage_error_not_a_decode_error(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "SKILL.md").write_bytes(b"---\nname: x\n\xff\xfe\x00binary")
    with pytest.raises(UsageError, match="is not UTF-8 text"):
        read_skills(tmp_path)


def test_a_skill_swapped_for_a_link_out_of_the_folder_after_listing_is_not_read(tmp_path):
    folder = tmp_path / "skills"
    path = skill(folder / "release")
    outside = tmp_path / "shadow"
    outside.write_text("root:$6$secret-hash:19000:0:99999:7:::\n")
    use_skill = skills_tool(folder)
    path.unlink()
    path.symlink_to(outside)  # the attack: swapped after the listing
    node, told = used(use_skill)
    assert node.status == "error" and "symbolic link" in told
    assert "secret-hash" not in told and "secret-hash" not in str(node.output)


def test_a_folder_on_the_way_swapped_for_a_link_after_listing_is_not_followed(tmp_path):
    folder = tmp_path / "skills"
    skill(folder / "release")
    elsewhere = tmp_path / "elsewhere"
    skill(elsewhere, body="Planted steps.")
    use_skill = skills_tool(folder)
    (folder / "release" / "SKILL.md").unlink()
    (folder / "release").rmdir()
    (folder / "release").symlink_to(elsewhere)
    node, told = used(use_skill)
    assert node.status == "error" and "symbolic link" in told and "Planted" not in told


def test_links_out_of_the_folder_are_not_followed_at_listing(tmp_path):
    folder = tmp_path / "skills"
    skill(folder / "release")
    outside = skill(tmp_path / "outside", name="planted")
    (folder / "linked").mkdir()
    (folder / "linked" / "SKILL.md").symlink_to(outside)
    with pytest.raises(UsageError, match="symbolic link"):
        read_skills(folder)
    (folder / "linked" / "SKILL.md").unlink()
    (folder / "linked" / "more").symlink_to(tmp_path / "outside")  # a linked folder
    assert [s.name for s in read_skills(folder)] == ["release"]  # is not entered


def test_a_large_skill_file_is_refused_at_listing_and_at_use(tmp_path):
    path = skill(tmp_path / "big")
    with path.open("r+b") as file:
        file.truncate(50 << 20)  # 50 MB (sparse)
    with pytest.raises(UsageError, match=f"at most {SKILL_BYTES:,} bytes"):
        read_skills(tmp_path)
    skill(tmp_path / "big")  # small again: listed; then it grows
    use_skill = skills_tool(tmp_path)
    with path.open("r+b") as file:
        file.truncate(50 << 20)
    node, told = used(use_skill)
    assert node.status == "error" and f"at most {SKILL_BYTES:,} bytes" in told
    assert len(told) < 2000
