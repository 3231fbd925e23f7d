"""A payment agent killed mid-payment, resumed, and settled by a person
(docs/operations.md#effects-and-the-ledger).

`pay_invoice` is declared effect="once": its start is committed before it runs, and it
passes its idempotency key to the payment provider. Kill the process while it pays
(`--crash` does, with SIGKILL, right after the provider charged) and the resumed run
does not pay again: it stops with EffectUnknown, naming the call and its key. A person
looks the key up at the provider and settles the call; the next run goes on from there:

    python examples/payments.py --store pay.db --id run1 --crash
    python examples/payments.py --store pay.db --id run1      # unknown: says how to settle
    openprogram sessions settle run1 NODE --result '"ch_1"' --store pay.db
    python examples/payments.py --store pay.db --id run1      # sends the receipt, done

With `--ask` the resumed run asks on the terminal instead (answer the charge id, or
"rerun" when the provider has nothing under the key). Offline (a scripted model); the
provider is a file, `<store>.provider`, that deduplicates charges by key as real
payment APIs do.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import Any

from openprogram import (
    ConsoleAsk,
    EffectUnknown,
    Runtime,
    ScriptedModel,
    Session,
    agentic_function,
    idempotency_key,
    llm,
)


class Provider:
    """A payment provider in a file: one line per charge, `key charge_id amount`. A
    charge under a key it has seen returns that charge again (an idempotent API)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def charges(self) -> dict[str, tuple[str, str]]:
        if not self.path.exists():
            return {}
        lines = self.path.read_text().split("\n")
        return {key: (charge, amount) for key, charge, amount in (x.split() for x in lines if x)}

    def charge(self, key: str, amount: float) -> str:
        known = self.charges()
        if key in known:
            return known[key][0]
        charge = f"ch_{len(known) + 1}"
        with self.path.open("a") as file:
            file.write(f"{key} {charge} {amount:.2f}\n")
        return charge


PROVIDER = Provider(Path("pay.db.provider"))
CRASH = False


@agentic_function(effect="once")
def pay_invoice(invoice: str, amount: float) -> str:
    """Pay an invoice; returns the charge id."""
    charge = PROVIDER.charge(idempotency_key(), amount)
    if CRASH:  # the machine dies after the provider charged, before the call returned
        os.kill(os.getpid(), signal.SIGKILL)
    return charge


@agentic_function(effect="idempotent")
def send_receipt(invoice: str, charge: str) -> str:
    """E-mail the receipt of a paid invoice (sending it twice is harmless)."""
    print(f"receipt for {invoice}: {charge} (key {idempotency_key()})")
    return "sent"


@agentic_function
def payment_agent(request: str) -> str:
    """Pay what the request asks for, then send the receipt."""
    return llm(request, tools=[pay_invoice, send_receipt])


def reply(messages: list[dict[str, Any]]) -> str | dict[str, Any]:
    """The scripted model: pay, send the receipt, report."""
    results = [str(m.get("content")).strip('"') for m in messages if m.get("role") == "tool"]
    if not results:
        payment = {"invoice": "INV-7", "amount": 120.0}
        return {"tool_calls": [{"name": "pay_invoice", "arguments": payment}]}
    if len(results) == 1:
        receipt = {"invoice": "INV-7", "charge": results[0]}
        return {"tool_calls": [{"name": "send_receipt", "arguments": receipt}]}
    return f"Paid INV-7 (charge {results[0]}) and sent the receipt."


def main(argv: list[str] | None = None) -> int:
    global PROVIDER, CRASH
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="pay.db")
    parser.add_argument("--id", default="run1")
    parser.add_argument("--crash", action="store_true", help="die right after charging")
    parser.add_argument("--ask", action="store_true", help="settle on the terminal")
    args = parser.parse_args(argv)
    PROVIDER, CRASH = Provider(Path(f"{args.store}.provider")), args.crash
    model = ScriptedModel(lambda request: reply(request.messages))
    try:
        with (
            Session.open(args.store, args.id, resume=True, create=True),
            Runtime(model, ask=ConsoleAsk() if args.ask else None),
        ):
            print(payment_agent("Pay invoice INV-7: 120 EUR to ACME."))
    except EffectUnknown as unknown:
        found = PROVIDER.charges().get(unknown.key)
        print(f"{unknown.call} was interrupted; its effect is unknown (key {unknown.key}).")
        print(f"the provider has: {f'{found[0]} for {found[1]}' if found else 'no charge'}")
        where = f"{args.id} {unknown.node_id} --store {args.store}"
        if found:
            print(f"settle it: openprogram sessions settle {where} --result '\"{found[0]}\"'")
        else:
            print(f"settle it: openprogram sessions settle {where} --rerun")
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
