"""session.events(): nodes as another process records them, on SQLite (a bounded look at
the file) and PostgreSQL (LISTEN/NOTIFY), with `for` and `async for`.

The recording child makes one call per line the test sends, so each event the test
waits for is one the child was just told to make; nothing waits on a timer.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import pytest

from openprogram import Session, UsageError
from tests.support.children import ROOT

CHILD = textwrap.dedent(
    """
    import sys
    from openprogram import Session, agentic_function

    @agentic_function
    def step(i: int) -> int:
        return i

    @agentic_function
    def steps() -> int:
        for line in sys.stdin:
            if line.strip() == "end":
                break
            step(int(line))
            sys.stdout.write("done\\n")
            sys.stdout.flush()
        return 0

    with Session.open(sys.argv[1], "live", resume=True) as session:
        print("ready", flush=True)
        steps()
    """
)


@pytest.fixture
def recorder(durable_store: str):  # type: ignore[no-untyped-def]
    Session(durable_store, id="live").close()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, durable_store], cwd=ROOT, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline().strip() == "ready"
    yield child
    child.stdin.close()
    child.wait(timeout=60)
    child.stdout.close()


def tell(child: subprocess.Popen[str], line: str) -> None:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(line + "\n")
    child.stdin.flush()
    if line != "end":
        assert child.stdout.readline().strip() == "done"


def test_nodes_arrive_as_another_process_records_them(
    durable_store: str, recorder: subprocess.Popen[str]
) -> None:
    session = Session.open(durable_store, "live")
    seen: list[tuple[str, str, object]] = []
    with session.events() as events:
        tell(recorder, "0")
        while ("step", "completed", {"i": 0}) not in seen:
            seen += [(n.name, n.status, n.input) for n in events.poll(60)]
        assert seen[0] == ("steps", "running", {})  # (a fast call is written once: done)
        tell(recorder, "1")
        found = []
        while ("step", "completed", {"i": 1}) not in found:
            found += [(n.name, n.status, n.input) for n in events.poll(60)]
        tell(recorder, "end")
        while ("steps", "completed", {}) not in found:
            found += [(n.name, n.status, n.input) for n in events.poll(60)]
    session.close()


def test_since_skips_what_was_seen_and_wait_false_ends(durable_store: str) -> None:
    with Session(durable_store, id="done") as session:
        for i in range(3):
            session.submit(f"input {i}")
    reopened = Session.open(durable_store, "done")
    assert [n.input for n in reopened.events(wait=False)] == ["input 0", "input 1", "input 2"]
    assert [n.input for n in reopened.events(since=2, wait=False)] == ["input 2"]
    reopened.close()


def test_async_for_follows_too(durable_store: str, recorder: subprocess.Popen[str]) -> None:
    session = Session.open(durable_store, "live")

    async def follow() -> list[str]:
        names = []
        async for node in session.events():
            names.append(f"{node.name} {node.status}")
            if names[-1] == "step completed":
                return names
        return names

    async def both() -> list[str]:
        task = asyncio.create_task(follow())
        await asyncio.to_thread(tell, recorder, "5")
        return await asyncio.wait_for(task, 60)

    names = asyncio.run(both())
    assert names[0] == "steps running" and names[-1] == "step completed"
    session.close()


def test_a_session_without_a_store_has_no_events() -> None:
    with pytest.raises(UsageError, match="store"):
        Session().events()
