"""The PostgreSQL store: what the SQLite store computes, it computes on the same data; processes sharing it never
take the same trace to score; its schema is versioned; a server that restarts makes a request unavailable (a 503 to
the exporter), then the store connects again; ``serve`` and ``export`` take its URL."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from pathlib import Path

import pytest
from loopback import free_port
from postgres_server import (  # noqa: F401 -- fixtures, used by name
    PostgresServer,
    fresh_database,
    postgres_instance_fixture,
    postgres_server_fixture,
)

from ragmeter.cli import main
from ragmeter.core.errors import ConfigError
from ragmeter.serve.postgres import LEASE_S, MIGRATIONS, PostgresStore
from ragmeter.serve.store import ScoredTrace, SqliteStore, Store, StoreUnavailable


def _fill(store: Store) -> None:
    """Eight traces due at 100 … 107; six scored, two models, a score undefined; judge spend; a check."""
    for n in range(8):
        span = {
            "traceId": f"{n + 1:032x}",
            "spanId": f"{n + 1:016x}",
            "name": "rag",
            "startTimeUnixNano": "1",
            "endTimeUnixNano": "2",
        }
        store.accept({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}, now=99.0 + n)
        store.mark_due(quiet_s=1.0, now=100.0 + n)
    for n in range(6):
        trace = f"{n + 1:032x}"
        record = {"id": trace, "question": "q", "answer": "a", "metadata": {"model_id": f"m{n % 2}"}}
        scores = {"token_f1": 0.1 * n, "overlap": None if n == 3 else 0.5 + 0.05 * n}
        store.save_scores(
            ScoredTrace(
                trace,
                record,
                None,
                scores,
                {"overlap": "no chunks"} if n == 3 else {},
                n == 0,
                {"token_f1": "token_f1|v:1"},
                200.0 + n,
            )
        )
    store.add_spend(120, now=150.0)
    store.add_spend(0, outcome="refused", now=151.0)
    store.save_check({"at": 300.0, "status": "passed", "verdicts": []}, notified=None)


def test_it_computes_what_the_sqlite_store_computes(postgres_server: str, tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "s.sqlite") as lite, PostgresStore(fresh_database(postgres_server)) as pg:
        for store in (lite, pg):
            _fill(store)
        for name, call in (
            ("window", lambda s: s.window(0.0)),
            ("window since", lambda s: s.window(203.0)),
            ("scored", lambda s: list(s.scored(201.0, 204.0))),
            ("backlog", Store.backlog),
            ("records", lambda s: list(s.records(0.0))),
            ("spent", lambda s: s.spent_since(0.0)),
            ("calls", lambda s: s.judge_calls(0.0)),
            ("checks", Store.checks),
            ("last check", Store.last_check),
            ("lag", lambda s: s.lag(now=500.0)),
            ("unforwarded", lambda s: s.unforwarded(10)),
            ("spans", lambda s: s.spans(f"{1:032x}")),
        ):
            assert call(pg) == call(lite), name
        first = pg.window(0.0)[0]  # overlap of m0: n = 0, 2, 4
        assert (first.metric, first.model, first.defined, first.undefined) == ("overlap", "m0", 3, 0)
        assert first.mean == pytest.approx((0.5 + 0.6 + 0.7) / 3)


def test_processes_sharing_it_never_take_the_same_trace(postgres_server: str) -> None:
    url = fresh_database(postgres_server)
    with PostgresStore(url) as first, PostgresStore(url) as second:
        _fill(first)  # traces 7 and 8 are due, not scored
        taken = first.due(1, now=1_000.0)
        assert len(taken) == 1 and second.due(5, now=1_000.0) == [
            t for t in (f"{7:032x}", f"{8:032x}") if t not in taken
        ]
        assert second.due(5, now=1_000.0 + LEASE_S - 1) == []  # both held
        assert second.due(5, now=1_000.0 + LEASE_S + 1) == [f"{7:032x}", f"{8:032x}"]  # both leases ran out
        assert first.schema_version == second.schema_version == len(MIGRATIONS)


def _one_span(n: int) -> dict:
    span = {"traceId": f"{n:032x}", "spanId": f"{n:016x}", "name": "rag", "startTimeUnixNano": "1"}
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}


def test_a_restarted_server_is_unavailable_for_a_request_then_served_again(postgres_instance: PostgresServer) -> None:
    with PostgresStore(fresh_database(postgres_instance.url)) as store:
        assert store.accept(_one_span(1)).new_spans == 1
        postgres_instance.restart()  # the store's connection is dropped
        with pytest.raises(StoreUnavailable, match="cannot take the spans now"):
            store.accept(_one_span(2))  # nothing stored: the receiver answers 503, the exporter sends it again
        assert store.accept(_one_span(2)).new_spans == 1  # a new connection
        assert store.backlog()["open"] == 2


def test_a_database_of_a_newer_schema_is_refused_and_a_bad_url_named(postgres_server: str) -> None:
    url = fresh_database(postgres_server)
    with PostgresStore(url) as store:
        store._db.execute("UPDATE ragmeter_schema SET version = %s", (len(MIGRATIONS) + 1,))
    with pytest.raises(ConfigError, match="newer than this ragmeter"):
        PostgresStore(url)
    with pytest.raises(ConfigError, match=re.escape("cannot connect to the store postgresql://nobody@127.0.0.1:1/x")):
        PostgresStore("postgresql://nobody:secret@127.0.0.1:1/x")


def test_serve_and_export_take_its_url(postgres_server: str, tmp_path: Path) -> None:
    import subprocess
    import sys

    url, port = fresh_database(postgres_server), free_port()
    attributes = [
        {"key": "openinference.span.kind", "value": {"stringValue": "CHAIN"}},
        {"key": "input.value", "value": {"stringValue": "When does the library open?"}},
        {"key": "output.value", "value": {"stringValue": "At nine."}},
    ]
    span = {
        "traceId": f"{1:032x}",
        "spanId": f"{1:016x}",
        "name": "rag",
        "startTimeUnixNano": "1000",
        "endTimeUnixNano": "2000",
        "attributes": attributes,
    }
    body = json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}).encode()
    entry = "import sys; from ragmeter._entry import main; sys.exit(main())"
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            entry,
            "serve",
            "--store",
            url,
            "--port",
            str(port),
            "--metrics",
            "lexical",
            "--quiet",
            "1",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and "storing them in postgresql://" in process.stdout.readline()
        deadline = time.monotonic() + 30
        while True:
            try:
                request = urllib.request.Request(
                    f"http://127.0.0.1:{port}/v1/traces",
                    data=body,
                    method="POST",
                    headers={"Content-Type": "application/json"},
                )
                with urllib.request.urlopen(request, timeout=10) as reply:
                    assert reply.status == 200
                break
            except OSError:
                assert time.monotonic() < deadline, "serve did not listen within 30 s"
                time.sleep(0.1)
        with PostgresStore(url, read_only=True) as store:
            while not list(store.scored()):
                assert time.monotonic() < deadline + 30, "the trace was not scored within a minute"
                time.sleep(0.1)
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert main(["export", "--store", url, "--last", "1h", "-o", str(tmp_path / "day.jsonl")]) == 0
    (record,) = [json.loads(line) for line in (tmp_path / "day.jsonl").read_text("utf-8").splitlines()]
    assert record["answer"] == "At nine." and record["metadata"]["trace_id"] == f"{1:032x}"
