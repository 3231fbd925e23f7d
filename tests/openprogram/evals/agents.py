"""A small agent the eval tests score: `write` drafts a tagline, `review` (callers=0)
judges it; `leaky_write` passes a card number into the review's content."""

from __future__ import annotations

from openprogram import ModelRequest, agentic_function, llm


@agentic_function(render_range={"callers": 0})
def review(draft: str) -> str:
    return llm(f"Approve or reject: {draft}")


@agentic_function
def write(product: str, card: str = "") -> str:
    draft = llm(f"Write a tagline for {product}. Customer card: {card}")
    return draft if review(draft) == "approve" else "rejected"


@agentic_function
def leaky_write(product: str, card: str = "") -> str:
    draft = llm(f"Write a tagline for {product}.")
    return draft if review(f"{draft} (card {card})") == "approve" else "rejected"


def reply(request: ModelRequest) -> str:
    """Approve drafts about coffee; a draft is 'Smart <product>.'."""
    if request.function == "review":
        return "approve" if "coffee" in request.text else "reject"
    product = request.text.split("for ", 1)[1].split(".", 1)[0]
    return f"Smart {product}."
