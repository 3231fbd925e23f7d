"""`mcp serve`'s background tools as MCP Tasks, driven by the SDK's own client: the
call names its task at once; tasks/get, tasks/result, tasks/cancel and tasks/list follow
it, over another connection too; a server restarted on the same store still knows it,
and takes up a task whose server was killed; ids that are no task are refused."""

from __future__ import annotations

import time

import anyio
import pytest
from mcp import ClientSession
from mcp.shared.memory import create_client_server_memory_streams

from openprogram.mcp._sdk import MCPError
from openprogram.mcp._sdk import mcp_types as types
from openprogram.mcp._tasks import RELATED_TASK
from openprogram.mcp.serve import build_server
from tests.openprogram.mcp.task_tools import build, hold, quick


@pytest.fixture(autouse=True)
def _operations_end():
    """Wait (up to a minute) for the operations a test started to end once it released
    them: run on the served Runtime, they count as live Runtimes until then, and a later
    test of this process that looks for the one live Runtime found several."""
    yield
    from openprogram.core import _context

    deadline = time.monotonic() + 60
    while _context._live_runtimes and time.monotonic() < deadline:
        time.sleep(0.05)


async def connected(server, work):
    async with (
        create_client_server_memory_streams() as (client, served),
        anyio.create_task_group() as group,
    ):
        group.start_soon(server.run, served[0], served[1], server.create_initialization_options())
        async with ClientSession(client[0], client[1]) as session:
            await session.initialize()
            result = await work(session)
        group.cancel_scope.cancel()
    return result


async def get(session, task_id):
    request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
    return await session.send_request(request, types.GetTaskResult)


def test_a_background_tool_is_a_task_followed_by_id(tmp_path):
    store = str(tmp_path / "tasks.db")
    release = tmp_path / "release"
    server = build_server([build], store=store)

    async def start(session):
        (tool,) = (await session.list_tools()).tools
        assert tool.execution.task_support == "optional"
        called = await session.call_tool("build", {"file": str(release)})
        task_id = called.meta[RELATED_TASK]["taskId"]
        assert called.structured_content["state"] in ("pending", "running")
        assert (await get(session, task_id)).status == "working"
        return task_id

    async def finish(session, task_id):  # another connection: the task is found by its id
        release.touch()
        payload = types.GetTaskPayloadRequest(
            params=types.GetTaskPayloadRequestParams(task_id=task_id)
        )
        result = await session.send_request(payload, types.CallToolResult)
        return result, await get(session, task_id)

    async def main():
        with anyio.fail_after(60):
            task_id = await connected(server, start)
            return task_id, *await connected(server, lambda s: finish(s, task_id))

    task_id, result, task = anyio.run(main)
    assert not result.is_error and result.content[0].text == "released"
    assert result.meta[RELATED_TASK] == {"taskId": task_id} and task.status == "completed"
    restarted = build_server([build], store=store)  # a new server on the same store
    assert anyio.run(connected, restarted, lambda s: get(s, task_id)).status == "completed"


def test_a_task_is_cancelled_and_an_unknown_one_is_an_error(tmp_path):
    server = build_server([build], store=str(tmp_path / "tasks.db"))

    async def work(session):
        called = await session.call_tool("build", {"file": str(tmp_path / "never")})
        assert not called.is_error
        task_id = called.meta[RELATED_TASK]["taskId"]
        cancel = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
        await session.send_request(cancel, types.CancelTaskResult)
        with anyio.fail_after(60):
            while (task := await get(session, task_id)).status == "working":
                await anyio.sleep(0.05)
        with pytest.raises(MCPError, match="there is no task 'nope'"):
            await get(session, "nope")
        return task

    assert anyio.run(lambda: connected(server, work)).status == "cancelled"


async def listed(session, cursor=None):
    params = types.PaginatedRequestParams(cursor=cursor)
    request = types.ListTasksRequest(params=params)
    return await session.send_request(request, types.ListTasksResult)


def test_tasks_list_lists_this_connections_tasks_and_the_capability_says_so(tmp_path):
    server = build_server([build], store=str(tmp_path / "tasks.db"))
    release = tmp_path / "release"

    async def mine(session):
        caps = session.initialize_result.capabilities
        ids = []
        for _ in range(2):
            called = await session.call_tool("build", {"file": str(release)})
            ids.append(called.meta[RELATED_TASK]["taskId"])
        return caps, ids, await listed(session)

    async def theirs(session):
        return await listed(session)

    async def main():
        with anyio.fail_after(60):
            caps, ids, first = await connected(server, mine)
            other = await connected(server, theirs)
            release.touch()
            return caps, ids, first, other

    caps, ids, first, other = anyio.run(main)
    assert [t.task_id for t in first.tasks] == ids and first.next_cursor is None
    assert {t.status for t in first.tasks} <= {"working", "completed"}
    assert other.tasks == []  # another connection's tasks are not listed to it
    assert caps.tasks.list is not None and caps.tasks.cancel is not None
    assert caps.tasks.requests.tools.call is not None


