"""The judge engine end to end: real ``openai`` client, loopback fake server, scripted verdicts.

Every expected number below is worked out by hand from the rules in ``judge_script`` (see
``EXPECTED``); nothing is taken from a previous run of ragmeter except where a test is *about*
equality between two runs (faults vs. no faults, cache vs. no cache).
"""

from __future__ import annotations

import json
import math
import re
import threading
import time

import numpy as np
import pytest

from ragmeter import Settings, evaluate, render_report
from ragmeter.core.records import Record
from ragmeter.judges import Judge, JudgeCache, JudgeCall, OpenAIBackend
from ragmeter.judges.cache import CachedVerdict
from ragmeter.judges.prompts import CORRECTNESS, PROMPTS, correctness_request
from ragmeter.testing.fake_openai import FAULT_KINDS, FakeOpenAIServer, FaultPlan
from ragmeter.testing.scripted_judge import records, respond

JUDGED = (
    "judge_correctness",
    "judge_faithfulness",
    "judge_precision",
    "judge_recall",
    "judge_relevance",
    "judge_score",
)
NAN = math.nan


def _score(correctness: float, f: float, p: float, r: float) -> float:
    """0.4·C + 0.2·(F + P + R), each ratio put on 1–5 as 1 + 4·ratio (SPEC §3)."""
    return 0.4 * correctness + 0.2 * ((1 + 4 * f) + (1 + 4 * p) + (1 + 4 * r))


# By hand, per record shape (judge_script.records: chunk 1 "The museum i opens at nine. Tickets cost five
# euros.", chunk 2 "The museum i closes at six.", chunk 3 "Parking near museum i is free."; the reference
# "The museum i opens at nine."):
# r0  two claims, in chunk 1 and chunk 2: F 1, P 2/3, R 1; answer ≠ reference: C 2; relevance 4.
# r1  one claim in chunk 1, "has a cafe" in none: F 1/2, P 1/3, R 1/2; C 2; relevance 4.
# r2  "is not free": contradicted by chunk 3 (contradicting chunks do not count for P): F 0, P 0, R 0; C 2.
# r3  "I don't know." abstains: claims of the reference, one, in chunk 1: F 1.0 noted, P 1/3, R 1;
#     C 2; relevance 1 ("don't know").
# r4  no chunks; answer == reference: C 5; F 1.0 and R 1.0 noted, P undefined, so the score is undefined.
EXPECTED = {
    "judge_correctness": [2, 2, 2, 2, 5],
    "judge_faithfulness": [1, 0.5, 0, 1, 1],
    "judge_precision": [2 / 3, 1 / 3, 0, 1 / 3, NAN],
    "judge_recall": [1, 0.5, 0, 1, 1],
    "judge_relevance": [4, 4, 4, 1, 4],
    "judge_score": [
        _score(2, 1, 2 / 3, 1),
        _score(2, 0.5, 1 / 3, 0.5),
        _score(2, 0, 0, 0),
        _score(2, 1, 1 / 3, 1),
        NAN,
    ],
}
ABSTAINS = "the answer abstains: no claim to verify"
OF_REFERENCE = "claims of the reference (the answer abstains)"
NO_CONTEXT = "No context to verify"
NO_CHUNKS = "record has no retrieved chunks"


def make_judge(
    server: FakeOpenAIServer,
    *,
    cache=None,
    concurrency: int = 8,
    timeout_s: float = 5.0,
    backoff_s: float = 0.01,
    max_attempts: int = 6,
    bounds: str = "schema",
) -> Judge:
    """A judge on the fake server. Its timeout leaves a loaded runner room: a call that timed out would be sent
    again, and the requests and tokens the tests count would not be the hand-worked ones."""
    backend = OpenAIBackend(
        base_url=server.base_url, model="fake-judge", api_key_env=None, timeout_s=timeout_s, bounds=bounds
    )
    return Judge(
        backend,
        cache=JudgeCache(cache) if cache is not None else None,
        concurrency=concurrency,
        timeout_s=timeout_s,
        backoff_s=backoff_s,
        max_attempts=max_attempts,
    )


def judged_run(server: FakeOpenAIServer, n: int, **judge_options):
    judge = make_judge(server, **judge_options)
    try:
        return evaluate(records(n), metrics=["judged"], judge=judge, settings=Settings(n_resamples=200))
    finally:
        judge.close()


def score_call(i: int) -> JudgeCall:
    """A distinct correctness call whose answer equals its reference: the scripted score is 5."""
    return JudgeCall(
        CORRECTNESS,
        correctness_request(Record(f"q{i}", f"Question {i}?", f"Answer {i}.", references=(f"Answer {i}.",))),
    )


