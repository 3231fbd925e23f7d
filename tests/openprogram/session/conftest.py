"""The durable stores (SQLite, PostgreSQL) the session tests with child processes run
against: tests/support/stores.py's `durable_store`."""

from tests.support.stores import durable_store  # noqa: F401 - a fixture
