"""TrajectorySaver: the per-run folder, its files, statuses and path safety."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import ClassVar

import pytest
from PIL import Image as PILImage
from pydantic import BaseModel, ConfigDict

from openprogram import (
    BudgetManager,
    ModelAuthError,
    PIIRedactor,
    RunStopped,
    Runtime,
    ScriptedModel,
    Session,
    TrajectorySaver,
    UsageError,
    agentic_function,
    llm,
)
from openprogram.callbacks import current_run, notify
from openprogram.callbacks.trajectory import run_status, safe_name
from tests.support.priced import PricedModel


class Click(BaseModel):
    model_config = ConfigDict(frozen=True)
    type: str = "click"
    x: int
    y: int


class Drag(BaseModel):
    model_config = ConfigDict(frozen=True)
    type: str = "drag"
    path: list[tuple[int, int]]


def screen(color: str = "white") -> PILImage.Image:
    return PILImage.new("RGB", (200, 120), color)


def make_loop(runtime: Runtime, seen: dict):
    """A miniature GUI loop calling the hooks the way gui_harness does."""

    @agentic_function
    def gui_step(index: int) -> str:
        run = current_run()
        notify(runtime.callbacks, "on_screenshot", screen(), index, record_on=run)
        plan = llm(["What next?", screen()])
        action = Click(x=50, y=40) if index == 1 else Drag(path=[(10, 10), (150, 100)])
        notify(runtime.callbacks, "on_action_start", action, record_on=run)
        notify(runtime.callbacks, "on_action_end", action, None, record_on=run)
        return plan

    @agentic_function
    def gui_agent(task: str) -> str:
        folder = next(iter(saver_of(runtime).folders.values()))
        seen["status_while_running"] = json.loads((folder / "metadata.json").read_text())["status"]
        for index in (1, 2):
            gui_step(index)
        return "done"

    return gui_agent


def saver_of(runtime: Runtime) -> TrajectorySaver:
    return next(c for c in runtime.callbacks if isinstance(c, TrajectorySaver))


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_a_run_writes_its_folder_with_metadata_steps_actions_exchanges_and_report(tmp_path):
    saver = TrajectorySaver(tmp_path / "runs")
    runtime = Runtime(ScriptedModel(["click it", "drag it"]), callbacks=[saver])
    seen: dict = {}
    with Session() as session, runtime:
        assert make_loop(runtime, seen)("fill the form") == "done"
    run = session.dag.find(name="gui_agent")[0]
    folder = saver.folders[run.id]
    assert folder == (tmp_path / "runs" / run.id).resolve()
    assert seen["status_while_running"] == "running"
    assert files_under(folder) == {
        "metadata.json",
        "report.html",
        "actions.jsonl",
        "screenshots/step-001.png",
        "screenshots/step-001-action-1.png",
        "screenshots/step-002.png",
        "screenshots/step-002-action-1.png",
        "llm/0001-request.json",
        "llm/0001-reply.json",
        "llm/0002-request.json",
        "llm/0002-reply.json",
        *(f"images/{p.name}" for p in (folder / "images").iterdir()),
    }
    meta = json.loads((folder / "metadata.json").read_text())
    assert meta["status"] == "completed"
    assert meta["name"] == "gui_agent" and meta["input"] == {"task": "fill the form"}
    assert meta["output"] == "done"
    assert (meta["steps"], meta["actions"], meta["llm_calls"]) == (2, 2, 2)
    assert meta["usage"]["calls"] == 2
    assert meta["ended_at"] is not None and meta["duration_s"] >= 0
    assert not list(folder.rglob("*.tmp"))


def test_requests_reference_images_saved_once_by_hash_never_inlined(tmp_path):
    saver = TrajectorySaver(tmp_path)
    runtime = Runtime(ScriptedModel(["a", "b"]), callbacks=[saver])
    with Session(), runtime:
        make_loop(runtime, {})("task")
    folder = next(iter(saver.folders.values()))
    referenced = []
    for name in ("0001-request.json", "0002-request.json"):
        text = (folder / "llm" / name).read_text()
        assert "data:image" not in text and "base64" not in text
        referenced += [
            part["image"]
            for message in json.loads(text)["messages"]
            if isinstance(message["content"], list)
            for part in message["content"]
            if part.get("type") == "image"
        ]
    assert len(referenced) == 2 and len(set(referenced)) == 1  # the same screen, one file
    assert (folder / referenced[0]).is_file()
    assert len(list((folder / "images").iterdir())) == 1
    reply = json.loads((folder / "llm" / "0002-reply.json").read_text())
    assert reply["reply"] == "b" and reply["usage"]["calls"] == 1


def test_the_annotated_copy_marks_the_click_point(tmp_path):
    saver = TrajectorySaver(tmp_path)
    runtime = Runtime(ScriptedModel(["a", "b"]), callbacks=[saver])
    with Session(), runtime:
        make_loop(runtime, {})("task")
    folder = next(iter(saver.folders.values()))
    plain = PILImage.open(folder / "screenshots" / "step-001.png")
    marked = PILImage.open(folder / "screenshots" / "step-001-action-1.png")
    assert plain.size == marked.size
    assert plain.getpixel((50, 40)) == (255, 255, 255)
    assert marked.getpixel((50, 40)) != (255, 255, 255)  # the crosshair centre
    assert marked.getpixel((150, 110)) == (255, 255, 255)  # far from the mark
    lines = [json.loads(x) for x in (folder / "actions.jsonl").read_text().splitlines()]
    assert [(x["event"], x.get("step")) for x in lines] == [
        ("start", 1),
        ("end", 1),
        ("start", 2),
        ("end", 2),
    ]
    assert lines[0]["action"] == {"type": "click", "x": 50, "y": 40}
    assert lines[0]["annotated"] == "screenshots/step-001-action-1.png"


def test_the_report_is_self_contained_with_relative_links_that_exist(tmp_path):
    saver = TrajectorySaver(tmp_path)
    runtime = Runtime(ScriptedModel(["a", "b"]), callbacks=[saver])
    with Session(), runtime:
        make_loop(runtime, {})("<task & more>")
    folder = next(iter(saver.folders.values()))
    report = (folder / "report.html").read_text()
    assert "<style>" in report and "<script" not in report
    assert "http://" not in report and "https://" not in report
    assert "&lt;task &amp; more&gt;" in report
    import re

    links = set(re.findall(r"(?:src|href)='([^']+)'", report))
    assert "screenshots/step-001-action-1.png" in links
    for link in links:
        assert (folder / link).is_file(), link


def test_failed_and_stopped_runs_say_so(tmp_path):
    saver = TrajectorySaver(tmp_path)

    @agentic_function
    def crash() -> None:
        llm("first")
        raise ValueError("boom")

    @agentic_function
    def costly() -> None:
        for _ in range(5):
            llm("again")

    with Session() as session:
        with Runtime(ScriptedModel(["ok"]), callbacks=[saver]), pytest.raises(ValueError):
            crash()
        callbacks = [BudgetManager(0.01), saver]
        with Runtime(PricedModel(cost=0.01), callbacks=callbacks), pytest.raises(RunStopped):
            costly()
    statuses = {}
    for run in (session.dag.find(name="crash")[0], session.dag.find(name="costly")[0]):
        meta = json.loads((saver.folders[run.id] / "metadata.json").read_text())
        statuses[run.name] = (meta["status"], meta["error"], meta["stop_reason"])
    assert statuses["crash"][:2] == ("failed", "ValueError: boom")
    assert statuses["costly"][0] == "stopped" and "budget reached" in statuses["costly"][2]
    assert (saver.folders[session.dag.find(name="costly")[0].id] / "report.html").is_file()


def test_saving_after_a_pii_redactor_writes_no_raw_personal_data(tmp_path):
    saver = TrajectorySaver(tmp_path)
    model = ScriptedModel(["Sure, <EMAIL_1>"])

    @agentic_function
    def greet(email: str) -> str:
        return llm(f"Greet {email}")

    with Session(), Runtime(model, callbacks=[PIIRedactor(), saver]):
        assert greet("bob@example.com") == "Sure, bob@example.com"
    folder = next(iter(saver.folders.values()))
    for name in ("llm/0001-request.json", "llm/0001-reply.json"):
        text = (folder / name).read_text()
        assert "bob@example.com" not in text and "<EMAIL_1>" in text


def test_names_are_sanitised_and_writes_outside_the_root_are_refused(tmp_path):
    assert safe_name("../../etc/passwd") == "_.._etc_passwd"
    assert safe_name("..") == "_" and safe_name("") == "_" and safe_name("a b/c") == "a_b_c"
    saver = TrajectorySaver(tmp_path / "root")
    with pytest.raises(UsageError, match="outside"):
        saver._inside(tmp_path / "root" / ".." / "escape")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "root" / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UsageError, match="outside"):
        saver._inside(tmp_path / "root" / "link" / "file.png")


def test_a_run_id_that_exists_on_disk_gets_a_fresh_folder(tmp_path):
    saver = TrajectorySaver(tmp_path)

    @agentic_function
    def job() -> None:
        pass

    with Session() as session, Runtime(ScriptedModel([]), callbacks=[saver]):
        job()
        first = saver.folders[session.dag.find(name="job")[0].id]
    (tmp_path / "taken").mkdir()
    run = session.dag.add("code", "job", id="taken")
    saver.on_run_start(run)
    assert saver.folders["taken"].name == "taken-2"
    assert first.is_dir()


def test_write_failures_are_recorded_on_the_run_not_raised(tmp_path):
    saver = TrajectorySaver(tmp_path)

    @agentic_function
    def job() -> str:
        folder = next(iter(saver.folders.values()))
        (folder / "llm").write_text("a file where a folder should be")
        return llm("hello")

    with Session() as session, Runtime(ScriptedModel(["fine"]), callbacks=[saver]):
        assert job() == "fine"
    run = session.dag.find(name="job")[0]
    assert any("TrajectorySaver.on_llm_start" in e for e in run.meta["callback_errors"])
    assert run_status(run) == "completed"


def test_screenshot_steps_must_be_non_negative_ints(tmp_path):
    saver = TrajectorySaver(tmp_path)

    @agentic_function
    def job() -> None:
        saver.on_screenshot(screen(), "../1")

    with Session(), Runtime(ScriptedModel([]), callbacks=[saver]), pytest.raises(UsageError):
        job()
    assert not (tmp_path.parent / "1").exists()


def test_calls_outside_a_run_are_not_saved_and_failed_exchanges_have_no_reply(tmp_path):
    saver = TrajectorySaver(tmp_path)

    @agentic_function
    def job() -> None:
        llm("doomed")

    with Session(), Runtime(ScriptedModel(["top", ModelAuthError("bad key")]), callbacks=[saver]):
        assert llm("top level") == "top"
        assert saver.folders == {}
        with pytest.raises(ModelAuthError):
            job()
    folder = next(iter(saver.folders.values()))
    assert (folder / "llm" / "0001-request.json").is_file()
    assert not (folder / "llm" / "0001-reply.json").exists()
    assert "no reply recorded" in (folder / "report.html").read_text()
    assert json.loads((folder / "metadata.json").read_text())["status"] == "failed"


class _NotedScreen(PILImage.Image):
    """A screenshot that notes the thread that encodes it."""

    threads: ClassVar[list[str]] = []

    def save(self, *args, **kwargs):  # type: ignore[override]
        self.threads.append(threading.current_thread().name)
        return super().save(*args, **kwargs)


def noted_screen() -> PILImage.Image:
    image = screen("navy")
    image.__class__ = _NotedScreen
    return image


@pytest.mark.parametrize("strict", [False, True])
def test_screenshots_are_encoded_off_the_step_unless_strict_and_on_disk_at_the_runs_end(
    tmp_path, strict
):
    saver = TrajectorySaver(tmp_path, strict=strict)
    _NotedScreen.threads = []

    @agentic_function
    def job() -> str:
        notify([saver], "on_screenshot", noted_screen(), 1, record_on=current_run())
        notify([saver], "on_action_start", Click(x=5, y=5), record_on=current_run())
        saver.flush()
        folder = next(iter(saver.folders.values()))
        assert (folder / "screenshots" / "step-001.png").is_file()  # flushed
        return "ok"

    with Session(), Runtime(ScriptedModel([]), callbacks=[saver]):
        assert job() == "ok"
    folder = next(iter(saver.folders.values()))
    assert PILImage.open(folder / "screenshots" / "step-001.png").getpixel((0, 0)) == (0, 0, 128)
    assert (folder / "screenshots" / "step-001-action-1.png").is_file()
    caller = threading.current_thread().name
    assert _NotedScreen.threads == [caller if strict else "trajectory-writer"]


def test_a_screenshot_that_fails_to_encode_in_the_background_is_recorded_on_the_run(tmp_path):
    saver = TrajectorySaver(tmp_path)

    @agentic_function
    def job() -> str:
        notify([saver], "on_screenshot", screen().convert("CMYK"), 1, record_on=current_run())
        return "ok"

    with Session() as session, Runtime(ScriptedModel([]), callbacks=[saver]):
        assert job() == "ok"
    run = session.dag.find(name="job")[0]
    assert any("TrajectorySaver.on_screenshot" in e for e in run.meta["callback_errors"])
    folder = next(iter(saver.folders.values()))
    meta = json.loads((folder / "metadata.json").read_text())
    assert any("on_screenshot" in e for e in meta["callback_errors"])
