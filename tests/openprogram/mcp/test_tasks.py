"""`mcp serve`'s background tools as MCP Tasks, driven by the SDK's own client: the
call names its task at once; tasks/get, tasks/result and tasks/cancel follow it, over
another connection too, and a server restarted on the same store still knows it."""

from __future__ import annotations

import anyio
import pytest
from mcp import ClientSession
from mcp.shared.memory import create_client_server_memory_streams

from openprogram.mcp._sdk import MCPError
from openprogram.mcp._sdk import mcp_types as types
from openprogram.mcp._tasks import RELATED_TASK
from openprogram.mcp.serve import build_server
from openprogram.operations import Operation, operation_tool
from tests.openprogram.operations import kinds  # noqa: F401 - registers test.block


@operation_tool(background=True)
def build(file: str) -> Operation:
    """Build something: works until the file exists."""
    return Operation("test.block", {"file": file})


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
