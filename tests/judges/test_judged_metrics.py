"""Seed 002's judged metrics: the seed's case study from given verdicts, the formulas, SPEC §3's edge cases."""

from __future__ import annotations

import json
import math

import pytest

from ragmeter import Settings, evaluate
from ragmeter.core.errors import ConfigError
from ragmeter.judges import ChatRequest, Judge, ScriptedBackend
from ragmeter.metrics.judged import (
    Claim,
    claim_recall,
    context_precision,
    faithfulness,
    five_point,
    weighted_score,
)

SETTINGS = Settings(n_resamples=200)

# Seed 002, section 6.
CASE_STUDY = {
    "id": "bci",
    "question": "Do you think this kind of technology is exciting or concerning?",
    "answer": "Game changer for disabilities, but emotionally exhausting.",
    "references": ["Mostly exciting, though there are some risks."],
    "contexts": [
        {
            "doc_id": "c1",
            "text": "Interviewer: What's a benefit you can imagine?\nInterviewee: For people with "
            "disabilities—especially speech disabilities—it could be a game changer. Also might "
            "help people with anxiety express themselves more easily.",
        },
        {
            "doc_id": "c2",
            "text": "Interviewer: And a possible downside?\nInterviewee: Mental fatigue maybe? Or like, "
            "accidentally leaking a private thought. I think it could be emotionally exhausting "
            "to always filter your own brain.",
        },
        {
            "doc_id": "c3",
            "text": "Interviewer: Could this tech exist soon?\nInterviewee: I mean, we're not *that* far "
            "off. With the pace of brain-computer interface research? It's coming. So yeah, maybe "
            "within our lifetime.",
        },
    ],
}
CASE_VERDICTS = {
    "claims": {
        "claims": [
            {
                "claim": "Game changer for disabilities",
                "evidence": "it could be a game changer",
                "differences": "none",
                "verdict": "supported",
                "chunks": [1],
            },
            {
                "claim": "emotionally exhausting",
                "evidence": "it could be emotionally exhausting",
                "differences": "none",
                "verdict": "supported",
                "chunks": [2],
            },
        ]
    },
    "correctness": {"reason": "partial overlap", "score": 3},
    "relevance": {"reason": "mostly on topic", "score": 4},
}


def _given(verdicts: dict[str, dict]) -> ScriptedBackend:
    return ScriptedBackend(lambda request: json.dumps(verdicts[request.schema_name]))


def _run(records: list[dict], verdicts: dict[str, dict]):
    with Judge(_given(verdicts)) as judge:
        return evaluate(records, metrics=["judged"], judge=judge, settings=SETTINGS)


def test_case_study_from_given_verdicts() -> None:
    result = _run([CASE_STUDY], CASE_VERDICTS)
    value = {m: float(result.scores[m][0]) for m in result.metrics}
    # Seed 002's table, on its 1–5 scale (1 + 4·ratio): faithfulness 5, precision 3.7, recall 5.
    assert value["judge_faithfulness"] == 1.0  # both claims supported: 2/2 → 5
    assert value["judge_precision"] == pytest.approx(2 / 3)  # chunks 1 and 2 of 3 used → 1 + 8/3 ≈ 3.7
    assert value["judge_recall"] == 1.0  # → 5
    assert value["judge_correctness"] == 3.0
    assert value["judge_relevance"] == 4.0
    # 0.4·3 + 0.2·(5 + 11/3 + 5) = 1.2 + 0.2·41/3 = 1.2 + 41/15 = 59/15 ≈ 3.933
    assert value["judge_score"] == pytest.approx(59 / 15)


def test_one_claims_call_serves_faithfulness_precision_and_recall() -> None:
    backend = _given(CASE_VERDICTS)
    with Judge(backend) as judge:
        result = evaluate([CASE_STUDY], metrics=["judged"], judge=judge, settings=SETTINGS)
    assert sorted(r.schema_name for r in backend.requests) == ["claims", "correctness", "relevance"]
    assert result.judging is not None and result.judging.usage["claims"].calls == 1


def test_formulas_by_hand() -> None:
    claims = [
        Claim("a", "supported", (1, 2)),
        Claim("b", "contradicted", (3,)),
        Claim("c", "unsupported"),
        Claim("d", "supported", (2,)),
    ]
    assert faithfulness(claims) == 0.5
    assert claim_recall(claims) == 0.5
    assert context_precision(claims, 4) == 0.5  # chunks 1 and 2 support; 3 only contradicts
    assert math.isnan(context_precision(claims, 0))  # no chunk
    assert math.isnan(faithfulness([]))
    assert five_point(0.0) == 1.0 and five_point(1.0) == 5.0
    assert weighted_score(5.0, 1.0, 1.0, 1.0) == pytest.approx(5.0)
    assert weighted_score(1.0, 0.0, 0.0, 0.0) == pytest.approx(1.0)


