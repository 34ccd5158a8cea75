"""The real local judge: llama.cpp's server with the packaged Qwen2.5-Coder-1.5B.

What is asserted is what a 1.5B model gets every time at temperature 0, not its wording: every reply matches its JSON
schema (the server's grammar enforces it, length limits included); a statement copied from a chunk is supported while
the same statement with another number is contradicted, and Faithfulness gives the copy 1.0 and the other less whether
the judge verifies the claims or only splits them (its default, the evidence check verifying); a copy of the reference
answer scores high on correctness and relevance, and higher than an answer about something else; a paraphrase is more
faithful than a claim with an added number or a widened scope (issue 15's ordering, in both claims modes); the IDK judge
tells a refusal from an answer; RADBench rates a copy of the reference above a wrong or off-topic answer; the same calls
give the same verdicts again in another order, each call reusing exactly its system message's saved slot state, or in
the shared layout (the local judge's default) its item's; the server answers its health check on loopback only and is
gone once the judge is closed, its saved states with it (also when its parent is killed). How far its verdicts agree
with human ratings on real answers is measured in benchmarks/judge/bench_judge_validity.py, not asserted here.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ragmeter import Settings, evaluate
from ragmeter.io import record_from_dict
from ragmeter.judges import (
    CLAIM_MODES,
    LOCAL_TIMEOUT_S,
    ChatReply,
    ChatRequest,
    Judge,
    JudgeCall,
    JudgeConfig,
    open_judge,
)
from ragmeter.judges.backends.local import MODEL_SHA256, packaged_model_path
from ragmeter.judges.backends.prefix_states import LocalBackend, PrefixStates, begun
from ragmeter.judges.layouts import judge_call
from ragmeter.judges.prompts import (
    CLAIM_SPLIT,
    CLAIMS,
    CORRECTNESS,
    RELEVANCE,
    claim_split_request,
    claims_request,
    correctness_request,
    relevance_request,
)

CHUNKS = [
    {"doc_id": "hours", "text": "The Central Library is open on Fridays from 9:00 to 18:00."},
    {"doc_id": "fees", "text": "A library card is free for residents; non-residents pay 25 dollars per year."},
]
FEES_CHUNK = 2  # chunks are numbered from 1 in the claims prompt
QUESTION = "How much does a library card cost for non-residents?"
REFERENCE = "Non-residents pay 25 dollars per year."
# The fees chunk's statement word for word, and the same statement with a number the chunk contradicts.
STATED = "Non-residents pay 25 dollars per year for a library card."
CONTRADICTED = "Non-residents pay 40 dollars per year for a library card."
OFF_TOPIC = "The library opens at 9:00 on Fridays."


@pytest.fixture(scope="module", autouse=True)
def llama_cpp(extra_module: Callable[[str, str], ModuleType]) -> ModuleType:
    """Every test here needs the 'local' extra: it skips without it, and fails in CI (tests/conftest.py)."""
    return extra_module("xllamacpp", "local")


@pytest.fixture(scope="module")
def judge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Judge]:
    judge = open_judge(JudgeConfig(kind="local", cache=tmp_path_factory.mktemp("local-judge") / "cache.sqlite"))
    yield judge
    judge.close()


@contextmanager
def asked_for_claims(judge: Judge, mode: str) -> Iterator[None]:
    """``judge`` asks for claims in ``mode`` (``verify`` or ``split``) inside the block."""
    default, judge.claims = judge.claims, mode
    try:
        yield
    finally:
        judge.claims = default


def _record(id: str, answer: str) -> dict[str, Any]:
    return {"id": id, "question": QUESTION, "answer": answer, "contexts": CHUNKS, "references": [REFERENCE]}


def _server_url(judge: Judge) -> str:
    """The local server's root address, as the judge's client uses it."""
    return str(judge.backend._client.base_url).removesuffix("/").removesuffix("/v1")


def _health_url(judge: Judge) -> str:
    return f"{_server_url(judge)}/health"


def schema_problems(value: Any, schema: Mapping[str, Any], where: str = "reply") -> list[str]:
    """Where ``value`` breaks the parts of JSON Schema our judge schemas use (type, required,
    additionalProperties: false, enum, maxLength, items); empty when it matches."""
    kind = schema.get("type")
    types = {"object": dict, "array": list, "string": str, "integer": int}
    if kind in types and (not isinstance(value, types[kind]) or isinstance(value, bool)):
        return [f"{where}: expected {kind}, got {value!r}"]
    problems = []
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        problems.append(f"{where}: {len(value)} characters, more than {schema['maxLength']}")
    if kind == "object":
        properties = schema.get("properties", {})
        problems += [f"{where}: missing {key!r}" for key in schema.get("required", []) if key not in value]
        if schema.get("additionalProperties") is False:
            problems += [f"{where}: unexpected {key!r}" for key in value if key not in properties]
        for key, item in value.items():
            if key in properties:
                problems += schema_problems(item, properties[key], f"{where}.{key}")
    if kind == "array":
        for i, item in enumerate(value):
            problems += schema_problems(item, schema.get("items", {}), f"{where}[{i}]")
    return problems


def test_the_schema_check_finds_what_it_should() -> None:
    # the checker above must be able to fail, or every assertion made with it would be empty
    reply = {
        "claims": [{"claim": "x" * 201, "evidence": "", "differences": "", "verdict": "maybe", "chunks": ["2"]}],
        "note": 1,
    }
    assert schema_problems(reply, CLAIMS.schema) == [
        "reply: unexpected 'note'",
        "reply.claims[0].claim: 201 characters, more than 200",
        "reply.claims[0].verdict: 'maybe' is not one of ['supported', 'contradicted', 'unsupported']",
        "reply.claims[0].chunks[0]: expected integer, got '2'",
    ]
    assert schema_problems({"reason": "ok", "score": True}, CORRECTNESS.schema) == [
        "reply.score: expected integer, got True"
    ]


def test_packaged_model_is_the_pinned_file() -> None:
    digest = hashlib.sha256()
    with packaged_model_path().open("rb") as handle:
        while block := handle.read(1 << 24):
            digest.update(block)
    assert digest.hexdigest() == MODEL_SHA256


def test_a_copied_statement_is_supported_and_a_changed_number_contradicted(judge: Judge) -> None:
    records = [_record("stated", STATED), _record("contradicted", CONTRADICTED)]
    calls = [
        JudgeCall(CLAIMS, claims_request(record, record.answer), len(CHUNKS))
        for record in map(record_from_dict, records)
    ]
    stated, contradicted = (outcome.verdict for outcome in judge.run(calls))
    for verdict in (stated, contradicted):
        assert verdict is not None and schema_problems(verdict, CLAIMS.schema) == []
        assert verdict["claims"], "each answer makes one factual claim at least"
        assert all(set(claim["chunks"]) <= {1, 2} for claim in verdict["claims"]), verdict
    assert {claim["verdict"] for claim in stated["claims"]} == {"supported"}, stated
    assert any(FEES_CHUNK in claim["chunks"] for claim in stated["claims"]), stated
    assert "contradicted" in {claim["verdict"] for claim in contradicted["claims"]}, contradicted

    with asked_for_claims(judge, "verify"):
        result = evaluate(
            records, metrics=["judge_faithfulness", "judge_precision"], judge=judge, settings=Settings(n_resamples=200)
        )
    assert result.judging is not None and not result.judging.failures
    assert result.judging.totals()["requests"] == 0  # the same calls: every verdict comes from the cache
    faithfulness, precision = result.scores["judge_faithfulness"], result.scores["judge_precision"]
    assert faithfulness[0] == 1.0 and faithfulness[1] < 1.0  # every claim supported; one contradicted
    assert 0.5 <= precision[0] <= 1.0  # the fees chunk (1 of 2) supports it at least
    assert 0.0 <= precision[1] <= 1.0


def test_the_packaged_judge_splits_and_the_check_verifies(judge: Judge) -> None:
    assert (judge.claims, judge.layout) == ("split", "shared")  # the local judge's defaults
    records = [_record("stated", STATED), _record("contradicted", CONTRADICTED)]
    for record in records:
        call = judge_call(judge, CLAIM_SPLIT, record_from_dict(record), text=record["answer"])
        verdict = judge.run([call])[0].verdict
        assert verdict is not None and schema_problems(verdict, call.request.schema) == []
        assert verdict["claims"], "each answer makes one factual claim at least"
    result = evaluate(
        records, metrics=["judge_faithfulness", "judge_precision"], judge=judge, settings=Settings(n_resamples=200)
    )
    assert result.judging is not None and not result.judging.failures
    assert result.judging.totals()["requests"] == 0  # the same calls: every claim split comes from the cache
    faithfulness, precision = result.scores["judge_faithfulness"], result.scores["judge_precision"]
    assert faithfulness[0] == 1.0 and faithfulness[1] < 1.0  # the copy holds; 40 dollars is in no chunk
    assert 0.5 <= precision[0] <= 1.0  # the fees chunk (1 of 2) supports it at least
    assert 0.0 <= precision[1] <= 1.0


def test_a_copy_of_the_reference_outscores_an_answer_about_something_else(judge: Judge) -> None:
    records = [_record("same", REFERENCE), _record("off", OFF_TOPIC)]
    result = evaluate(
        records, metrics=["judge_correctness", "judge_relevance"], judge=judge, settings=Settings(n_resamples=200)
    )
    assert result.judging is not None and not result.judging.failures
    for name in ("judge_correctness", "judge_relevance"):
        same, off = result.scores[name]
        assert same in {1.0, 2.0, 3.0, 4.0, 5.0} and off in {1.0, 2.0, 3.0, 4.0, 5.0}, name
        assert same >= 4 and off < same, (name, same, off)


# Faithfulness cases a good verdict must get (issue 15), on the fees chunk: a claim that adds a number no chunk
# holds, a claim that narrows "non-residents" to "everyone", and a correct paraphrase.
ADDED_NUMBER = "Non-residents pay 25 dollars per year, and the card takes 14 days to arrive."
NARROWED = "Everyone pays 25 dollars per year for a library card."
PARAPHRASE = "A library card costs non-residents 25 dollars a year."


@pytest.mark.parametrize("mode", CLAIM_MODES)
def test_a_paraphrase_is_more_faithful_than_an_added_number_or_a_changed_scope(judge: Judge, mode: str) -> None:
    records = [_record("paraphrase", PARAPHRASE), _record("added", ADDED_NUMBER), _record("narrowed", NARROWED)]
    with asked_for_claims(judge, mode):
        result = evaluate(
            records, metrics=["judge_faithfulness", "RL_F"], judge=judge, settings=Settings(n_resamples=200)
        )
    assert result.judging is not None and not result.judging.failures
    paraphrase, added, narrowed = result.scores["judge_faithfulness"]
    assert paraphrase == 1.0 and added < paraphrase and narrowed < paraphrase, (paraphrase, added, narrowed)
    assert list(result.scores["RL_F"]) == list(result.scores["judge_faithfulness"])  # one call serves both


MTRAG_HISTORY = [
    {"role": "user", "text": "Hi, I have questions about the Central Library."},
    {"role": "assistant", "text": "Sure, what would you like to know?"},
]


def _conversation(id: str, answer: str) -> dict[str, Any]:
    return {**_record(id, answer), "history": MTRAG_HISTORY, "answerability": "ANSWERABLE"}


def test_the_idk_judge_tells_a_refusal_from_an_answer(judge: Judge) -> None:
    records = [
        _conversation("refusal", "I'm sorry, I don't have information about the price of a library card."),
        _conversation("answer", STATED),
    ]
    # the judge's own verdicts: with the refusal check an answer would be 0 whatever the judge said
    result = evaluate(
        records, metrics=["idk_judge"], judge=judge, settings=Settings(n_resamples=200, check_evidence=False)
    )
    assert result.judging is not None and not result.judging.failures
    assert list(result.scores["idk_judge"]) == [1.0, 0.0]


def test_radbench_rates_the_reference_above_a_wrong_answer(judge: Judge) -> None:
    records = [_conversation("same", REFERENCE), _conversation("wrong", CONTRADICTED), _conversation("off", OFF_TOPIC)]
    result = evaluate(records, metrics=["RB_llm"], judge=judge, settings=Settings(n_resamples=200))
    assert result.judging is not None and not result.judging.failures
    same, wrong, off = result.scores["RB_llm"]
    assert same >= 0.7 and wrong < same and off < same, (same, wrong, off)


def test_the_same_calls_get_the_same_verdicts_in_any_order(judge: Judge) -> None:
    """A verdict does not depend on what the server computed before (issues 33 and 34): calls of three prompts
    in the ``calls`` layout, replayed without a verdict cache in another order on the same warm server, get the
    same replies word for word. The replay
    saves each system message's slot state afresh, so a state computed again must equal the first."""
    backend = judge.backend
    assert isinstance(backend, LocalBackend)
    uncached = Judge(
        LocalBackend.at(
            backend.base_url, model=backend.model, api_key_env=None, timeout_s=LOCAL_TIMEOUT_S, bounds=backend.bounds
        ),
        timeout_s=LOCAL_TIMEOUT_S,
    )
    same = record_from_dict(_record("same", REFERENCE))
    calls = [
        JudgeCall(CORRECTNESS, correctness_request(same)),
        JudgeCall(CLAIM_SPLIT, claim_split_request(STATED)),
        JudgeCall(RELEVANCE, relevance_request(same)),
    ]
    first = judge.run(calls)
    try:
        again = uncached.run([calls[i] for i in (2, 1, 0)])
    finally:
        uncached.close()
    assert sum(u.requests for u in uncached.usage.values()) == 3
    assert all(o.verdict is not None for o in first)
    assert schema_problems(first[0].verdict, CORRECTNESS.schema) == []
    assert [o.verdict for o in first] == [again[i].verdict for i in (2, 1, 0)]


