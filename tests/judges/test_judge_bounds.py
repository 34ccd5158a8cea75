"""The reply schemas' bounds on the remote path (issue 33): sent to an endpoint that takes them, so that a judge
whose reason rambles past the token limit keeps its verdict; stated in the instructions only where the endpoint
refuses them, which the signature says; and an endpoint that refuses them stops the run saying what to do."""

from __future__ import annotations

import json

import pytest

from ragmeter.core.errors import ConfigError, JudgeError
from ragmeter.core.records import Chunk, Record
from ragmeter.judges import JudgeCall, JudgeConfig, open_judge, planning_judge
from ragmeter.judges.backends.openai import endpoint_bounds
from ragmeter.judges.prompts import CORRECTNESS, REASON_CHARS, correctness_request
from ragmeter.testing.fake_openai import FakeOpenAIServer, HTTPFault

RECORD = Record(
    "q",
    "When does the library open?",
    "It opens at nine.",
    references=("It opens at nine.",),
    contexts=(Chunk(doc_id="d", text="The library opens at nine."),),
)
RAMBLE = "The answer agrees with the reference on the opening hour. " * 100  # about 5,800 characters


def rambling(body: dict) -> str:
    """A small model whose reason repeats itself: cut at the schema's maxLength when the schema has one (as
    llama.cpp's, vLLM's and Ollama's grammars close the string), else written out whole."""
    reason = body["response_format"]["json_schema"]["schema"]["properties"]["reason"]
    return json.dumps({"reason": RAMBLE[: reason.get("maxLength", len(RAMBLE))], "score": 4})


def _verdicts(server: FakeOpenAIServer, bounds: str | None) -> list:
    judge = open_judge(
        JudgeConfig(
            kind="openai", model="fake-judge", base_url=server.base_url, api_key_env=None, bounds=bounds, cache=None
        )
    )
    try:
        return judge.run([JudgeCall(CORRECTNESS, correctness_request(RECORD))]), judge.identity
    finally:
        judge.close()


def test_a_rambling_judge_keeps_its_verdict_when_the_bounds_are_sent():
    with FakeOpenAIServer(rambling, token_limit=True) as server:
        [kept], identity = _verdicts(server, None)  # a loopback endpoint: the bounds go in the schema
        sent = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert kept.failure is None and kept.verdict["score"] == 4
    assert sent["properties"]["reason"]["maxLength"] == REASON_CHARS
    assert identity == "fake-judge@t0/s0"
    with FakeOpenAIServer(rambling, token_limit=True) as server:
        [lost], identity = _verdicts(server, "instructions")
        bodies = list(server.requests)
    # without them the reason runs to the token limit, and so does the repair with four times the room
    assert lost.verdict is None and "invalid reply after one repair attempt" in lost.failure
    assert [body["max_tokens"] for body in bodies] == [CORRECTNESS.max_tokens, 4 * CORRECTNESS.max_tokens]
    assert "maxLength" not in json.dumps([body["response_format"] for body in bodies])
    assert identity == "fake-judge@t0/s0/bounds:instructions"


def test_an_endpoint_that_refuses_the_bounds_stops_the_run_saying_what_to_do():
    def strict(body: dict) -> str:
        if "maxLength" in json.dumps(body["response_format"]):
            raise HTTPFault(400, "Invalid schema for response_format 'correctness': 'maxLength' is not permitted.")
        return json.dumps({"reason": "Right.", "score": 5})

    with FakeOpenAIServer(strict) as server, pytest.raises(JudgeError, match="--judge-bounds instructions"):
        _verdicts(server, "schema")
    with FakeOpenAIServer(strict) as server:
        [outcome], _ = _verdicts(server, "instructions")
    assert outcome.verdict == {"reason": "Right.", "score": 5}


@pytest.mark.parametrize(
    ("url", "bounds"),
    [
        ("https://api.openai.com/v1", "instructions"),
        ("https://my-resource.openai.azure.com/openai", "instructions"),
        ("http://localhost:8080/v1", "schema"),
        ("http://vllm.internal:8000/v1", "schema"),
        ("https://api.openai.com.example.org/v1", "schema"),
    ],
)
def test_the_default_follows_the_endpoint(url, bounds):
    assert endpoint_bounds(url) == bounds
    config = JudgeConfig(kind="openai", model="m", base_url=url, api_key_env=None)
    assert config.reply_bounds == bounds
    planned = planning_judge(config)  # a dry run signs its plan as the run would
    try:
        assert planned.identity.endswith("/bounds:instructions") == (bounds == "instructions")
    finally:
        planned.close()


def test_no_base_url_is_openais_unless_the_environment_names_another(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert endpoint_bounds(None) == "instructions"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")  # Ollama
    assert endpoint_bounds(None) == "schema"


def test_the_local_judge_keeps_its_grammar_and_a_wrong_choice_is_refused():
    assert JudgeConfig(kind="local").reply_bounds == "schema"
    with pytest.raises(ConfigError, match="schema, instructions"):
        JudgeConfig(kind="openai", model="m", bounds="grammar")