def test_no_context_rules_of_spec_3() -> None:
    record = {**CASE_STUDY, "contexts": []}
    result = _run([record], CASE_VERDICTS)
    assert result.scores["judge_faithfulness"][0] == 1.0
    assert result.notes["judge_faithfulness"][0] == "No context to verify"
    assert math.isnan(result.scores["judge_precision"][0])
    assert result.undefined["judge_precision"][0] == "record has no retrieved chunks"
    assert result.scores["judge_recall"][0] == 1.0
    assert "precision is undefined" in result.undefined["judge_score"][0]
    assert result.summary("judge_precision").n_undefined == 1


def test_abstaining_answer_takes_the_reference_claims() -> None:
    backend = _given(CASE_VERDICTS)
    record = {**CASE_STUDY, "answer": "I don't know."}
    with Judge(backend) as judge:
        result = evaluate(
            [record], metrics=["judge_precision", "judge_recall", "judge_faithfulness"], judge=judge, settings=SETTINGS
        )
    claims_request = next(r for r in backend.requests if r.schema_name == "claims")
    assert "<text>\nMostly exciting, though there are some risks.\n</text>" in claims_request.messages[1][1]
    assert result.scores["judge_precision"][0] == pytest.approx(2 / 3)
    assert result.notes["judge_precision"][0] == "claims of the reference (the answer abstains)"
    assert result.notes["judge_faithfulness"][0] == "the answer abstains: no claim to verify"


def test_abstaining_answer_without_reference_is_undefined() -> None:
    record = {**CASE_STUDY, "answer": "I don't know.", "references": []}
    result = _run([record], CASE_VERDICTS)
    assert "no reference to take claims from" in result.undefined["judge_recall"][0]
    assert "no reference to take claims from" in result.undefined["judge_precision"][0]
    assert result.undefined["judge_correctness"][0] == "record has no reference answer"


def test_no_claim_found() -> None:
    unchecked = Settings(n_resamples=200, check_evidence=False)
    with Judge(_given({**CASE_VERDICTS, "claims": {"claims": []}})) as judge:
        result = evaluate([CASE_STUDY], metrics=["judged"], judge=judge, settings=unchecked)
    assert result.scores["judge_faithfulness"][0] == 1.0
    assert result.notes["judge_faithfulness"][0] == "the judge found no factual claim"
    assert result.scores["judge_precision"][0] == 0.0
    assert result.scores["judge_recall"][0] == 1.0


def test_the_sentences_an_empty_claims_list_leaves_out_are_checked() -> None:
    # the answer's one sentence is checked on its own: game, changer, disabl (chunk 1), emot, exhaust (chunk 2)
    result = _run([CASE_STUDY], {**CASE_VERDICTS, "claims": {"claims": []}})
    assert result.scores["judge_faithfulness"][0] == 1.0
    assert result.scores["judge_precision"][0] == 0.0  # a sentence the check supports names no chunk
    # a sentence no chunk holds: 0 of its stems (ticket, cost, dollar) and its number are in the chunks
    record = {**CASE_STUDY, "answer": "Tickets cost 40 dollars."}
    result = _run([record], {**CASE_VERDICTS, "claims": {"claims": []}})
    assert result.scores["judge_faithfulness"][0] == 0.0
    assert result.notes["judge_faithfulness"][0] == "1 sentence(s) the judge's claims left out, checked on their own"


def test_claims_request_shows_every_chunk_numbered() -> None:
    backend = _given(CASE_VERDICTS)
    with Judge(backend) as judge:
        evaluate([CASE_STUDY], metrics=["judge_faithfulness"], judge=judge, settings=SETTINGS)
    request: ChatRequest = backend.requests[0]
    user = request.messages[1][1]
    assert [f'<chunk id="{n}">' in user for n in (1, 2, 3)] == [True, True, True]
    system = request.messages[0]
    assert system[0] == "system" and not any(c["text"][:40] in system[1] for c in CASE_STUDY["contexts"])


def test_judged_metrics_without_a_judge_fail_before_scoring() -> None:
    from ragmeter.core.errors import ConfigError

    with pytest.raises(ConfigError, match="need a judge"):
        evaluate([CASE_STUDY], metrics=["judge_relevance"], settings=SETTINGS)


