"""`openprogram sessions serve` as a real process on loopback, over the stores that outlive
a process (SQLite, PostgreSQL), and a child process recording into the same store: one
call per line the test sends, so each event waited for is one the test caused.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest

from openprogram import Session
from tests.support.children import ROOT
from tests.support.stores import durable_store  # noqa: F401 - a fixture

RECORDER = textwrap.dedent(
    """
    import sys
    from openprogram import Session, agentic_function

    @agentic_function
    def appeared_live(i: int) -> int:
        return i

    @agentic_function
    def steps() -> int:
        for line in sys.stdin:
            if line.strip() == "end":
                break
            appeared_live(int(line))
            sys.stdout.write("done\\n")
            sys.stdout.flush()
        return 0

    with Session.open(sys.argv[1], "live", resume=True) as session:
        print("ready", flush=True)
        steps()
    """
)


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str  # with the token
    origin: str
    token: str
    port: int


@pytest.fixture
def serve() -> Iterator[Callable[..., Served]]:
    """Start `openprogram sessions serve STORE [options]`; the URL it printed."""
    started: list[subprocess.Popen[str]] = []

    def start(store: str, *options: str) -> Served:
        process = subprocess.Popen(
            [sys.executable, "-m", "openprogram", "sessions", "serve", store, *options],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        started.append(process)
        assert process.stdout is not None
        line = process.stdout.readline()
        if "open http://127.0.0.1:" not in line:
            process.kill()
            raise AssertionError(line + (process.stderr.read() if process.stderr else ""))
        url = line.rsplit("open ", 1)[1].strip()
        parts = urlsplit(url)
        token = parts.query.split("token=", 1)[1]
        return Served(process, url, f"http://{parts.netloc}", token, parts.port or 0)

    yield start
    for process in started:
        process.kill()
        process.wait(timeout=60)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def recorder(durable_store: str) -> Iterator[subprocess.Popen[str]]:  # noqa: F811
    """A child recording session "live" of durable_store: one call per line told."""
    Session(durable_store, id="live").close()
    child = subprocess.Popen(
        [sys.executable, "-c", RECORDER, durable_store], cwd=ROOT, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline().strip() == "ready"
    yield child
    child.stdin.close()
    child.wait(timeout=60)
    child.stdout.close()


@pytest.fixture
def tell() -> Callable[[subprocess.Popen[str], str], None]:
    """Have the recorder make one call (`line` a number) and wait till it is recorded,
    or end ("end")."""
    return _tell


def _tell(child: subprocess.Popen[str], line: str) -> None:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(line + "\n")
    child.stdin.flush()
    if line != "end":
        assert child.stdout.readline().strip() == "done"
