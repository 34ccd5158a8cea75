"""The serve tests' stores: the shared storage tests run on SQLite and on PostgreSQL (``any_store``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from postgres_server import postgres_server, store_location  # noqa: F401 -- the session fixture, for any_store

from ragmeter.serve.store import Store, open_store


@pytest.fixture(params=["sqlite", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    """Opens the test's store (the same one each call): a SQLite file, or a fresh PostgreSQL database."""
    server = request.getfixturevalue("postgres_server") if request.param == "postgres" else None
    location = store_location(request.param, server, tmp_path)
    return lambda: open_store(location)
