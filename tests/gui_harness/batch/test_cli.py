"""`openprogram batch` as a user runs it: what it prints back of its input is bounded,
a store's password is never printed, and --api-base/--api-key-env reach a real model
server with the key never written anywhere."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest
from click.testing import CliRunner

from gui_harness.batch import run_batch
from gui_harness.batch.cli import _report, _threshold
from gui_harness.batch.summary import BatchResult
from gui_harness.demo.app import read_state
from gui_harness.demo.policy import BASIC_TASK, NAME
from openprogram.cli import cli
from openprogram.errors import ConfigError
from openprogram.testing import OpenAIServer
from tests.support.wire_policy import answer

HUGE = 20 * 1024 * 1024  # a 100 MB line takes the same path: only its length is read
PASSWORD = "S3cretPassw0rd!"


def _batch(tmp_path, *args: str):
    return CliRunner().invoke(cli, ["batch", *args, "--model", "oracle", "--out",
                                    str(tmp_path / "out")])  # fmt: skip


def test_huge_bad_task_lines_are_reported_in_a_few_hundred_characters(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    with tasks.open("w", encoding="utf-8") as file:
        file.write(json.dumps({"id": "t", "task": "x" * HUGE, "bogus": 1}) + "\n")
        file.write(json.dumps(["y" * 900_000]) + "\n")
        file.write(json.dumps({"id": "m", "benchmark": "miniwob/" + "z" * 900_000}) + "\n")
        file.write("{" + "w" * 900_000 + "\n")
    result = _batch(tmp_path, str(tasks))
    assert result.exit_code == 2, result.output[:2000]
    skipped = [line for line in result.output.splitlines() if line.startswith("skipped")]
    assert len(skipped) == 4, result.output[:2000]
    assert len(result.output) < 6_000
    assert (
        f"{tasks}:1: the line is 20 971 555 bytes; a task line may have at most 1 048 576"
        in (skipped[0])
    )
    assert f"{tasks}:2: ['yyy" in skipped[1] and "characters]" in skipped[1]
    assert f"{tasks}:3: task: Value error, unknown MiniWoB++ task 'zzz" in skipped[2]
    assert "characters]" in skipped[2]
    assert f"{tasks}:4: not valid JSON" in skipped[3]


def test_a_line_that_is_not_utf8_is_one_bad_line(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes(b'{"id": "a\xff"}\n# a comment\n\n')
    result = _batch(tmp_path, str(tasks))
    assert result.exit_code == 2
    assert f"skipped a bad task: {tasks}:1: not UTF-8 text" in result.output


@pytest.mark.parametrize(
    "store",
    [
        f"postgresql://bob:{PASSWORD}@127.0.0.1:1/db",
        f"postgres://bob:{PASSWORD}@127.0.0.1:1/db?sslmode=disable",
        f"postgresql://127.0.0.1:1/db?user=bob&password={PASSWORD}",
        f"mysql://bob:{PASSWORD}@127.0.0.1/db",
    ],
)
def test_the_batch_never_prints_a_store_password(tmp_path, store):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "t", "benchmark": "miniwob/click-button"}) + "\n")
    result = _batch(tmp_path, str(tasks), "--store", store)
    assert result.exit_code == 1, result.output
    assert "store" in result.output and "***" in result.output
    assert PASSWORD not in result.output
    assert "S3cret" not in result.output


def test_a_password_the_driver_quotes_back_is_masked_and_its_cause_cut(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "t", "benchmark": "miniwob/click-button"}) + "\n")
    result = _batch(tmp_path, str(tasks), "--store", "postgresql://bob:S3cret%zz@127.0.0.1:1/db")
    assert result.exit_code == 1 and "invalid percent-encoded token" in result.output
    assert "S3cret" not in result.output
    with pytest.raises(ConfigError) as caught:
        run_batch(tasks, store="postgresql://bob:S3cret%zz@127.0.0.1:1/db", model="oracle",
                  out=tmp_path / "o")  # fmt: skip
    error: BaseException | None = caught.value
    while error is not None:  # what a traceback would print
        assert "S3cret" not in str(error)
        error = error.__cause__ or (None if error.__suppress_context__ else error.__context__)


@pytest.mark.x11
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
def test_a_batch_with_an_episode_that_could_not_run_exits_1_and_names_it(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "gone", "task": "press Save",
                                 "app": ["/nonexistent/app"]}) + "\n")  # fmt: skip
    result = CliRunner().invoke(cli, ["batch", str(tasks), "--model", "demo", "--max-attempts",
                                      "1", "--out", str(tmp_path / "out")])  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "could not run gone: 1 attempts failed; last: DesktopError" in result.output


def _result(*statuses: str) -> BatchResult:
    episodes = [{"id": f"t{i}", "name": "x", "success": s == "success", "status": s,
                 "steps": 1, "tokens": 0, "cost_usd": 0.0, "seconds": 0.0, "detail": None}
                for i, s in enumerate(statuses)]  # fmt: skip
    return BatchResult(episodes)


@pytest.mark.parametrize(
    ("statuses", "threshold", "code"),
    [
        (("success", "success"), None, 0),
        (("success", "failure"), None, 0),
        (("success", "failure"), 0.5, 0),
        (("success", "failure"), 0.75, 1),
        (("success", "failed"), None, 1),
        (("failure",), 1.0, 1),
    ],
)
def test_the_exit_status_says_whether_the_batch_met_its_threshold(
    statuses, threshold, code, capsys
):
    assert _report(_result(*statuses), threshold) == code
    if code and "failed" not in statuses:
        assert "is below the threshold" in capsys.readouterr().err


def test_an_oracle_run_defaults_to_a_threshold_of_one_and_others_to_none():
    assert _threshold(None, "oracle") == 1.0
    assert _threshold(0.5, "oracle") == 0.5
    assert _threshold(None, "openai/gpt-4o") is None


def test_the_outcome_prints_the_eval_table_and_a_significant_regression_exits_1(capsys):
    before = _result(*["success"] * 8).report
    assert _report(_result(*["success"] * 8), None, before) == 0
    out = capsys.readouterr().out
    assert "success   1.000  [" in out and "batch batch: 8 cases" in out
    assert _report(_result("success", *["failure"] * 7), None, before) == 1  # 7 flipped
    assert "success: worse on 7: t1, t2" in capsys.readouterr().out


def test_a_missing_report_to_compare_with_is_refused_before_any_episode(tmp_path):
    result = _batch(tmp_path, str(tmp_path / "none.jsonl"), "--compare", str(tmp_path / "no.json"))
    assert result.exit_code == 1 and "no report file" in result.output


def _written(folder) -> list:
    """Every file a batch wrote under `folder`: the reports, the store and its WAL."""
    return [path for path in folder.rglob("*") if path.is_file()]


@pytest.mark.x11
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
def test_a_batch_reaches_a_model_at_api_base_with_the_key_the_named_variable_holds(
    tmp_path, monkeypatch
):
    """--api-base and --api-key-env, as every command that talks to a model takes them:
    the episode's worker (a process of its own) sends the key the variable holds to the
    local OpenAI-compatible server, whose demo policy fills the form; the key is in no
    file the batch wrote and not in its output."""
    key = "gw-" + os.urandom(12).hex()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    monkeypatch.setenv("FORM_GATEWAY_KEY", key)
    state = tmp_path / "state.json"
    app = [sys.executable, "-m", "gui_harness.demo.app", "--state", str(state)]
    tasks = tmp_path / "form.jsonl"
    tasks.write_text(json.dumps({"id": "form", "task": BASIC_TASK, "app": app}) + "\n")
    out = tmp_path / "out"
    with OpenAIServer(responder=answer) as server:
        result = CliRunner().invoke(cli, [
            "batch", str(tasks), "--model", "openai/form-model", "--api-base", server.url,
            "--api-key-env", "FORM_GATEWAY_KEY", "--max-attempts", "1", "--out", str(out),
        ])  # fmt: skip
        requests = list(server.requests)
    assert result.exit_code == 0, result.output
    (episode,) = json.loads((out / "summary.json").read_text())["episodes"]
    assert episode["success"], episode.get("detail")
    assert read_state(state)["state"]["name"] == NAME
    assert requests and all(r.body["model"] == "form-model" for r in requests)
    assert all(r.headers["authorization"] == f"Bearer {key}" for r in requests)
    assert key not in result.output
    files = _written(out)
    assert {"summary.json", "index.html", "batch.db"} <= {p.name for p in files}
    for path in files:
        assert key.encode() not in path.read_bytes(), path


def test_a_key_variable_that_is_not_set_stops_the_batch_before_any_episode(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "t", "task": "x", "app": ["true"]}) + "\n")
    result = CliRunner().invoke(cli, [
        "batch", str(tasks), "--model", "openai/m", "--api-key-env", "NO_SUCH_KEY_VARIABLE",
        "--out", str(tmp_path / "out"),
    ])  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "--api-key-env NO_SUCH_KEY_VARIABLE: that environment variable is not set" in (
        result.output
    )
    assert not (tmp_path / "out").exists()  # nothing started, nothing written
