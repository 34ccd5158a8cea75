"""A PostgreSQL server of Debian's package, started for the tests in a temporary folder on a free loopback port
(as the ``postgres`` user when the tests run as root: the server refuses root), with a fresh database per test.
Skipped, with the reason, where the package or psycopg is missing (``.ci/run`` installs the package). A test module
imports the fixtures it uses (``postgres_server_fixture`` gives ``postgres_server``, and needs
``postgres_instance_fixture``, which gives ``postgres_instance``, a server a test may restart; ``any_store_fixture``
gives ``any_store``, for the storage tests run on both backends)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
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


@dataclass(frozen=True)
class PostgresServer:
    """A running server: its URL (without a database name), and how to restart it on the same port."""

    url: str
    restart: Callable[[], None]


@pytest.fixture(scope="session", name="postgres_instance")
def postgres_instance_fixture() -> Iterator[PostgresServer]:
    """The tests' server. Its folder is made with ``tempfile`` (pytest's temporary folders are its user's alone,
    where the server's user could not reach it) and removed afterwards."""
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
    control = [*prefix, pg_ctl, "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w"]
    subprocess.run([*control, "start"], check=True, capture_output=True)
    try:
        yield PostgresServer(
            f"postgresql://ragmeter@127.0.0.1:{port}",
            lambda: subprocess.run([*control, "-m", "fast", "restart"], check=True, capture_output=True),
        )
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True, check=False)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session", name="postgres_server")
def postgres_server_fixture(postgres_instance: PostgresServer) -> str:
    """The tests' server's URL, without a database name."""
    return postgres_instance.url


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
