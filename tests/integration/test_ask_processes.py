"""Human in the loop across processes, on SQLite and PostgreSQL, over real HTTP: the
agent suspends in one process, the CLI answers in a second, a third resumes it, and no
finished call (a side effect or a model request) happens twice.

The agent is examples/booking.py; its model is litellm talking to the local
OpenAI-compatible server, which lives in this test process and outlives the children.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openprogram.testing import OpenAIServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "booking.py"
_spec = importlib.util.spec_from_file_location("_booking_example", EXAMPLE)
assert _spec is not None and _spec.loader is not None
_example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_example)
reply = _example.reply  # the example's scripted answers, served over HTTP


def run(*argv: str, cwd: Path) -> str:
    result = subprocess.run(
        [sys.executable, *argv], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    return result.stdout


def cli(*argv: str, cwd: Path) -> str:
    return run("-c", "from openprogram.cli import main; main()", *argv, cwd=cwd)


def agent(store: str, server: OpenAIServer, cwd: Path) -> str:
    return run(
        str(EXAMPLE), "--store", store, "--id", "trip1", "--model", "openai/travel",
        "--api-base", server.url, cwd=cwd,
    )  # fmt: skip


def respond(body: dict[str, Any]) -> str | dict[str, Any]:
    return reply(body["messages"])


def suspend_answer_resume(store: str, log: Path, tmp_path: Path) -> None:
    with OpenAIServer(responder=respond) as server:
        first = agent(store, server, tmp_path)
        assert first.startswith("waiting for an answer to ")
        assert "Allow book_hotel(name='Harbour Inn', nights=2)?" in first
        assert len(server.requests) == 2  # search, then the booking that waits
        assert log.read_text().splitlines() == ["searched Lisbon"]

        listed = json.loads(cli("sessions", "pending", "--store", store, "--json", cwd=tmp_path))
        (question,) = listed
        assert question["session"] == "trip1" and question["choices"] == ["yes", "no"]
        assert first.split()[5].rstrip(":") == question["id"]
        shown = cli("sessions", "pending", "trip1", "--store", store, cwd=tmp_path)
        assert question["id"] in shown and 'one of "yes", "no"' in shown
        wrong = subprocess.run(
            [sys.executable, "-c", "from openprogram.cli import main; main()", "sessions",
             "answer", "trip1", question["id"], "maybe", "--store", store],
            cwd=tmp_path, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert wrong.returncode == 2 and "Traceback" not in wrong.stderr  # a bad VALUE
        assert "'maybe' is not an answer" in wrong.stderr and 'one of "yes", "no"' in wrong.stderr
        answered = cli("sessions", "answer", "trip1", question["id"], "yes", "--store", store,
                       cwd=tmp_path)  # fmt: skip
        assert answered.startswith(f"answered {question['id']}")

        second = agent(store, server, tmp_path)
        assert second.strip() == "Booked 2 nights at Harbour Inn, confirmation CONF-1042."
        assert len(server.requests) == 3  # only the turn after the booking is new
        last = server.requests[-1].body["messages"]
        assert [m["role"] for m in last][-2:] == ["assistant", "tool"]
    assert log.read_text().splitlines() == ["searched Lisbon", "booked Harbour Inn for 2 nights"]
    tree = cli("sessions", "show", "trip1", "--store", store, cwd=tmp_path)
    assert "⏸" not in tree and "✓  ask_user #1" in tree
    assert cli("sessions", "pending", "--store", store, cwd=tmp_path).strip() == (
        "no questions are waiting"
    )


def test_three_processes_on_sqlite(tmp_path):
    store = str(tmp_path / "trips.db")
    suspend_answer_resume(store, Path(f"{store}.log"), tmp_path)


@pytest.mark.postgres
def test_three_processes_on_postgresql(postgres_url, tmp_path):
    suspend_answer_resume(postgres_url, tmp_path / "trip1.log", tmp_path)
