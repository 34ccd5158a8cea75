"""An SQLite cache of judge verdicts, keyed by the judge's signature and the exact request.

Each finished call is committed on its own (autocommit, WAL journal), so a run killed at any moment keeps
every verdict it had received, and a resumed run repeats none of them. Several processes may share one
file: SQLite's locking serialises their writes (``busy_timeout`` waits instead of failing).

What is stored: the validated verdict (JSON), or the reason a reply failed validation after its repair
attempt, with the raw reply text; and the tokens the call spent. Transport failures (a server still
down after every retry) are not stored, so a later run tries those calls again.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Iterable

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
    """Verdicts in the SQLite file at ``path`` (created with its folder when missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=_BUSY_S)
        _switch_to_wal(self._db)
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)

    def get(self, key: str) -> CachedVerdict | None:
        with self._lock:
            row = self._db.execute("SELECT verdict, failure, raw, prompt_tokens, completion_tokens FROM verdicts "
                                   "WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        verdict, failure, raw, prompt_tokens, completion_tokens = row
        return CachedVerdict(None if verdict is None else json.loads(verdict), failure, raw, prompt_tokens,
                             completion_tokens)

    def put(self, key: str, judge: str, entry: CachedVerdict) -> None:
        """Store one outcome and commit it at once; a key already present is left as it is."""
        verdict = None if entry.verdict is None else json.dumps(entry.verdict, ensure_ascii=False, sort_keys=True)
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO verdicts (key, judge, verdict, failure, raw, prompt_tokens, "
                             "completion_tokens, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             (key, judge, verdict, entry.failure, entry.raw, entry.prompt_tokens,
                              entry.completion_tokens, time.time()))

    def present(self, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` are stored (for a dry run's estimate)."""
        wanted = list(dict.fromkeys(keys))
        found: set[str] = set()
        with self._lock:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start:start + 500]
                marks = ",".join("?" * len(chunk))
                found.update(k for (k,) in self._db.execute(f"SELECT key FROM verdicts WHERE key IN ({marks})",
                                                             chunk))
        return found

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