def test_ids_that_are_no_task_of_this_store_are_refused(tmp_path):
    """Hostile ids: huge, odd unicode (a lone surrogate, bidi controls), another
    session's (a session of the store that is no task), a well-formed unknown one: each
    a short clear error, and the server goes on answering."""
    from openprogram import Runtime, ScriptedModel, Session
    from openprogram.operations.tracker import tracker

    store = str(tmp_path / "tasks.db")
    release = tmp_path / "release"
    release.touch()
    with Session(store, id="not-a-task") as session, Runtime(ScriptedModel([])):
        build(file=str(release))  # a run of the store, with an operation
        tracker(session).wait([r.id for r in tracker(session).records()])
    server = build_server([build], store=store)
    hostile = [
        "x" * 2_000_000,
        "task-" + "\ud800" * 3,
        "\u202etask-\U0001f4a3",
        session.id,
        "task-" + "0" * 32,
        "task-" + "A" * 32,
        "../" * 40,
    ]

    async def work(session):
        errors = []
        for task_id in hostile:
            for request, answer in (
                (
                    types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id)),
                    types.GetTaskResult,
                ),
                (
                    types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id)),
                    types.CancelTaskResult,
                ),
                (
                    types.GetTaskPayloadRequest(
                        params=types.GetTaskPayloadRequestParams(task_id=task_id)
                    ),
                    types.CallToolResult,
                ),
            ):
                with pytest.raises(MCPError) as raised:
                    await session.send_request(request, answer)
                errors.append(str(raised.value))
        with pytest.raises(MCPError, match="is not one tasks/list gave"):
            await listed(session, cursor="9" * 50)
        called = await session.call_tool("build", {"file": str(release)})  # still serving
        return errors, called

    errors, called = anyio.run(lambda: connected(server, work))
    assert all("there is no task" in e and len(e) < 400 for e in errors), errors
    assert not any("\u202e" in e or "\ud800" in e for e in errors)  # quoted escaped
    assert not called.is_error and called.meta[RELATED_TASK]["taskId"].startswith("task-")


TOOLS = "tests.openprogram.mcp.task_tools"


