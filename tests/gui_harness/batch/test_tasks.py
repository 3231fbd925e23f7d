"""Tasks files: good lines become BatchTasks, each bad line a problem naming its line."""

from __future__ import annotations

import json

import pytest

from gui_harness.batch import BatchTask, load_tasks, parse_task
from gui_harness.errors import InvalidTask

pytest.importorskip("miniwob", reason='needs pip install "openprogram[bench]"')


def test_a_tasks_file_keeps_its_good_lines_and_names_each_bad_one(tmp_path):
    path = tmp_path / "tasks.jsonl"
    lines = [
        json.dumps({"id": "t1", "task": "open the menu", "app": ["xterm"], "max_steps": 5}),
        "",
        "# a comment",
        '{"id": "t2", "benchmark": "miniwob/click-button", "seed": 3',  # cut short
        json.dumps({"id": "t3", "benchmark": "miniwob/no-such-task"}),
        json.dumps({"id": "t4", "benchmark": "miniwob/click-button", "seed": 1, "model": "m"}),
        json.dumps({"id": "t4", "task": "again"}),
        json.dumps({"id": "t5"}),
        json.dumps(["not", "an", "object"]),
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    tasks, problems = load_tasks(path)
    assert [t.id for t in tasks] == ["t1", "t4"]
    assert (
        tasks[0].app == ["xterm"] and tasks[0].max_steps == 5 and tasks[0].name == "open the menu"
    )
    assert tasks[1].miniwob == "click-button" and tasks[1].seed == 1 and tasks[1].model == "m"
    by_line = {p.line: str(p.error) for p in problems}
    assert sorted(by_line) == [4, 5, 7, 8, 9]
    assert f"{path}:4: not valid JSON" in by_line[4]
    assert "unknown MiniWoB++ task 'no-such-task'" in by_line[5]
    assert "id 't4' is used already on line 6" in by_line[7]
    assert 'give either "task"' in by_line[8]
    assert "is not a JSON object" in by_line[9]
    assert all(isinstance(p.error, InvalidTask) for p in problems)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"id": "a b", "task": "x"}, "id"),
        ({"id": "t", "task": "x", "benchmark": "miniwob/click-button"}, "either"),
        ({"id": "t", "benchmark": "webarena/1"}, "write 'miniwob/<task>'"),
        ({"id": "t", "benchmark": "miniwob/click-button", "app": ["x"]}, '"app" goes with'),
        ({"id": "t", "task": "x", "colour": "red"}, "colour"),
        ({"id": "t", "task": "x", "max_steps": 0}, "max_steps"),
    ],
)
def test_bad_tasks_are_refused_saying_what_is_wrong(data, message):
    with pytest.raises(InvalidTask, match="task 7") as caught:
        parse_task(data, where="task 7")
    assert message in str(caught.value)


def test_an_unreadable_tasks_file_is_a_clear_error(tmp_path):
    with pytest.raises(InvalidTask, match="cannot read tasks file"):
        load_tasks(tmp_path / "missing.jsonl")


def test_tasks_are_frozen_values():
    task = BatchTask(id="t", task="x")
    assert task.model_dump(exclude_none=True) == {
        "id": "t",
        "task": "x",
        "seed": 0,
        "max_steps": 15,
    }
