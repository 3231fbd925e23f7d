"""Writer leases: one writer per session (DESIGN.md §10).

Owns who a writer is (Holder: host, pid, a random part), when a lease has expired (the
rule every backend applies), the messages naming a holder, and the heartbeat thread that
renews the leases this process holds. Backends store and take leases atomically (_sql.py,
memory.py); Session takes one when it starts writing. Start at Holder.expired().
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from dataclasses import dataclass
from functools import cache
from typing import Any

from openprogram.errors import SessionLocked

__all__ = ["HEARTBEAT_S", "LEASE_TTL_S", "Holder", "heartbeat", "new_owner", "this_process"]

log = logging.getLogger("openprogram.store")

LEASE_TTL_S = 30.0
"""A lease whose heartbeat is older than this (seconds, by the store's clock) has expired.
On the holder's own machine a lease expires as soon as its process has ended."""
HEARTBEAT_S = LEASE_TTL_S / 3
"""How often the heartbeat thread renews the leases this process holds."""


def new_owner() -> str:
    """A writer id unique to one Session: "host:pid:random"."""
    return f"{_host()}:{os.getpid()}:{secrets.token_hex(4)}"


@cache
def _host() -> str:
    return socket.gethostname() or "localhost"


@cache
def _machine() -> str:
    """What makes pids comparable: the boot and pid namespace on Linux, else the host."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as file:
            boot = file.read().strip()
        return f"{boot}/{os.readlink('/proc/self/ns/pid')}"
    except OSError:
        return f"host:{_host()}"


def _started(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot), "" when that cannot be
    known here, None when there is no such living process (ended, or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            fields = file.read().rpartition(")")[2].split()
    except FileNotFoundError:
        return None
    except OSError:
        fields = []
    if fields:
        return None if fields[0] in ("Z", "X") else fields[19]
    try:  # no /proc: all we can ask is whether the pid exists
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return ""


def this_process() -> str:
    """This process's identity as a lease stores it: machine, pid and start time."""
    pid = os.getpid()
    return f"{_machine()}|{pid}|{_started(pid) or ''}"


@dataclass(frozen=True, slots=True)
class Holder:
    """A session's lease as stored: who writes it, and the last sign of life (seconds)."""

    owner: str
    host: str
    pid: int
    process: str
    acquired_at: float
    heartbeat_at: float

    def expired(self, now: float, ttl_s: float = LEASE_TTL_S) -> str | None:
        """Why this lease may be taken over at `now`, or None while its holder lives.

        On this machine the holder's process is looked up: alive (the same pid with the
        same start time) holds the lease whatever its heartbeat; ended, it has expired.
        Elsewhere, or when the lease or this machine cannot say when the pid started (a
        live pid may then be another process), only the heartbeat tells: older than
        `ttl_s`, the lease has expired. A heartbeat in the future counts as one at `now`
        (the store moves it there: see SQLStore.acquire), so it cannot hold for longer.
        """
        machine, _, recorded = self.process.partition("|")
        recorded = recorded.partition("|")[2]
        if machine == _machine():
            started = _started(self.pid)
            if started is None:
                return f"its process {self.pid} has ended"
            if recorded and started and started != recorded:
                return f"its process {self.pid} has ended (the pid now belongs to another)"
            if recorded and started:
                return None
        silent = now - min(self.heartbeat_at, now)
        if silent > ttl_s:
            return f"its last heartbeat was {silent:.0f} s ago (more than {ttl_s:.0f} s)"
        return None

    def describe(self, now: float) -> str:
        """Who holds the lease, for messages."""
        if self.owner.rpartition(":")[0] == f"{_host()}:{os.getpid()}":
            who = "another Session in this process"
        else:
            who = f"process {self.pid} on host {self.host!r}"
        since = time.strftime("%H:%M:%S", time.localtime(self.acquired_at))
        return (
            f"{who} (writer {self.owner!r}, since {since}, "
            f"last heartbeat {max(0.0, now - self.heartbeat_at):.0f} s ago)"
        )

    def locked(self, session: str, where: str, now: float) -> SessionLocked:
        """The error for a writer that wants this lease while it is held."""
        here = self.owner.rpartition(":")[0] == f"{_host()}:{os.getpid()}"
        wait = (
            "close that Session first (its `with` block ends, or session.close())"
            if here
            else "wait for that process to finish (or stop it)"
        )
        return SessionLocked(
            f"session {session!r} in {where} is being written by {self.describe(now)}. "
            f"A session has one writer at a time: {wait}, or record into a fork of it: "
            f"Session.open(store, {session!r}).fork(at=NODE), or "
            f"`openprogram sessions fork {session} NODE`.",
            holder=self.owner,
        )


class _Heartbeat(threading.Thread):
    """Renews every lease this process holds each HEARTBEAT_S, on a daemon thread.

    A renewal that finds the lease taken over (its holder looked dead: a paused process
    on another machine, say) stops renewing it and logs an error; the store then refuses
    that writer's records, so the two never interleave.
    """

    def __init__(self) -> None:
        super().__init__(name="openprogram-lease-heartbeat", daemon=True)
        self._leases: dict[tuple[int, str], tuple[Any, str]] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()

    def keep(self, store: Any, session: str, owner: str) -> None:
        with self._lock:
            self._leases[(id(store), session)] = (store, owner)
            if self.ident is None:
                self.start()

    def drop(self, store: Any, session: str) -> None:
        with self._lock:
            self._leases.pop((id(store), session), None)

    def _forget(self, key: tuple[int, str], store: Any) -> bool:
        """Stop renewing a lease found lost; False when its session let it go since
        the beat began (it dropped the lease here before releasing it: not taken over)."""
        with self._lock:
            kept = self._leases.get(key)
            if kept is None or kept[0] is not store:
                return False
            del self._leases[key]
            return True

    def run(self) -> None:
        while True:
            self._wake.wait(HEARTBEAT_S)
            self._wake.clear()
            self.beat()

    def beat(self) -> None:
        """Renew every lease kept once (the thread does this each HEARTBEAT_S)."""
        with self._lock:
            leases = list(self._leases.items())
        for key, (store, owner) in leases:
            try:
                held = store.renew(key[1], owner)
            except Exception as exc:  # the store is unreachable: try again next beat
                log.warning(
                    "openprogram: could not renew the writer lease of session %s in "
                    "%s: %s", key[1], getattr(store, "url", store), exc,
                )  # fmt: skip
                continue
            if not held and self._forget(key, store):
                log.error(
                    "openprogram: the writer lease of session %s in %s was taken over "
                    "by another writer; this process's later records of it are refused",
                    key[1], getattr(store, "url", store),
                )  # fmt: skip


_heartbeat: _Heartbeat | None = None
_heartbeat_lock = threading.Lock()


def _forget_in_child() -> None:
    """In a fork child: the parent's leases are not this process's to renew."""
    global _heartbeat, _heartbeat_lock
    _heartbeat, _heartbeat_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def heartbeat() -> _Heartbeat:
    """The process's heartbeat thread (started when it first keeps a lease)."""
    global _heartbeat
    with _heartbeat_lock:
        if _heartbeat is None or (_heartbeat.ident is not None and not _heartbeat.is_alive()):
            _heartbeat = _Heartbeat()
        return _heartbeat