def test_the_same_shared_layout_calls_get_the_same_verdicts_in_any_order(judge: Judge) -> None:
    """The same for the shared layout (issue 46), whose calls about an item start from the item's saved state:
    two items' calls, replayed without a verdict cache with the items interleaved (each item's state computed
    afresh, and restored after the other item's), get the same replies word for word."""
    backend = judge.backend
    assert isinstance(backend, LocalBackend) and judge.layout == "shared"
    uncached = Judge(
        LocalBackend.at(
            backend.base_url, model=backend.model, api_key_env=None, timeout_s=LOCAL_TIMEOUT_S, bounds=backend.bounds
        ),
        timeout_s=LOCAL_TIMEOUT_S,
        layout="shared",
    )
    same, off = record_from_dict(_record("same", REFERENCE)), record_from_dict(_record("off", OFF_TOPIC))
    calls = [
        judge_call(judge, prompt, record, text=record.answer)
        for record in (same, off)
        for prompt in (CORRECTNESS, RELEVANCE, CLAIM_SPLIT)
    ]
    first = judge.run(calls)
    order = (5, 0, 4, 1, 3, 2)
    try:
        again = uncached.run([calls[i] for i in order])
    finally:
        uncached.close()
    assert sum(u.requests for u in uncached.usage.values()) == 6
    assert all(o.verdict is not None for o in first)
    assert [o.verdict for o in first] == [again[order.index(i)].verdict for i in range(6)]


