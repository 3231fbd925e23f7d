"""A misbehaving MCP server over stdio, for the client's fault tests.

Speaks JSON-RPC by hand (no SDK) so it can break the protocol on purpose. Run as
`python mcp_fault_server.py [MODE]`; MODE `hang` never answers initialize, anything
else serves the tools below (echo, big, die, sleep, garbage, add_tool, bad_schema).
"""

from __future__ import annotations

import base64
import json
import os
import struct
import sys
import time
import zlib

TOOLS = [
    {
        "name": "echo",
        "description": "Echo a message.",
        "inputSchema": {
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        },
    },
    {
        "name": "big",
        "description": "A text result of `size` bytes.",
        "inputSchema": {
            "type": "object",
            "properties": {"size": {"type": "integer"}},
            "required": ["size"],
        },
    },
    {
        "name": "quit",
        "description": "Answer, then exit.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "die",
        "description": "Exit while the call is in flight.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "sleep",
        "description": "Sleep, then answer.",
        "inputSchema": {
            "type": "object",
            "properties": {"seconds": {"type": "number"}},
            "required": ["seconds"],
        },
    },
    {
        "name": "garbage",
        "description": "Answer with a line that is not JSON-RPC.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "add_tool",
        "description": "Add a tool and announce the new list.",
        "inputSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        },
    },
    {
        "name": "count",
        "description": "How many times count was called.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "picture",
        "description": "A red 4x3 PNG and a caption.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "fail",
        "description": "A tool error result.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "bad_schema",
        "description": "A tool whose input schema is not valid.",
        "inputSchema": {"type": "object", "properties": {"x": {"type": "no-such-type"}}},
    },
]


CALLS = {"count": 0}


def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(id_: object, value: dict) -> None:
    send({"jsonrpc": "2.0", "id": id_, "result": value})


def text(id_: object, body: str, *, error: bool = False) -> None:
    result(id_, {"content": [{"type": "text", "text": body}], "isError": error})


def call(id_: object, name: str, arguments: dict) -> None:
    if name == "echo":
        text(id_, f"echo: {arguments.get('message')}")
    elif name == "big":
        text(id_, "x" * int(arguments["size"]))
    elif name == "quit":
        text(id_, "bye")
        os._exit(0)
    elif name == "die":
        os._exit(3)
    elif name == "sleep":
        time.sleep(float(arguments["seconds"]))
        text(id_, "slept")
    elif name == "garbage":
        sys.stdout.write("this is not JSON-RPC {\n")
        sys.stdout.flush()
        send({"jsonrpc": "2.0", "id": id_, "bogus": True})
    elif name == "add_tool":
        TOOLS.append(
            {
                "name": arguments["name"],
                "description": "Added at run time.",
                "inputSchema": {"type": "object", "properties": {}},
            }
        )
        # announced before the answer: the client reads its messages in order, so the
        # caller that got "added" finds the list already marked stale (sent after, the
        # answer could win the race to the caller)
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        text(id_, "added")
    elif name == "count":
        CALLS["count"] += 1
        text(id_, f"count: {CALLS['count']}")
    elif name == "picture":
        data = base64.b64encode(png(4, 3)).decode()
        result(
            id_,
            {
                "content": [
                    {"type": "text", "text": "a red picture"},
                    {"type": "image", "data": data, "mimeType": "image/png"},
                ]
            },
        )
    elif name == "fail":
        text(id_, "the disk is full", error=True)
    elif name == "bad_schema":
        text(id_, "bad_schema ran")
    elif any(tool["name"] == name for tool in TOOLS):
        text(id_, f"{name} ran")
    else:
        send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32602, "message": f"no tool {name}"}})


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "serve"
    for line in sys.stdin:
        message = json.loads(line)
        method, id_ = message.get("method"), message.get("id")
        if id_ is None:
            continue  # a notification
        if mode == "hang":
            continue
        if method == "initialize":
            result(
                id_,
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {"listChanged": True}},
                    "serverInfo": {"name": "faults", "version": "1"},
                },
            )
        elif method == "tools/list":
            result(id_, {"tools": TOOLS})
        elif method == "tools/call":
            params = message["params"]
            call(id_, params["name"], params.get("arguments") or {})
        elif method == "ping":
            result(id_, {})
        else:
            send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": method}})


if __name__ == "__main__":
    main()
