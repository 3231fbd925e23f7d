"""The SQL both SQL stores run: `Statements`, written once for either placeholder style.

Owns the text of every shared query (sessions, node rows, images, writer leases) and
how it is spelled for sqlite3 ("?") or psycopg ("%s", with casts). Running them is
_sql.py's SQLStore. Start at statements().
"""

from __future__ import annotations

from typing import NamedTuple

from openprogram.store.format import ROW_COLUMNS

__all__ = ["Statements", "statements"]


class Statements(NamedTuple):
    """The statements both backends run, for one placeholder style."""

    insert_version: str
    update_version: str
    insert_session: str
    session_key: str
    session: str
    sessions: str
    upsert: str
    insert_blob: str
    rows: str
    row: str
    answer: str
    node_id: str
    blob: str
    lease: str
    take_lease: str
    renew: str
    rewind: str
    release: str


_LEASE_COLUMNS = "owner, host, pid, process, acquired_at, heartbeat_at"


def statements(placeholder: str, now: str, casts: tuple[str, ...] = ()) -> Statements:
    """The shared statements with `placeholder` ("?" for sqlite3, "%s" for psycopg), `now`
    the database's clock in seconds since the epoch, and `casts` the SQL types of the
    node columns (session first) where the driver sends parameters untyped."""
    p = placeholder
    values = ", ".join(f"{p}::{cast}" for cast in casts) if casts else ", ".join([p] * 13)
    sessions = (
        "SELECT s.id, s.created_at, s.info, "
        "(SELECT count(*) FROM openprogram_nodes n WHERE n.session = s.key) "
        "FROM openprogram_sessions s"
    )
    return Statements(
        insert_version=f"INSERT INTO openprogram_meta VALUES ('format_version', {p})",
        update_version=f"UPDATE openprogram_meta SET value = {p} WHERE key = 'format_version'",
        insert_session=(
            f"INSERT INTO openprogram_sessions (id, created_at, info) VALUES ({p}, {p}, {p})"
        ),
        session_key=f"SELECT key FROM openprogram_sessions WHERE id = {p}",
        session=f"{sessions} WHERE s.id = {p}",
        sessions=f"{sessions} ORDER BY s.created_at",
        upsert=(  # fenced: only the holder of the session's writer lease inserts
            f"INSERT INTO openprogram_nodes (session, {ROW_COLUMNS}) SELECT {values} "
            "WHERE EXISTS (SELECT 1 FROM openprogram_leases "
            f"WHERE session = {p} AND owner = {p}) "
            "ON CONFLICT (session, seq) DO UPDATE SET status = excluded.status, "
            "ended_at = excluded.ended_at, end_seq = excluded.end_seq, "
            "output = excluded.output, data = excluded.data, "
            "input = coalesce(openprogram_nodes.input, excluded.input) "
            "WHERE openprogram_nodes.id = excluded.id"
        ),
        insert_blob=(
            f"INSERT INTO openprogram_blobs (sha256, data) VALUES ({p}, {p}) ON CONFLICT DO NOTHING"
        ),
        rows=f"SELECT {ROW_COLUMNS} FROM openprogram_nodes WHERE session = {p} ORDER BY seq",
        row=f"SELECT {ROW_COLUMNS} FROM openprogram_nodes WHERE session = {p} AND seq = {p}",
        answer=(  # a compare-and-set: only a question still waiting takes an answer
            f"UPDATE openprogram_nodes SET status = {p}, ended_at = {p}, end_seq = {p}, "
            f"output = {p}, data = {p} WHERE session = {p} AND seq = {p} AND id = {p} "
            "AND status = 'waiting' AND EXISTS (SELECT 1 FROM openprogram_leases "
            f"WHERE session = {p} AND owner = {p})"
        ),
        node_id=f"SELECT id FROM openprogram_nodes WHERE session = {p} AND seq = {p}",
        blob=f"SELECT data FROM openprogram_blobs WHERE sha256 = {p}",
        lease=f"SELECT {_LEASE_COLUMNS} FROM openprogram_leases WHERE session = {p}",
        take_lease=(
            f"INSERT INTO openprogram_leases (session, {_LEASE_COLUMNS}) "
            f"VALUES ({p}, {p}, {p}, {p}, {p}, {now}, {now}) ON CONFLICT (session) DO UPDATE "
            "SET owner = excluded.owner, host = excluded.host, pid = excluded.pid, "
            "process = excluded.process, acquired_at = excluded.acquired_at, "
            "heartbeat_at = excluded.heartbeat_at"
        ),
        renew=(
            f"UPDATE openprogram_leases SET heartbeat_at = {now} "
            f"WHERE session = {p} AND owner = {p}"
        ),
        rewind=(  # a heartbeat in the future (a clock stepped back, a forged row)
            f"UPDATE openprogram_leases SET heartbeat_at = {p} "
            f"WHERE session = {p} AND owner = {p} AND heartbeat_at > {p}"
        ),
        release=f"DELETE FROM openprogram_leases WHERE session = {p} AND owner = {p}",
    )