def test_scores_through_the_real_client_are_the_hand_worked_ones():
    with FakeOpenAIServer(respond) as server:
        result = judged_run(server, 10)
    for metric in JUDGED:
        np.testing.assert_allclose(result.scores[metric], EXPECTED[metric] * 2, rtol=1e-12, atol=0, err_msg=metric)
    assert result.undefined["judge_precision"] == {4: NO_CHUNKS, 9: NO_CHUNKS}
    assert result.undefined["judge_score"] == {
        4: f"precision is undefined: {NO_CHUNKS}",
        9: f"precision is undefined: {NO_CHUNKS}",
    }
    for metric in ("judge_correctness", "judge_faithfulness", "judge_recall", "judge_relevance"):
        assert result.undefined[metric] == {}, metric
    assert result.notes["judge_faithfulness"] == {3: ABSTAINS, 4: NO_CONTEXT, 8: ABSTAINS, 9: NO_CONTEXT}
    assert result.notes["judge_precision"] == {3: OF_REFERENCE, 8: OF_REFERENCE}
    assert result.notes["judge_recall"] == {3: OF_REFERENCE, 4: NO_CONTEXT, 8: OF_REFERENCE, 9: NO_CONTEXT}
    # calls: claims for the 8 records with chunks, correctness and relevance for all 10
    totals = result.judging.totals()
    assert {name: u.calls for name, u in result.judging.usage.items()} == {
        "claims": 8,
        "correctness": 10,
        "relevance": 10,
    }
    assert (totals["requests"], totals["retries"], totals["repairs"], totals["failures"]) == (28, 0, 0, 0)
    assert len(server.requests) == 28
    assert result.judging.failures == ()


def test_faults_on_first_attempts_change_no_score():
    with FakeOpenAIServer(respond) as server:
        clean = judged_run(server, 40)
    assert clean.judging.failures == ()
    seen: set[str] = set()
    for seed in (1, 2):
        # Only a stall may outlast the client's timeout, even on a loaded runner: a faulty reply that came after
        # it would be a fault the client never read, and would cost a retry instead of its repair.
        with FakeOpenAIServer(respond, faults=FaultPlan(rate=0.3, seed=seed, stall_s=6.0)) as server:
            result = judged_run(server, 40, timeout_s=2.0)
            statuses = dict(server.statuses)
        seen |= {kind for kind, count in statuses.items() if count and kind != "ok"}
        assert result.judging.failures == (), result.judging.failures[:3]
        for metric in JUDGED:
            np.testing.assert_array_equal(result.scores[metric], clean.scores[metric], err_msg=metric)
            assert result.undefined[metric] == clean.undefined[metric], metric
            summary = result.summary(metric)
            assert summary.n + summary.n_undefined == 40, metric
            assert summary.n_undefined == len(clean.undefined[metric]), metric
        totals = result.judging.totals()
        assert totals["failures"] == 0
        # a 429, 500 or stall costs the call one retry (more only if a clean attempt also timed out);
        # a truncated, wrong-shape or cut-off reply costs exactly one repair, and nothing else does.
        transient = sum(statuses.get(kind, 0) for kind in ("429", "500", "stall"))
        invalid = sum(statuses.get(kind, 0) for kind in ("truncated", "wrong_schema", "length"))
        assert transient > 0 and invalid > 0, statuses
        assert totals["retries"] >= transient
        assert totals["repairs"] == invalid
    assert seen == set(FAULT_KINDS)


def test_retry_after_is_honoured_and_halves_the_concurrency_limit():
    with FakeOpenAIServer(respond, faults=FaultPlan(rate=1.0, kinds=("429",), retry_after="0.4")) as server:
        judge = make_judge(server, concurrency=8, timeout_s=5.0, backoff_s=0.001)
        try:
            start = time.perf_counter()
            [outcome] = judge.run([score_call(0)])
            elapsed = time.perf_counter() - start
            limit = judge._limit.limit
        finally:
            judge.close()
        assert dict(server.statuses) == {"429": 1, "ok": 1}
    assert outcome.verdict == {"reason": "scripted", "score": 5}
    assert outcome.failure is None and outcome.attempts == 2
    assert elapsed >= 0.4  # the backoff alone would be 0.001 s × jitter
    # 8 halved once by the 429; one success since is fewer than the 4 needed to raise it again
    assert limit == 4
    assert judge.usage["correctness"].retries == 1


def test_a_second_run_on_the_same_cache_makes_no_request(tmp_path):
    cache = tmp_path / "judge.sqlite"
    with FakeOpenAIServer(respond) as server:
        first = judged_run(server, 10, cache=cache)
        sent = len(server.requests)
        second = judged_run(server, 10, cache=cache)
        assert len(server.requests) == sent == 28
    for metric in JUDGED:
        np.testing.assert_array_equal(second.scores[metric], first.scores[metric], err_msg=metric)
        assert second.undefined[metric] == first.undefined[metric]
        assert second.notes[metric] == first.notes[metric]
    for name, usage in second.judging.usage.items():
        assert usage.cached == usage.calls > 0, name
        assert (usage.requests, usage.prompt_tokens, usage.completion_tokens) == (0, 0, 0), name
        assert usage.cached_prompt_tokens == first.judging.usage[name].prompt_tokens > 0, name
    assert not second.judging.prompt_tokens.any() and not second.judging.completion_tokens.any()


