"""A PostgreSQL server of Debian's package, started for the tests in a temporary folder on a free loopback port
(as the ``postgres`` user when the tests run as root: the server refuses root), with a fresh database per test.
Skipped, with the reason, where the package or psycopg is missing (``.ci/run`` installs the package). A test module
imports the fixtures it uses (``postgres_server_fixture`` gives ``postgres_server``; ``any_store_fixture`` gives
``any_store``, for the storage tests run on both backends)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from loopback import free_port

from ragmeter.serve.store import Store
from ragmeter.serve.stores import open_store


def _binary(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if found is None:
        pytest.skip(f"no PostgreSQL server here ({name}: apt-get install -y postgresql; .ci/run installs it)")
    return found


@pytest.fixture(scope="session", name="postgres_server")
def postgres_server_fixture() -> Iterator[str]:
    """The server's URL, without a database name. Its folder is made with ``tempfile`` (pytest's temporary
    folders are its user's alone, where the server's user could not reach it) and removed afterwards."""
    pytest.importorskip("psycopg", reason="psycopg is in the postgres and test extras")
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    folder = Path(tempfile.mkdtemp(prefix="ragmeter-postgres-"))
    data, sockets = folder / "data", folder / "sockets"
    sockets.mkdir()
    prefix: list[str] = []
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root with no postgres user to start the server as")
        for path in (folder, sockets):
            os.chown(path, user.pw_uid, user.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    subprocess.run(
        [*prefix, initdb, "-D", str(data), "-A", "trust", "-U", "ragmeter", "--no-sync"],
        check=True,
        capture_output=True,
    )
    options = f"-k {sockets} -p {port} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        [*prefix, pg_ctl, "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start"],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql://ragmeter@127.0.0.1:{port}"
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True, check=False)
        shutil.rmtree(folder, ignore_errors=True)


def fresh_database(server: str) -> str:
    """A new, empty database on ``server``: its URL."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as db:
        db.execute(f"CREATE DATABASE {name}")
    return f"{server}/{name}"


@pytest.fixture(params=["sqlite", "postgres"], name="any_store")
def any_store_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    """For the storage tests that run on both backends: opens the test's store (the same one each call), a SQLite
    file or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        location: str | Path = tmp_path / "store.sqlite"
    else:
        location = fresh_database(request.getfixturevalue("postgres_server"))
    return lambda: open_store(location)
