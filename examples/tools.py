"""Tools and streaming: a research agent with two tools and a critic, run offline.

Runs with a ScriptedModel, so no API key is needed. Set OPENPROGRAM_MODEL (for example
"openai/gpt-4o-mini", with OPENAI_API_KEY set) and pass --real to ask a real model.
"""

from __future__ import annotations

import sys

from pydantic import BaseModel

from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm
from openprogram.render import seen_by

NOTES = [
    "Espresso is brewed at about 9 bar of pressure.",
    "A typical espresso shot takes 25 to 30 seconds.",
    "Cold brew steeps for 12 to 24 hours.",
    *(f"Maintenance log {i}: espresso machine descaled." for i in range(200)),
]


@agentic_function(render_output=lambda hits: {"count": len(hits), "first": hits[:3]})
def search_notes(query: str) -> list[str]:
    """Find the notes that mention a word."""
    return [note for note in NOTES if query.lower() in note.lower()]


@agentic_function
def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


class Verdict(BaseModel):
    approved: bool
    comment: str


@agentic_function(render_range={"callers": 0})
def critic(answer: str) -> Verdict:
    """Judge an answer on its own: is it specific and backed by numbers?"""
    return llm(f"Is this answer specific and backed by numbers?\n{answer}", response_format=Verdict)


@agentic_function
def research(question: str) -> str:
    """Answer a question with the notes and a calculator; redraft once if the critic says so."""
    answer = llm(question, tools=[search_notes, multiply])
    verdict = critic(answer)
    if not verdict.approved:
        answer = llm(f"The critic said: {verdict.comment}. Improve the answer.", tools=[multiply])
    return answer


def _calls(*calls: tuple[str, dict[str, object]]) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments} for name, arguments in calls]}


SCRIPT = {
    "research": [
        _calls(("search_notes", {"query": "espresso"})),
        "An espresso shot takes 25 to 30 seconds.",
        _calls(("multiply", {"a": 30, "b": 4})),
        "A shot takes 25 to 30 seconds, so four shots take at most 120 seconds.",
    ],
    "critic": [
        {"approved": False, "comment": "say how long four shots take"},
        {"approved": True, "comment": "specific"},
    ],
    "*": ["Four shots: two minutes, tops."],
}


def main() -> None:
    model = None if "--real" in sys.argv else ScriptedModel(SCRIPT)
    with Session() as session, Runtime(model) as runtime:
        answer = research("How long do four espresso shots take, one after another?")
        critic(answer)
        print(f"answer: {answer}\n")
        print("streamed: ", end="")
        for chunk in llm("Now say it in five words.", stream=True):
            print(chunk, end="", flush=True)
        print("\n")

    dag = session.dag
    print(f"the DAG has {len(dag)} nodes:")
    for node in dag.nodes:
        depth = len(dag.ancestors(node))
        tool = f" (tool call {node.meta['tool_call_id']})" if "tool_call_id" in node.meta else ""
        label = f"{node.kind:5} {node.name} #{dag.ordinal(node)} [{node.status}]"
        print(f"  {'  ' * depth}{label}{tool}")

    second_turn = dag.find(name="research", kind="llm")[1]
    print("\nwhat the second turn saw (the tool call, and the tool's render_output):")
    print("  " + seen_by(dag, second_turn).text().replace("\n", "\n  "))
    print(f"\nusage: {runtime.usage.calls} calls, {runtime.usage.total_tokens} tokens")


if __name__ == "__main__":
    main()