def test_concurrency_is_bounded_and_used():
    in_flight, most = 0, 0
    lock = threading.Lock()

    def slow_respond(body: dict) -> str:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        time.sleep(0.3)  # long enough for every request the judge lets out to arrive meanwhile
        with lock:
            in_flight -= 1
        return respond(body)

    with FakeOpenAIServer(slow_respond) as server:
        judge = make_judge(server, concurrency=4, timeout_s=5.0)
        try:
            outcomes = judge.run([score_call(i) for i in range(8)])
        finally:
            judge.close()
    assert [o.verdict["score"] for o in outcomes] == [5] * 8
    assert most == 4  # four at once: never more, and the limit is used


# The reply schemas as an endpoint that takes no bounds gets them (--judge-bounds instructions), written out by
# hand: OpenAI's strict mode rejects maxLength, so no string carries its length limit here.
_SCORE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["reason", "score"],
    "properties": {"reason": {"type": "string"}, "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}},
}
REMOTE_SCHEMAS = {
    "correctness": _SCORE,
    "relevance": _SCORE,
    "claims": {
        "type": "object",
        "additionalProperties": False,
        "required": ["claims"],
        "properties": {
            "claims": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["claim", "evidence", "differences", "verdict", "chunks"],
                    "properties": {
                        "claim": {"type": "string"},
                        "evidence": {"type": "string"},
                        "differences": {"type": "string"},
                        "verdict": {"type": "string", "enum": ["supported", "contradicted", "unsupported"]},
                        # every record of judge_script has three chunks: only 1, 2 or 3 can be named
                        "chunks": {"type": "array", "items": {"type": "integer", "enum": [1, 2, 3]}},
                    },
                },
            }
        },
    },
}


def test_every_request_asks_for_its_prompts_json_schema():
    with FakeOpenAIServer(respond) as server:
        judged_run(server, 5, bounds="instructions")
        bodies = list(server.requests)
    assert len(bodies) == 14  # claims for r0–r3, correctness and relevance for all five
    for body in bodies:
        name = body["response_format"]["json_schema"]["name"]
        assert body["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": name, "strict": True, "schema": REMOTE_SCHEMAS[name]},
        }
        assert (body["model"], body["temperature"], body["seed"], body["max_tokens"]) == (
            "fake-judge",
            0.0,
            0,
            PROMPTS[name].max_tokens,
        )
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert body["messages"][0]["content"] == PROMPTS[name].instructions


def test_tokens_per_prompt_and_per_item_and_the_cost_are_what_the_server_counted():
    """The fake counts len(json.dumps(messages)) // 4 prompt and len(reply) // 4 completion tokens per
    request; the expected figures are recomputed here from the bodies it received."""
    with FakeOpenAIServer(respond) as server:
        result = judged_run(server, 10)
        bodies = list(server.requests)
    by_prompt: dict[str, list[int]] = {}
    by_item = np.zeros((10, 2), dtype=np.int64)
    for body in bodies:
        prompt = max(1, len(json.dumps(body["messages"])) // 4)
        completion = max(1, len(respond(body)) // 4)
        tokens = by_prompt.setdefault(body["response_format"]["json_schema"]["name"], [0, 0])
        tokens[0] += prompt
        tokens[1] += completion
        item = int(re.search(r"museum (\d+)\b", body["messages"][1]["content"]).group(1))
        by_item[item] += (prompt, completion)
    judging = result.judging
    assert {name: [u.prompt_tokens, u.completion_tokens] for name, u in judging.usage.items()} == by_prompt
    np.testing.assert_array_equal(judging.prompt_tokens, by_item[:, 0])
    np.testing.assert_array_equal(judging.completion_tokens, by_item[:, 1])
    prompt_total, completion_total = by_item.sum(axis=0)
    cost = (prompt_total * 0.5 + completion_total * 2.0) / 1e6
    assert judging.cost(0.5, 2.0) == pytest.approx(cost, rel=1e-12)
    report = render_report(result, title="t", prices=(0.5, 2.0))
    assert f"Cost this run: {cost:.4f} at 0.5 / 2 per million prompt / completion tokens" in report
    assert f"Tokens spent this run: {prompt_total + completion_total} " in report


def test_one_cache_file_takes_writers_from_several_connections_at_once(tmp_path):
    """Four connections (as four processes would have) open one new file at the same moment and write 250
    verdicts each: every one is stored and read back, none is lost to a locked database (opening a new file
    in WAL mode at the same moment used to fail with "database is locked" about one time in eight)."""
    path = tmp_path / "shared.sqlite"
    errors: list[BaseException] = []

    def write(writer: int) -> None:
        cache = JudgeCache(path)
        try:
            for i in range(250):
                cache.put(f"{writer}-{i}", "judge", CachedVerdict({"score": i % 5 + 1}, None, None, i, 1))
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)
        finally:
            cache.close()

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    cache = JudgeCache(path)
    try:
        assert len(cache) == 1000
        assert cache.get("3-249") == CachedVerdict({"score": 5}, None, None, 249, 1)
        assert cache.present([f"{w}-{i}" for w in range(4) for i in range(250)]) == {
            f"{w}-{i}" for w in range(4) for i in range(250)
        }
    finally:
        cache.close()
