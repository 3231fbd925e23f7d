"""An MCP server over streamable HTTP (the SDK's MCPServer) with a tool answering
`size` characters. Run as `python mcp_big_http_server.py PORT json|sse`."""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("big")


@server.tool()
def big(size: int) -> str:
    """A text of `size` characters."""
    return "x" * size


if __name__ == "__main__":
    port, kind = int(sys.argv[1]), sys.argv[2]
    server.run("streamable-http", port=port, json_response=kind == "json")
