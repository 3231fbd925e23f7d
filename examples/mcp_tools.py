"""MCP both ways: an agent using the filesystem server's tools, and one of our agentic
functions served as an MCP tool to another client.

Runs offline with a ScriptedModel. The filesystem server is started with npx (Node.js
needed); set OPENPROGRAM_MCP_FILESYSTEM to another command line to start it otherwise.
Set OPENPROGRAM_MODEL and pass --real to let a real model choose the calls.
"""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
from pathlib import Path

from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm
from openprogram.mcp import MCPServer

FILESYSTEM = "npx -y @modelcontextprotocol/server-filesystem@2026.8.31"


@agentic_function
def word_count(text: str) -> dict:
    """Count the words and lines of a text."""
    return {"words": len(text.split()), "lines": len(text.splitlines())}


@agentic_function
def tidy_notes(folder: str, tools: list) -> str:
    return llm(
        f"The folder {folder} holds notes. Write a file summary.txt there that lists "
        "the notes' titles, then say what you wrote.",
        tools=tools,
    )


def script(folder: Path) -> dict:
    """What a model would ask for, scripted so the example runs offline."""
    return {
        "tidy_notes": [
            {"tool_calls": [{"name": "files_list_directory", "arguments": {"path": str(folder)}}]},
            {
                "tool_calls": [
                    {
                        "name": "files_read_text_file",
                        "arguments": {"path": str(folder / "coffee.txt"), "head": 1},
                    }
                ]
            },
            {
                "tool_calls": [
                    {
                        "name": "files_write_file",
                        "arguments": {
                            "path": str(folder / "summary.txt"),
                            "content": "Notes: coffee.txt (Espresso), tea.txt (Green tea)\n",
                        },
                    }
                ]
            },
            "I wrote summary.txt listing coffee.txt and tea.txt.",
        ]
    }


def use_the_filesystem_server(folder: Path, real: bool) -> None:
    (folder / "coffee.txt").write_text("Espresso\nBrewed at 9 bar.\n")
    (folder / "tea.txt").write_text("Green tea\nSteep for 2 minutes.\n")
    command = shlex.split(os.environ.get("OPENPROGRAM_MCP_FILESYSTEM", FILESYSTEM))
    model = None if real else ScriptedModel(script(folder))
    with (
        MCPServer.stdio([*command, str(folder)], name="files") as files,
        Session() as session,
        Runtime(model),
    ):
        tools = files.tools()
        print("tools:", ", ".join(sorted(tool.name for tool in tools)[:4]), "...")
        answer = tidy_notes(str(folder), tools)
    print("answer:", answer)
    print("summary.txt:", (folder / "summary.txt").read_text().strip())
    for node in session.dag.find(kind="code")[1:]:
        print(f"  {node.name} {node.status} meta.mcp={node.meta['mcp']}")


def serve_our_function() -> None:
    """`openprogram mcp serve` runs word_count as an MCP server; MCPServer is the client
    here, as a desktop assistant would be."""
    here = Path(__file__).resolve().parent
    command = [
        sys.executable, "-c", "from openprogram.cli import main; main()",
        "mcp", "serve", "mcp_tools:word_count", "--store", "memory",
    ]  # fmt: skip
    path = os.pathsep.join(filter(None, [str(here), os.environ.get("PYTHONPATH")]))
    with MCPServer.stdio(command, name="ours", env={"PYTHONPATH": path}, cwd=here) as ours:
        (tool,) = ours.tools()
        print("served:", tool.spec["name"], "-", tool.spec["description"])
        with Session():
            print("called:", tool(text="one two three\nfour"))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="openprogram-mcp-") as workdir:
        use_the_filesystem_server(Path(workdir).resolve(), "--real" in sys.argv)
    serve_our_function()
