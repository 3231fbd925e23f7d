"""Session stores (DESIGN.md §6): the Store protocol, its backends and open_store().

memory (in this process), SQLite (the embedded default) and PostgreSQL (shared). The
stored format and its versions are in format.py and docs/sessions.md; one writer per
session in lease.py; the damage report of `openprogram sessions check` in check.py.
"""

from openprogram.store.base import Store
from openprogram.store.check import StoreReport, check_store
from openprogram.store.format import FORMAT_VERSION, NodeRow, SessionInfo
from openprogram.store.memory import MemoryStore
from openprogram.store.open import open_store
from openprogram.store.postgres import PostgresStore
from openprogram.store.sqlite import SQLiteStore

__all__ = [
    "FORMAT_VERSION",
    "MemoryStore",
    "NodeRow",
    "PostgresStore",
    "SQLiteStore",
    "SessionInfo",
    "Store",
    "StoreReport",
    "check_store",
    "open_store",
]
