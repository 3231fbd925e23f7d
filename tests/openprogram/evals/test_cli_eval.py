"""`openprogram eval`: a dataset file through MODULE:FUNCTION, a table, a comparison."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from openprogram.cli import cli
from openprogram.evals import Case, Dataset, EvalReport

SCRIPT = "tests.openprogram.evals.scripted"


def _invoke(*arguments: str):
    return CliRunner().invoke(cli, ["eval", *arguments], prog_name="openprogram")


def test_eval_prints_the_table_and_saves_a_report_to_compare_with(tmp_path) -> None:
    cases = tmp_path / "cases.jsonl"
    Dataset(
        cases=[
            Case(inputs={"product": p}, expected=f"Smart {p}.", name=p) for p in ("coffee", "tea")
        ]
    ).save(cases)
    saved, page = str(tmp_path / "v1.json"), str(tmp_path / "v1.html")
    first = _invoke(str(cases), f"{SCRIPT}:write", "-s", "equals", "-s", "contains:Smart",
                    "--save", saved, "--html", page)  # fmt: skip
    assert first.exit_code == 0, first.output
    assert "equals              0.500  [0.095, 0.905]       2       0" in first.output
    assert EvalReport.load(tmp_path / "v1.json").case_values("equals") == {
        "coffee": 1.0,
        "tea": 0.0,
    }
    assert (tmp_path / "v1.runs" / "tea-0.html").exists()
    second = _invoke(str(cases), f"{SCRIPT}:write_all", "--compare", str(tmp_path / "v1.json"))
    assert second.exit_code == 0, second.output
    assert "equals   0.500   1.000   +0.500" in second.output
    assert "equals: better on 1: tea" in second.output


def test_eval_errors_are_one_line(tmp_path) -> None:
    missing = _invoke(str(tmp_path / "none.yaml"), f"{SCRIPT}:write")
    assert missing.exit_code == 1 and "Error: no dataset file" in missing.output
    cases = Dataset(cases=[Case(inputs={"product": "x"})]).save(tmp_path / "c.json")
    wrong = _invoke(str(cases), f"{SCRIPT}:nothing")
    assert wrong.exit_code == 1 and "has no 'nothing'" in wrong.output
    bad = _invoke(str(cases), f"{SCRIPT}:write", "-s", "max_cost:lots")
    assert bad.exit_code == 2 and "max_cost takes a number" in bad.output


def test_eval_with_an_id_and_a_store_resumes_into_the_same_sessions(tmp_path) -> None:
    cases = Dataset(cases=[Case(inputs={"product": "tea"}, name="tea")]).save(tmp_path / "c.json")
    store, saved = str(tmp_path / "e.db"), str(tmp_path / "r.json")
    for _ in range(2):
        result = _invoke(
            str(cases), f"{SCRIPT}:write", "--store", store, "--id", "ci", "--save", saved
        )
        assert result.exit_code == 0, result.output
    report = EvalReport.load(saved)
    assert report.id == "ci" and [r.session for r in report.runs] == ["eval-ci-0000-0"]
    assert report.runs[0].output == "rejected"
    kept = CliRunner().invoke(cli, ["sessions", "readers", "--store", store])
    assert kept.output == "report:ci  1 session: eval-ci-0000-0\n"  # prune keeps it


@pytest.mark.slow
def test_the_openprogram_script_imports_the_module_from_the_current_folder(tmp_path) -> None:
    import subprocess
    import sys
    from pathlib import Path

    script = Path(sys.executable).parent / "openprogram"
    (tmp_path / "shouting.py").write_text(
        "from openprogram import agentic_function\n\n"
        "@agentic_function\ndef shout(word: str) -> str:\n    return word.upper()\n"
    )
    (tmp_path / "cases.jsonl").write_text('{"inputs": {"word": "hi"}, "expected": "HI"}\n')
    result = subprocess.run(
        [str(script), "eval", "cases.jsonl", "shouting:shout"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "equals   1.000" in result.stdout


def test_eval_on_ray_without_a_store_says_where_runs_must_go(tmp_path) -> None:
    cases = Dataset(cases=[Case(inputs={"product": "x"})]).save(tmp_path / "c.json")
    result = _invoke(str(cases), f"{SCRIPT}:write", "--engine", "ray")
    assert result.exit_code == 1 and "engine='ray' records every run in a store" in result.output


def test_eval_refuses_a_runtime_env_that_is_not_a_json_object(tmp_path) -> None:
    cases = Dataset(cases=[Case(inputs={"product": "x"})]).save(tmp_path / "c.json")
    for given in ["{not json", "[1]", "[" * 100_000 + "]" * 100_000]:
        result = _invoke(str(cases), f"{SCRIPT}:write", "--engine", "ray", "--runtime-env", given)
        assert result.exit_code == 1 and "--runtime-env" in result.output
