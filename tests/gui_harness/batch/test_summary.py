"""The batch summary: per task and overall success rate and means, as a table and JSON."""

from __future__ import annotations

from gui_harness.batch import BatchResult, summarise, summary_table
from gui_harness.batch.summary import write_summary


def _episode(name, success, steps, tokens=100, cost=0.01, seconds=2.0, status=None):
    return {"id": f"{name}-{steps}", "name": name, "success": success, "steps": steps,
            "tokens": tokens, "cost_usd": cost, "seconds": seconds,
            "status": status or ("success" if success else "failure")}  # fmt: skip


def test_summary_groups_episodes_by_task_and_totals_them():
    episodes = [
        _episode("click-button", True, 2),
        _episode("click-button", False, 4, seconds=4.0),
        _episode("login-user", True, 6, tokens=300),
        _episode("login-user", False, 0, tokens=0, cost=0.0, status="failed"),
    ]
    summary = summarise(episodes)
    first, second = summary["tasks"]
    assert (first["task"], first["episodes"], first["success_rate"]) == ("click-button", 2, 0.5)
    assert first["steps"] == 3.0 and first["seconds"] == 3.0
    assert second["tokens"] == 150.0 and second["failed_runs"] == 1
    assert summary["total"]["episodes"] == 4 and summary["total"]["success_rate"] == 0.5
    table = summary_table(summary)
    assert table.splitlines()[0].split() == ["task", "episodes", "success", "steps", "tokens",
                                             "cost", "$", "s/episode"]  # fmt: skip
    assert "click-button" in table and table.splitlines()[-1].startswith("all")
    result = BatchResult(episodes, ["line 3: bad"], ran=3)
    assert result.success_rate == 0.5
    assert result.to_dict()["summary"] == summary and result.to_dict()["problems"] == [
        "line 3: bad"
    ]


def test_an_empty_batch_summarises_to_zeros():
    assert summarise([])["total"]["success_rate"] == 0.0
    assert BatchResult([]).success_rate == 0.0


def test_the_progress_bar_draws_only_on_a_terminal():
    import io

    import click

    from gui_harness.batch.run import _Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    bar = _Progress(terminal, total=4, done=1)
    bar.update({"success": True})
    bar.close()
    frames = click.unstyle(terminal.getvalue()).split("\r")  # click's bar hides the cursor
    assert frames[1].startswith("[" + "#" * 7 + "-") and "1/4 episodes" in frames[1]
    assert "2/4 episodes, 1 succeeded" in frames[2] and frames[2].endswith("\n")
    pipe = io.StringIO()  # a pipe or a log file: no bar at all
    quiet = _Progress(pipe, total=4, done=0)
    quiet.update({"success": True})
    quiet.close()
    assert pipe.getvalue() == ""


def _bench(name: str, passed: set[str], tmp_path) -> BatchResult:
    episodes = []
    for task in ("click-button", "login-user"):
        for seed in range(4):
            id, ok = f"{task}-{seed}", f"{task}-{seed}" in passed
            session = f"{name}-{id}-a1"
            episodes.append({**_episode(task, ok, 3), "id": id, "reward": float(ok),
                             "session": session, "report": f"episodes/{session}.html",
                             "detail": f"evaluator: {'ok' if ok else 'wrong cell'}"})  # fmt: skip
    episodes[-1].update(status="failed", success=False, reward=None, detail="2 attempts failed")
    return BatchResult(episodes, ["line 9: bad"], name=name, store=str(tmp_path / "b.db"),
                       model="oracle")  # fmt: skip


def test_a_bench_result_is_an_eval_report_each_task_a_case_its_session_a_click_away(tmp_path):
    from gui_harness.batch.summary import write_index, write_summary
    from openprogram.evals import EvalReport

    result = _bench("v1", {"click-button-0", "click-button-1", "login-user-2"}, tmp_path)
    report = result.report
    assert isinstance(report, EvalReport) and report.keys == ["success", "reward"]
    assert [case.name for case in report.dataset.cases][:2] == ["click-button-0", "click-button-1"]
    assert report.runs[0].session == "v1-click-button-0-a1" and report.runs[0].output["steps"] == 3
    assert report.summary()["success"].mean == result.success_rate == 3 / 8
    failed = report.runs[-1]  # an episode that could not run: the run's error, scored 0
    assert failed.error == "2 attempts failed" and failed.score("reward").value == 0.0
    assert failed.score("success").reason == "the run failed: 2 attempts failed"
    assert report.store == str(tmp_path / "b.db")
    table = report.table()
    assert table.splitlines()[0].startswith("batch v1: 8 cases, ") and "model oracle" in table
    assert "success   0.375  [" in table and "failed: 1" in table

    write_summary(result, tmp_path)
    page = write_index(result, tmp_path, "batch v1").read_text(encoding="utf-8")
    assert '<a href="episodes/v1-click-button-0-a1.html">v1-click-button-0-a1</a>' in page
    assert "Per task" in page and "Tasks not run" in page and "line 9: bad" in page
    assert not (tmp_path / "index.runs").exists()  # the episodes' own reports are linked
    saved = EvalReport.load(result.eval_path)
    assert saved.case_values("success") == report.case_values("success")

    better = _bench("v2", {f"{t}-{s}" for t in ("click-button", "login-user") for s in range(3)},
                    tmp_path)  # fmt: skip
    change = saved.compare(better.report)["success"]
    assert change.improved == ["click-button-2", "login-user-0", "login-user-1"]
    assert change.regressed == [] and change.n == 8


def test_the_batch_part_of_the_page_escapes_task_names_and_problems():
    from gui_harness.batch.summary import _batch_html

    evil = "<script>alert(1)</script>"
    page = _batch_html(BatchResult([_episode(evil, False, 1)], [evil]))
    assert (
        evil not in page and page.count("&lt;script&gt;alert(1)&lt;/script&gt;") == 2
    )  # the task, the problem


def test_the_batch_result_keeps_its_episodes_sessions_from_prune_wherever_its_store_is(
    tmp_path, caplog
):
    from openprogram import Session
    from openprogram.evals import EvalReport
    from openprogram.store import open_store

    # a folder whose name the report's masking alters: the report cannot open the store
    # by the name it keeps of it, but the batch recorded there and its sessions must stay
    folder = tmp_path / "token=nightly"
    folder.mkdir()
    store = str(folder / "runs.db")
    for session in ("b-cb0-a1", "b-cb1-a1", "other"):
        with Session(store, id=session):
            pass
    episodes = [{**_episode("click-button", True, 2), "id": f"cb{i}", "session": f"b-cb{i}-a1"}
                for i in range(2)]  # fmt: skip
    result = BatchResult(episodes, name="b", store=store)
    write_summary(result, tmp_path)
    assert "could not be kept from prune" not in caplog.text
    opened, _ = open_store(store)
    try:
        done = opened.prune(older_than=0)
        assert done.removed == ["other"]
        assert done.kept == {"b-cb0-a1": "report:b reads it", "b-cb1-a1": "report:b reads it"}
        assert EvalReport.load(tmp_path / "report.json").release(store=store) == 2
        assert sorted(opened.prune(older_than=0).removed) == ["b-cb0-a1", "b-cb1-a1"]
    finally:
        opened.close()
