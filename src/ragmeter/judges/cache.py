"""An SQLite cache of judge verdicts, keyed by the judge's signature and the exact request.

Each finished call is committed on its own (autocommit, WAL journal), so a run killed at any moment keeps
every verdict it had received, and a resumed run repeats none of them. Several processes may share one
file: SQLite's locking serialises their writes (``busy_timeout`` waits instead of failing). Reads and writes
go through two connections: in WAL mode a reader never waits for a writer, so lookups go on while a write
waits for another process's lock.

What is stored: the validated verdict (JSON), or the reason a reply failed validation after its repair
attempt, with the raw reply text; and the tokens the call spent. Transport failures (a server still
down after every retry) are not stored, so a later run tries those calls again.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.core.errors import ConfigError

__all__ = ["CachedVerdict", "JudgeCache", "is_verdict_cache"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY,
    judge TEXT NOT NULL,
    verdict TEXT,
    failure TEXT,
    raw TEXT,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created REAL NOT NULL
)
"""


_BUSY_S = 30.0
_SQLITE_HEADER = b"SQLite format 3\x00"


def is_verdict_cache(path: str | Path) -> bool:
    """``path`` is a file a verdict cache may keep using: empty, or an SQLite database (its table is made if
    missing), never another kind of file that a mistyped ``--judge-cache`` names."""
    with open(path, "rb") as handle:
        head = handle.read(len(_SQLITE_HEADER))
    return head in (b"", _SQLITE_HEADER)


def _switch_to_wal(db: sqlite3.Connection) -> None:
    """Put the file in WAL mode. SQLite answers "database is locked" at once, without waiting out the busy
    timeout, when another connection opens the same new file at that moment; so try again until it is done."""
    deadline = time.monotonic() + _BUSY_S
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


@dataclass(frozen=True)
class CachedVerdict:
    """A stored outcome: ``verdict`` when the reply validated, else ``failure`` and ``raw``."""

    verdict: Any | None
    failure: str | None
    raw: str | None
    prompt_tokens: int
    completion_tokens: int


class JudgeCache:
    """Verdicts in the SQLite file at ``path``, created with its folder at the first verdict stored (a run that
    stores none leaves nothing behind). Safe to use from several threads: each connection is used by one
    thread at a time. ``read_only``: the stored verdicts are read and nothing is written, the file and its
    journal files included (a dry run's plan, a command that may still refuse)."""

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._writer: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._closed = False
        if self.path.exists():
            if read_only:
                self._reader = self._read_only_connection()
            else:
                self._open()

    def _read_only_connection(self) -> sqlite3.Connection | None:
        """A connection that reads the file and its journal as they are and writes nothing (no table made, no
        checkpoint when it closes, so the ``-wal`` and ``-shm`` files stay); ``None`` when the file holds no
        verdicts yet (empty, or without the table)."""
        try:
            reader = sqlite3.connect(
                f"{self.path.resolve().as_uri()}?mode=ro",
                uri=True,
                isolation_level=None,
                check_same_thread=False,
                timeout=_BUSY_S,
            )
        except sqlite3.OperationalError as exc:
            raise ConfigError(f"the judge cache {self.path} cannot be read ({exc})") from None
        try:
            tables = reader.execute("SELECT name FROM sqlite_master WHERE name = 'verdicts'").fetchall()
        except sqlite3.DatabaseError as exc:
            reader.close()
            raise ConfigError(
                f"the judge cache {self.path} is not a verdict cache ragmeter can use ({exc}): give "
                "--judge-cache another file, or --no-judge-cache"
            ) from None
        if not tables:
            reader.close()
            return None
        return reader

    def _open(self) -> sqlite3.Connection:
        """The writing connection, both connections opened first if need be (creating the file, its folder and
        table when missing); called under the write lock or before any thread uses the cache."""
        if self._writer is not None:
            return self._writer
        if self.read_only:
            raise RuntimeError(f"the judge cache {self.path} was opened to read only")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        writer = self._connect()
        try:
            _switch_to_wal(writer)
            writer.execute("PRAGMA synchronous=NORMAL")
            writer.execute(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            writer.close()
            raise ConfigError(
                f"the judge cache {self.path} is not a verdict cache ragmeter can use ({exc}): give "
                "--judge-cache another file, or --no-judge-cache"
            ) from None
        self._reader = self._connect()
        self._writer = writer
        return writer

    def _nothing_stored(self) -> bool:
        """No file opened yet, so nothing to read; a closed cache raises, as SQLite does for a closed file."""
        if self._closed:
            raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
        return self._reader is None

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=_BUSY_S)

    def get(self, key: str) -> CachedVerdict | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: Iterable[str]) -> dict[str, CachedVerdict]:
        """The stored outcomes of those ``keys`` that are stored."""
        found: dict[str, CachedVerdict] = {}
        for key, verdict, failure, raw, prompt_tokens, completion_tokens in self._select(
            "key, verdict, failure, raw, prompt_tokens, completion_tokens", keys
        ):
            found[key] = CachedVerdict(
                None if verdict is None else json.loads(verdict), failure, raw, prompt_tokens, completion_tokens
            )
        return found

    def present(self, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` are stored (for a dry run's estimate)."""
        return {key for (key,) in self._select("key", keys)}

    def _select(self, columns: str, keys: Iterable[str]) -> list[tuple[Any, ...]]:
        """Rows of ``keys``, 500 keys to a query (SQLite bounds the number of parameters)."""
        wanted = list(dict.fromkeys(keys))
        rows: list[tuple[Any, ...]] = []
        with self._read_lock:
            if self._nothing_stored():
                return rows
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows += self._reader.execute(f"SELECT {columns} FROM verdicts WHERE key IN ({marks})", chunk)
        return rows

    def put(self, key: str, judge: str, entry: CachedVerdict) -> None:
        """Store one outcome and commit it at once; a key already present is left as it is."""
        verdict = None if entry.verdict is None else json.dumps(entry.verdict, ensure_ascii=False, sort_keys=True)
        with self._write_lock:
            self._nothing_stored()  # a closed cache raises
            self._open().execute(
                "INSERT OR IGNORE INTO verdicts (key, judge, verdict, failure, raw, "
                "prompt_tokens, completion_tokens, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    judge,
                    verdict,
                    entry.failure,
                    entry.raw,
                    entry.prompt_tokens,
                    entry.completion_tokens,
                    time.time(),
                ),
            )

    def __len__(self) -> int:
        with self._read_lock:
            if self._nothing_stored():
                return 0
            return int(self._reader.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def close(self) -> None:
        """Close the file; using the cache afterwards raises :class:`sqlite3.ProgrammingError`."""
        with self._write_lock, self._read_lock:
            self._closed = True
            for connection in (self._reader, self._writer):
                if connection is not None:
                    connection.close()
