"""Code versions: each code node records its function's code identity (its source and its
decorated callees'); resuming after the code changed keeps the record, refuses, or runs
the latest code, as the function or the Runtime says; `sessions show` says which version
ran each call. The program's versions are real module files, changed between runs."""

from __future__ import annotations

import importlib.util
import itertools
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner

from openprogram import ResumeDivergence, Runtime, Session, UsageError, agentic_function
from openprogram.agentic import code_identity
from openprogram.cli import cli

PROGRAM = """
from openprogram import agentic_function

ran = []

@agentic_function{helper_settings}
def helper(x: int) -> int:
    ran.append("helper")
    return x + {step}

@agentic_function
def other(x: int) -> int:
    ran.append("other")
    return x * 2

@agentic_function{top_settings}
def top(x: int) -> int:
    return helper(x) + other(x)

def unrelated() -> int:
    return {unrelated}
"""
_count = itertools.count()


def version(
    folder: Path, step: int = 1, *, unrelated: int = 0, helper: str = "", top: str = ""
) -> ModuleType:
    """The program with `step` (and more) written into a new module file, imported."""
    name = f"program_v{next(_count)}"
    path = folder / f"{name}.py"
    source = PROGRAM.format(step=step, unrelated=unrelated, helper_settings=helper,
                            top_settings=top)  # fmt: skip
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def recorded(tmp_path: Path) -> str:
    store = str(tmp_path / "runs.db")
    first = version(tmp_path)
    with Session(store, id="s"):
        assert first.top(1) == 2 + 2
    return store


def test_a_code_node_records_its_identity_which_follows_its_callees(tmp_path: Path) -> None:
    one, same, changed = version(tmp_path), version(tmp_path, unrelated=5), version(tmp_path, 7)
    assert code_identity(one.top) == code_identity(same.top)  # an unrelated change: same
    assert code_identity(one.other) == code_identity(changed.other)
    assert code_identity(one.helper) != code_identity(changed.helper)
    assert code_identity(one.top) != code_identity(changed.top)  # through its callee
    with Session() as session:
        one.top(1)
    codes = {n.name: n.meta["code"] for n in session.dag.nodes}
    assert codes == {n: code_identity(getattr(one, n)) for n in ("top", "helper", "other")}


def test_by_default_a_resumed_run_keeps_what_the_old_code_recorded(
    recorded: str, tmp_path: Path
) -> None:
    new = version(tmp_path, 100)
    with Session.open(recorded, "s", resume=True):
        assert new.top(1) == 4
    assert new.ran == []


def test_refuse_stops_at_the_changed_call(recorded: str, tmp_path: Path) -> None:
    new = version(tmp_path, 100, top='(on_code_change="refuse")')
    with Session.open(recorded, "s", resume=True), pytest.raises(ResumeDivergence) as refused:
        new.top(1)
    assert "on_code_change='refuse'" in str(refused.value) and new.ran == []


def test_latest_runs_the_changed_calls_again_and_keeps_the_unchanged(
    recorded: str, tmp_path: Path
) -> None:
    new = version(tmp_path, 100)
    with Runtime(on_code_change="latest"), Session.open(recorded, "s", resume=True) as session:
        assert new.top(1) == 101 + 2
    assert new.ran == ["helper"]  # `other` did not change: answered from its record
    top = session.dag.nodes[0]
    assert top.meta["code"] == code_identity(new.top) and "code changed" in top.meta["rerun"]
    again = Session.open(recorded, "s")
    assert [n.meta["code"] for n in again.dag.nodes[:2]] == [
        code_identity(new.top),
        code_identity(new.helper),
    ]
    again.close()


def test_a_call_cut_off_runs_with_the_code_now_and_records_that_version(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    old = version(tmp_path, 1)
    old.ran = Cut()  # the first run dies in helper
    with Session(store, id="s"), pytest.raises(KeyboardInterrupt):
        old.top(1)
    new = version(tmp_path, 100)
    with Session.open(store, "s", resume=True) as session:
        assert new.top(1) == 101 + 2  # keep (the default) keeps only completed calls
    assert new.ran == ["helper", "other"]
    codes = {n.name: n.meta["code"] for n in session.dag.nodes}
    assert codes == {n: code_identity(getattr(new, n)) for n in ("top", "helper", "other")}
    shown = CliRunner().invoke(cli, ["sessions", "show", "s", "--store", store, "--code"])
    assert "helper #1" in shown.output and code_identity(new.helper) in shown.output
    assert code_identity(old.helper) not in shown.output


class Cut(list[str]):
    """A `ran` list whose first append stops the run, as a kill in the call's body."""

    def append(self, item: str) -> None:
        raise KeyboardInterrupt


def test_the_function_setting_wins_over_the_runtime(recorded: str, tmp_path: Path) -> None:
    new = version(tmp_path, 100, top='(on_code_change="keep")')
    with Runtime(on_code_change="refuse"), Session.open(recorded, "s", resume=True):
        assert new.top(1) == 4
    assert new.ran == []


def test_bad_settings_are_refused() -> None:
    with pytest.raises(UsageError, match="on_code_change"):
        agentic_function(on_code_change="newest")
    with pytest.raises(UsageError, match="on_code_change"):
        Runtime(on_code_change="always")


def test_show_says_which_version_ran_each_call(recorded: str, tmp_path: Path) -> None:
    new = version(tmp_path, 100)
    with Session.open(recorded, "s", resume=True):
        new.top(1)  # kept: the record's calls
        new.helper(5)  # a new call, by the new code
    shown = CliRunner().invoke(cli, ["sessions", "show", "s", "--store", recorded])
    assert shown.exit_code == 0, shown.output
    helpers = [line for line in shown.output.splitlines() if "helper" in line]
    old, latest = code_identity(version(tmp_path).helper), code_identity(new.helper)
    assert f"code {old}" in helpers[0] and f"code {latest}" in helpers[1]
    assert not any("code " in line for line in shown.output.splitlines() if "other" in line)
    every = CliRunner().invoke(cli, ["sessions", "show", "s", "--code", "--store", recorded])
    assert all("code " in line for line in every.output.splitlines()[1:])
