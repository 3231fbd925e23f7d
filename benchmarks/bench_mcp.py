"""MCP benchmarks: what an MCP tool call costs over a direct agentic-function call, and
how long a server takes to start.

(a) one call of server-everything's `echo` over stdio through an MCPTool (recorded as a
    tool code node, in a memory session) minus one call of an agentic function doing the
    same in-process (target: <= 2 ms of overhead; medians of 200). The bare SDK round
    trip (ClientSession.call_tool on its own event loop, nothing recorded) is shown too:
    the part the protocol and node itself take.
(b) session start: spawn + initialize + tools/list of server-everything (target:
    <= 1.5 s; median of 10), and of the filesystem server for comparison.

Wall-clock times (time.perf_counter): the server is another process. Needs the servers
scripts/setup.sh --dev installs into .cache/npm-mcp. A plain script, not a test:
`python benchmarks/bench_mcp.py [--quick]`. Results go into docs/performance.md by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import machine  # benchmarks/ is on sys.path when a script runs

from openprogram import Session, agentic_function
from openprogram.mcp import MCPServer

ROOT = Path(__file__).resolve().parents[1]
OVERHEAD_TARGET_MS = 2.0
START_TARGET_S = 1.5
SERVERS = ROOT / ".cache" / "npm-mcp" / "node_modules" / "@modelcontextprotocol"


def server_argv(package: str, *arguments: str) -> list[str]:
    node = shutil.which("node")
    script = SERVERS / package / "dist" / "index.js"
    if node is None or not script.is_file():
        sys.exit(f"needs node and {script}: run scripts/setup.sh --dev")
    return [node, str(script), *arguments]


@agentic_function
def echo(message: str) -> str:
    """Echo a message (the direct counterpart of server-everything's echo)."""
    return f"Echo: {message}"


CPU: dict[str, float] = {}
"""Process CPU time per call (this process's threads, not the server's), by path."""


def timed(call, runs: int, label: str = "") -> list[float]:
    times = []
    cpu = time.process_time()
    for i in range(runs):
        start = time.perf_counter()
        call(i)
        times.append(time.perf_counter() - start)
    if label:
        CPU[label] = (time.process_time() - cpu) / runs * 1000
    return times


def bench_call(runs: int) -> None:
    os.environ["OPENPROGRAM_MCP_STDERR"] = "quiet"
    argv = server_argv("server-everything", "stdio")
    with MCPServer.stdio(argv, name="everything") as server, Session():
        tool = server.tool("echo")
        timed(lambda i: tool(message=str(i)), 20)  # warm up both paths
        timed(lambda i: echo(message=str(i)), 20)
        mcp = timed(lambda i: tool(message=str(i)), runs, "mcp")
        direct = timed(lambda i: echo(message=str(i)), runs, "direct")
    bare = asyncio.run(_bare_sdk(argv, runs))
    m, d, b = (statistics.median(t) * 1000 for t in (mcp, direct, bare))
    print(f"(a) echo over stdio, median of {runs}:")
    print(f"    MCPTool call (recorded)        {m:8.3f} ms")
    print(f"    agentic function call          {d:8.3f} ms")
    print(f"    bare SDK call_tool round trip  {b:8.3f} ms")
    verdict = "meets" if m - d <= OVERHEAD_TARGET_MS else "misses"
    print(
        f"    overhead over the direct call  {m - d:8.3f} ms ({verdict} <= {OVERHEAD_TARGET_MS} ms)"
    )
    print(f"    of which openprogram's part    {m - b:8.3f} ms (MCPTool minus bare SDK)")
    print("    CPU of this process per call (ms): MCPTool {mcp:.3f}, bare SDK {bare:.3f}, "
          "direct {direct:.3f}".format(**CPU))  # fmt: skip


async def _bare_sdk(argv: list[str], runs: int) -> list[float]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    parameters = StdioServerParameters(command=argv[0], args=argv[1:])
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(parameters, errlog=quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for i in range(20):
                await session.call_tool("echo", {"message": str(i)})
            times = []
            cpu = time.process_time()
            for i in range(runs):
                start = time.perf_counter()
                await session.call_tool("echo", {"message": str(i)})
                times.append(time.perf_counter() - start)
            CPU["bare"] = (time.process_time() - cpu) / runs * 1000
            return times


def bench_start(runs: int) -> None:
    os.environ["OPENPROGRAM_MCP_STDERR"] = "quiet"
    print(f"(b) session start (spawn + initialize + tools/list), median of {runs}:")
    for label, argv in (
        ("server-everything", server_argv("server-everything", "stdio")),
        ("server-filesystem", server_argv("server-filesystem", str(ROOT))),
    ):
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            with MCPServer.stdio(argv, name="bench") as server:
                count = len(server.tools())
                times.append(time.perf_counter() - start)
        median = statistics.median(times)
        note = ""
        if label == "server-everything":
            note = f" ({'meets' if median <= START_TARGET_S else 'misses'} <= {START_TARGET_S} s)"
        print(f"    {label:18} {median:6.3f} s, {count} tools, min {min(times):.3f} s{note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs, for a smoke test")
    quick = parser.parse_args().quick
    print(machine())
    bench_call(40 if quick else 200)
    bench_start(3 if quick else 10)


if __name__ == "__main__":
    main()
