"""`openprogram batch` and `openprogram bench miniwob` from the command line: a real
MiniWoB++ episode in Chromium on Xvfb; bad lines and names reported clearly."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from openprogram.cli import cli

pytest.importorskip("miniwob", reason='needs pip install "openprogram[bench]"')


@pytest.mark.x11
@pytest.mark.browser
@pytest.mark.skipif(shutil.which("chromedriver") is None, reason="chromedriver is not installed")
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
def test_batch_runs_the_good_lines_and_names_the_bad_one(tmp_path):
    tasks = tmp_path / "evening.jsonl"
    tasks.write_text(
        json.dumps({"id": "dialog", "benchmark": "miniwob/click-dialog", "seed": 4})
        + "\n{'id': 'single quotes'}\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli, ["batch", str(tasks), "--model", "oracle", "--out", str(out), "--workers", "1"]
    )
    assert result.exit_code == 2, result.output  # a line was skipped: not a clean run
    assert f"skipped a bad task: {tasks}:2: not valid JSON" in result.output
    table = result.output.splitlines()
    assert table[1].split()[:3] == ["task", "episodes", "success"]
    assert any(line.split()[:3] == ["click-dialog", "1", "100%"] for line in table)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["episodes"][0]["session"] == "evening-dialog-a1"  # named after the file
    assert (out / "index.html").is_file() and (out / "batch.db").is_file()


def test_bench_refuses_unknown_tasks_and_bad_seeds_before_running(tmp_path):
    runner = CliRunner()
    unknown = runner.invoke(
        cli, ["bench", "miniwob", "--model", "oracle", "--tasks", "clik-button"]
    )
    assert unknown.exit_code == 1
    assert "unknown MiniWoB++ task 'clik-button'; did you mean click-button" in unknown.output
    seeds = runner.invoke(cli, ["bench", "miniwob", "--model", "oracle", "--seeds", "a-b"])
    assert seeds.exit_code == 1 and "--seeds 'a-b' is not like '0-4'" in seeds.output
    missing = runner.invoke(cli, ["batch", str(tmp_path / "none.jsonl"), "--model", "oracle",
                                  "--out", str(tmp_path / "o")])  # fmt: skip
    assert missing.exit_code == 1 and "cannot read tasks file" in missing.output
    helped = runner.invoke(cli, ["batch", "--help"])
    assert helped.exit_code == 0 and "--engine [local|ray]" in helped.output
