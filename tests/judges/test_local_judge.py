"""The real local judge: llama.cpp's server with the packaged Qwen2.5-Coder-1.5B, on clear cases.

The cases are ones the 1.5B model gets right at temperature 0 (a claim the chunk states; the same claim
with another number, which the chunk contradicts). It is a small model: on subtler cases (a claim no
chunk mentions, a hedged sentence, several claims in one sentence) it errs now and then, which the
README says.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from ragmeter import Settings, evaluate
from ragmeter.io import record_from_dict
from ragmeter.judges import LOCAL_TIMEOUT_S, Judge, JudgeCall, JudgeConfig, OpenAIBackend, open_judge
from ragmeter.judges.prompts import CLAIMS, CORRECTNESS, claims_request, correctness_request
from ragmeter.judges.local import MODEL_SHA256, packaged_model_path

pytest.importorskip("xllamacpp", reason="the local judge needs the 'local' extra: pip install 'ragmeter[local]'")

CHUNKS = [
    {"doc_id": "hours", "text": "The Central Library is open on Fridays from 9:00 to 18:00."},
    {"doc_id": "fees", "text": "A library card is free for residents; non-residents pay 25 dollars per year."},
]
QUESTION = "How much does a library card cost for non-residents?"


@pytest.fixture(scope="module")
def judge(tmp_path_factory):
    judge = open_judge(JudgeConfig(kind="local", cache=tmp_path_factory.mktemp("local-judge") / "cache.sqlite"))
    yield judge
    judge.close()


def _record(id: str, answer: str) -> dict:
    return {"id": id, "question": QUESTION, "answer": answer, "contexts": CHUNKS,
            "references": ["Non-residents pay 25 dollars per year."]}


def test_packaged_model_is_the_pinned_file() -> None:
    import hashlib

    digest = hashlib.sha256()
    with packaged_model_path().open("rb") as handle:
        while block := handle.read(1 << 24):
            digest.update(block)
    assert digest.hexdigest() == MODEL_SHA256


def test_claim_stated_in_a_chunk_vs_one_it_contradicts(judge) -> None:
    records = [_record("stated", "Non-residents pay 25 dollars per year for a library card."),
               _record("contradicted", "Non-residents pay 40 dollars per year for a library card.")]
    calls = [JudgeCall(CLAIMS, claims_request(record, record.answer), 2) for record in map(record_from_dict, records)]
    verdicts = [outcome.verdict for outcome in judge.run(calls)]
    assert [[(c["verdict"], c["chunks"]) for c in v["claims"]] for v in verdicts] == [
        [("supported", [2])], [("contradicted", [2])]]

    result = evaluate(records, metrics=["judge_faithfulness", "judge_precision"], judge=judge,
                      settings=Settings(n_resamples=200))
    assert result.judging is not None and not result.judging.failures
    assert result.judging.totals()["requests"] == 0  # the same calls: every verdict comes from the first run
    assert list(result.scores["judge_faithfulness"]) == [1.0, 0.0]
    assert list(result.scores["judge_precision"]) == [0.5, 0.0]  # the fees chunk of the two supports the first


def test_correctness_and_relevance_on_clear_cases(judge) -> None:
    records = [_record("same", "Non-residents pay 25 dollars per year."),
               _record("off", "The library opens at 9:00 on Fridays.")]
    result = evaluate(records, metrics=["judge_correctness", "judge_relevance"], judge=judge,
                      settings=Settings(n_resamples=200))
    correctness, relevance = result.scores["judge_correctness"], result.scores["judge_relevance"]
    assert correctness[0] >= 4 and correctness[1] <= 2
    assert relevance[0] >= 4 and relevance[1] <= 2


def test_the_same_calls_get_the_same_verdicts_again(judge) -> None:
    """With its one slot the server computes each request alone, so a call repeated without a cache gets the
    same reply, word for word (two slots batch requests together, and verdicts then vary between runs)."""
    uncached = Judge(OpenAIBackend(base_url=str(judge.backend._client.base_url), model=judge.backend.model,
                                   api_key_env=None, timeout_s=LOCAL_TIMEOUT_S), timeout_s=LOCAL_TIMEOUT_S)
    records = [record_from_dict(_record("same", "Non-residents pay 25 dollars per year.")),
               record_from_dict(_record("more", "Non-residents pay 25 dollars a year; residents pay nothing."))]
    calls = [JudgeCall(CORRECTNESS, correctness_request(record)) for record in records]
    try:
        first, second = uncached.run(calls), uncached.run(calls)
    finally:
        uncached.close()
    assert uncached.usage["correctness"].requests == 4
    assert [o.verdict for o in first] == [o.verdict for o in second]
    assert all(o.verdict is not None for o in first)


def test_server_listens_on_loopback_only(judge) -> None:
    base = judge.backend._client.base_url  # the local server's address, as the client uses it
    assert str(base).startswith("http://127.0.0.1:")
    with urllib.request.urlopen(f"{str(base).removesuffix('/').removesuffix('/v1')}/health", timeout=10) as reply:
        assert json.load(reply)["status"] == "ok"


def test_the_judge_stops_its_server_when_closed() -> None:
    judge = open_judge(JudgeConfig(kind="local"))
    process = judge._on_close.__self__._process  # the LocalServer's child process
    health = f"{str(judge.backend._client.base_url).removesuffix('/').removesuffix('/v1')}/health"
    with urllib.request.urlopen(health, timeout=10) as reply:
        assert json.load(reply)["status"] == "ok"
    judge.close()
    assert process.poll() is not None
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(health, timeout=5)
