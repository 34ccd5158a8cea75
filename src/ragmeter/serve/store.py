"""Where ``ragmeter serve`` keeps what it receives and scores, behind one interface (:class:`Store`): an embedded
SQLite database (:class:`SqliteStore`, here), or a PostgreSQL one (:mod:`ragmeter.serve.postgres`) with the same
tables and queries.

What is stored:

- ``spans``: every span received, once (its trace and span id are its key, so an exporter's retry of the same
  request stores nothing new), as the OTLP JSON it came in (the span and its resource), decoded again by the file
  reader's rules (:func:`ragmeter.io.traces.otlp.request_spans`) when its trace is scored;
- ``traces``: each trace's state — ``open`` while spans arrive, ``due`` once complete (its root has ended, or it has
  been quiet for a while), ``scored`` once its scores are stored — when it last received a span, and until when a
  process has taken it to score;
- ``scores``: each scored trace's record (or why none could be made), its scores and why any is undefined, whether
  it was sampled for the judge, the signature of what scored it, and its conversation (``session.id``), whose
  earlier turns are a later turn's history (:meth:`Store.session_turns`);
- ``judge_spend``: the tokens each judge request spent, when, and whether it was answered, failed or refused by
  the budget (the hourly budget reads it, across restarts);
- ``checks``: each check of a window for a drop (:mod:`ragmeter.serve.drops`), and what came of its webhook;
- whether each scored trace's evaluation span has been forwarded downstream (:mod:`ragmeter.serve.forward`).

A request is acknowledged only once :meth:`Store.accept` has committed it (WAL, ``synchronous=FULL``: on disk
when the call returns), so a kill at any moment loses no acknowledged span. A trace's scores and its state change
to ``scored`` in one transaction, and only from ``due``: a trace is scored once, however often it is offered.

The schema is versioned (SQLite's ``user_version``); :data:`MIGRATIONS` lists the steps from an empty file, each
run once, in order, when a store opens a file at an older version; a file from a newer ragmeter is refused.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from ragmeter.core.errors import ConfigError, InputError, RagmeterError
from ragmeter.io.traces.otlp import SpanRow, request_spans

__all__ = ["MIGRATIONS", "Accepted", "ScoredTrace", "SqliteStore", "Store", "StoreUnavailable", "WindowFigure"]

#: SQLite's errors that say the database cannot be written now, not that a statement is wrong: a full disk, an I/O
#: error (``SQLITE_IOERR_*``), a database another connection holds.
_SQLITE_UNAVAILABLE = ("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_BUSY", "SQLITE_LOCKED")


class StoreUnavailable(RagmeterError):
    """The store cannot take a write now (its disk is full, a disk error, its database server gone): nothing of the
    request was stored, and it may succeed later, so the receiver asks the exporter to retry."""


#: The schema's steps, from version 1 up: version ``n`` is reached by running ``MIGRATIONS[n - 1]``.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE spans (
        trace_id TEXT NOT NULL, span_id TEXT NOT NULL, body TEXT NOT NULL, received REAL NOT NULL,
        PRIMARY KEY (trace_id, span_id)
    ) WITHOUT ROWID;
    CREATE TABLE traces (
        trace_id TEXT PRIMARY KEY, state TEXT NOT NULL CHECK (state IN ('open', 'due', 'scored')),
        root_ended INTEGER NOT NULL DEFAULT 0, last_received REAL NOT NULL, changed REAL NOT NULL
    );
    CREATE INDEX traces_by_state ON traces (state, last_received);
    CREATE TABLE scores (
        trace_id TEXT PRIMARY KEY REFERENCES traces (trace_id), record TEXT, problem TEXT, scores TEXT NOT NULL,
        undefined TEXT NOT NULL, judged INTEGER NOT NULL, signature TEXT NOT NULL, scored REAL NOT NULL
    );
    CREATE INDEX scores_by_time ON scores (scored);
    """,
    """
    CREATE TABLE judge_spend (at REAL NOT NULL, tokens INTEGER NOT NULL);
    CREATE INDEX judge_spend_by_time ON judge_spend (at);
    """,
    """
    ALTER TABLE judge_spend ADD COLUMN outcome TEXT NOT NULL DEFAULT 'answered';
    ALTER TABLE scores ADD COLUMN forwarded INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE traces ADD COLUMN claimed_until REAL NOT NULL DEFAULT 0;
    CREATE INDEX scores_to_forward ON scores (forwarded, scored);
    CREATE TABLE checks (at REAL NOT NULL, status TEXT NOT NULL, body TEXT NOT NULL, notified TEXT);
    CREATE INDEX checks_by_time ON checks (at);
    """,
    """
    ALTER TABLE scores ADD COLUMN session TEXT;
    UPDATE scores SET session = json_extract(record, '$.metadata.conversation_id') WHERE record IS NOT NULL;
    CREATE INDEX scores_by_session ON scores (session, scored);
    """,
)


