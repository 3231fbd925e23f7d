"""A hostile MCP server over stdio, for the client's attack tests.

Speaks JSON-RPC by hand, as mcp_fault_server.py does. Run as `python mcp_hostile_server.py
MODE [N]`: `schemas` lists tools with costly schemas (a 40-level anyOf/$ref chain with
`^(a+)+$`, a backtracking pattern, a doubling chain of references, a hostile output
schema); `names` lists tools whose names collide once sanitised; `twice` lists one tool
name twice; `many N` lists N tools.
"""

from __future__ import annotations

import json
import sys

EVIL = "^(a|a)*$"  # backtracks exponentially in `re` and in `regex` alike
NO_MATCH = "a" * 40 + "!"


def chain(levels: int, pattern: str, refs_per_level: int = 1) -> dict:
    """An object schema whose property `x` is an anyOf chain `levels` deep through $defs."""
    defs = {}
    for level in range(levels):
        branches = [{"$ref": f"#/$defs/l{level + 1}"} for _ in range(refs_per_level)]
        defs[f"l{level}"] = {"anyOf": [*branches, {"type": "string", "pattern": pattern}]}
    defs[f"l{levels}"] = {"type": "string", "pattern": pattern}
    return {"type": "object", "properties": {"x": {"$ref": "#/$defs/l0"}}, "$defs": defs}


def plain(name: str) -> dict:
    return {"name": name, "description": f"{name}.", "inputSchema": {"type": "object"}}


def tools(mode: str, count: int) -> list[dict]:
    if mode == "schemas":
        return [
            plain("echo"),
            {"name": "deep", "description": "40 levels.", "inputSchema": chain(40, "^(a+)+$")},
            {"name": "doubling", "description": "2^16 paths.", "inputSchema": chain(16, "^a$", 2)},
            {
                "name": "evil",
                "description": "A pattern that backtracks.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"s": {"type": "string", "pattern": EVIL}},
                },
            },
            {
                "name": "evil_keys",
                "description": "A property-name pattern that backtracks.",
                "inputSchema": {
                    "type": "object",
                    "patternProperties": {EVIL: {"type": "string"}},
                    "additionalProperties": False,
                },
            },
            {
                "name": "evil_output",
                "description": "Structured content against a pattern that backtracks.",
                "inputSchema": {"type": "object"},
                "outputSchema": {
                    "type": "object",
                    "properties": {"s": {"type": "string", "pattern": EVIL}},
                },
            },
        ]
    if mode == "names":
        return [plain(name) for name in ("a.b", "a_b", "a b", "hub_create", "create")]
    if mode == "twice":  # one name listed twice, with two descriptions
        return [plain("read"), plain("write"), {**plain("read"), "description": "Other."}]
    return [plain(f"tool_{i}") for i in range(count)]


def main() -> None:
    mode = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    listed = tools(mode, count)
    for line in sys.stdin:
        message = json.loads(line)
        method, id_ = message.get("method"), message.get("id")
        if id_ is None:
            continue
        if method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": listed}
        elif method == "tools/call":
            name = message["params"]["name"]
            structured = {"s": NO_MATCH} if name == "evil_output" else None
            result = {"content": [{"type": "text", "text": f"{name} ran"}]}
            if structured is not None:
                result["structuredContent"] = structured
        else:
            result = {}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
