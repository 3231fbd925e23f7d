"""The example notebooks run offline in a real Jupyter kernel and show the HTML views."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason='needs the dev extra: pip install -e ".[dev]"')
nbclient = pytest.importorskip("nbclient", reason='needs the dev extra: pip install -e ".[dev]"')

pytestmark = pytest.mark.notebook

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def kernel_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A `python3` kernel spec that runs this interpreter (not whatever `python` is on PATH)."""
    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3 (tests)",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    return "python3"


def execute(name: str, kernel_name: str, workdir: Path):
    notebook = nbformat.read(EXAMPLES / name, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        kernel_name=kernel_name,
        timeout=180,
        resources={"metadata": {"path": str(workdir)}},
    )
    client.execute()
    return notebook


def html_outputs(notebook) -> list[str]:
    return [
        output["data"]["text/html"]
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if "text/html" in output.get("data", {})
    ]


def errors(notebook) -> list[str]:
    return [
        f"{output.get('ename')}: {output.get('evalue')}"
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]


def warnings_shown(notebook) -> list[str]:
    """The warnings a notebook's cells printed (stderr streams naming a Warning)."""
    return [
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "stream"
        and output.get("name") == "stderr"
        and "Warning" in output.get("text", "")
    ]


def test_inspecting_notebook_shows_the_dag_the_call_view_and_a_context(kernel_name, tmp_path):
    notebook = execute("inspecting.ipynb", kernel_name, tmp_path)

    assert errors(notebook) == []
    assert warnings_shown(notebook) == []
    views = html_outputs(notebook)
    dag_view = next(v for v in views if 'type="application/json"' in v)
    payload = dag_view.split('type="application/json"', 1)[1]
    assert all(name in payload for name in ("write_tagline", "review", "check_label"))
    assert "data:image/" in payload  # the mock-up's thumbnail is embedded
    call_view = next(v for v in views if "what write_tagline #2 (llm) saw" in v)
    assert "✓ rebuilt messages match the recorded hash" in call_view
    assert "hidden from it" in call_view
    assert "diff vs write_tagline #1 (llm)" in call_view
    context_view = next(v for v in views if "context of an llm() call in review #2" in v)
    assert "Coffee that remembers you." in context_view
    assert not any("https://" in v or "http://" in v for v in views)
    printed = "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    assert "verified: True" in printed
    assert "run.html" in printed
    assert list(tmp_path.iterdir()) == [tmp_path / "jupyter"]  # nothing written beside it


def test_context_rules_notebook_lists_each_hidden_node_with_its_rule(kernel_name, tmp_path):
    notebook = execute("context_rules.ipynb", kernel_name, tmp_path)

    assert errors(notebook) == []
    assert warnings_shown(notebook) == []
    views = html_outputs(notebook)
    assert any("agent" in v and 'type="application/json"' in v for v in views)
    call_view = next(v for v in views if "what decide #1 (llm) saw" in v)
    assert "outside render_range (callers=2)" in call_view
    printed = "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    assert "inside summarise #1 (expose='io')" in printed
    assert "expose='hidden': its own line is not shown" in printed


def test_a_sync_llm_in_a_cell_does_not_warn_but_one_blocking_a_task_does(kernel_name, tmp_path):
    source = tmp_path / "cells.ipynb"
    cells = [
        "from openprogram import Runtime, ScriptedModel, Session, llm\n"
        "with Session(), Runtime(ScriptedModel(['fine'])):\n"
        "    print(llm('a cell asks'))",
        "import asyncio\n"
        "async def blocks():\n"
        "    with Session(), Runtime(ScriptedModel(['late'])):\n"
        "        return llm('a task on the kernel loop asks')\n"
        "print(await asyncio.create_task(blocks()))",
    ]
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]),
                   source)  # fmt: skip
    notebook = nbformat.read(source, as_version=4)
    nbclient.NotebookClient(notebook, kernel_name=kernel_name, timeout=180).execute()

    assert errors(notebook) == []
    first, second = ([o for o in cell.outputs] for cell in notebook.cells)
    assert [o.get("text") for o in first] == ["fine\n"]
    assert not any(o.get("name") == "stderr" for o in first)
    shown = "".join(o.get("text", "") for o in second if o.get("name") == "stderr")
    assert "RuntimeWarning" in shown and "await allm" in shown
    assert "late" in "".join(o.get("text", "") for o in second if o.get("name") == "stdout")