def test_the_local_judge_writes_only_the_digit_and_brace_of_a_score_begun_for_it(judge: Judge) -> None:
    """llama.cpp's server continues the last, assistant, message: the shared layout's score is begun with
    ``{"score": `` and the judge writes the digit and the brace under the continuation's grammar (issue 46)."""
    request = judge_call(judge, CORRECTNESS, record_from_dict(_record("begun", REFERENCE))).request
    assert request.reply_start == '{"score": '
    server = judge.backend
    assert isinstance(server, LocalBackend)
    backend = LocalBackend.at(
        server.base_url, model=server.model, api_key_env=None, timeout_s=LOCAL_TIMEOUT_S, bounds=server.bounds
    )

    async def ask() -> ChatReply:
        try:
            return await backend.complete(request)
        finally:
            await backend.aclose()  # on the loop its connection was opened on

    reply = asyncio.run(ask())
    assert re.fullmatch(r'\{"score": [1-5]\}', reply.text), reply.text
    assert reply.finish_reason == "stop" and reply.completion_tokens <= 3


def _timings(judge: Judge, request: ChatRequest) -> dict[str, Any]:
    """llama.cpp's timings of ``request`` sent as the judge sends it (its reply begun where it is; one token
    generated) to the judge's server."""
    body = {
        "messages": [{"role": role, "content": content} for role, content in request.messages],
        "max_tokens": 1,
        "temperature": 0,
        "cache_prompt": True,
    }
    post = urllib.request.Request(
        f"{_server_url(judge)}/v1/chat/completions",
        json.dumps(begun(body, request)).encode(),
        {"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(post, timeout=LOCAL_TIMEOUT_S) as reply:
        return dict(json.load(reply)["timings"])


def test_each_call_reuses_its_system_message_and_computes_the_rest(judge: Judge) -> None:
    """The slot holds the restored system message when a call starts, and nothing more: llama.cpp reports
    exactly those tokens taken from its cache, the rest computed."""
    states = PrefixStates(_server_url(judge), timeout_s=LOCAL_TIMEOUT_S)
    request = relevance_request(record_from_dict(_record("same", REFERENCE)))
    lead = request.messages[:1]
    assert lead[0][0] == "system"
    states.restore(lead)
    timings = _timings(judge, request)
    assert timings["cache_n"] == len(states.lead_tokens(lead)) > 100
    assert timings["prompt_n"] > 0


def test_each_shared_call_reuses_its_item_and_computes_its_task(judge: Judge) -> None:
    """In the shared layout the slot holds the system message and the item when a call starts: llama.cpp takes
    exactly those tokens from its cache and computes the task's line alone."""
    states = judge.backend._states  # the judge's own: its system message is saved already, the item is not
    record = record_from_dict(_record("item-reuse", REFERENCE))
    request = judge_call(judge, RELEVANCE, record).request
    lead = request.messages[:1]
    states.restore(lead, request.item_prefix)
    timings = _timings(judge, request)
    shared = len(states.prefix_tokens(lead, request.item_prefix))
    assert timings["cache_n"] == shared > len(states.lead_tokens(lead)) + 20
    assert 8 < timings["prompt_n"] < 20  # "TASK relevance.", the end of the message and the begun '{"score": '


def test_a_stored_system_message_state_is_restored_and_a_broken_one_computed_again(
    judge: Judge, tmp_path: Path
) -> None:
    """A lead's state kept in the store is restored by the next states of the same build without computing it
    (no completion request), and a call after it takes exactly the lead's tokens from the cache, as after the
    state computed; a stored file whose bytes are not those saved (cut short, as a full disk leaves it) is never
    handed to the server, which can stop on one: it is computed afresh and replaced."""
    folder = judge._on_close.__self__.states_dir  # the server's slot save folder
    # a short system message of its own: what is stored and restored does not depend on its length
    request = dataclasses.replace(
        judge_call(judge, CORRECTNESS, record_from_dict(_record("same", REFERENCE))).request,
        messages=(
            ("system", "Grade the ANSWER against the REFERENCE from 1 to 5."),
            ("user", f"<answer>{REFERENCE}</answer> <reference>{REFERENCE}</reference>"),
        ),
        shared=0,
    )
    lead = request.messages[:1]

    def states() -> tuple[PrefixStates, list[str]]:
        made = PrefixStates(
            _server_url(judge), timeout_s=LOCAL_TIMEOUT_S, folder=folder, store=tmp_path, build="test-build"
        )
        paths: list[str] = []
        post = made._post
        made._post = lambda path, body: paths.append(path) or post(path, body)  # type: ignore[method-assign]
        return made, paths

    first, first_paths = states()
    first.restore(lead)
    assert "/completion" in first_paths and len(list(tmp_path.glob("*.bin"))) == 1
    computed = _timings(judge, request)
    again, again_paths = states()
    again.restore(lead)
    assert "/completion" not in again_paths
    restored = _timings(judge, request)
    assert restored["cache_n"] == computed["cache_n"] == len(again.lead_tokens(lead))
    (stored,) = tmp_path.glob("*.bin")
    size = stored.stat().st_size
    stored.write_bytes(stored.read_bytes()[:1000])
    broken, broken_paths = states()
    broken.restore(lead)
    assert "/completion" in broken_paths and stored.stat().st_size == size
    assert not any("action=restore" in path for path in broken_paths)
    with urllib.request.urlopen(_health_url(judge), timeout=10) as response:
        assert response.status == 200


def test_server_listens_on_loopback_only_and_is_healthy(judge: Judge) -> None:
    assert str(judge.backend._client.base_url).startswith("http://127.0.0.1:")
    with urllib.request.urlopen(_health_url(judge), timeout=10) as reply:
        assert reply.status == 200 and json.load(reply)["status"] == "ok"


def test_the_judge_stops_its_server_when_closed() -> None:
    judge = open_judge(JudgeConfig(kind="local"))
    server = judge._on_close.__self__  # the LocalServer
    process, states = server._process, server.states_dir
    health = _health_url(judge)
    with urllib.request.urlopen(health, timeout=10) as reply:
        assert json.load(reply)["status"] == "ok"
    judge.close()
    assert process.poll() is not None
    assert states is not None and not states.exists()  # its saved slot states are gone with it
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(health, timeout=5)


def test_a_server_whose_parent_is_killed_removes_its_saved_states() -> None:
    """The server's child process exits when its parent dies (its stdin closes), and takes its slot save folder
    with it: a killed run leaves no states behind in the temporary folder."""
    script = (
        "import sys; from ragmeter.judges import LocalServer; server = LocalServer(); server.start(); "
        "print(server.states_dir, flush=True); sys.stdin.read()"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    states = Path(parent.stdout.readline().strip())
    assert states.is_dir()
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 30
    while states.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not states.exists()
