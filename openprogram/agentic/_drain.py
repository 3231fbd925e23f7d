"""Graceful drain: SIGTERM lets running calls reach their next node boundary and stop.

While a Session is entered in the main thread, a SIGTERM handler (chaining any Python
handler installed before it) sets a flag; session.py checks it where a call or an llm
exchange begins and raises RunStopped("drained by SIGTERM") there, except inside an
`effect="once"` call, which is let finish. When no call is running at all (the program
waits for input, say), the handler raises RunStopped at once. A second SIGTERM ends the
process as the previous handler would. Start at install().
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

from openprogram.core import _context
from openprogram.core.dag import ContextDAG
from openprogram.errors import RunStopped

__all__ = ["REASON", "check", "install", "requested", "uninstall"]

REASON = "drained by SIGTERM"

requested = [False]
"""requested[0]: a SIGTERM arrived while sessions were entered (read on every call)."""
_lock = threading.Lock()
_installed = 0  # sessions entered in the main thread
_previous: Any = None
_pid = os.getpid()  # the process that installed the handler (a fork child is another)


def _on_sigterm(signum: int, frame: Any) -> None:
    if os.getpid() != _pid:  # a fork child that kept the handler: end as before it
        signal.signal(signum, signal.SIG_DFL if _previous is None else _previous)
        os.kill(os.getpid(), signum)
        return
    if requested[0]:  # the second one: stop as if no session were running
        previous = _previous
        uninstall(force=True)
        if callable(previous):
            previous(signum, frame)
        else:
            os.kill(os.getpid(), signum)
        return
    requested[0] = True
    if callable(_previous):
        _previous(signum, frame)
    if not _busy():  # nothing to let finish: stop where the main thread waits
        raise RunStopped(REASON)


def _busy() -> bool:
    """Whether a call or an llm exchange is running in a session entered in this process."""
    sessions = _context.entered_sessions()
    return any(
        node.status == "running" and node.kind != "user"
        for session in sessions
        for node in session.dag.nodes
    )


def install() -> bool:
    """Install the handler (once for nested sessions); False outside the main thread,
    where Python allows no signal handler (the flag then follows the main thread's)."""
    global _installed, _previous, _pid
    if threading.current_thread() is not threading.main_thread():
        return False
    with _lock:
        if _installed == 0:
            try:
                _pid = os.getpid()
                _previous = signal.signal(signal.SIGTERM, _on_sigterm)
            except (ValueError, OSError):  # no signals here (an embedded interpreter)
                return False
        _installed += 1
    return True


def uninstall(*, force: bool = False) -> None:
    """Undo one install() (all of them with `force`): the last one puts the previous
    handler back and forgets a SIGTERM drained."""
    global _installed, _previous
    with _lock:
        if _installed == 0:
            return
        _installed = 0 if force else _installed - 1
        if _installed == 0:
            previous, _previous = _previous, None
            requested[0] = False
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def check(dag: ContextDAG, frame: str | None, reason: str = REASON) -> None:
    """At a node boundary after a SIGTERM (or Session.stop: `reason`): raise RunStopped,
    unless the boundary lies inside an `effect="once"` call (its body is let finish; it
    stops at the next one)."""
    node = dag.get(frame)
    while node is not None:
        if node.meta.get("effect") == "once":
            return
        node = dag.get(node.parent)
    raise RunStopped(reason)


def _reset_in_child() -> None:
    """In a fork child (a multiprocessing worker, say): the parent's handler goes, so a
    SIGTERM ends the child as it would have before (a Pool's terminate() sends one)."""
    global _installed, _previous, _lock
    _lock = threading.Lock()  # another thread may have held it at the fork
    if _installed:
        previous, _previous, _installed = _previous, None, 0
        requested[0] = False
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_in_child)
