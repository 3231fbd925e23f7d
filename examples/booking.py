"""A travel agent that books a hotel only after a person says yes (docs/human-in-the-loop.md).

Run it; it stops at the question. Answer from the shell, run it again, and it books:

    python examples/booking.py --store trips.db --id trip1
    openprogram sessions pending trip1 --store trips.db
    openprogram sessions answer trip1 QID yes --store trips.db
    python examples/booking.py --store trips.db --id trip1

Offline by default (a scripted model). `--model openai/gpt-4o-mini` uses a real one
through litellm (`--api-base URL` for any OpenAI-compatible server); `--ask` asks on
the terminal instead of stopping. Side effects go to `<store>.log`, one line each.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from openprogram import (
    ConsoleAsk,
    Runtime,
    RunWaiting,
    ScriptedModel,
    Session,
    agentic_function,
    llm,
    needs_approval,
)

LOG = Path("booking.log")


def note(line: str) -> None:
    """Write one side effect to the log (the test counts them: none may happen twice)."""
    with LOG.open("a", encoding="utf-8") as log:
        log.write(line + "\n")


@agentic_function
def find_hotels(city: str) -> list[dict[str, Any]]:
    """Hotels with a free room in a city, cheapest first."""
    note(f"searched {city}")
    return [{"name": "Harbour Inn", "price": 120}, {"name": "Grand Hotel", "price": 310}]


@agentic_function
def book_hotel(name: str, nights: int) -> str:
    """Book a room; returns the confirmation number."""
    note(f"booked {name} for {nights} nights")
    return "CONF-1042"


@agentic_function
def travel_agent(request: str) -> str:
    """Find a hotel and book it; the booking needs the user's approval."""
    return llm(request, tools=[find_hotels, needs_approval(book_hotel)])


def reply(messages: list[dict[str, Any]]) -> str | dict[str, Any]:
    """The scripted model: search, then book the cheapest, then report."""
    results = [m for m in messages if m.get("role") == "tool"]
    if not results:
        return {"tool_calls": [{"name": "find_hotels", "arguments": {"city": "Lisbon"}}]}
    if len(results) == 1:
        booking = {"name": "Harbour Inn", "nights": 2}
        return {"tool_calls": [{"name": "book_hotel", "arguments": booking}]}
    outcome = str(results[-1].get("content"))
    if "declined" in outcome:
        return "You declined the booking, so nothing was booked."
    return f"Booked 2 nights at Harbour Inn, confirmation {outcome.strip(chr(34))}."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="trips.db")
    parser.add_argument("--id", default="trip1")
    parser.add_argument("--model", help="a litellm model string (default: scripted, offline)")
    parser.add_argument("--api-base", help="an OpenAI-compatible server's URL")
    parser.add_argument("--ask", action="store_true", help="ask on the terminal")
    args = parser.parse_args(argv)
    global LOG
    LOG = Path(f"{args.store}.log") if "://" not in args.store else Path(f"{args.id}.log")
    options: dict[str, Any] = {"ask": ConsoleAsk() if args.ask else None}
    if args.api_base:
        options.update(api_base=args.api_base, api_key="sk-local")
    model = args.model or ScriptedModel(lambda request: reply(request.messages))
    # the first run records a new session; a later one resumes it
    session = Session.open(args.store, args.id, resume=True, create=True)
    try:
        with session, Runtime(model, **options):
            print(travel_agent("Book me two nights in Lisbon, somewhere cheap."))
    except RunWaiting as waiting:
        question = waiting.question
        print(f"waiting for an answer to {question.id}: {question.text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
