"""Recorded runs the display tests look at, made offline with ScriptedModel."""

from __future__ import annotations

import asyncio

import pytest
from PIL import Image as PILImage
from PIL import ImageDraw
from pydantic import BaseModel

from openprogram import Runtime, ScriptedModel, Session, agentic_function, allm, llm
from openprogram.store import MemoryStore


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


# -- every hiding rule, every expose value and render_range shape ----------------------------


@agentic_function
def shout(text: str) -> str:
    return text.upper()


@agentic_function(expose="llm")
def quiet(question: str) -> str:
    shout(question)  # below an llm frame: not one of its llm exchanges
    return llm(question)  # its caller's line is not shown to it


@agentic_function(expose="full")
def dig(topic: str) -> str:
    shout(topic)
    return llm(f"Facts about {topic}.")


@agentic_function(render_range={"callers": 0})
def walled(text: str) -> str:
    return llm(text)


@agentic_function(render_range={"callers": 2, "subcalls": 1})
def windowed(text: str) -> str:
    shout(text)
    shout(text + "!")
    llm("first look")
    return llm("second look")


@agentic_function(render_range={"subcalls": 0})
def blind(text: str) -> str:
    shout(text)
    llm(text)
    return llm("again")  # sees not even the exchange just before


@agentic_function(render_range={"callers": 0, "subcalls": 0})
def nest(depth: int) -> str:
    shout(f"depth {depth}")
    if depth:
        nest(depth - 1)
    return llm(f"depth {depth}")  # the same function at another depth of the stack


def _twin(window: dict[str, int]):
    @agentic_function(render_range=window)
    def twin(text: str) -> str:  # two functions of one name, with different windows
        return llm(text)

    return twin


twin_open, twin_walled = _twin({"callers": 1}), _twin({"callers": 0})


@agentic_function(expose="full", render_range={"callers": 0})
async def async_worker(n: int, after: int) -> str:
    shout(f"worker {n}")
    asked = _ASKED[-1]
    if after:  # all three start in order; they ask in the order 3, 1, 2
        await asked[after].wait()
    reply = await allm(f"work {n}")
    asked[n].set()
    return reply


_ASKED: list[dict[int, asyncio.Event]] = []


@agentic_function
async def fan_out() -> list[str]:
    return list(await asyncio.gather(async_worker(1, 3), async_worker(2, 1), async_worker(3, 0)))


@agentic_function(expose="hidden")
def vault(key: str) -> str:
    return walled(f"unlock {key}")


@agentic_function
def campaign(goal: str) -> str:
    lookup_secret("api")
    quiet("Which market?")
    dig("espresso")
    for n in range(3):
        walled(f"check {n}")
        windowed(f"draft {n}")
    blind(goal)
    vault("door")
    nest(2)
    twin_open("open")
    twin_walled("walled")
    return decide(f"{goal}?")


def _run_fan_out() -> None:
    async def run() -> None:
        _ASKED.append({n: asyncio.Event() for n in (1, 2, 3)})
        await fan_out()

    asyncio.run(run())


@pytest.fixture
def every_rule_session() -> Session:
    """Every expose value and render_range shape, recursion, concurrent siblings,
    top-level llm calls and a second branch, in one session."""
    with Session() as session, Runtime(ScriptedModel(lambda r: f"reply to {r.function}")):
        first = session.submit("Plan the campaign.")
        campaign("launch")
        _run_fan_out()
        llm("Anything else?")
        campaign("relaunch")
        dag = session.dag
        dag.branch = dag.new_branch(first)
        llm("First thing on the branch?")  # before any node of its own on the branch
        session.submit("On a second branch.")
        campaign("fork")
        llm("And on the branch?")
        _run_fan_out()
    return session


class Killed(BaseException):
    """Stops a recorded program dead, as a crash would."""


@pytest.fixture
def resumed_session() -> Session:
    """A run killed in its third step, then resumed: the recorded prefix replays and the
    rest runs live, in one DAG."""
    store = MemoryStore()
    kill_at = [2]

    @agentic_function
    def step(n: int) -> str:
        walled(f"look {n}")
        if n == kill_at[0]:
            session.dag.listeners.clear()  # nothing after this reaches the store
            raise Killed
        return windowed(f"act {n}")

    @agentic_function
    def job() -> list[str]:
        return [step(n) for n in range(5)]

    with Session(store) as session, Runtime(ScriptedModel(lambda r: f"reply to {r.function}")):
        session.submit("Do the job.")
        with pytest.raises(Killed):
            job()
    kill_at[0] = -1
    with (
        Session.open(store, session.id, resume=True) as resumed,
        Runtime(ScriptedModel(lambda r: f"reply to {r.function}")),
    ):
        job()
    return resumed
