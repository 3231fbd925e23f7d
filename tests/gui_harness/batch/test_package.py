"""The public names of gui_harness.batch and gui_harness.bench are pinned."""

import pytest

import gui_harness.batch


def test_batch_exports_are_pinned():
    assert set(gui_harness.batch.__all__) == {
        "ORACLE", "BatchResult", "BatchTask", "TaskProblem", "batch_episode", "load_tasks",
        "parse_task", "run_batch", "session_id", "summarise", "summary_table",
    }  # fmt: skip
    for name in gui_harness.batch.__all__:
        assert hasattr(gui_harness.batch, name)


def test_bench_exports_are_pinned():
    pytest.importorskip("miniwob", reason='needs pip install "openprogram[bench]"')
    import gui_harness.bench

    assert set(gui_harness.bench.__all__) == {
        "ORACLE_TASKS", "MiniWobPage", "Oracle", "check_task", "miniwob_tasks", "pick_component",
        "DesktopEpisode", "DesktopOracle", "DesktopTask", "load_desktop_task",
        "load_desktop_tasks", "run_desktop_task",
    }  # fmt: skip
    for name in gui_harness.bench.__all__:
        assert hasattr(gui_harness.bench, name)