def test_a_judged_run_writes_items_every_few_calls_and_shows_the_calls(capsys: pytest.CaptureFixture[str]) -> None:
    # The defect: a judged run wrote nothing and showed no progress until a batch of 256 items was done.
    records = [{"id": f"r{i}", "question": f"What is {i}?", "answer": f"It is {i}."} for i in range(20)]
    batches: list[list[str]] = []
    judge = Judge(ScriptedBackend(lambda request: '{"reason": "on topic", "score": 4}'), concurrency=2)
    with judge:
        result = evaluate(
            records,
            metrics=["judge_relevance"],
            judge=judge,
            progress=True,
            total=20,
            on_items=lambda rows: batches.append([row["id"] for row in rows]),
        )
    assert [len(batch) for batch in batches] == [8, 8, 4]  # 4 items per concurrent request
    assert result.summary("judge_relevance").value == 4.0
    shown = capsys.readouterr().err
    assert "judge calls 1/8 in this batch" in shown and "judge calls 8/8 in this batch" in shown
    assert "judge calls 4/4 in this batch" in shown
    assert judge.on_call_done is None  # the run's progress hook is removed when the run ends


def test_a_claims_list_at_its_cap_is_noted() -> None:
    record = {
        "id": "a",
        "question": "When?",
        "answer": "It opens at six.",
        "references": ["six"],
        "contexts": [{"doc_id": "d", "text": "It opens at six."}],
    }
    six = [
        {
            "claim": "It opens at six.",
            "evidence": "It opens at six.",
            "differences": "none",
            "verdict": "supported",
            "chunks": [1],
        }
    ] * 6  # one sentence: the cap is 4 + 2 = 6
    judge = Judge(ScriptedBackend(lambda request: json.dumps({"claims": six})))
    with judge:
        result = evaluate([record], metrics=["judge_faithfulness", "judge_recall"], judge=judge)
    assert result.scores["judge_faithfulness"][0] == 1.0
    for name in ("judge_faithfulness", "judge_recall"):
        assert result.notes[name] == {0: "the judge listed the most claims allowed (6): later ones may be missing"}


# A judge that splits only: its claims of the case study's answer (worked by hand against the chunks: game, changer,
# disabl all in chunk 1; emot, exhaust in chunk 2; cure, anxieti, year: only anxieti, in chunk 1, 1 of 3 < 0.7).
SPLIT_ANSWER = "Game changer for disabilities. It cures anxiety in a year."
SPLIT_VERDICTS = {
    **CASE_VERDICTS,
    "claim_split": {"claims": ["It is a game changer for disabilities.", "It cures anxiety in a year."]},
}


def _split_run(records: list[dict], verdicts: dict[str, dict], settings: Settings = SETTINGS):
    backend = _given(verdicts)
    with Judge(backend, claims="split") as judge:
        return evaluate(records, metrics=["judged"], judge=judge, settings=settings), backend


def test_a_judge_that_splits_only_leaves_the_verdicts_to_the_evidence_check() -> None:
    result, backend = _split_run([{**CASE_STUDY, "answer": SPLIT_ANSWER}], SPLIT_VERDICTS)
    assert sorted(r.schema_name for r in backend.requests) == ["claim_split", "correctness", "relevance"]
    split = next(r for r in backend.requests if r.schema_name == "claim_split")
    assert "<chunk" not in split.messages[1][1] and f"<text>\n{SPLIT_ANSWER}\n</text>" in split.messages[1][1]
    assert result.scores["judge_faithfulness"][0] == 0.5  # the first claim holds, the second does not
    assert result.scores["judge_recall"][0] == 0.5
    assert result.scores["judge_precision"][0] == pytest.approx(1 / 3)  # chunk 1 supports; 2 and 3 do not
    signature = result.signatures["judge_faithfulness"].settings
    assert signature["claims"] == "split" and "/claim_split:" in signature["judge:claims"]


def test_a_split_judge_names_the_chunks_the_check_found() -> None:
    # the seed's case study with the split judge: 2 claims, chunks 1 and 2 of 3, as the judge that verifies
    verdicts = {
        **CASE_VERDICTS,
        "claim_split": {"claims": ["It is a game changer for disabilities.", "It is emotionally exhausting."]},
    }
    result, _ = _split_run([CASE_STUDY], verdicts)
    assert result.scores["judge_faithfulness"][0] == 1.0
    assert result.scores["judge_precision"][0] == pytest.approx(2 / 3)
    assert result.scores["judge_score"][0] == pytest.approx(59 / 15)


def test_a_split_judge_without_the_evidence_check_is_refused() -> None:
    with pytest.raises(ConfigError, match="evidence check"):
        _split_run([CASE_STUDY], SPLIT_VERDICTS, Settings(n_resamples=200, check_evidence=False))
