"""The child programs of test_settle_once.py: a payment whose `once` body logs every run
to a file, and the processes that settle it or resume it.

    python -m tests.openprogram.session.settle_programs STORE ID LOG MODE [ARG]

MODE: "settle" (open the session, say "ready", then on "go" settle pay ARG: "rerun" or a
JSON result; print "settled", "refused: <message>" or, while another settler holds the
lease, "locked: <message>"), "resume" (resume the session and print what checkout
returned, or "unknown: <message>"), "kill" (record the session, say "ready" inside pay's
body and wait there to be killed).
"""

from __future__ import annotations

import json
import sys

from openprogram import (
    AlreadySettled,
    EffectUnknown,
    Session,
    SessionLocked,
    agentic_function,
    idempotency_key,
)
from tests.support.children import ready

LOG: list[str] = []  # the log file's path, set by main() or a test
STOP_IN_BODY = [False]
CRASH = [False]  # the body is interrupted right after it charged (a KeyboardInterrupt)


@agentic_function(effect="once")
def pay(amount: int) -> str:
    """The payment: each run of its body is a line of the log (one charge per line)."""
    with open(LOG[0], "a") as log:
        log.write(idempotency_key() + "\n")
    if STOP_IN_BODY[0]:
        ready()  # killed here, mid-payment
    if CRASH[0]:
        raise KeyboardInterrupt  # the process dying after the charge, as far as it knows
    return f"ch-{amount}"


@agentic_function
def checkout() -> str:
    return pay(5)


def main(store: str, session_id: str, log: str, mode: str, arg: str = "") -> None:
    LOG[:] = [log]
    if mode == "kill":
        STOP_IN_BODY[0] = True
        with Session(store, id=session_id):
            checkout()
        return
    if mode == "resume":
        try:
            with Session.open(store, session_id, resume=True):
                print(checkout(), flush=True)
        except (EffectUnknown, SessionLocked) as exc:
            print(f"unknown: {exc}", flush=True)
        return
    session = Session.open(store, session_id)
    (node,) = session.dag.find("pay")
    if not ready():
        return
    try:
        if arg == "rerun":
            session.settle(node.id, rerun=True)
        else:
            session.settle(node.id, json.loads(arg))
        print("settled", flush=True)
    except AlreadySettled as exc:
        print(f"refused: {exc}", flush=True)
    except SessionLocked as exc:  # the other settler holds the lease this moment
        print(f"locked: {exc}", flush=True)
    finally:
        session.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
