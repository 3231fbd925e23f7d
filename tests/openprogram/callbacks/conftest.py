"""The fixtures of the callbacks tests: `durable_store` (SQLite and PostgreSQL, for the
shared budgets' tests with child processes) from tests/support/stores.py."""

from tests.support.stores import durable_store  # noqa: F401 - a fixture
