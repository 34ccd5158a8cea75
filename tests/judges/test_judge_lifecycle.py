"""The judge's lifecycle: opening and closing, a fatal error with other calls in flight, a cache file locked by
another process, an interrupted model join, a local server that exits at start, a dead endpoint, and the
string limits only the local server gets.

Each test says what the code did before the fix it guards, so that it is clear why it can fail.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Self

import pytest

from ragmeter.cli import main
from ragmeter.core.errors import ConfigError, JudgeError, ModelError, TransientJudgeError
from ragmeter.core.records import Chunk, Record
from ragmeter.judges import (
    Judge,
    JudgeCache,
    JudgeCall,
    JudgeConfig,
    OpenAIBackend,
    ScriptedBackend,
    open_judge,
    planning_judge,
)
from ragmeter.judges.backends import local
from ragmeter.judges.backends import local as judges  # where open_judge finds LocalServer and LocalBackend
from ragmeter.judges.prompts import CLAIMS, CORRECTNESS, claims_request, correctness_request
from ragmeter.testing.fake_openai import FakeOpenAIServer, HTTPFault
from ragmeter.testing.scripted_judge import records, respond

VERDICT_5 = {"reason": "scripted", "score": 5}


def score_call(i: int) -> JudgeCall:
    """A distinct correctness call whose answer equals its reference: the scripted verdict is 5."""
    return JudgeCall(
        CORRECTNESS,
        correctness_request(Record(f"q{i}", f"Question {i}?", f"Answer {i}.", references=(f"Answer {i}.",))),
    )


def call_number(body: dict) -> int:
    """The i of a :func:`score_call` request."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return int(re.search(r"<answer>\nAnswer (\d+)\.", user).group(1))


def remote(base_url: str, api_key_env: str | None = None) -> OpenAIBackend:
    return OpenAIBackend(base_url=base_url, model="fake-judge", api_key_env=api_key_env, timeout_s=10.0)


