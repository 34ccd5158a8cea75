"""The store of ``ragmeter serve``: spans kept once however often they are sent, decoded again exactly as the file
reader decodes them, a trace due when its root ends or it goes quiet, scored once, durable once accepted (a child
killed with SIGKILL right after), and a schema that migrates from an empty file and refuses a newer one."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from postgres_server import (  # noqa: F401 -- fixtures, used by name
    any_store_fixture,
    postgres_instance_fixture,
    postgres_server_fixture,
)

from ragmeter.core.errors import ConfigError
from ragmeter.io.traces.otlp import otlp_spans
from ragmeter.serve.store import MIGRATIONS, ScoredTrace, SqliteStore

TRACE = "5b8efff798038103d269b633813fc60c"
OTHER = "0af7651916cd43dd8448eb211c80319c"


def _span(trace: str, span: str, parent: str | None, name: str, end: int | None = 2_000) -> dict:
    body = {
        "traceId": trace,
        "spanId": span,
        "name": name,
        "startTimeUnixNano": "1000",
        "attributes": [
            {"key": "input.value", "value": {"stringValue": f"{name} input"}},
            {"key": "llm.token_count.prompt", "value": {"intValue": "12"}},
        ],
    }
    if parent is not None:
        body["parentSpanId"] = parent
    if end is not None:
        body["endTimeUnixNano"] = str(end)
    return body


def _request(*spans: dict) -> dict:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "app"}}]},
                "scopeSpans": [{"spans": list(spans)}],
            }
        ]
    }


ROOT = _span(TRACE, "eee19b7ec3c1b174", None, "query")
CHILD = _span(TRACE, "eee19b7ec3c1b175", "eee19b7ec3c1b174", "retrieve")


def test_a_span_sent_again_is_stored_once(any_store) -> None:
    with any_store() as store:
        first = store.accept(_request(ROOT, CHILD), now=10.0)
        again = store.accept(_request(ROOT, CHILD), now=11.0)  # an exporter's retry
        assert (first.new_spans, first.repeated_spans, again.new_spans, again.repeated_spans) == (2, 0, 0, 2)
        assert store.backlog() == {"open": 1, "due": 0, "scored": 0}


def test_stored_spans_decode_as_the_file_reader_decodes_them(any_store, tmp_path: Path) -> None:
    request = _request(ROOT, CHILD)
    (tmp_path / "traces.json").write_text(json.dumps(request), "utf-8")
    expected = [
        (s.trace_id, s.span_id, s.parent_id, s.name, s.start_ns, s.end_ns, s.attributes, dict(s.resource))
        for s in otlp_spans(tmp_path / "traces.json")
    ]
    with any_store() as store:
        store.accept(request)
        got = [
            (s.trace_id, s.span_id, s.parent_id, s.name, s.start_ns, s.end_ns, s.attributes, dict(s.resource))
            for s in store.spans(TRACE)
        ]
    assert sorted(got, key=str) == sorted(expected, key=str) and len(got) == 2
    assert got[0][6]["llm.token_count.prompt"] == 12


def test_a_span_that_cannot_be_read_is_named_and_the_others_are_kept(any_store) -> None:
    broken = {**CHILD, "traceId": "abc"}
    with any_store() as store:
        accepted = store.accept(_request(ROOT, broken), source="POST /v1/traces")
        (problem,) = accepted.problems
        assert accepted.new_spans == 1 and problem.field == "resourceSpans[0].scopeSpans[0].spans[1].traceId"
        assert "POST /v1/traces" in str(problem)


def test_a_trace_is_due_when_its_root_ends_or_it_goes_quiet(any_store) -> None:
    with any_store() as store:
        store.accept(_request(CHILD), now=100.0)  # no root yet
        store.accept(_request(_span(OTHER, "aaa19b7ec3c1b174", None, "query", end=None)), now=100.0)  # root running
        assert store.mark_due(quiet_s=30.0, now=120.0) == 0 and store.backlog()["due"] == 0
        store.accept(_request(ROOT), now=125.0)  # the root ends: due at once
        assert store.mark_due(quiet_s=30.0, now=126.0) == 1 and store.backlog()["due"] == 1
        assert store.mark_due(quiet_s=30.0, now=130.0) == 1  # quiet 30 s
        assert store.due(10) == [TRACE, OTHER]  # the longest waiting first


def test_a_trace_is_scored_once(any_store) -> None:
    outcome = ScoredTrace(
        TRACE,
        {"id": TRACE, "question": "q", "answer": "a"},
        None,
        {"token_f1": 0.5, "overlap": None},
        {"overlap": "record has no retrieved chunks"},
        False,
        {"token_f1": "token_f1|v:1", "overlap": "overlap|v:1"},
        200.0,
    )
    with any_store() as store:
        store.accept(_request(ROOT, CHILD), now=100.0)
        assert not store.save_scores(outcome)  # still open
        store.mark_due(quiet_s=30.0, now=101.0)
        assert store.save_scores(outcome) and not store.save_scores(outcome)
    with any_store() as reopened:
        assert list(reopened.scored()) == [outcome] and list(reopened.scored(since=200.5)) == []
        assert reopened.backlog() == {"open": 0, "due": 0, "scored": 1} and reopened.due(10) == []


def test_an_accepted_request_survives_a_kill(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    script = (
        "import json, sys, time; from ragmeter.serve.store import SqliteStore; store = SqliteStore(sys.argv[1]); "
        "store.accept(json.loads(sys.argv[2])); print('accepted', flush=True); time.sleep(60)"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(path), json.dumps(_request(ROOT, CHILD))], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "accepted"
    child.send_signal(signal.SIGKILL)
    child.wait()
    with SqliteStore(path) as store:
        assert len(store.spans(TRACE)) == 2 and store.backlog()["open"] == 1


def test_a_store_from_a_newer_ragmeter_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with pytest.raises(ConfigError, match="newer than this ragmeter"):
        SqliteStore(path)


@pytest.mark.parametrize("content", [b"", b'{"question": "q"}\n'])
def test_a_file_that_is_not_a_store_is_refused_and_left_as_it_is(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "records.jsonl"
    path.write_bytes(content)
    for read_only in (False, True):
        with pytest.raises(ConfigError, match="is not a ragmeter serve store"):
            SqliteStore(path, read_only=read_only)
    assert path.read_bytes() == content and not (tmp_path / "records.jsonl-wal").exists()
    with pytest.raises(ConfigError, match="not a regular file"):
        SqliteStore(tmp_path)


def test_a_store_of_the_last_schema_is_migrated_with_what_it_holds(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    with sqlite3.connect(path) as db:  # a store as the ragmeter before drop checks wrote it (schema 2)
        for version, script in enumerate(MIGRATIONS[:2], start=1):
            db.executescript(script)
            db.execute(f"PRAGMA user_version = {version}")
        db.execute("INSERT INTO judge_spend VALUES (100.0, 1234)")
        db.execute("INSERT INTO traces VALUES ('t1', 'scored', 1, 10.0, 11.0)")
        db.execute(
            "INSERT INTO scores VALUES ('t1', NULL, 'no answer', '{}', '{}', 0, "
            "'token_f1=token_f1|v:1;overlap=overlap|tau:0.65|v:1', 11.0)"
        )
    with SqliteStore(path) as store:
        assert store.schema_version == len(MIGRATIONS) == 4
        assert store.spent_since(0.0) == 1234 and store.judge_calls(0.0) == {"answered": 1, "failed": 0, "refused": 0}
        assert store.checks() == [] and store.last_check() is None
        (outcome,) = store.scored()  # schema 2 wrote the signatures joined by ';'
        assert outcome.signatures == {"token_f1": "token_f1|v:1", "overlap": "overlap|tau:0.65|v:1"}


def _turn(n: int, session: str) -> dict:
    attributes = [
        {"key": "openinference.span.kind", "value": {"stringValue": "CHAIN"}},
        {"key": "input.value", "value": {"stringValue": f"question {n}"}},
        {"key": "output.value", "value": {"stringValue": f"answer {n}"}},
        {"key": "session.id", "value": {"stringValue": session}},
    ]
    span = {
        "traceId": f"{n:032x}",
        "spanId": f"{n:016x}",
        "name": "rag",
        "startTimeUnixNano": str(n * 1000),
        "endTimeUnixNano": str(n * 1000 + 500),
        "attributes": attributes,
    }
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}


def test_a_conversation_keeps_its_history_across_a_restart(any_store) -> None:
    """The file reader gives a session's later turns its earlier ones as history; so does serve, also for turns
    scored before it restarted (another Scorer on the same store) and for two turns of one batch."""
    from ragmeter.serve.scorer import Scorer

    with any_store() as store:
        store.accept(_turn(1, "s1"), now=10.0)
        store.accept(_turn(9, "s2"), now=10.0)
        assert Scorer(store, metrics=["lexical"], quiet_s=1.0).score_due(now=20.0) == 2
    with any_store() as store:  # a restart: a new process, the same store
        store.accept(_turn(2, "s1"), now=30.0)
        store.accept(_turn(3, "s1"), now=30.0)
        assert Scorer(store, metrics=["lexical"], quiet_s=1.0).score_due(now=40.0) == 2
        history = {o.trace_id: o.record.get("history", []) for o in store.scored()}
    asked = [{"role": "user", "text": "question 1"}, {"role": "assistant", "text": "answer 1"}]
    assert history[f"{1:032x}"] == [] and history[f"{9:032x}"] == []
    assert history[f"{2:032x}"] == asked
    assert history[f"{3:032x}"] == [
        *asked,
        {"role": "user", "text": "question 2"},
        {"role": "assistant", "text": "answer 2"},
    ]