async def over_http(server, work):
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers=server.auth) as http,
        streamable_http_client(server.url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await work(session)


async def over_stdio(store, work):
    from mcp import StdioServerParameters, stdio_client

    from tests.support.mcp_servers import ROOT, openprogram_command

    argv = openprogram_command(
        "mcp", "serve", f"{TOOLS}:build", f"{TOOLS}:rebuild", "--store", store
    )
    parameters = StdioServerParameters(
        command=argv[0],
        args=argv[1:],
        env={"PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        cwd=ROOT,
    )
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await work(session)


@pytest.mark.slow
def test_a_task_whose_server_was_killed_is_taken_up_by_the_next_server(tmp_path):
    """Real processes: a server over HTTP starts two tasks (a once kind, an idempotent
    one), the client reconnects and finds them by id, then the server is SIGKILLed while
    both run. A server started on the same store (over stdio) takes them up when asked:
    the once one is failed, saying it may have happened and how to settle it; the
    idempotent one runs again and completes."""
    from openprogram.store import open_store
    from tests.support.mcp_serving import served

    store = str(tmp_path / "tasks.db")
    never, release = tmp_path / "never", tmp_path / "release"
    reader, _ = open_store(store)

    def running(task_id):
        rows = reader.operations(task_id)
        return bool(rows) and all(row.state == "running" for row in rows)

    with served(f"{TOOLS}:build", f"{TOOLS}:rebuild", "--store", store) as server:

        async def start(session):
            once = await session.call_tool("build", {"file": str(never)})
            again = await session.call_tool("rebuild", {"file": str(release)})
            return once.meta[RELATED_TASK]["taskId"], again.meta[RELATED_TASK]["taskId"]

        async def follow(session, ids):  # a new connection: found by id, not listed
            return [await get(session, i) for i in ids], await listed(session)

        async def main():
            with anyio.fail_after(60):
                ids = await over_http(server, start)
                tasks, listing = await over_http(server, lambda s: follow(s, ids))
                while not all(running(i) for i in ids):
                    await anyio.sleep(0.05)
                return ids, tasks, listing

        (once_id, again_id), tasks, listing = anyio.run(main)
        assert [t.status for t in tasks] == ["working", "working"] and listing.tasks == []
        server.process.kill()  # SIGKILL, mid-operation
        server.process.wait()

    async def resumed(session):
        first = await get(session, once_id)
        release.touch()
        payload = types.GetTaskPayloadRequest(
            params=types.GetTaskPayloadRequestParams(task_id=again_id)
        )
        return first, await session.send_request(payload, types.CallToolResult)

    async def restarted():
        with anyio.fail_after(90):
            return await over_stdio(store, resumed)

    first, result = anyio.run(restarted)
    assert first.status == "failed"
    assert "took it up" in first.status_message and "not run again" in first.status_message
    assert f"openprogram sessions settle {once_id}" in first.status_message
    assert not result.is_error and result.content[0].text == "released"
    (again_row,) = reader.operations(again_id)
    assert again_row.state == "done" and again_row.attempts == 2  # ran again, once more
    (once_row,) = reader.operations(once_id)
    assert once_row.state == "unknown" and once_row.attempts == 1


async def status_of(session, ids):
    return [(await get(session, i)).status for i in ids]


def test_tasks_are_capped_per_connection_and_in_total_with_a_clear_error(tmp_path):
    """Issue 40, item 6: one connection's 20 task calls, then another's. Before, every
    one was taken (a thread each, no bound). Now the 17th of one connection is refused
    (16 of one connection at most by default), and a server's total too."""
    release = tmp_path / "release"
    server = build_server([hold], store=str(tmp_path / "tasks.db"))

    async def many(session):
        return [await session.call_tool("hold", {"file": str(release)}) for _ in range(20)]

    async def main():
        with anyio.fail_after(120):
            try:
                return await connected(server, many)
            finally:
                release.touch()

    results = anyio.run(main)
    taken = [r for r in results if not r.is_error]
    refused = [r.content[0].text for r in results if r.is_error]
    assert len(taken) == 16 and len(refused) == 4
    assert "this connection has 16 tasks working" in refused[0]
    assert "cancel one (tasks/cancel)" in refused[0]

    small = build_server([hold], store=str(tmp_path / "small.db"), max_tasks=3,
                         max_client_tasks=2)  # fmt: skip
    later = tmp_path / "later"

    async def two(session):
        return [await session.call_tool("hold", {"file": str(later)}) for _ in range(3)]

    async def both():
        with anyio.fail_after(120):
            try:
                first = await connected(small, two)  # its tasks keep working after it left
                second = await connected(small, two)
            finally:
                later.touch()
            return first, second

    first, second = anyio.run(both)
    assert [r.is_error for r in first] == [False, False, True]
    assert "this connection has 2 tasks working" in first[2].content[0].text
    assert [r.is_error for r in second] == [False, True, True]
    assert "this server has 3 tasks working" in second[1].content[0].text


def test_one_connections_many_tasks_do_not_hold_up_anothers_quick_task(tmp_path):
    """Issue 40, item 6: connection A fills its 16 tasks with work that waits for a file;
    connection B then starts a task that answers at once. Before, B's operation queued
    behind A's on the 8 shared workers and never ran while A's waited (here: not within
    60 s). Now the operations run in turn across connections, at most half the slots one
    connection's: B's task completes while every one of A's is still working."""
    release = tmp_path / "release"
    server = build_server([hold, quick], store=str(tmp_path / "tasks.db"))
    started, seen = anyio.Event(), {}

    async def a(session):
        for _ in range(16):
            called = await session.call_tool("hold", {"file": str(release)})
            seen.setdefault("a", []).append(called.meta[RELATED_TASK]["taskId"])
        started.set()
        while "b" not in seen:
            await anyio.sleep(0.05)
        seen["a_then"] = await status_of(session, seen["a"])

    async def b(session):
        await started.wait()
        called = await session.call_tool("quick", {"value": "hello"})
        task_id = called.meta[RELATED_TASK]["taskId"]
        with anyio.move_on_after(60):
            while (await get(session, task_id)).status == "working":
                await anyio.sleep(0.05)
        seen["b"] = (await get(session, task_id)).status

    async def main():
        with anyio.fail_after(180):
            try:
                async with anyio.create_task_group() as group:
                    group.start_soon(connected, server, a)
                    group.start_soon(connected, server, b)
            finally:
                release.touch()

    anyio.run(main)
    assert seen["b"] == "completed"
    assert seen["a_then"] == ["working"] * 16