@dataclass(frozen=True)
class Accepted:
    """What one export request added: spans new to the store, spans it already had (a retry), and the spans that
    could not be read (each with why: they are not stored)."""

    new_spans: int
    repeated_spans: int
    problems: tuple[InputError, ...]


@dataclass(frozen=True)
class ScoredTrace:
    """A trace's stored outcome: its record (the native format's dict) or why none was made, its scores (a metric's
    value, ``None`` where undefined), why each undefined one is, whether the judge was asked, and each metric's
    signature."""

    trace_id: str
    record: dict[str, Any] | None
    problem: str | None
    scores: dict[str, float | None]
    undefined: dict[str, str]
    judged: bool
    signatures: dict[str, str]
    scored: float


@dataclass(frozen=True)
class WindowFigure:
    """One metric's scores of one model over a window: their mean (``None`` when none is defined), how many are
    defined, how many undefined."""

    metric: str
    model: str | None
    mean: float | None
    defined: int
    undefined: int


class Store:
    """What ``ragmeter serve`` stores, behind one interface: :class:`SqliteStore` (a file, one process) and
    :class:`ragmeter.serve.postgres.PostgresStore` (a server, several processes). The queries are shared, written
    with ``?`` parameters; a backend gives :meth:`_read`, :meth:`_transaction` and its dialect's pieces. Use as a
    context manager, or call :meth:`close`."""

    #: Seconds a process holds the traces it takes to score (:meth:`due`) before another may take them.
    lease_s = 0.0
    #: What a backend adds to the query that takes due traces so that processes do not take the same ones.
    _SKIP_LOCKED = ""
    #: Per metric and model, the mean, defined and undefined count of the scores in a span of time.
    _WINDOW: str

    def _read(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _transaction(self) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def _unavailable(self, error: Exception) -> bool:
        """Whether ``error``, raised by the database, says it cannot be written now rather than that a statement is
        wrong."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def accept(self, request: Mapping[str, Any], *, source: str = "request", now: float | None = None) -> Accepted:
        """Store the spans of one decoded OTLP export request, durably, in one transaction; ``source`` names the
        request in the problems of spans that cannot be read."""
        received = time.time() if now is None else now
        rows: list[tuple[str, str, str, bool]] = []
        problems: list[InputError] = []
        for item, body in _spans_with_bodies(request, source):
            if isinstance(item, InputError):
                problems.append(item)
            else:
                rows.append((item.trace_id, item.span_id, body, item.parent_id is None and item.end_ns is not None))
        new = 0
        try:
            with self._transaction() as db:
                for trace_id, span_id, body, ended_root in rows:
                    new += db.execute(
                        "INSERT INTO spans VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                        (trace_id, span_id, body, received),
                    ).rowcount
                    db.execute(
                        "INSERT INTO traces (trace_id, state, root_ended, last_received, changed) "
                        "VALUES (?, 'open', ?, ?, ?) ON CONFLICT (trace_id) DO UPDATE SET root_ended = CASE WHEN "
                        "excluded.root_ended > traces.root_ended THEN excluded.root_ended ELSE traces.root_ended "
                        "END, last_received = excluded.last_received",
                        (trace_id, int(ended_root), received, received),
                    )
        except Exception as exc:
            if self._unavailable(exc):
                raise StoreUnavailable(f"the store cannot take the spans now ({exc})") from exc
            raise
        return Accepted(new, len(rows) - new, tuple(problems))

    def mark_due(self, *, quiet_s: float, now: float | None = None) -> int:
        """Mark complete the open traces whose root has ended, or that received nothing for ``quiet_s`` seconds;
        how many."""
        moment = time.time() if now is None else now
        with self._transaction() as db:
            return db.execute(
                "UPDATE traces SET state = 'due', changed = ? WHERE state = 'open' AND "
                "(root_ended = 1 OR last_received <= ?)",
                (moment, moment - quiet_s),
            ).rowcount

    def due(self, limit: int, *, now: float | None = None) -> list[str]:
        """Up to ``limit`` complete traces not yet scored, the longest waiting first, taken for this process for
        :attr:`lease_s` seconds (another process sharing the store skips them meanwhile; a process that dies lets
        them go when the lease ends)."""
        moment = time.time() if now is None else now
        with self._transaction() as db:
            rows = db.execute(
                "SELECT trace_id FROM traces WHERE state = 'due' AND claimed_until <= ? "
                "ORDER BY changed, trace_id LIMIT ?" + self._SKIP_LOCKED,
                (moment, limit),
            ).fetchall()
            if self.lease_s:
                for (trace_id,) in rows:
                    db.execute(
                        "UPDATE traces SET claimed_until = ? WHERE trace_id = ?", (moment + self.lease_s, trace_id)
                    )
        return [trace_id for (trace_id,) in rows]

    def spans(self, trace_id: str) -> list[SpanRow | InputError]:
        """A trace's spans, decoded again as the file reader decodes them."""
        bodies = self._read("SELECT body FROM spans WHERE trace_id = ? ORDER BY received, span_id", (trace_id,))
        decoded: list[SpanRow | InputError] = []
        for number, (body,) in enumerate(bodies, start=1):
            stored = json.loads(body)
            request = {"resourceSpans": [{"resource": stored["resource"], "scopeSpans": [{"spans": [stored["span"]]}]}]}
            decoded.extend(request_spans(request, Path(f"store:{trace_id}"), number))
        return decoded

    def save_scores(self, outcome: ScoredTrace) -> bool:
        """Store a due trace's outcome and mark it scored, in one transaction; ``False`` (nothing written) when
        the trace is not due: it was scored already, or is still open."""
        with self._transaction() as db:
            moved = db.execute(
                "UPDATE traces SET state = 'scored', changed = ? WHERE trace_id = ? AND state = 'due'",
                (outcome.scored, outcome.trace_id),
            ).rowcount
            if not moved:
                return False
            db.execute(
                "INSERT INTO scores (trace_id, record, problem, scores, undefined, judged, signature, scored, session) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    outcome.trace_id,
                    None if outcome.record is None else json.dumps(outcome.record),
                    outcome.problem,
                    json.dumps(outcome.scores),
                    json.dumps(outcome.undefined),
                    int(outcome.judged),
                    json.dumps(outcome.signatures),
                    outcome.scored,
                    (outcome.record or {}).get("metadata", {}).get("conversation_id"),
                ),
            )
        return True

    def session_turns(self, session: str, traces: int) -> list[tuple[str, str]]:
        """The question and answer of the last ``traces`` scored traces of a conversation (its ``session.id``),
        oldest first: the history its next turn gets, whichever process scored them and before any restart."""
        rows = self._read(
            "SELECT record FROM scores WHERE session = ? AND record IS NOT NULL ORDER BY scored DESC, trace_id DESC "
            "LIMIT ?",
            (session, traces),
        )
        return [(record["question"], record["answer"]) for record in (json.loads(row[0]) for row in reversed(rows))]

    def scored(self, since: float = 0.0, until: float = float("inf")) -> Iterator[ScoredTrace]:
        """The outcomes stored in ``[since, until)``, oldest first."""
        rows = self._read(
            "SELECT * FROM scores WHERE scored >= ? AND scored < ? ORDER BY scored, trace_id",
            (since, until if until != float("inf") else 1e308),
        )
        yield from _outcomes(rows)

    def unforwarded(self, limit: int) -> list[ScoredTrace]:
        """Up to ``limit`` scored traces with a record whose evaluation span has not been forwarded, oldest first."""
        rows = self._read(
            "SELECT * FROM scores WHERE forwarded = 0 AND record IS NOT NULL ORDER BY scored, trace_id LIMIT ?",
            (limit,),
        )
        return list(_outcomes(rows))

    def mark_forwarded(self, trace_ids: Sequence[str]) -> None:
        """Record that the evaluation spans of ``trace_ids`` were accepted downstream."""
        with self._transaction() as db:
            for trace_id in trace_ids:
                db.execute("UPDATE scores SET forwarded = 1 WHERE trace_id = ?", (trace_id,))

    def window(self, since: float, until: float | None = None) -> list[WindowFigure]:
        """Per metric and model (the record's ``metadata.model_id``; ``None`` when it has none), the scores stored in
        ``[since, until)``: their mean over the defined ones, how many are defined and how many undefined."""
        rows = self._read(self._WINDOW, (since, 1e308 if until is None else until))
        return [
            WindowFigure(metric, model, mean, defined, undefined) for metric, model, mean, defined, undefined in rows
        ]

    def records(self, since: float, until: float | None = None) -> Iterator[dict[str, Any]]:
        """The records (native format) of the traces scored in ``[since, until)``, oldest first, each with its
        trace id and scoring time in its metadata (``trace_id``, ``scored_at``)."""
        for outcome in self.scored(since, float("inf") if until is None else until):
            if outcome.record is not None:
                metadata = {
                    **outcome.record.get("metadata", {}),
                    "trace_id": outcome.trace_id,
                    "scored_at": outcome.scored,
                }
                yield {**outcome.record, "metadata": metadata}

    def add_spend(self, tokens: int, *, outcome: str = "answered", now: float | None = None) -> None:
        """Count a judge request that spent ``tokens`` (prompt and completion) at ``now``; ``outcome``:
        ``answered``, ``failed`` (counted at its most) or ``refused`` (by the budget, before it was sent: 0)."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO judge_spend VALUES (?, ?, ?)", (time.time() if now is None else now, tokens, outcome)
            )

    def spent_since(self, since: float) -> int:
        """The judge's tokens counted from ``since`` on."""
        return int(self._read("SELECT coalesce(sum(tokens), 0) FROM judge_spend WHERE at >= ?", (since,))[0][0])

    def judge_calls(self, since: float) -> dict[str, int]:
        """The judge's requests from ``since`` on, by outcome (answered, failed, refused)."""
        counts = dict.fromkeys(("answered", "failed", "refused"), 0)
        counts.update(self._read("SELECT outcome, count(*) FROM judge_spend WHERE at >= ? GROUP BY outcome", (since,)))
        return counts

    def save_check(self, check: Mapping[str, Any], *, notified: str | None = None) -> None:
        """Store a drop check (:meth:`ragmeter.serve.drops.WindowCheck.to_dict`) and what came of its webhook."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO checks VALUES (?, ?, ?, ?)", (check["at"], check["status"], json.dumps(check), notified)
            )

    def checks(self, since: float = 0.0) -> list[dict[str, Any]]:
        """The checks made from ``since`` on, oldest first, each with ``notified``."""
        rows = self._read("SELECT body, notified FROM checks WHERE at >= ? ORDER BY at", (since,))
        return [{**json.loads(body), "notified": notified} for body, notified in rows]

    def last_check(self) -> float | None:
        """When the last check was made; ``None`` before the first."""
        return self._read("SELECT max(at) FROM checks")[0][0]

    def lag(self, now: float | None = None) -> float:
        """Seconds the longest-waiting due trace has waited to be scored; 0 when none waits."""
        oldest = self._read("SELECT min(changed) FROM traces WHERE state = 'due'")[0][0]
        return 0.0 if oldest is None else max(0.0, (time.time() if now is None else now) - oldest)

    def backlog(self) -> dict[str, int]:
        """How many traces are in each state."""
        counts = dict.fromkeys(("open", "due", "scored"), 0)
        counts.update(self._read("SELECT state, count(*) FROM traces GROUP BY state"))
        return counts


class SqliteStore(Store):
    """The store in one SQLite file (created with its folder when missing). One process writes it (``serve``'s);
    its threads share one connection behind a lock. ``read_only``: a command that only reads it (``export``) opens
    an existing store of this ragmeter's schema, and never writes or migrates it."""

    _WINDOW = (
        "SELECT score.key, json_extract(scores.record, '$.metadata.model_id') AS model, avg(score.value), "
        "count(score.value), sum(score.value IS NULL) FROM scores, json_each(scores.scores) AS score "
        "WHERE scores.scored >= ? AND scores.scored < ? GROUP BY score.key, model ORDER BY score.key, model"
    )

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        _check_store_file(self.path)
        if read_only:
            if not self.path.is_file():
                raise ConfigError(f"no store at {self.path}: give the --store file 'ragmeter serve' writes")
            self._db = sqlite3.connect(
                f"{self.path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False, isolation_level=None
            )
            if self.schema_version != len(MIGRATIONS):
                found = self.schema_version
                self._db.close()
                raise ConfigError(
                    f"{self.path} holds a store of schema version {found}, not this ragmeter's "
                    f"{len(MIGRATIONS)}: run this ragmeter's 'ragmeter serve' on it once to migrate it, "
                    "or use the ragmeter that wrote it"
                )
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(
                f"cannot open the store {self.path}: {exc}; give --store a file in a folder you can write"
            ) from exc
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._migrate()

    def _migrate(self) -> None:
        version = self.schema_version
        if version > len(MIGRATIONS):
            raise ConfigError(
                f"{self.path} holds a store of schema version {version}, newer than this ragmeter's "
                f"{len(MIGRATIONS)}: upgrade ragmeter, or give another --store"
            )
        for number in range(version + 1, len(MIGRATIONS) + 1):
            with self._transaction() as db:
                db.executescript_in_transaction(MIGRATIONS[number - 1], number)

    def _read(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, parameters).fetchall()

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db, self._lock)

    def _unavailable(self, error: Exception) -> bool:
        name = getattr(error, "sqlite_errorname", "")
        return isinstance(error, sqlite3.OperationalError) and name.startswith(_SQLITE_UNAVAILABLE)

    @property
    def schema_version(self) -> int:
        return int(self._read("PRAGMA user_version")[0][0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _outcomes(rows: Iterable[Sequence[Any]]) -> Iterator[ScoredTrace]:
    """The ``scores`` table's rows as outcomes."""
    for trace_id, record, problem, scores, undefined, judged, signatures, when, *_ in rows:
        yield ScoredTrace(
            trace_id,
            None if record is None else json.loads(record),
            problem,
            json.loads(scores),
            json.loads(undefined),
            bool(judged),
            _signatures(signatures),
            when,
        )


def _signatures(stored: str) -> dict[str, str]:
    """A stored outcome's signatures: a JSON object; a store of schema 1 or 2 wrote ``name=signature`` parts joined
    by ``;`` (read as they were written)."""
    if stored.startswith("{"):
        return json.loads(stored)
    return dict(part.split("=", 1) for part in stored.split(";") if part)


#: The first bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"


def _check_store_file(path: Path) -> None:
    """Refuse a path that holds something other than a store: a folder, a special file, or a file that is not a
    SQLite database (an empty one included), which SQLite would otherwise take over and write."""
    if not path.exists():
        return
    if not path.is_file():
        raise ConfigError(f"{path} is not a regular file: give --store a file name (it is created if missing)")
    with path.open("rb") as handle:
        header = handle.read(len(SQLITE_HEADER))
    if header != SQLITE_HEADER:
        what = "an empty file" if not header else "not a SQLite database"
        raise ConfigError(
            f"{path} is not a ragmeter serve store ({what}): it is left as it is; give --store a new "
            "file name, or the store 'ragmeter serve' made"
        )


class _Transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on an error) on the store's connection, behind its lock."""

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock) -> None:
        self._db, self._lock = db, lock

    def __enter__(self) -> Self:
        self._lock.acquire()
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._lock.release()
            raise
        return self

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self._db.execute(sql, parameters)

    def executescript_in_transaction(self, script: str, version: int) -> None:
        """A migration's statements, one by one (``executescript`` would commit first), then its version."""
        for statement in filter(str.strip, script.split(";")):
            self._db.execute(statement)
        self._db.execute(f"PRAGMA user_version = {int(version)}")

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        try:
            if kind is None:
                try:
                    self._db.execute("COMMIT")
                except sqlite3.Error:
                    self._roll_back()  # a COMMIT that failed (a full disk) may leave the transaction open
                    raise
            else:
                self._roll_back()
        finally:
            self._lock.release()

    def _roll_back(self) -> None:
        """``ROLLBACK``, unless SQLite already rolled the transaction back itself (as it does on some errors)."""
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")


