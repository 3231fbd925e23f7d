"""Evals, worked end to end, offline: a dataset made from recorded sessions, a scorer that
catches a card number leaking into a sub-call's context, and two versions compared.

Run: python examples/evals.py [FOLDER]   (FOLDER keeps runs.db, the reports and HTML)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from openprogram import ModelRequest, Runtime, ScriptedModel, Session, agentic_function, llm
from openprogram.evals import Dataset, Score, equals

CITIES = ["Lisbon", "Oslo", "Kyoto", "Lima", "Accra", "Perth", "Quito", "Riga"]


# -- the agent: book_hotel asks check_policy (its own llm call) before it books ----------
@agentic_function(render_range={"callers": 0})
def check_policy(request: str) -> str:
    """Whether a booking request is within the travel policy."""
    return llm(f"Within policy? Answer ok or refuse. Request: {request}")


@agentic_function
def book_hotel(city: str, nights: int, card: str) -> str:
    """Version 1: hands the whole request, card number included, to check_policy."""
    if check_policy(f"{nights} nights in {city}, pay with card {card}") != "ok":
        return "refused"
    return llm(f"Book {nights} nights in {city}; charge the card on file.")


@agentic_function
def book_hotel_v2(city: str, nights: int, card: str) -> str:
    """Version 2: check_policy gets only what it needs."""
    if check_policy(f"{nights} nights in {city}") != "ok":
        return "refused"
    return llm(f"Book {nights} nights in {city}; charge the card on file.")


def model(request: ModelRequest) -> str:
    """A scripted model: policy allows up to 5 nights; a booking is confirmed."""
    if request.function == "check_policy":
        nights = int(request.text.split("Request: ")[1].split()[0])
        return "ok" if nights <= 5 else "refuse"
    city = request.text.split(" in ")[1].split(";")[0]
    return f"Booked {city}."


# -- a scorer that sees the DAG -----------------------------------------------------------
def card_stays_private(case, output, run) -> Score:
    """The policy check must never see the card number (its llm call's whole context)."""
    leaked = run.saw("check_policy", contains=case.inputs["card"])
    return Score(not leaked, "check_policy saw the card number" if leaked else None)


def main(folder: Path) -> None:
    store = folder / "runs.db"
    # 1. "production": each booking a recorded session
    with Runtime(ScriptedModel(model)):
        for number, city in enumerate(CITIES):
            with Session(store):
                book_hotel(city, nights=2 + number % 5, card=f"4111-0000-0000-{number:04d}")

    # 2. a dataset from those sessions: recorded inputs, recorded outputs as expected
    dataset = Dataset.from_sessions(store, "book_hotel", name="bookings")
    dataset.save(folder / "bookings.yaml")
    print(f"dataset: {len(dataset)} cases from {len(dataset)} sessions")
    print(f"first case: {dataset.cases[0].inputs} -> {dataset.cases[0].expected!r}")

    # 3. evaluate both versions, each run its own recorded session
    scorers = [equals, card_stays_private]
    v1 = dataset.evaluate(book_hotel, scorers, model=ScriptedModel(model), name="v1", store=store)
    v2 = dataset.evaluate(
        book_hotel_v2, scorers, model=ScriptedModel(model), name="v2", store=store
    )
    print(v1.table())
    print(v1.runs[0].scores[1].reason)
    print(v2.table())

    # 4. compare: paired by case, with a sign test
    comparison = v1.compare(v2)
    print(comparison.table())
    change = comparison["card_stays_private"]
    print(f"significant: {change.significant} (p = {change.p_value:.4f})")

    # 5. keep the report; rescore it later without calling anything
    v2.save(folder / "v2.json")
    v2.write_html(folder / "v2.html")
    again = type(v2).load(folder / "v2.json").rescore([card_stays_private])
    print(f"rescored without calls: {again.summary()['card_stays_private'].mean:.2f}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as scratch:
            main(Path(scratch))
