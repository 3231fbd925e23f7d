"""The sandbox process of ProcessOperations: runs the operations the parent sends.

`python -m openprogram.operations._child FD ALIVE_S` talks over the unix socket it
inherited as FD (one end of the parent's socketpair: no path another process could
reach), says "hello", then runs each "run" frame's operation on a thread of its own
(importing the module that registers its kind) and answers with heartbeat / done /
failed / cancelled frames, and an "alive" frame every ALIVE_S seconds. When the parent
goes away it kills every process it started, and exits. Started by process.py only.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import runpy
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from openprogram.operations._reaper import kill_tree
from openprogram.operations._wire import FrameError, read_frame, write_frame
from openprogram.operations.manager import run_executor
from openprogram.operations.operation import OperationContext, kind_of

_loaded: set[str] = set()
_load_lock = threading.Lock()


def _load(module: str, path: str | None) -> None:
    """Import the module that registers a kind; a script's (`__main__`) is run from its
    file as `__mp_main__`, so its `if __name__ == "__main__":` block does not run."""
    if module != "__main__":
        importlib.import_module(module)
        return
    if not path:
        raise ImportError("the kind is registered in an interactive __main__; put it in a module")
    with _load_lock:
        if path not in _loaded:
            runpy.run_path(path, run_name="__mp_main__")
            _loaded.add(path)


def _heartbeat(send: Callable[[dict[str, Any]], None], id: str) -> Callable[[str | None], None]:
    def heartbeat(detail: str | None) -> None:
        send({"id": id, "report": "heartbeat", "value": detail})

    return heartbeat


def main(fd: int, alive_s: float) -> None:
    sock = socket.socket(fileno=fd)
    send_lock = threading.Lock()
    live: dict[str, OperationContext] = {}

    def send(message: dict[str, Any]) -> None:
        with send_lock, contextlib.suppress(OSError):  # the parent is gone: main() sees it
            write_frame(sock, message)

    def run(message: dict[str, Any]) -> None:
        id = message["id"]
        context = live[id]
        try:
            _load(message["module"], message.get("path"))
            kind = kind_of(message["kind"], message["version"], operation=id)
            what, value = run_executor(message, kind, context)
        except Exception as exc:  # an import or registry failure: the operation fails
            what, value = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            live.pop(id, None)
        send({"id": id, "report": what, "value": value})

    def alive() -> None:  # a stopped or stuck process stops saying so: the parent sees it
        while True:
            send({"report": "alive"})
            time.sleep(alive_s)

    send({"report": "hello", "value": os.getpid()})
    threading.Thread(target=alive, daemon=True).start()
    while True:
        try:
            message = read_frame(sock)
        except FrameError:
            message = None
        if message is None:  # the parent is gone (or broke the stream): stop all, and go
            for context in list(live.values()):
                context.cancelled.set()
            kill_tree(os.getpid(), include_root=False)
            os._exit(0)
        if message.get("do") == "run":
            id = message["id"]
            live[id] = OperationContext(id, _heartbeat(send, id))
            threading.Thread(target=run, args=(message,), daemon=True).start()
        elif message.get("do") == "cancel":
            found = live.get(message["id"])
            if found is not None:
                found.cancelled.set()
        elif message.get("do") == "ping":
            send({"id": message.get("id"), "report": "pong", "value": None})


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]))
