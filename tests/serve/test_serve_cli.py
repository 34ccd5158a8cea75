"""``ragmeter serve`` as a user starts it: a process listening on loopback, a JSON export posted to it stored and
scored (quiet traces too), a SIGKILL in the middle of ingesting losing nothing it acknowledged, and one in the middle
of scoring leaving each trace to be scored once after the restart; an unknown metric stops it before it takes the
port."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from loopback import free_port

from ragmeter.cli import main
from ragmeter.serve.store import SqliteStore
from ragmeter.testing.fake_openai import FakeOpenAIServer
from ragmeter.testing.scripted_judge import respond

ENTRY = [sys.executable, "-c", "import sys; from ragmeter._entry import main; sys.exit(main())"]


def _export(trace: int, question: str, answer: str | None) -> bytes:
    attributes = [
        {"key": "openinference.span.kind", "value": {"stringValue": "CHAIN"}},
        {"key": "input.value", "value": {"stringValue": question}},
    ]
    if answer is not None:
        attributes.append({"key": "output.value", "value": {"stringValue": answer}})
    span = {
        "traceId": f"{trace:032x}",
        "spanId": f"{trace:016x}",
        "name": "rag",
        "startTimeUnixNano": "1000",
        "endTimeUnixNano": "2000" if answer is not None else "",
        "attributes": attributes,
    }
    return json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}).encode()


def _start(store: Path, port: int, *extra: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [*ENTRY, "serve", "--store", str(store), "--port", str(port), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    assert "receiving OTLP/HTTP traces at" in process.stdout.readline()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return process
        time.sleep(0.05)
    process.kill()
    raise AssertionError("ragmeter serve did not listen within 30 s")


def _post(port: int, body: bytes) -> int:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/traces", data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        return reply.status


def _scored(store: Path, n: int) -> list:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with SqliteStore(store) as opened:
            outcomes = list(opened.scored())
        if len(outcomes) >= n:
            return outcomes
        time.sleep(0.1)
    raise AssertionError(f"fewer than {n} traces scored within 60 s")


def test_serve_stores_and_scores_and_a_kill_loses_nothing_acknowledged(tmp_path: Path) -> None:
    store, port = tmp_path / "serve.sqlite", free_port()
    process = _start(store, port, "--metrics", "lexical", "--quiet", "1")
    try:
        assert _post(port, _export(1, "When does the library open?", "At nine.")) == 200
        assert _post(port, _export(2, "Where is it?", None)) == 200  # its root never ends: scored when quiet
        outcomes = {o.trace_id: o for o in _scored(store, 2)}
        assert outcomes[f"{1:032x}"].record["answer"] == "At nine."
        assert outcomes[f"{2:032x}"].record is None and "answer" in outcomes[f"{2:032x}"].problem
        assert _post(port, _export(3, "Is it open on Sundays?", "No.")) == 200
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    with SqliteStore(store) as opened:
        assert len(opened.spans(f"{3:032x}")) == 1  # acknowledged before the kill
    process = _start(store, port, "--metrics", "lexical", "--quiet", "1")  # a restart scores it, once
    try:
        assert sorted(o.trace_id for o in _scored(store, 3)) == [f"{t:032x}" for t in (1, 2, 3)]
    finally:
        process.terminate()  # uvicorn shuts down (the scoring thread finishes its batch), then ends by the signal
        assert process.wait(timeout=30) == -signal.SIGTERM


def _judging(store: Path, port: int, judge_url: str) -> subprocess.Popen[str]:
    return _start(
        store,
        port,
        "--metrics",
        "lexical",
        "--quiet",
        "1",
        "--judge",
        "openai",
        "--judge-model",
        "scripted",
        "--judge-base-url",
        judge_url,
        "--judge-api-key-env",
        "",
        "--judge-sample",
        "1",
        "--judged",
        "judge_relevance",
    )


def test_a_kill_while_it_scores_scores_each_trace_once_after_the_restart(tmp_path: Path) -> None:
    store, port = tmp_path / "serve.sqlite", free_port()
    questions = {1: ("When does it open?", "At nine."), 2: ("Where is it?", "On Quay Street."), 3: ("Fees?", "None.")}
    with FakeOpenAIServer(respond, latency_s=30.0) as slow_judge:
        process = _judging(store, port, slow_judge.base_url)
        try:
            assert [_post(port, _export(t, q, a)) for t, (q, a) in questions.items()] == [200] * 3
            deadline = time.monotonic() + 60
            while not slow_judge.requests and time.monotonic() < deadline:
                time.sleep(0.05)
            assert slow_judge.requests, "the judge was never called"
        finally:
            process.send_signal(signal.SIGKILL)  # in the middle of scoring: its judge call unanswered
            process.wait()
    with SqliteStore(store) as opened:
        assert list(opened.scored()) == []  # nothing half-scored was kept
    with FakeOpenAIServer(respond) as judge:
        process = _judging(store, port, judge.base_url)
        try:
            outcomes = _scored(store, 3)
        finally:
            process.terminate()
            process.wait(timeout=30)
    assert sorted(o.trace_id for o in outcomes) == [f"{t:032x}" for t in questions]
    assert all(o.judged and o.scores["judge_relevance"] == 4 for o in outcomes)  # scripted: 4 for an answer


def test_an_unknown_metric_stops_it_before_it_listens(tmp_path: Path, capsys) -> None:
    assert main(["serve", "--store", str(tmp_path / "s.sqlite"), "--metrics", "nope", "--port", str(free_port())]) == 2
    assert "nope" in capsys.readouterr().err


def test_serve_judges_its_sample_within_the_budget(tmp_path: Path) -> None:
    store, port = tmp_path / "serve.sqlite", free_port()
    with FakeOpenAIServer(respond) as judge:
        process = _start(
            store,
            port,
            "--metrics",
            "lexical",
            "--judge",
            "openai",
            "--judge-model",
            "scripted",
            "--judge-base-url",
            judge.base_url,
            "--judge-api-key-env",
            "",
            "--judge-sample",
            "1",
            "--judge-budget",
            "100000",
            "--judged",
            "judge_relevance",
        )
        try:
            assert _post(port, _export(1, "When does the library open?", "At nine.")) == 200
            (outcome,) = _scored(store, 1)
        finally:
            process.terminate()
            process.wait(timeout=30)
    assert outcome.judged and 1 <= outcome.scores["judge_relevance"] <= 5
    with SqliteStore(store) as opened:
        assert 0 < opened.spent_since(0) <= 100_000
    assert (tmp_path / "serve.sqlite.judge-cache.sqlite").exists()


def test_a_sample_without_a_judge_is_refused(tmp_path: Path, capsys) -> None:
    assert (
        main(["serve", "--store", str(tmp_path / "s.sqlite"), "--judge-sample", "0.1", "--port", str(free_port())]) == 2
    )
    assert "--judge and --judge-sample go together" in capsys.readouterr().err


def test_drop_and_forward_options_are_checked_before_it_listens(tmp_path: Path, capsys) -> None:
    store = tmp_path / "s.sqlite"
    for options, message in (
        (["--window", "1h"], "--window does nothing without --fail-on"),
        (["--fail-on", "abstained"], "has no direction"),
        (["--fail-on", "token_f1", "--window", "soon"], "--window 'soon' is not a duration"),
        (["--forward", "collector:4318"], "give the http:// or https:// URL"),
        (["--fail-on", "token_f1", "--baseline", str(tmp_path / "nowhere")], "no such run folder"),
    ):
        assert main(["serve", "--store", str(store), "--port", str(free_port()), *options]) == 2
        assert message in capsys.readouterr().err
    assert not store.exists()  # refused before the store was made
