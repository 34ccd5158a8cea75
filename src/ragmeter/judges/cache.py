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

__all__ = ["CachedVerdict", "JudgeCache"]

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
    """Verdicts in the SQLite file at ``path`` (created with its folder when missing). Safe to use from several
    threads: each connection is used by one thread at a time."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._writer = self._connect()
        _switch_to_wal(self._writer)
        self._writer.execute("PRAGMA synchronous=NORMAL")
        self._writer.execute(_SCHEMA)
        self._reader = self._connect()

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=_BUSY_S)

    def get(self, key: str) -> CachedVerdict | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: Iterable[str]) -> dict[str, CachedVerdict]:
        """The stored outcomes of those ``keys`` that are stored."""
        found: dict[str, CachedVerdict] = {}
        for key, verdict, failure, raw, prompt_tokens, completion_tokens in self._select(
                "key, verdict, failure, raw, prompt_tokens, completion_tokens", keys):
            found[key] = CachedVerdict(None if verdict is None else json.loads(verdict), failure, raw,
                                       prompt_tokens, completion_tokens)
        return found

    def present(self, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` are stored (for a dry run's estimate)."""
        return {key for (key,) in self._select("key", keys)}

    def _select(self, columns: str, keys: Iterable[str]) -> list[tuple[Any, ...]]:
        """Rows of ``keys``, 500 keys to a query (SQLite bounds the number of parameters)."""
        wanted = list(dict.fromkeys(keys))
        rows: list[tuple[Any, ...]] = []
        with self._read_lock:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start:start + 500]
                marks = ",".join("?" * len(chunk))
                rows += self._reader.execute(f"SELECT {columns} FROM verdicts WHERE key IN ({marks})", chunk)
        return rows

    def put(self, key: str, judge: str, entry: CachedVerdict) -> None:
        """Store one outcome and commit it at once; a key already present is left as it is."""
        verdict = None if entry.verdict is None else json.dumps(entry.verdict, ensure_ascii=False, sort_keys=True)
        with self._write_lock:
            self._writer.execute("INSERT OR IGNORE INTO verdicts (key, judge, verdict, failure, raw, "
                                 "prompt_tokens, completion_tokens, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                 (key, judge, verdict, entry.failure, entry.raw, entry.prompt_tokens,
                                  entry.completion_tokens, time.time()))

    def __len__(self) -> int:
        with self._read_lock:
            return int(self._reader.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def close(self) -> None:
        with self._read_lock:
            self._reader.close()
        with self._write_lock:
            self._writer.close()
