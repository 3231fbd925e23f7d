"""Recorded runs the display tests look at, made offline with ScriptedModel."""

from __future__ import annotations

import pytest
from PIL import Image as PILImage
from PIL import ImageDraw
from pydantic import BaseModel

from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm


class Review(BaseModel):
    approved: bool
    comment: str


@agentic_function(render_range={"callers": 0})
def review(draft: str) -> Review:
    return llm(f"Review: {draft}", response_format=Review)


@agentic_function(system="Write short taglines.")
def write_tagline(product: str) -> str:
    draft = llm(f"Write a tagline for {product}.")
    for _ in range(2):
        if review(draft).approved:
            return draft
        draft = llm("Shorter, please.")
    return draft


@agentic_function(render_range={"callers": 0})
def look(shot, step: int) -> str:
    return llm(["What is on screen?", shot])


def screen(colour: str, size: tuple[int, int] = (800, 500)) -> PILImage.Image:
    image = PILImage.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle((100, 100, 400, 300), fill=colour)
    return image


SCRIPT = {
    "write_tagline": ["A very long tagline that goes on and on.", "Short one."],
    "review": [
        {"approved": False, "comment": "too long"},
        {"approved": True, "comment": "fine"},
    ],
    "look": ["a red box", "a red box again", "a blue box"],
}


@pytest.fixture
def tagline_session() -> Session:
    """user → write_tagline (2 llm, 2 review) → look ×3 with two distinct screenshots."""
    with Session() as session, Runtime(ScriptedModel(SCRIPT), system="Be brief."):
        session.submit("We need a tagline.")
        write_tagline("coffee")
        red = screen("red")
        look(red, 1)
        look(red, 2)
        look(screen("blue"), 3)
    return session


@agentic_function(expose="hidden")
def lookup_secret(key: str) -> str:
    return f"value-of-{key}"


@agentic_function(expose="full")
def research(topic: str) -> str:
    return llm(f"Facts about {topic}.")


@agentic_function
def summarise(text: str) -> str:
    return llm(f"Summarise: {text}")


@agentic_function(render_range={"callers": 2})
def decide(question: str) -> str:
    return llm(question)


@agentic_function
def agent(goal: str) -> str:
    lookup_secret("api")
    summary = summarise(research("espresso"))
    return decide(f"{summary}: {goal}?")


@pytest.fixture
def rules_session() -> Session:
    """One run touching every hiding rule: hidden, full, io, and a callers window."""
    with Session() as session, Runtime(ScriptedModel(lambda r: f"reply to {r.function}")):
        session.submit("Plan the launch.")
        agent("launch")
    return session
