"""Which store a ``--store`` location names: a PostgreSQL database for a ``postgresql://`` (or ``postgres://``) URL
(:mod:`ragmeter.serve.postgres`), else a SQLite file (:mod:`ragmeter.serve.store`)."""

from __future__ import annotations

from pathlib import Path

from ragmeter.serve.postgres import PostgresStore
from ragmeter.serve.store import SqliteStore, Store

__all__ = ["open_store"]


def open_store(location: str | Path, *, read_only: bool = False) -> Store:
    """The store at ``location``: a PostgreSQL database for a ``postgresql://`` (or ``postgres://``) URL, else a
    SQLite file."""
    if str(location).startswith(("postgresql://", "postgres://")):
        return PostgresStore(str(location), read_only=read_only)
    return SqliteStore(location, read_only=read_only)
