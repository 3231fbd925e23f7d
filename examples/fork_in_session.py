"""Forking inside a session: a child process never writes its parent's session.

A child made by os.fork or a multiprocessing "fork" Pool inherits the parent's open
session. There it records into the child's memory only; a Session the child opens
itself is stored as one from any process. POSIX only (os.fork). Runs offline:

    python examples/fork_in_session.py [STORE]      (default: a new temporary file)
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile

from openprogram import Session, agentic_function


@agentic_function
def square(i: int) -> int:
    return i * i


def child(store: str) -> None:
    """What runs in the forked child, inside the parent's `with Session(...)` block."""
    square(3)  # recorded in the child's copy of the parent's session, in memory only
    with Session(store, id="child") as own:  # the child's own session is stored
        square(4)
    print(f"child: own session stored {len(own.dag.nodes)} node(s)", flush=True)


def main(store: str) -> None:
    with Session(store, id="parent") as session:
        square(2)
        pid = os.fork()
        if pid == 0:
            child(store)
            sys.exit(0)  # leaves the inherited `with` block and exits as usual
        os.waitpid(pid, 0)
        with multiprocessing.get_context("fork").Pool(2) as pool:
            print("pool:", pool.map(square, range(5)))
        square(5)
    print("parent: failed writes", session.failed_writes)
    for id in ("parent", "child"):
        stored = Session.open(store, id)
        print(f"stored {id}:", [(n.name, n.output) for n in stored.dag.nodes])
        stored.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(), "runs.db"))
