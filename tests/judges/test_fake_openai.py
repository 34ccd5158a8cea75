"""The loopback fake OpenAI server speaks the protocol the real ``openai`` client expects."""

from __future__ import annotations

import contextlib
import json
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest

from ragmeter.testing.fake_openai import FakeOpenAIServer, FaultPlan, call_key


def echo(body: dict) -> str:
    question = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return json.dumps({"verdict": "supported", "question": question})


def client(server: FakeOpenAIServer, timeout: float = 5.0) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=timeout)


def ask(c: openai.OpenAI, text: str):
    return c.chat.completions.create(model="fake-judge", messages=[{"role": "user", "content": text}])


def test_normal_reply_round_trips_with_usage():
    with FakeOpenAIServer(echo) as server, client(server) as c:
        reply = ask(c, "Is the sky blue?")
        assert json.loads(reply.choices[0].message.content) == {"verdict": "supported", "question": "Is the sky blue?"}
        assert reply.choices[0].finish_reason == "stop"
        assert reply.model == "fake-judge"
        assert reply.usage.prompt_tokens >= 1 and reply.usage.completion_tokens >= 1
        assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens
        assert server.requests[0]["messages"][0]["content"] == "Is the sky blue?"
        assert server.headers[0]["authorization"] == "Bearer test"
        assert server.statuses == {"ok": 1}
        assert server.calls_for(call_key(server.requests[0])) == 1
        assert c.models.list().data[0].id == "fake-judge"
        with urllib.request.urlopen(server.base_url.removesuffix("/v1") + "/health") as health:
            assert json.load(health) == {"status": "ok"}
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(server.base_url + "/nope")
        assert missing.value.code == 404


def test_429_carries_retry_after_and_the_retry_succeeds():
    plan = FaultPlan(rate=1.0, kinds=("429",), retry_after="0.25")
    with FakeOpenAIServer(echo, faults=plan) as server, client(server) as c:
        with pytest.raises(openai.RateLimitError) as err:
            ask(c, "q1")
        assert err.value.response.headers["retry-after"] == "0.25"
        assert ask(c, "q1").choices[0].finish_reason == "stop"
        assert server.statuses == {"429": 1, "ok": 1}
        assert server.calls_for(call_key(server.requests[0])) == 2


def test_a_repair_request_shares_the_call_key():
    with FakeOpenAIServer(echo, faults=FaultPlan(rate=1.0, kinds=("wrong_schema",))) as server, client(server) as c:
        first = ask(c, "q1")
        assert first.choices[0].message.content == '{"unexpected": "shape"}'
        repair = c.chat.completions.create(
            model="fake-judge",
            messages=[
                {"role": "user", "content": "q1"},
                {"role": "assistant", "content": first.choices[0].message.content},
                {"role": "user", "content": "Reply with the JSON schema asked for."},
            ],
        )
        assert json.loads(repair.choices[0].message.content)["verdict"] == "supported"
        assert server.statuses == {"wrong_schema": 1, "ok": 1}


def test_500_is_an_internal_server_error():
    with FakeOpenAIServer(echo, faults=FaultPlan(rate=1.0, kinds=("500",))) as server, client(server) as c:
        with pytest.raises(openai.InternalServerError):
            ask(c, "q1")
        assert ask(c, "q1").choices[0].finish_reason == "stop"


def test_stall_times_the_client_out_and_shutdown_stays_quick():
    plan = FaultPlan(rate=1.0, kinds=("stall",), stall_s=10.0)
    start = time.perf_counter()
    with FakeOpenAIServer(echo, faults=plan) as server, client(server, timeout=0.3) as c:
        with pytest.raises(openai.APITimeoutError):
            ask(c, "q1")
        assert time.perf_counter() - start < 3.0
        # the second attempt is not stalled; a loaded runner may take longer than 0.3 s to answer it
        assert ask(c.with_options(timeout=5.0), "q1").choices[0].finish_reason == "stop"
        assert server.statuses == {"stall": 1, "ok": 1}
    assert time.perf_counter() - start < 6.0  # did not wait out the 10 s stall


def test_truncated_and_length_cut_the_content():
    with FakeOpenAIServer(echo, faults=FaultPlan(rate=1.0, kinds=("truncated",))) as server, client(server) as c:
        full = echo({"messages": [{"role": "user", "content": "q1"}]})
        reply = ask(c, "q1")
        assert reply.choices[0].message.content == full[: len(full) // 2]
        assert reply.choices[0].finish_reason == "stop"
    with FakeOpenAIServer(echo, faults=FaultPlan(rate=1.0, kinds=("length",))) as server, client(server) as c:
        reply = ask(c, "q1")
        assert reply.choices[0].finish_reason == "length"
        assert reply.choices[0].message.content == full[: len(full) // 2]


def test_fault_decisions_are_deterministic():
    plan = FaultPlan(rate=0.3, seed=7)
    outcomes = []
    for _ in range(2):
        with FakeOpenAIServer(echo, faults=plan) as server, client(server) as c:
            plan_stall_free = [
                q
                for q in (f"question {i}" for i in range(40))
                if plan.fault_for(call_key({"messages": [{"role": "user", "content": q}]})) != "stall"
            ]
            for q in plan_stall_free:
                with contextlib.suppress(openai.APIStatusError):
                    ask(c, q)
            outcomes.append(dict(server.statuses))
    assert outcomes[0] == outcomes[1]
    faulted = sum(v for k, v in outcomes[0].items() if k != "ok")
    assert 0 < faulted < len(plan_stall_free)
    assert plan.fault_for("k") == FaultPlan(rate=0.3, seed=7).fault_for("k")


def test_serves_64_requests_concurrently():
    with FakeOpenAIServer(echo, latency_s=0.2) as server, client(server) as c:
        start = time.perf_counter()
        with ThreadPoolExecutor(64) as pool:
            replies = list(pool.map(lambda i: ask(c, f"q{i}"), range(64)))
        elapsed = time.perf_counter() - start
    assert len(replies) == 64 and server.statuses == {"ok": 64}
    assert elapsed < 2.0, elapsed
