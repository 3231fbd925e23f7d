"""MCP: tools from any Model Context Protocol server, and agentic functions served as MCP tools.

Needs the `mcp` extra (`pip install "openprogram[mcp]"`). client.py holds the
connection (MCPServer), tool.py the recorded tool objects, serve.py the server side.
"""

from openprogram.errors import MCPServerError
from openprogram.mcp.client import MCPServer
from openprogram.mcp.tool import MCPTool

__all__ = ["MCPServer", "MCPServerError", "MCPTool"]
