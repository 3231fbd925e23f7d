"""Quickstart: an agent as ordinary decorated functions, run offline.

Runs with a ScriptedModel, so no API key is needed. Set OPENPROGRAM_MODEL (for example
"openai/gpt-4o-mini", with OPENAI_API_KEY set) and pass --real to ask a real model.
"""

from __future__ import annotations

import sys

from pydantic import BaseModel

from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm, render_context


class Review(BaseModel):
    approved: bool
    comment: str


@agentic_function(render_range={"callers": 0})
def review(draft: str) -> Review:
    """Judge a draft on its own, without the conversation so far."""
    return llm(
        f"Review this tagline; approve it if it is under 8 words:\n{draft}", response_format=Review
    )


@agentic_function
def write_tagline(product: str, attempts: int = 2) -> str:
    """Draft a tagline, have it reviewed, and redraft once if needed."""
    draft = llm(f"Write a one-line tagline for {product}.")
    for _ in range(attempts):
        verdict = review(draft)
        if verdict.approved:
            return draft
        draft = llm(f"The reviewer said: {verdict.comment}. Write a better tagline.")
    return draft


SCRIPT = {
    "write_tagline": [
        "Coffee that remembers how you like it, every single morning, without fail.",
        "Coffee that remembers you.",
    ],
    "review": [
        {"approved": False, "comment": "too long: keep it under 8 words"},
        {"approved": True, "comment": "short and warm"},
    ],
}


def main() -> None:
    model = None if "--real" in sys.argv else ScriptedModel(SCRIPT)
    with Session() as session, Runtime(model) as runtime:
        session.submit("We need a tagline for our smart coffee machine.")
        tagline = write_tagline("a smart coffee machine")
    print(f"tagline: {tagline}\n")

    dag = session.dag
    print(f"the DAG has {len(dag)} nodes:")
    for node in dag.nodes:
        depth = len(dag.ancestors(node))
        print(f"  {'  ' * depth}{node.kind:5} {node.name} #{dag.ordinal(node)} [{node.status}]")

    redraft = dag.find(name="write_tagline", kind="llm")[-1]
    seen = render_context(dag, redraft.parent, before=redraft.seq)
    print("\nwhat the redraft call saw (its frame's progress, the review's io only):")
    print("  " + seen.text().replace("\n", "\n  "))
    second_review = dag.find(name="review", kind="llm")[1]
    walled = render_context(dag, second_review.parent, before=second_review.seq)
    print("\nwhat the second review saw (callers=0 walls it off):")
    print("  " + walled.text().replace("\n", "\n  "))
    print(f"\nusage: {runtime.usage.calls} calls, {runtime.usage.total_tokens} tokens")


if __name__ == "__main__":
    main()
