"""``ragmeter serve --store postgresql://…``: the store in a PostgreSQL database, which several ``serve`` processes
can share (psycopg 3, the ``postgres`` extra).

The tables, their columns and every query are :class:`~ragmeter.serve.store.Store`'s, as in the SQLite store; what
differs is the dialect: ``%s`` parameters, JSON read with ``jsonb`` functions, and the traces to score taken with
``FOR UPDATE SKIP LOCKED`` and held for :attr:`PostgresStore.lease_s` seconds, so that two processes never score the
same trace at once (a trace is stored as scored once in any case: only a ``due`` trace moves to ``scored``). A write
is acknowledged once its transaction commits (PostgreSQL's ``synchronous_commit``, on by default, makes that
durable). The schema is versioned in the table ``ragmeter_schema``; :data:`MIGRATIONS` are run in order, under an
advisory lock so that processes starting together migrate once.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from ragmeter.core.errors import ConfigError, MissingDependencyError
from ragmeter.serve.store import Store

__all__ = ["LEASE_S", "MIGRATIONS", "PostgresStore"]

#: Seconds a process holds the traces it took to score.
LEASE_S = 300.0
#: The PostgreSQL schema's steps, from version 1 up (the same tables and columns as the SQLite store's version 3).
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE spans (
        trace_id TEXT NOT NULL, span_id TEXT NOT NULL, body TEXT NOT NULL, received DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (trace_id, span_id)
    );
    CREATE TABLE traces (
        trace_id TEXT PRIMARY KEY, state TEXT NOT NULL CHECK (state IN ('open', 'due', 'scored')),
        root_ended INTEGER NOT NULL DEFAULT 0, last_received DOUBLE PRECISION NOT NULL,
        changed DOUBLE PRECISION NOT NULL, claimed_until DOUBLE PRECISION NOT NULL DEFAULT 0
    );
    CREATE INDEX traces_by_state ON traces (state, last_received);
    CREATE TABLE scores (
        trace_id TEXT PRIMARY KEY REFERENCES traces (trace_id), record TEXT, problem TEXT, scores TEXT NOT NULL,
        undefined TEXT NOT NULL, judged INTEGER NOT NULL, signature TEXT NOT NULL, scored DOUBLE PRECISION NOT NULL,
        forwarded INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX scores_by_time ON scores (scored);
    CREATE INDEX scores_to_forward ON scores (forwarded, scored);
    CREATE TABLE judge_spend (at DOUBLE PRECISION NOT NULL, tokens INTEGER NOT NULL,
                              outcome TEXT NOT NULL DEFAULT 'answered');
    CREATE INDEX judge_spend_by_time ON judge_spend (at);
    CREATE TABLE checks (at DOUBLE PRECISION NOT NULL, status TEXT NOT NULL, body TEXT NOT NULL, notified TEXT);
    CREATE INDEX checks_by_time ON checks (at);
    """,
    """
    ALTER TABLE scores ADD COLUMN session TEXT;
    UPDATE scores SET session = record::jsonb -> 'metadata' ->> 'conversation_id' WHERE record IS NOT NULL;
    CREATE INDEX scores_by_session ON scores (session, scored);
    """,
)
#: The advisory lock key under which the schema is migrated (any fixed number).
_MIGRATION_LOCK = 0x7261676D


def _sql(text: str) -> str:
    """The shared queries' ``?`` parameters as psycopg's ``%s`` (no query holds a literal ``?`` or ``%``)."""
    return text.replace("?", "%s")


