"""The batch summary: per task and overall success rate and means, as a table and JSON."""

from __future__ import annotations

from gui_harness.batch import BatchResult, summarise, summary_table


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

    from gui_harness.batch.run import _Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    bar = _Progress(terminal, total=4, done=1)
    bar.update({"success": True})
    bar.close()
    frames = terminal.getvalue().split("\r")
    assert frames[1].startswith("[" + "#" * 8) and "1/4 episodes" in frames[1]
    assert "2/4 episodes, 1 succeeded" in frames[2] and frames[2].endswith("\n")
    pipe = io.StringIO()  # a pipe or a log file: no bar at all
    quiet = _Progress(pipe, total=4, done=0)
    quiet.update({"success": True})
    quiet.close()
    assert pipe.getvalue() == ""
