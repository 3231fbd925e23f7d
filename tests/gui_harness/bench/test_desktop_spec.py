"""Desktop task files and evaluators without a desktop: the shipped suite is valid and
spans the apps; a bad file is refused naming the file and the field; a wrong, missing or
damaged output is a failure with its reason, never a crash."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from gui_harness.bench._desktop_eval import evaluate
from gui_harness.bench._odf import odf_text, ods_cells, write_ods, write_odt
from gui_harness.bench.desktop_oracle import find_target
from gui_harness.bench.desktop_spec import (
    DesktopTask,
    Target,
    load_desktop_task,
    load_desktop_tasks,
    suite_dir,
)
from gui_harness.errors import InvalidTask
from gui_harness.perception import Component

GOOD = {
    "id": "t1",
    "app": "tk",
    "instruction": "do it",
    "config": [{"type": "launch", "argv": ["xterm"]}],
    "evaluator": [{"type": "file_text", "path": "{workdir}/out.txt", "expected": "x"}],
    "oracle": [{"keys": ["ctrl", "s"]}, {"type": "hi"}, {"click": {"label": "OK"}}],
}


def _write(folder: Path, name: str, data: object) -> Path:
    path = folder / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def test_the_shipped_suite_has_45_tasks_over_14_apps_each_named_by_its_file():
    suite = load_desktop_tasks()
    assert len(suite) >= 45
    apps = {task.app for _, task in suite}
    assert len(apps) >= 14, apps  # 8 before issue 35, and 6 more at least
    for new in ("gnome-text-editor", "libreoffice-impress", "libreoffice-draw", "pcmanfm-qt",
                "qt6-form", "tk-notebook", "gtk4-panel"):  # fmt: skip
        assert new in apps, new
    for path, task in suite:
        assert path.stem == task.id
        assert task.oracle, f"{task.id} has no oracle steps"
    assert suite_dir().is_dir()


def test_a_good_task_file_loads_with_its_steps(tmp_path):
    task = load_desktop_task(_write(tmp_path, "t1.json", GOOD))
    assert isinstance(task, DesktopTask)
    assert [type(step).__name__ for step in task.oracle] == ["KeysStep", "TypeStep", "ClickStep"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"instruction": None}, "field instruction"),
        ({"config": [{"type": "launch"}]}, "field config.0.launch.argv"),
        ({"evaluator": [{"type": "telepathy"}]}, "field evaluator.0"),
        ({"evaluator": [{"type": "ods_cell", "path": "a.ods", "cell": "3B", "expected": 1}]},
         "field evaluator.0.ods_cell.cell"),
        ({"oracle": [{"press": "x"}]}, "field oracle.0"),
        ({"oracle": [{"click": {"kind": "grid"}, "cell": "4B"}]}, "field oracle.0.ClickStep.cell"),
        # a kind perception never gives (a menu's items are buttons): found nowhere, ever
        ({"oracle": [{"click": {"label": "Save", "kind": "menu_item"}}]},
         "field oracle.0.ClickStep.click.kind"),
        ({"evaluator": [{"type": "accessibility", "label": "x", "kind": "menu"}]},
         "field evaluator.0.accessibility.kind"),
        ({"surprise": 1}, "field surprise"),
    ],
)  # fmt: skip
def test_a_bad_task_file_is_refused_naming_the_file_and_the_field(tmp_path, change, field):
    data = {**GOOD, **change}
    data = {k: v for k, v in data.items() if v is not None}
    path = _write(tmp_path, "bad.json", data)
    with pytest.raises(InvalidTask) as caught:
        load_desktop_task(path)
    assert str(path) in str(caught.value) and field in str(caught.value)


def test_files_that_are_no_task_say_so(tmp_path):
    with pytest.raises(InvalidTask, match=r"not valid JSON .* line 1"):
        load_desktop_task(_write(tmp_path, "a.json", "{oops"))
    with pytest.raises(InvalidTask, match="one JSON object"):
        load_desktop_task(_write(tmp_path, "b.json", [1]))
    with pytest.raises(InvalidTask, match="cannot read"):
        load_desktop_task(tmp_path / "missing.json")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InvalidTask, match=r"no \*\.json task files"):
        load_desktop_tasks(empty)
    _write(empty, "x.json", GOOD)
    _write(empty, "y.json", GOOD)
    with pytest.raises(InvalidTask, match="id 't1' is used by"):
        load_desktop_tasks(empty)


def test_odf_files_written_are_read_back(tmp_path):
    write_ods(tmp_path / "a.ods", [["Item", "Qty"], ["a & b", 3], ["c", 2.5]])
    assert ods_cells(tmp_path / "a.ods") == {
        "A1": ("Item", None), "B1": ("Qty", None), "A2": ("a & b", None),
        "B2": ("3", 3.0), "A3": ("c", None), "B3": ("2.5", 2.5),
    }  # fmt: skip
    write_odt(tmp_path / "a.odt", ["one", "<two>"])
    assert odf_text(tmp_path / "a.odt") == "one\n<two>"


def _spec(**check: object) -> list:
    return DesktopTask.model_validate({**GOOD, "evaluator": [check]}).evaluator


def _judge(tmp_path: Path, accessibility=None, **check: object) -> tuple[bool, str]:
    expand = lambda text: text.replace("{workdir}", str(tmp_path))  # noqa: E731
    return evaluate(_spec(**check), expand, accessibility=accessibility, timeout=0)


def test_evaluators_pass_the_right_output(tmp_path):
    write_ods(tmp_path / "s.ods", [["Total", 8]])
    (tmp_path / "t.txt").write_text("hello\n", encoding="utf-8")
    assert _judge(tmp_path, type="ods_cell", path="{workdir}/s.ods", cell="b1", expected=8)[0]
    assert _judge(tmp_path, type="ods_cell", path="{workdir}/s.ods", cell="A1", expected="Total")[0]
    assert _judge(tmp_path, type="file_text", path="{workdir}/t.txt", expected="hello")[0]
    assert _judge(tmp_path, type="file_text", path="{workdir}/t.txt", contains=["ell"])[0]
    (tmp_path / "store" / "3f2a").mkdir(parents=True)  # a folder the app names itself
    (tmp_path / "store" / "3f2a" / "props").write_text('{"title": "Team"}', encoding="utf-8")
    assert _judge(tmp_path, type="file_text", path="{workdir}/store/*/props", contains=["Team"])[0]
    shown = [Component(1, "radio", (0, 0, 9, 9), "Page 2", states=("checked",))]
    verdict = _judge(tmp_path, lambda: shown, type="accessibility", label="page 2",
                     states=["checked"])  # fmt: skip
    assert verdict == (True, "the accessibility tree shows radio 'Page 2'")


def test_wrong_missing_or_damaged_output_fails_with_its_reason(tmp_path):
    write_ods(tmp_path / "s.ods", [["Total", 7]])
    (tmp_path / "broken.ods").write_bytes(b"not a zip at all")
    with zipfile.ZipFile(tmp_path / "nocontent.odt", "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.text")
    (tmp_path / "t.txt").write_text("hullo", encoding="utf-8")
    cases = [
        ({"type": "ods_cell", "path": "{workdir}/s.ods", "cell": "B1", "expected": 8},
         "s.ods!B1 holds '7', not 8"),
        ({"type": "ods_cell", "path": "{workdir}/s.ods", "cell": "C9", "expected": "x"},
         "s.ods!C9 holds '', not 'x'"),
        ({"type": "ods_cell", "path": "{workdir}/s.ods", "cell": "A1", "expected": 1,
          "sheet": "Other"}, "cannot read the output"),
        ({"type": "ods_cell", "path": "{workdir}/gone.ods", "cell": "A1", "expected": 1},
         "gone.ods was not saved"),
        ({"type": "ods_cell", "path": "{workdir}/broken.ods", "cell": "A1", "expected": 1},
         "cannot read the output"),
        ({"type": "file_text", "path": "{workdir}/nocontent.odt", "expected": "x"},
         "cannot read the output"),
        ({"type": "file_text", "path": "{workdir}/t.txt", "expected": "hello"},
         "t.txt holds 'hullo', not 'hello'"),
        ({"type": "file_text", "path": "{workdir}/t.txt", "contains": ["hell"]},
         "t.txt lacks ['hell']"),
        ({"type": "file_text", "path": "{workdir}/*/none.txt", "contains": ["x"]},
         "no file matches 'none.txt'"),
        ({"type": "file_text", "path": "{workdir}/*.ods", "contains": ["x"]},
         "2 files match '*.ods'"),
        ({"type": "clipboard", "expected": "42"}, "the desktop is not running"),
        ({"type": "accessibility", "label": "OK"}, "no accessibility bus"),
    ]  # fmt: skip
    for check, reason in cases:
        passed, why = _judge(tmp_path, **check)
        assert not passed and reason in why, (check, why)
    shown = [Component(1, "radio", (0, 0, 9, 9), "Page 2")]
    passed, why = _judge(tmp_path, lambda: shown, type="accessibility", label="Page 2",
                         states=["checked"])  # fmt: skip
    assert not passed and "'Page 2' is there with states [[]], not ['checked']" in why
    passed, why = _judge(tmp_path, lambda: shown, type="accessibility", label="Page 3")
    assert not passed and "no component labelled 'Page 3'" in why


def test_a_target_finds_a_control_by_its_caption_not_the_caption_text():
    caption = Component(1, "text", (0, 0, 40, 16), "Title:")
    field = Component(2, "field", (0, 20, 200, 22), None, caption="Title:")
    named = Component(3, "field", (0, 50, 200, 22), "File name:")  # Qt's buddy label
    assert find_target(Target(label="Title"), [caption, field]) is field
    assert find_target(Target(label="Title:"), [caption, field]) is caption
    assert find_target(Target(label="File name"), [caption, field, named]) is named


def test_the_oracle_finds_components_by_label_kind_and_rank():
    shown = [
        Component(1, "button", (0, 0, 9, 9), "Save"),
        Component(2, "text", (0, 20, 9, 9), "Save as"),
        Component(3, "button", (0, 40, 9, 9), " save "),
        Component(4, "field", (0, 60, 9, 9), None),
    ]
    assert find_target(Target(label="SAVE"), shown).index == 1
    assert find_target(Target(label="save", nth=1), shown).index == 3
    assert find_target(Target(label_contains="as"), shown).index == 2
    assert find_target(Target(kind="field"), shown).index == 4
    assert find_target(Target(label="Open"), shown) is None
    assert find_target(Target(label="save", nth=2), shown) is None


def test_the_desktop_suite_is_public_from_gui_harness_bench():
    import gui_harness.bench as bench

    desktop = {name for name in bench.__all__ if "esktop" in name}
    assert desktop == {
        "DesktopEpisode", "DesktopOracle", "DesktopTask", "load_desktop_task",
        "load_desktop_tasks", "run_desktop_task",
    }  # fmt: skip
    assert all(hasattr(bench, name) for name in bench.__all__)