class PostgresStore(Store):
    """The store in the PostgreSQL database at ``url`` (its tables created when missing). The threads of one process
    share one connection behind a lock; several processes may share the database. ``read_only``: an existing store of
    this ragmeter's schema, in read-only transactions."""

    lease_s = LEASE_S
    _SKIP_LOCKED = " FOR UPDATE SKIP LOCKED"
    _WINDOW = (
        "SELECT score.key, scores.record::jsonb -> 'metadata' ->> 'model_id' AS model, "
        "avg(CASE WHEN jsonb_typeof(score.value) = 'number' THEN (score.value #>> '{}')::double precision END), "
        "count(CASE WHEN jsonb_typeof(score.value) = 'number' THEN 1 END), "
        "count(CASE WHEN jsonb_typeof(score.value) = 'null' THEN 1 END) "
        "FROM scores, jsonb_each(scores.scores::jsonb) AS score "
        "WHERE scores.scored >= ? AND scores.scored < ? GROUP BY score.key, model ORDER BY score.key, model"
    )

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        try:
            import psycopg
        except ImportError as exc:
            raise MissingDependencyError("psycopg", "postgres", "a PostgreSQL store (--store postgresql://…)") from exc
        self.url = url
        self._lock = threading.Lock()
        self._options = "-c default_transaction_read_only=on" if read_only else ""
        try:
            self._db = psycopg.connect(url, autocommit=True, options=self._options)
        except psycopg.Error as exc:
            raise ConfigError(f"cannot connect to the store {_shown(url)}: {str(exc).strip()}") from exc
        if read_only:
            if self.schema_version != len(MIGRATIONS):
                found = self.schema_version
                self._db.close()
                raise ConfigError(
                    f"{_shown(url)} holds a store of schema version {found}, not this ragmeter's "
                    f"{len(MIGRATIONS)}: run this ragmeter's 'ragmeter serve' on it once"
                )
            return
        self._migrate()

    def _migrate(self) -> None:
        with self._lock, self._db.transaction():
            self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            self._db.execute("CREATE TABLE IF NOT EXISTS ragmeter_schema (version INTEGER NOT NULL)")
            row = self._db.execute("SELECT max(version) FROM ragmeter_schema").fetchone()
            version = (row[0] if row else None) or 0
            if version > len(MIGRATIONS):
                raise ConfigError(
                    f"{_shown(self.url)} holds a store of schema version {version}, newer than this "
                    f"ragmeter's {len(MIGRATIONS)}: upgrade ragmeter, or give another --store"
                )
            for number in range(version + 1, len(MIGRATIONS) + 1):
                for statement in filter(str.strip, MIGRATIONS[number - 1].split(";")):
                    self._db.execute(statement)
                self._db.execute("DELETE FROM ragmeter_schema")
                self._db.execute("INSERT INTO ragmeter_schema VALUES (%s)", (number,))

    @property
    def schema_version(self) -> int:
        exists = self._read("SELECT to_regclass('ragmeter_schema') IS NOT NULL")[0][0]
        return int(self._read("SELECT coalesce(max(version), 0) FROM ragmeter_schema")[0][0]) if exists else 0

    def _read(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._live().execute(_sql(sql), parameters).fetchall()

    def _unavailable(self, error: Exception) -> bool:
        import psycopg

        return isinstance(error, psycopg.OperationalError)  # its server gone, its disk full (DiskFull), shut down

    def _live(self) -> Any:
        """The connection, made again when the server dropped it (a restart, a failover), so the store serves again
        once the server is back; called behind the lock. Connecting may fail: the server is still away."""
        if self._db.broken:
            import psycopg

            self._db = psycopg.connect(self.url, autocommit=True, options=self._options)
        return self._db

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[_Transaction]:
        with self._lock:
            db = self._live()
            with db.transaction():
                yield _Transaction(db)

    def close(self) -> None:
        with self._lock:
            self._db.close()


class _Transaction:
    """The shared queries run on the connection inside its open transaction."""

    def __init__(self, db: Any) -> None:
        self._db = db

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Any:
        return self._db.execute(_sql(sql), parameters)


def _shown(url: str) -> str:
    """``url`` without its password."""
    scheme, _, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    return f"{scheme}://{credentials.split(':')[0]}{'@' if at else ''}{host}" if at else url
