"""The pytest plugin: check_eval fails a test below its threshold, printing the worst
cases; run in a real pytest subprocess, the plugin loaded as its entry point names it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

TESTS = """
import pytest
from openprogram import ScriptedModel
from openprogram.evals import Case, Dataset, equals
from tests.openprogram.evals.agents import reply, write

DATASET = Dataset(cases=[
    Case(inputs={"product": "coffee"}, expected="Smart coffee.", name="coffee"),
    Case(inputs={"product": "tea"}, expected="Smart tea.", name="tea"),
])

@pytest.mark.eval(threshold=0.5)
def test_half_passes(check_eval):
    check_eval(DATASET.evaluate(write, [equals], model=ScriptedModel(reply)))

def test_all_must_pass(check_eval):
    check_eval(DATASET.evaluate(write, [equals], model=ScriptedModel(reply)))
"""


@pytest.mark.slow
def test_check_eval_fails_below_the_threshold_with_the_worst_cases(tmp_path) -> None:
    (tmp_path / "test_taglines.py").write_text(textwrap.dedent(TESTS))
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "openprogram.evals.pytest_plugin",
         "-p", "no:cacheprovider", "--strict-markers", "-q", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, env=environment, timeout=120,
    )  # fmt: skip
    assert "1 failed, 1 passed" in result.stdout, result.stdout + result.stderr
    assert "equals: mean 0.500 < 1" in result.stdout
    assert "worst cases on equals:\n  tea: 0.00  expected 'Smart tea.', got 'rejected'" in (
        result.stdout
    )


def test_the_entry_point_names_the_plugin_module() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with open(ROOT / "pyproject.toml", "rb") as stream:
        project = tomllib.load(stream)["project"]
    assert project["entry-points"]["pytest11"] == {
        "openprogram-evals": "openprogram.evals.pytest_plugin"
    }


pytest_plugins = ["pytester"]


@pytest.mark.slow
def test_a_failing_eval_test_prints_its_failure_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the test file imports tests.openprogram.evals: the child needs this checkout on its
    # path whatever folder the clone is in (a CI clone under /tmp had none)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    for variable in ("CI", "BUILD_NUMBER"):  # on CI pytest's summary repeats whole messages
        monkeypatch.delenv(variable, raising=False)
    pytester.makepyfile(test_once=TESTS)  # the plugin loads by its entry point
    # the web-app packages' unused plugins left out, as pyproject's addopts does (3 s)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:shiny-test", "-p", "no:faker", "-k", "all_must_pass"
    )  # fmt: skip
    result.assert_outcomes(failed=1, deselected=1)
    output = result.stdout.str().split("short test summary info")[0]  # the failure itself
    assert output.count("equals: mean 0.500 < 1") == 1, output
    assert output.count("worst cases on equals:") == 1
    assert "During handling of the above exception" not in output
