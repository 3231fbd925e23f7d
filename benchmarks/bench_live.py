"""Live view benchmark (issue 43, item 3): how long after a node is committed by another
process it reaches a client of `openprogram sessions serve` over server-sent events.

A recorder process makes one call per line it is sent (a decorated function, recorded
into the store); an `openprogram sessions serve` process follows the session; this
script reads its event stream (/session/ID/events, as the page's EventSource does) and,
for each call's `completed` event, takes the time it arrived minus the time the
recorder's call returned, its commit done (each call lasts 2 ms: a call of 1 ms or more
is committed when it ends, not with a group 0.2 s later), and minus the node's
`ended_at` (that figure includes the commit). One call at a time, the next once the
previous arrived. Target: median <= 100 ms.

`python benchmarks/bench_live.py [--calls 50] [--postgres URL]` (SQLite in a temporary
file without --postgres; a fresh schema is made and dropped). Figures go into
docs/performance.md by hand.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import machine  # noqa: E402
from openprogram import Session  # noqa: E402

RECORDER = """
import sys, time
from openprogram import Session, agentic_function

@agentic_function
def step(i: int) -> int:
    time.sleep(0.002)  # a call of 1 ms or more is committed when it ends (no group wait)
    return i

with Session.open(sys.argv[1], sys.argv[2], resume=True) as session:
    print("ready", flush=True)
    for line in sys.stdin:
        step(int(line))
        print(time.time(), flush=True)  # its commit is done
"""


def bench(store: str, calls: int) -> list[tuple[float, float]]:
    Session(store, id="stream").close()
    server = subprocess.Popen(
        [sys.executable, "-m", "openprogram", "sessions", "serve", store],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    recorder = subprocess.Popen(
        [sys.executable, "-c", RECORDER, store, "stream"], cwd=ROOT, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert server.stdout is not None and recorder.stdin is not None and recorder.stdout
    try:
        url = urlsplit(server.stdout.readline().rsplit("open ", 1)[1].strip())
        assert recorder.stdout.readline().strip() == "ready"
        connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=60)
        connection.request("GET", f"/session/stream/events?{url.query}")
        stream = connection.getresponse()
        assert stream.status == 200, stream.status
        found: list[tuple[float, float]] = []
        for i in range(calls):
            recorder.stdin.write(f"{i}\n")
            recorder.stdin.flush()
            while True:
                line = stream.readline()
                if not line:
                    raise RuntimeError("the event stream ended")
                if not line.startswith(b"data: "):
                    continue
                arrived = time.time()
                node = json.loads(line[6:])
                if node["name"] == "step" and node["status"] == "completed":
                    committed = float(recorder.stdout.readline())
                    found.append((arrived - committed, arrived - node["ended_at"]))
                    break
        connection.close()
        return found
    finally:
        recorder.stdin.close()
        recorder.wait(timeout=60)
        server.kill()
        server.wait(timeout=60)


def bench_browser(store: str, calls: int, profile: Path) -> list[float]:
    """Seconds from each call's commit in the recorder to its line in the feed of the
    session's page in headless Chromium (the page stamps each event's arrival)."""
    from tests.support.cdp import Browser

    Session(store, id="page").close()
    server = subprocess.Popen(
        [sys.executable, "-m", "openprogram", "sessions", "serve", store],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    recorder = subprocess.Popen(
        [sys.executable, "-c", RECORDER, store, "page"], cwd=ROOT, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert server.stdout is not None and recorder.stdin is not None and recorder.stdout
    found: list[float] = []
    try:
        url = urlsplit(server.stdout.readline().rsplit("open ", 1)[1].strip())
        assert recorder.stdout.readline().strip() == "ready"
        with Browser(profile) as browser:
            browser.open(f"http://{url.netloc}/session/page?{url.query}")
            browser.wait_for("document.getElementById('op-conn').textContent === 'live'")
            for i in range(calls):
                recorder.stdin.write(f"{i}\n")
                recorder.stdin.flush()
                committed = float(recorder.stdout.readline())
                arrived = browser.wait_for(
                    "[...document.querySelectorAll('#op-feed li[data-status=completed]')]"
                    f".filter(e => e.textContent.endsWith('step completed')).length > {i} && "
                    "document.querySelector('#op-feed li[data-status=completed]').dataset.arrived"
                )
                found.append(float(arrived) - committed)
        return found
    finally:
        recorder.stdin.close()
        recorder.wait(timeout=60)
        server.kill()
        server.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--postgres", metavar="URL", help="a PostgreSQL server to use")
    options = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory() as folder:
        stores = [("SQLite", str(Path(folder) / "live.db"))]
        schema = f"bench_live_{uuid.uuid4().hex[:8]}"
        if options.postgres:
            import psycopg

            with psycopg.connect(options.postgres, autocommit=True) as connection:
                connection.execute(f"CREATE SCHEMA {schema}")
            separator = "&" if "?" in options.postgres else "?"
            stores.append(
                ("PostgreSQL", f"{options.postgres}{separator}options=-csearch_path%3D{schema}")
            )
        try:
            for name, store in stores:
                found = bench(store, options.calls)
                ms = sorted(
                    f * 1000 for f in bench_browser(store, options.calls, Path(folder) / name)
                )
                print(
                    f"{name}: {len(ms)} events, commit done -> the page's feed in Chromium median "
                    f"{statistics.median(ms):.1f} ms, p90 {ms[int(len(ms) * 0.9)]:.1f} ms, "
                    f"min {ms[0]:.1f} ms, max {ms[-1]:.1f} ms"
                )
                for label, k in (("commit done", 0), ("call ended", 1)):
                    ms = sorted(f[k] * 1000 for f in found)
                    print(
                        f"{name}: {len(ms)} events, {label} -> SSE client median "
                        f"{statistics.median(ms):.1f} ms, p90 {ms[int(len(ms) * 0.9)]:.1f} ms, "
                        f"min {ms[0]:.1f} ms, max {ms[-1]:.1f} ms"
                    )
        finally:
            if options.postgres:
                with psycopg.connect(options.postgres, autocommit=True) as connection:
                    connection.execute(f"DROP SCHEMA {schema} CASCADE")


if __name__ == "__main__":
    main()