def wait_until(condition: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def closed_port() -> int:
    """A loopback port nothing listens on (the OS just handed it out and it was closed again)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- opening and closing ----------------------------------------------------------------------------------


class FakeServer:
    """Stands in for LocalServer: counts starts and stops."""

    parallel = 1
    model_id = "fake.gguf:1"
    build = "fake.gguf:1/test"
    states_dir = None

    def __init__(self) -> None:
        self.started = self.stopped = 0

    def start(self) -> str:
        self.started += 1
        return f"http://127.0.0.1:{closed_port()}/v1"

    def stop(self) -> None:
        self.stopped += 1


@pytest.fixture
def fake_servers(monkeypatch) -> list[FakeServer]:
    servers: list[FakeServer] = []

    def make(model_file: object) -> FakeServer:
        servers.append(FakeServer())
        return servers[-1]

    monkeypatch.setattr(judges, "LocalServer", make)
    return servers


def interrupted(*args: object, **options: object) -> OpenAIBackend:
    raise KeyboardInterrupt


def test_open_judge_stops_the_local_server_when_a_step_after_its_start_is_interrupted(fake_servers, monkeypatch):
    """(Before, an interrupt or error between the server's start and the judge's return left it running.)"""
    monkeypatch.setattr(judges.LocalBackend, "at", interrupted)
    with pytest.raises(KeyboardInterrupt):
        open_judge(JudgeConfig(kind="local"))
    assert [(s.started, s.stopped) for s in fake_servers] == [(1, 1)]


def test_open_judge_stops_the_local_server_when_the_cache_cannot_be_opened(fake_servers, tmp_path):
    not_a_cache = tmp_path / "notes.sqlite"
    not_a_cache.write_text("someone's notes, not a database" * 10)
    with pytest.raises(ConfigError, match="is not a verdict cache ragmeter can use"):
        open_judge(JudgeConfig(kind="local", cache=not_a_cache))
    assert not_a_cache.read_text() == "someone's notes, not a database" * 10
    assert [(s.started, s.stopped) for s in fake_servers] == [(1, 1)]


def test_a_local_judge_sends_the_string_limits_and_stops_its_server_at_close(fake_servers):
    judge = open_judge(JudgeConfig(kind="local"))
    assert [(s.started, s.stopped) for s in fake_servers] == [(1, 0)]
    assert judge.backend.bounds == "schema"
    judge.close()
    judge.close()
    assert [(s.started, s.stopped) for s in fake_servers] == [(1, 1)]
    remote_judge = open_judge(
        JudgeConfig(kind="openai", model="m", base_url="https://api.openai.com/v1", api_key_env=None)
    )
    try:
        assert remote_judge.backend.bounds == "instructions"  # OpenAI's strict mode refuses maxLength
    finally:
        remote_judge.close()


def test_closing_a_judge_that_never_ran_starts_no_event_loop(tmp_path, monkeypatch):
    """The planning judge of a dry run is closed after it counted the calls; closing it must cost nothing.
    (Before, close() started an event loop and its thread only to stop them.)"""
    cache = tmp_path / "judge.sqlite"
    cache.touch()  # an existing cache file (SQLite takes an empty one)

    def no_loop(self: Judge) -> None:
        raise AssertionError("close() started an event loop")

    monkeypatch.setattr(Judge, "_event_loop", no_loop)
    judge = planning_judge(JudgeConfig(kind="openai", model="m", cache=cache))
    assert judge.cache is not None
    judge.close()
    with pytest.raises(sqlite3.ProgrammingError):  # the cache file was closed all the same
        len(judge.cache)
    with pytest.raises(JudgeError, match="closed"):
        judge.run([score_call(0)])


# --- a fatal error, and close(), with calls still running -------------------------------------------------


def test_a_rejected_key_stops_every_other_call_and_nothing_is_cached(tmp_path, monkeypatch):
    """Eight calls in flight: call 0 gets a 401 after 0.2 s, calls 1–4 get 500s (retried after 0.1, 0.2,
    0.4 s…), calls 5–7 are answered after 0.6 s. The run raises at the 401, naming the key's variable; after
    it, no request reaches the server and no verdict is cached. (Before, the 500s went on retrying and the
    slow answers were cached after the run had raised.)"""
    monkeypatch.setenv("RAGMETER_TEST_KEY", "sk-test-bad-key")

    def responder(body: dict) -> str:
        i = call_number(body)
        if i == 0:
            time.sleep(0.2)
            raise HTTPFault(401, "Incorrect API key provided")
        if i <= 4:
            raise HTTPFault(500, "internal error")
        time.sleep(0.6)
        return respond(body)

    path = tmp_path / "judge.sqlite"
    with FakeOpenAIServer(responder) as server:
        judge = Judge(
            remote(server.base_url, "RAGMETER_TEST_KEY"),
            cache=JudgeCache(path),
            concurrency=8,
            backoff_s=0.1,
            timeout_s=10.0,
        )
        try:
            with pytest.raises(JudgeError) as raised:
                judge.run([score_call(i) for i in range(8)])
            sent = len(server.requests)
            time.sleep(1.5)
            assert len(server.requests) == sent
        finally:
            judge.close()
    assert sent >= 8  # every call was in flight
    message = str(raised.value)
    assert not isinstance(raised.value, TransientJudgeError)
    assert "refused the key in $RAGMETER_TEST_KEY (401" in message and "--judge-api-key-env" in message
    assert "sk-test-bad-key" not in message
    cache = JudgeCache(path)
    try:
        assert len(cache) == 0
    finally:
        cache.close()


def test_close_cancels_the_calls_still_running():
    """A run waits on two slow replies with four more calls queued; another thread closes the judge: the run
    raises JudgeError at once and the queued calls are never sent. (Before, close() stopped the event loop
    under the running calls, and the run waited for ever.)"""
    with FakeOpenAIServer(respond, latency_s=5.0) as server:
        judge = Judge(remote(server.base_url), concurrency=2, timeout_s=10.0)
        errors: list[BaseException] = []

        def work() -> None:
            try:
                judge.run([score_call(i) for i in range(6)])
            except BaseException as exc:  # noqa: BLE001  (checked below)
                errors.append(exc)

        worker = threading.Thread(target=work)
        worker.start()
        assert wait_until(lambda: len(server.requests) == 2)
        start = time.monotonic()
        judge.close()
        closing_s = time.monotonic() - start
        worker.join(timeout=5.0)
        time.sleep(0.3)
        assert len(server.requests) == 2
    assert not worker.is_alive()
    assert closing_s < 2.0
    assert [type(e) for e in errors] == [JudgeError]
    assert "closed while these calls were running" in str(errors[0])


# --- the cache off the event loop -------------------------------------------------------------------------


def test_a_cache_file_locked_by_another_process_stalls_no_call_in_flight(tmp_path):
    """Another connection holds the cache file's write lock while 40 calls run (4 at a time): all 40 requests
    are still sent while the lock is held, and their verdicts are written once it is released. (With the
    cache written on the event loop, the first write froze every call until the lock was released: 4
    requests in 10 s.)"""
    path = tmp_path / "judge.sqlite"
    cache = JudgeCache(path)  # the file and its table exist before the lock is taken
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    outcomes = []
    with FakeOpenAIServer(respond, latency_s=0.02) as server:
        judge = Judge(remote(server.base_url), cache=cache, concurrency=4, timeout_s=10.0)
        worker = threading.Thread(target=lambda: outcomes.extend(judge.run([score_call(i) for i in range(40)])))
        worker.start()
        try:
            wait_until(lambda: len(server.requests) == 40, timeout_s=10.0)
            sent_while_locked = len(server.requests)
            waiting_for_the_lock = worker.is_alive()
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        worker.join(timeout=30.0)
        judge.close()
    assert sent_while_locked == 40
    assert waiting_for_the_lock
    assert [o.verdict for o in outcomes] == [VERDICT_5] * 40
    reopened = JudgeCache(path)
    try:
        assert len(reopened) == 40
    finally:
        reopened.close()


# --- the model join ---------------------------------------------------------------------------------------

PARTS = 22


@pytest.fixture
def fake_parts(tmp_path, monkeypatch) -> tuple[dict[int, object], bytes]:
    """22 parts of 1,000 bytes each (part n: the byte n), a cache folder in tmp_path, and the sha256 of the
    whole as the expected checksum (hashlib on the bytes written here, not the joining code's)."""
    monkeypatch.setenv("RAGMETER_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "parts"
    folder.mkdir()
    parts: dict[int, object] = {}
    for n in range(1, PARTS + 1):
        parts[n] = folder / f"part{n:02d}.bin"
        parts[n].write_bytes(bytes([n]) * 1000)
    monkeypatch.setattr(local, "_part_path", lambda n: parts[n])
    whole = b"".join(bytes([n]) * 1000 for n in range(1, PARTS + 1))
    monkeypatch.setattr(local, "MODEL_SHA256", hashlib.sha256(whole).hexdigest())
    return parts, whole


class InterruptedPart:
    """A part whose reading is interrupted (Ctrl-C) after its first block."""

    def __init__(self) -> None:
        self.blocks = [b"\x00" * 500]

    def open(self, mode: str) -> Self:
        return self

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def read(self, size: int) -> bytes:
        if self.blocks:
            return self.blocks.pop()
        raise KeyboardInterrupt


def test_the_join_writes_the_verified_model(fake_parts, tmp_path):
    _, whole = fake_parts
    path = local.packaged_model_path()
    assert path.read_bytes() == whole
    assert sorted(p.name for p in path.parent.iterdir()) == [f"{local.MODEL_ID}.gguf", f"{local.MODEL_ID}.verified"]
    assert local.packaged_model_path() == path  # the stamp is trusted: no second join


def test_an_interrupted_join_leaves_no_file(fake_parts, tmp_path):
    """(Before, the temporary file of up to 1 GB stayed in the cache folder.)"""
    parts, _ = fake_parts
    parts[12] = InterruptedPart()
    with pytest.raises(KeyboardInterrupt):
        local.packaged_model_path()
    assert list((tmp_path / "cache" / "models").iterdir()) == []


def test_a_join_with_the_wrong_checksum_leaves_no_file(fake_parts, tmp_path, monkeypatch):
    monkeypatch.setattr(local, "MODEL_SHA256", "0" * 64)
    with pytest.raises(ModelError, match="pip install --force-reinstall"):
        local.packaged_model_path()
    assert list((tmp_path / "cache" / "models").iterdir()) == []


# --- a local server that exits at start -------------------------------------------------------------------


def test_a_local_server_that_exits_at_start_says_why_and_leaves_no_process(tmp_path, monkeypatch, extra_module):
    """A "model" of a few bytes that is no GGUF file: llama.cpp's server exits at once. The error carries its
    log (llama.cpp's own reason) and no child is left running. (Before, the log was closed before its tail
    was read, so the message said nothing of why.)"""
    extra_module("xllamacpp", "local")  # skips without it, fails in CI (tests/conftest.py)
    model = tmp_path / "garbage.gguf"
    model.write_bytes(b"not a model")
    children: list[subprocess.Popen] = []
    popen = subprocess.Popen

    def recording_popen(*args: object, **kwargs: object) -> subprocess.Popen:
        children.append(popen(*args, **kwargs))
        return children[-1]

    monkeypatch.setattr(local.subprocess, "Popen", recording_popen)
    with pytest.raises(JudgeError) as raised:
        open_judge(JudgeConfig(kind="local", model_file=model, cache=tmp_path / "judge.sqlite"))
    message = str(raised.value)
    assert f"the local judge server for {model} exited at start (exit code 1)" in message
    assert "its log ends:" in message and "failed to load model" in message
    assert len(children) == 1 and children[0].poll() is not None


# --- a dead or mistyped endpoint --------------------------------------------------------------------------


def test_a_dead_endpoint_ends_the_run_after_three_failures_to_connect():
    """(Before, every call was tried max_attempts times and the run ended "successfully" with every verdict
    a failure: 792 requests for the demo file.)"""
    url = f"http://127.0.0.1:{closed_port()}/v1"
    judge = Judge(remote(url), concurrency=1, backoff_s=0.05, timeout_s=10.0)
    try:
        start = time.monotonic()
        with pytest.raises(JudgeError) as raised:
            judge.run([score_call(i) for i in range(20)])
        elapsed_s = time.monotonic() - start
    finally:
        judge.close()
    assert not isinstance(raised.value, TransientJudgeError)
    message = str(raised.value)
    assert message.startswith(f"cannot connect to {url} (ConnectError: ")
    assert "3 times in a row, and no judge request has been answered" in message
    assert "server is running" in message and "--judge-base-url" in message and "proxy" in message
    assert elapsed_s < 3.0  # two backoffs of at most 0.075 and 0.15 s, and three refused connections


def test_a_dead_endpoint_stops_at_once_with_several_calls_in_flight():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    # the CLI's concurrency and timeout; a backoff long enough that waiting out even one (≥ 10 s) shows
    judge = Judge(remote(url), concurrency=8, backoff_s=20.0, timeout_s=10.0)
    try:
        start = time.monotonic()
        with pytest.raises(JudgeError, match="3 times in a row"):
            judge.run([score_call(i) for i in range(50)])
        elapsed_s = time.monotonic() - start
    finally:
        judge.close()
    assert elapsed_s < 10.0  # the first wave fails together: no backoff is waited out


REFUSED = "cannot connect to http://127.0.0.1:1/v1 (ConnectError: refused)"


class Transport:
    """A backend whose attempts go as ``script`` says, in order, the last entry repeating: "ok" (the scripted
    verdict 5), "refused" (no connection made) or "500" (the server answered with an error)."""

    model, temperature, seed = "transport", 0.0, 0

    def __init__(self, *script: str) -> None:
        self.script = list(script)
        self.attempts: list[str] = []

    async def complete(self, request):
        step = self.script[min(len(self.attempts), len(self.script) - 1)]
        self.attempts.append(step)
        if step == "ok":
            return await ScriptedBackend(lambda r: json.dumps(VERDICT_5)).complete(request)
        if step == "refused":
            raise TransientJudgeError(REFUSED, connection_failed=True)
        raise TransientJudgeError("server error 500: internal error")

    async def aclose(self) -> None:
        return None


def run_transport(backend: Transport, n: int, max_attempts: int = 6) -> tuple[Judge, list]:
    judge = Judge(backend, concurrency=1, backoff_s=0.001, max_attempts=max_attempts)
    try:
        return judge, judge.run([score_call(i) for i in range(n)])
    finally:
        judge.close()


def test_three_failures_to_connect_in_a_row_end_the_run_and_nothing_more_is_tried():
    backend = Transport("refused")
    with pytest.raises(JudgeError, match=re.escape(f"{REFUSED}, 3 times in a row")):
        run_transport(backend, 20)
    assert backend.attempts == ["refused"] * 3


def test_a_server_error_between_failures_to_connect_starts_the_count_again():
    """A 500 is an answer from a reachable server (retried as before): only failures to connect in a row count."""
    backend = Transport("refused", "refused", "500", "refused", "refused", "refused")
    with pytest.raises(JudgeError, match="3 times in a row"):
        run_transport(backend, 20)
    assert len(backend.attempts) == 6


def test_once_a_request_was_answered_failures_to_connect_are_retried():
    backend = Transport("ok", "refused")
    _, outcomes = run_transport(backend, 4, max_attempts=4)
    assert outcomes[0].verdict == VERDICT_5
    assert [o.attempts for o in outcomes[1:]] == [4, 4, 4]
    assert {o.failure for o in outcomes[1:]} == {f"no usable reply after 4 attempts: {REFUSED}"}
    assert backend.attempts == ["ok"] + ["refused"] * 12


def test_the_cli_stops_on_a_dead_endpoint_and_says_what_to_check(tmp_path, capsys):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    records_file = tmp_path / "records.jsonl"
    records_file.write_text("".join(json.dumps(r) + "\n" for r in records(30)), encoding="utf-8")
    start = time.monotonic()
    code = main(
        [
            "run",
            str(records_file),
            "--metrics",
            "judge_correctness",
            "--judge",
            "openai",
            "--judge-model",
            "fake-judge",
            "--judge-base-url",
            url,
            "--judge-api-key-env",
            "",
            "--out",
            str(tmp_path / "out"),
            "--no-progress",
        ]
    )
    elapsed_s = time.monotonic() - start
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"cannot connect to {url}" in err and "--judge-base-url" in err
    assert "--resume" not in err  # nothing was finished: no resume to suggest
    assert elapsed_s < 10.0
    # nothing was finished, so the next run starts afresh (no --resume needed)
    code = main(["run", str(records_file), "--metrics", "exact_match", "--out", str(tmp_path / "out"), "--no-progress"])
    assert code == 0, capsys.readouterr().err


# --- string limits: the local server's grammar only -------------------------------------------------------


def test_the_schema_carries_the_string_limits_and_instructions_mode_leaves_them_out():
    """The limits (worked out in prompts.py: reason 300, claim 200, evidence 300, differences 160 characters)
    go to the endpoint as maxLength, which a grammar honours; OpenAI's strict mode rejects the keyword."""
    record = Record(
        "q",
        "When does it open?",
        "It opens at nine.",
        references=("It opens at nine.",),
        contexts=(Chunk(doc_id="d", text="It opens at nine."),),
    )
    calls = [
        JudgeCall(CORRECTNESS, correctness_request(record)),
        JudgeCall(CLAIMS, claims_request(record, record.answer), n_chunks=1),
    ]
    schemas = {}
    for bounds in ("schema", "instructions"):
        with FakeOpenAIServer(respond) as server:
            judge = Judge(OpenAIBackend(base_url=server.base_url, model="fake-judge", api_key_env=None, bounds=bounds))
            try:
                outcomes = judge.run(calls)
            finally:
                judge.close()
        assert [o.failure for o in outcomes] == [None, None]
        schemas[bounds] = {
            body["response_format"]["json_schema"]["name"]: body["response_format"]["json_schema"]["schema"]
            for body in server.requests
        }
    local_schemas = schemas["schema"]
    assert local_schemas["correctness"]["properties"]["reason"] == {"type": "string", "maxLength": 300}
    claim = local_schemas["claims"]["properties"]["claims"]["items"]["properties"]
    assert {name: claim[name].get("maxLength") for name in claim} == {
        "claim": 200,
        "evidence": 300,
        "differences": 160,
        "verdict": None,
        "chunks": None,
    }
    assert "maxLength" not in json.dumps(schemas["instructions"])
    assert schemas["instructions"]["correctness"]["properties"]["reason"] == {"type": "string"}


# --- progress ---------------------------------------------------------------------------------------------


def test_on_call_done_is_called_once_per_finished_call_cached_ones_included(tmp_path):
    path = tmp_path / "judge.sqlite"
    answer = ScriptedBackend(lambda request: json.dumps(VERDICT_5))
    with Judge(answer, cache=JudgeCache(path)) as first:
        first.run([score_call(i) for i in range(3)])
    done: list[int] = []
    with Judge(answer, cache=JudgeCache(path)) as judge:
        judge.on_call_done = lambda: done.append(len(answer.requests))
        outcomes = judge.run([score_call(i) for i in range(5)])
    assert [o.cached for o in outcomes] == [True, True, True, False, False]
    assert len(done) == 5 and len(answer.requests) == 5  # 3 requests by the first judge, 2 by this one


def test_the_claims_mode_defaults_to_split_for_the_local_judge_and_verify_for_a_remote_one() -> None:
    assert JudgeConfig(kind="local").claim_mode == "split"
    assert JudgeConfig(kind="openai", model="m").claim_mode == "verify"
    assert JudgeConfig(kind="local", claims="verify").claim_mode == "verify"
    with planning_judge(JudgeConfig(kind="openai", model="m", claims="split")) as judge:
        assert judge.claims == "split"
    with pytest.raises(ConfigError, match="claims mode must be one of verify, split"):
        JudgeConfig(kind="local", claims="both")
