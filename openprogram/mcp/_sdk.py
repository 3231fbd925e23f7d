"""The official `mcp` SDK, imported once with the install hint when it is missing.

Every module of openprogram.mcp imports the SDK through here, so a missing extra is
one clear ImportError, and the core never imports it.
"""

from __future__ import annotations

try:
    import mcp
    import mcp_types
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared.exceptions import MCPError
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError('openprogram.mcp needs the MCP SDK: pip install "openprogram[mcp]"') from exc

__all__ = [
    "ClientSession",
    "MCPError",
    "StdioServerParameters",
    "create_mcp_http_client",
    "mcp",
    "mcp_types",
    "stdio_client",
    "streamable_http_client",
]