def _spans_with_bodies(request: Mapping[str, Any], source: str) -> Iterator[tuple[SpanRow | InputError, str]]:
    """Each span of ``request`` decoded (or why it cannot be), with the JSON it is stored as: the span and its
    resource."""
    resources = request.get("resourceSpans") if isinstance(request, Mapping) else None
    if not isinstance(resources, list):
        yield from ((item, "") for item in request_spans(request, Path(source), 1))
        return
    for resource_spans in resources:
        single = {"resourceSpans": [resource_spans]}
        bodies = _bodies(resource_spans)
        yield from zip(request_spans(single, Path(source), 1), bodies, strict=True)


def _bodies(resource_spans: Any) -> list[str]:
    """The stored JSON of each span of one ``resourceSpans`` entry, one for each item the reader yields for it (an
    entry that is not an object: one error, so one empty body)."""
    if not isinstance(resource_spans, Mapping):
        return [""]
    resource = resource_spans.get("resource") or {}
    scopes = resource_spans.get("scopeSpans", resource_spans.get("instrumentationLibrarySpans")) or []
    return [
        json.dumps({"resource": resource, "span": span}, separators=(",", ":"))
        for scope in (scopes if isinstance(scopes, list) else [])
        for span in ((scope or {}).get("spans") or [])
    ]
