"""Claim-level metrics on the scripted judge (ragmeter.testing.scripted_judge): every value worked out by hand from
its rules, the nuggets the judge writes asked once per question and before the grades that need them, the
reference's sentences as nuggets (the default source) with no nuggets call, and the quote check."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ragmeter import Settings, evaluate
from ragmeter.analysis.compare import ScoredRun, compare, load_run
from ragmeter.cli.judge_options import render_plan
from ragmeter.engine.evaluation import plan_judging
from ragmeter.io import record_from_dict
from ragmeter.judges import ChatRequest, Judge, JudgeCache, ScriptedBackend
from ragmeter.metrics import get_metric, list_metrics
from ragmeter.metrics.claim_level import NO_SOURCE, NO_WORD_CLAIM
from ragmeter.testing.scripted_judge import reply_to

QUESTION = "When does the museum open and close?"
REFERENCE = "The museum opens at 9:00. It closes at 17:00. Entry is free."
CHUNKS = [
    {"doc_id": "c1", "text": "The museum opens at 9:00 on weekdays."},
    {"doc_id": "c2", "text": "Parking costs 3 dollars."},
]
# A: states the vital nugget, and a claim of the parking chunk that the reference does not hold.
A = {
    "id": "A",
    "question": QUESTION,
    "answer": "The museum opens at 9:00. Parking costs 3 dollars.",
    "references": [REFERENCE],
    "contexts": CHUNKS,
}
# B: people's nuggets, both vital; the answer states the first, no chunk does; a chunk states the second.
B = {
    "id": "B",
    "question": "Is entry free?",
    "answer": "The museum closes at 17:00.",
    "nuggets": ["The museum closes at 17:00", "Entry is free"],
    "contexts": [{"doc_id": "c3", "text": "Entry is free for everyone."}],
}
# C: the same question as A; the judge grades every nugget support, quoting words the answer does not have.
C = {**A, "id": "C", "answer": "FAKE QUOTE here."}
# D: nothing to write nuggets from.
D = {"id": "D", "question": QUESTION, "answer": "At nine.", "contexts": CHUNKS}
NAMES = [m.name for m in list_metrics("claim_level")]
#: The judge writes the nuggets (the scripted judge: each sentence of a reference, its first vital).
JUDGE_WRITES = Settings(n_resamples=200, nugget_source="judge")


@pytest.fixture(scope="module")
def scored():
    backend = ScriptedBackend(reply_to)
    with Judge(backend, claims="verify") as judge:
        result = evaluate([A, B, C, D], metrics=["claim_level"], judge=judge, settings=JUDGE_WRITES)
    return result, backend.requests


def _values(result, record: int) -> dict[str, float]:
    return {name: float(result.scores[name][record]) for name in NAMES}


def _graded_once(record: dict, *, metrics: str = "claim_level", nugget_source: str = "sentences"):
    """``record`` scored on the scripted judge, the user message of its one grades call, and every request made."""
    backend = ScriptedBackend(reply_to)
    with Judge(backend, claims="verify") as judge:
        settings = Settings(n_resamples=200, nugget_source=nugget_source)
        result = evaluate([record], metrics=[metrics], judge=judge, settings=settings)
    (graded,) = [r.messages[1][1] for r in backend.requests if r.schema_name == "nugget_grades"]
    return result, graded, backend.requests


def test_an_answer_worked_by_hand(scored) -> None:
    result, _ = scored
    # nuggets: "The museum opens at 9:00." (vital), "It closes at 17:00." (okay), "Entry is free." (okay)
    # grades: support, none, none; answer claims: "The museum opens at 9:00." (reference holds it, chunk 1),
    # "Parking costs 3 dollars." (the reference does not hold it, chunk 2); nuggets in chunks: the first in chunk 1
    assert _values(result, 0) == pytest.approx(
        {
            "nugget_recall": 1 / 3,
            "nugget_recall_strict": 1 / 3,
            "nugget_recall_vital": 1.0,
            "nugget_recall_vital_strict": 1.0,
            "claim_precision": 1 / 2,
            "claim_recall": 1 / 3,
            "claim_f1": 2 * (1 / 2) * (1 / 3) / (1 / 2 + 1 / 3),
            "context_claim_recall": 1 / 3,
            "claim_context_precision": 1 / 2,
            "context_utilization": 1.0,
            "noise_sensitivity_relevant": 0.0,
            "noise_sensitivity_irrelevant": 1 / 2,  # the parking claim
            "hallucination": 0.0,
            "self_knowledge": 0.0,
            "claim_faithfulness": 1.0,
            "retrieval_failure": 0.0,
            "generation_failure": 0.0,
        }
    )


def test_peoples_nuggets_are_used_as_given_and_the_lost_nugget_is_the_generators(scored) -> None:
    result, requests = scored
    values = _values(result, 1)
    assert values["nugget_recall_vital"] == values["nugget_recall_vital_strict"] == 1 / 2
    assert values["context_claim_recall"] == 1 / 2 and values["context_utilization"] == 0.0
    assert (values["retrieval_failure"], values["generation_failure"]) == (0.0, 1.0)  # "Entry is free" was in c3
    assert result.undefined["claim_precision"][1] == (
        "record has no reference answer to check the answer's claims against"
    )
    assert values["claim_faithfulness"] == 0.0  # "closes at 17:00" is in no chunk
    assert not any("Is entry free?" in r.messages[1][1] for r in requests if r.schema_name == "nuggets")


def test_a_grade_quoting_words_the_answer_lacks_counts_none(scored) -> None:
    result, _ = scored
    assert result.scores["nugget_recall"][2] == 0.0
    assert result.notes["nugget_recall"][2] == "3 grade(s) quoted words the answer does not have: counted none"


def test_without_a_source_of_nuggets_every_metric_says_why(scored) -> None:
    result, _ = scored
    assert all(math.isnan(result.scores[name][3]) and result.undefined[name][3] == NO_SOURCE for name in NAMES)


def test_the_nuggets_are_asked_once_per_question_and_answers_graded_once_they_are_known(scored) -> None:
    _, requests = scored
    names = [r.schema_name for r in requests]
    assert names.count("nuggets") == 1  # A and C share their question and reference; B's are people's
    graded = [(i, r.messages[1][1]) for i, r in enumerate(requests) if r.schema_name == "nugget_grades"]
    # B's nuggets are known from the start: graded in the first round; A's and C's once the judge wrote theirs
    assert [QUESTION in user for _, user in graded] == [False, True, True]
    assert names.index("nuggets") < graded[1][0]
    assert [len(json.loads(reply_to(requests[i]))["grades"]) for i, _ in graded] == [2, 3, 3]


def test_a_dry_run_counts_the_grades_once_the_nuggets_are_cached(tmp_path) -> None:
    backend = ScriptedBackend(reply_to)
    with Judge(backend, claims="verify", cache=JudgeCache(tmp_path / "verdicts.sqlite")) as judge:

        def planned() -> dict[str, tuple[int, int]]:
            plan = plan_judging([A, C], metrics=["claim_level"], settings=JUDGE_WRITES, judge=judge)
            return {name: (counts["calls"], counts["cached"]) for name, counts in plan.by_prompt.items()}

        assert planned() == {"claims": (2, 0), "nuggets": (1, 0)}  # A and C share their nuggets
        evaluate([A, C], metrics=["claim_level"], judge=judge, settings=JUDGE_WRITES)
        assert planned() == {"claims": (2, 2), "nuggets": (1, 1), "nugget_grades": (2, 2)}


@pytest.mark.parametrize(("source", "writer"), [("judge", "nuggets"), ("claims", "claim_split")])
def test_the_dry_run_table_says_which_grades_it_cannot_count_yet(source: str, writer: str) -> None:
    settings = Settings(n_resamples=200, nugget_source=source)
    with Judge(ScriptedBackend(reply_to), claims="verify") as judge:
        plan = plan_judging([A, B, C], metrics=["claim_level"], settings=settings, judge=judge)
        sentences = plan_judging([A, B, C], metrics=["claim_level"], judge=judge)
    assert plan.by_prompt["nugget_grades"]["calls"] == 1  # B's: people's nuggets are known
    assert plan.by_prompt[writer]["calls"] == 1  # A's and C's nuggets, written once
    assert sentences.by_prompt["nugget_grades"]["calls"] == 3 and sentences.undecided == 0  # all known: counted
    assert render_plan(plan, "scripted", None).splitlines()[-1] == (
        "Not counted: the nugget_grades calls of the answers whose nuggets the 1 call(s) still to make will write "
        "(one call per ten nuggets, each answer)."
    )


def test_a_failed_claims_call_leaves_the_nugget_scores_and_says_why_for_the_rest() -> None:
    def reply(request: ChatRequest) -> str:
        return "this is not JSON" if request.schema_name == "claims" else reply_to(request)

    with Judge(ScriptedBackend(reply), claims="verify", max_attempts=1) as judge:
        result = evaluate([A], metrics=["claim_level"], judge=judge, settings=JUDGE_WRITES)
    assert result.scores["nugget_recall"][0] == pytest.approx(1 / 3)  # as in the hand-worked answer
    assert result.scores["context_claim_recall"][0] == pytest.approx(1 / 3)
    assert result.undefined["claim_precision"][0].startswith("judge failed (claims): ")
    assert result.undefined["claim_faithfulness"][0] == result.undefined["claim_precision"][0]


# --- the reference's sentences as nuggets (the default source) ----------------------------------------------


@pytest.fixture(scope="module")
def by_sentences():
    backend = ScriptedBackend(reply_to)
    with Judge(backend, claims="verify") as judge:
        result = evaluate([A, B, D], metrics=["claim_level"], judge=judge, settings=Settings(n_resamples=200))
    return result, backend.requests


def test_the_references_sentences_are_vital_nuggets_with_no_nuggets_call(by_sentences) -> None:
    result, requests = by_sentences
    # A's nuggets: "The museum opens at 9:00.", "It closes at 17:00.", "Entry is free.", all three vital; graded
    # support, none, none; the two it misses are in no chunk (chunk 1 has 9:00, chunk 2 parking): the retriever's
    values = _values(result, 0)
    assert values["nugget_recall"] == values["nugget_recall_vital"] == values["nugget_recall_vital_strict"] == 1 / 3
    assert (values["retrieval_failure"], values["generation_failure"]) == (1.0, 0.0)
    assert values["claim_f1"] == pytest.approx(2 * (1 / 2) * (1 / 3) / (1 / 2 + 1 / 3))
    assert "nuggets" not in {r.schema_name for r in requests}
    graded = [r.messages[1][1] for r in requests if r.schema_name == "nugget_grades"]
    assert sum("It closes at 17:00." in user for user in graded) == 1


def test_peoples_nuggets_and_a_record_without_a_reference_are_as_before(by_sentences, scored) -> None:
    result, _ = by_sentences
    written, _ = scored
    assert _values(result, 1) == pytest.approx(_values(written, 1), nan_ok=True)  # B: people's nuggets
    assert all(result.undefined[name][2] == NO_SOURCE for name in NAMES)  # D: nothing to write them from


def test_a_declining_reference_is_a_nugget_a_declining_answer_states_and_citations_are_left_out() -> None:
    declines = {
        **A,
        "id": "E",
        "answer": "I am sorry: the passages do not say when the museum opens.",
        "references": ["The passages do not say when the museum opens [CIT:c1]."],
    }
    result, graded, _ = _graded_once(declines, metrics="nugget_recall")
    assert "The passages do not say when the museum opens." in graded and "CIT" not in graded
    assert result.scores["nugget_recall"][0] == 1.0


@pytest.mark.parametrize(
    "reference",
    [
        "1. The museum opens at 9:00\n2) Entry is free",
        "- The museum opens at 9:00\n- Entry is free",
        "The museum opens at 9:00\r\n\r\nEntry is free",
    ],
)
def test_a_listed_reference_gives_a_nugget_an_item_without_its_marker(reference: str) -> None:
    listed = {**A, "id": "L", "references": [reference]}
    result, graded, _ = _graded_once(listed)
    assert graded.count("<nugget n=") == 2 and "1." not in graded and "- " not in graded
    # "The museum opens at 9:00": stated (support) and in chunk 1, whose words hold no "1"; "Entry is free": neither
    values = _values(result, 0)
    assert values["nugget_recall"] == values["context_claim_recall"] == 1 / 2
    assert (values["retrieval_failure"], values["generation_failure"]) == (1.0, 0.0)


# --- the reference's claims as nuggets -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def by_claims():
    backend = ScriptedBackend(reply_to)
    with Judge(backend, claims="verify") as judge:
        result = evaluate(
            [A, B, C, D],
            metrics=["claim_level"],
            judge=judge,
            settings=Settings(n_resamples=200, nugget_source="claims"),
        )
    return result, backend.requests


def test_the_references_claims_are_vital_nuggets_split_once_per_question(by_claims) -> None:
    result, requests = by_claims
    splits = [r for r in requests if r.schema_name == "claim_split"]
    # A and C share their reference: one split, which shows the reference alone; B's nuggets are people's
    assert len(splits) == 1 and splits[0].messages[1][1].startswith(f"<text>\n{REFERENCE}\n</text>")
    assert "nuggets" not in {r.schema_name for r in requests}
    # A's nuggets (the scripted split: the reference's sentences): "The museum opens at 9:00.", "It closes at
    # 17:00.", "Entry is free.", each vital (the judge's nuggets marked the first only): graded support, none, none
    values = _values(result, 0)
    assert values["nugget_recall"] == values["nugget_recall_vital"] == values["nugget_recall_vital_strict"] == 1 / 3
    assert (values["retrieval_failure"], values["generation_failure"]) == (1.0, 0.0)
    assert result.scores["nugget_recall"][2] == 0.0  # C: its quotes are not words of the answer
    assert all(result.undefined[name][3] == NO_SOURCE for name in NAMES)  # D: no reference, no relevant chunk


def test_a_claim_two_references_state_is_one_nugget() -> None:
    twice = {**A, "id": "T", "references": [REFERENCE, "Entry is free. Tours start at 10:00."]}
    _, graded, requests = _graded_once(twice, metrics="nugget_recall", nugget_source="claims")
    assert [r.schema_name for r in requests].count("claim_split") == 2
    assert graded.count("<nugget n=") == 4 and graded.count("Entry is free.") == 1


@pytest.mark.parametrize("source", ["sentences", "claims"])
def test_several_references_are_alternatives_and_the_answer_is_scored_on_the_one_it_matches(source: str) -> None:
    either = {**A, "id": "E2", "references": ["The museum opens at 9:00.", "Doors open at nine in the morning."]}
    result, graded, _ = _graded_once(either, nugget_source=source)
    assert graded.count("<nugget n=") == 2  # one call grades both references' nuggets
    # graded support (the first reference's, which chunk 1 states) and none (the second's): scored on the first,
    # which the answer states whole, as token F1 takes the best reference; on both together it read 1/2
    values = _values(result, 0)
    assert values["nugget_recall"] == values["claim_recall"] == values["context_claim_recall"] == 1.0
    assert (values["retrieval_failure"], values["generation_failure"]) == (0.0, 0.0)


@pytest.mark.parametrize("answer", ["Tickets cost 25 dollars.", "Entry is free on Sundays."])
def test_with_several_references_the_retriever_is_scored_whatever_the_answer_states(answer: str) -> None:
    either = {
        "id": "R2",
        "question": "What does a visit cost?",
        "answer": answer,
        "references": ["Tickets cost 25 dollars.", "Entry is free on Sundays."],
        "contexts": [
            {"doc_id": "t", "text": "Tickets cost 25 dollars."},
            {"doc_id": "l", "text": "The park has a lake."},
        ],
    }
    result, _, _ = _graded_once(either)
    values = _values(result, 0)
    # the answer is scored on the reference it states (whole, either way); the retriever on the one the chunks hold
    # (the first, whole) and its precision on every reference's nuggets (chunk 1 holds one, chunk 2 none): the
    # same retrieval reads the same whichever answer the generator wrote (0 and 0 for the second answer before)
    assert values["nugget_recall"] == 1.0
    assert (values["context_claim_recall"], values["claim_context_precision"]) == (1.0, 0.5)
    assert (values["retrieval_failure"], values["generation_failure"]) == (0.0, 0.0)


def test_nuggets_written_from_the_retrieved_chunks_cannot_tell_what_the_retriever_missed() -> None:
    unreferenced = {
        "id": "W",
        "question": QUESTION,
        "answer": "Parking costs 3 dollars.",
        "contexts": [
            {"doc_id": "c1", "text": "The museum opens at 9:00. It closes at 17:00."},
            {"doc_id": "c2", "text": "Parking costs 3 dollars."},
        ],
        "qrels": {"c1": 1, "c9": 2},  # c9, the most relevant, was never retrieved
    }
    with Judge(ScriptedBackend(reply_to), claims="verify") as judge:
        result = evaluate([unreferenced], metrics=["claim_level"], judge=judge, settings=JUDGE_WRITES)
    # the judge writes the nuggets from c1 (the one relevant chunk retrieved): the chunks hold them by construction,
    # so the retriever's recall and failure would read 1 and 0 whatever it missed (they did before)
    reason = (
        "the nuggets were written from the retrieved chunks (no reference answer or nuggets): what the retriever "
        "missed cannot be told"
    )
    for name in ("context_claim_recall", "retrieval_failure", "generation_failure"):  # the split on one set of answers
        assert result.undefined[name][0] == reason
    # the generator's figures stand: both nuggets were retrieved, the answer states neither
    values = _values(result, 0)
    assert (values["context_utilization"], values["nugget_recall"]) == (0.0, 0.0)
    assert values["claim_context_precision"] == 0.5  # c1 holds the nuggets, c2 none


def test_a_failed_split_of_the_reference_leaves_every_nugget_metric_undefined_with_the_reason() -> None:
    def reply(request: ChatRequest) -> str:
        return "this is not JSON" if request.schema_name == "claim_split" else reply_to(request)

    with Judge(ScriptedBackend(reply), claims="verify", max_attempts=1) as judge:
        result = evaluate(
            [A], metrics=["claim_level"], judge=judge, settings=Settings(n_resamples=200, nugget_source="claims")
        )
    assert all(result.undefined[name][0].startswith("judge failed (claim_split): ") for name in NAMES)


def test_the_nugget_source_is_in_every_claim_level_signature(by_sentences, by_claims, scored) -> None:
    (result, _), (claims, _), (written, _) = by_sentences, by_claims, scored
    expected = [
        (
            result,
            "nuggets",
            (
                "the record's where given, else the reference's sentences and list items, several references as "
                "alternatives (the judge's without a reference)"
            ),
        ),
        (written, "nuggets", "the record's where given, else the judge's"),
        (
            claims,
            "nuggets",
            (
                "the record's where given, else the reference's claims, several references as alternatives (the "
                "judge's nuggets without a reference)"
            ),
        ),
        # what becomes of text with no content word, of an answer without claims and how the retriever is scored:
        # a run from before one of them changed does not compare
        (
            result,
            "no_content_word",
            (
                "a reference's sentence joined to the next; the judge's claim or nugget left out unless all it "
                "wrote; no fact for the chunks"
            ),
        ),
        (result, "claim_f1_without_claims", "0 where no nugget is stated fully"),
        (
            result,
            "retriever",
            (
                "whatever the answer states: claim recall on the reference the chunks hold best, precision on every "
                "reference's nuggets; no claim recall or failure split on nuggets written from the retrieved chunks"
            ),
        ),
    ]
    for run, key, value in expected:
        assert {run.signatures[name].settings[key] for name in NAMES} == {value}, key
    assert all("judge:reference_claims" in claims.signatures[name].settings for name in NAMES)
    assert not any("judge:reference_claims" in result.signatures[name].settings for name in NAMES)


# --- what a report says of the family's agreement with people ----------------------------------------------

MEASURED = Path(__file__).parents[2] / "benchmarks" / "results" / "claim_level-mtrag-dev-local.json"


@pytest.mark.parametrize("name", ["nugget_recall", "nugget_recall_strict", "claim_recall", "claim_f1"])
def test_each_agreement_line_states_the_benchmark_s_figures(name: str) -> None:
    # the line a report prints after the family's section, against the agreement run of the shipped settings
    measured = json.loads(MEASURED.read_text(encoding="utf-8"))
    line = get_metric(name).agreement
    rho = measured["signals"][name]["completeness"]
    assert f"Spearman {rho['rho']:.2f} [{rho['low']:.2f}, {rho['high']:.2f}] on {measured['records']} MT-RAG" in line
    assert f"({measured['protocol']['completeness']['cross_collection']['mean']:.2f} cross-collection" in line
    older = {other: measured["signals"][other]["completeness"]["rho"] for other in ("token_f1", "faithfulness_offline")}
    assert (
        f"token F1 reaches {older['token_f1']:.2f} and faithfulness_offline {older['faithfulness_offline']:.2f}" in line
    )
    assert "the reference's sentences as nuggets" in line and Settings().nugget_source == "sentences"


# --- what each metric reads: a failed grades call, the quote note, no chunks, a declining reference ----------

#: The metrics that read the nuggets' grades; the others read the claims and the chunks only.
GRADED = {
    "nugget_recall",
    "nugget_recall_strict",
    "nugget_recall_vital",
    "nugget_recall_vital_strict",
    "claim_recall",
    "claim_f1",
    "context_utilization",
    "retrieval_failure",
    "generation_failure",
}


def test_a_failed_grades_call_leaves_the_metrics_that_do_not_read_grades() -> None:
    def reply(request: ChatRequest) -> str:
        return "this is not JSON" if request.schema_name == "nugget_grades" else reply_to(request)

    with Judge(ScriptedBackend(reply), claims="verify", max_attempts=1) as judge:
        result = evaluate([A], metrics=["claim_level"], judge=judge, settings=Settings(n_resamples=200))
    assert all(result.undefined[name][0].startswith("judge failed (nugget_grades): ") for name in GRADED)
    # as in the sentences' hand-worked answer: one claim of two the reference holds, nugget 1 in chunk 1 of 2
    values = {name: float(result.scores[name][0]) for name in NAMES if name not in GRADED}
    assert values["claim_precision"] == 1 / 2 and values["claim_faithfulness"] == 1.0
    assert values["context_claim_recall"] == 1 / 3 and values["claim_context_precision"] == 1 / 2


def test_the_quote_note_is_on_the_metrics_that_read_grades_only(scored) -> None:
    result, _ = scored
    noted = {name for name in NAMES if 2 in result.notes.get(name, {})}  # C: every quote is not the answer's
    assert noted == GRADED  # claim_precision, the chunks' and the claims' metrics do not read a grade


def test_without_chunks_the_failure_split_is_undefined_not_the_retrievers() -> None:
    no_chunks = {key: value for key, value in A.items() if key != "contexts"}
    with Judge(ScriptedBackend(reply_to), claims="verify") as judge:
        result = evaluate([no_chunks], metrics=["claim_level"], judge=judge, settings=Settings(n_resamples=200))
    for name in ("retrieval_failure", "generation_failure", "context_utilization", "context_claim_recall"):
        assert result.undefined[name][0] == "record has no retrieved chunks"
    assert result.scores["nugget_recall"][0] == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    ("answer", "failures"),
    [("Entry costs 3 dollars.", (0.0, 1.0)), ("I am sorry: the passages do not say what entry costs.", (0.0, 0.0))],
)
def test_a_declining_reference_missed_is_the_generators_failure(answer: str, failures: tuple[float, float]) -> None:
    unanswerable = {**A, "id": "U", "answer": answer, "references": ["The passages do not say what entry costs."]}
    with Judge(ScriptedBackend(reply_to), claims="verify") as judge:
        result = evaluate([unanswerable], metrics=["claim_level"], judge=judge, settings=Settings(n_resamples=200))
    # the one nugget declines: no chunk can state it, so the retriever lost nothing; an answer that does not
    # decline (graded none) is the generator's failure
    assert (result.scores["retrieval_failure"][0], result.scores["generation_failure"][0]) == failures
    assert result.undefined["context_claim_recall"][0] == NO_FACT_REASON
    assert result.scores["claim_context_precision"][0] == 0.0  # neither chunk holds a fact of the reference


# --- text with no content word and no number: "No.", a stray "```" ----------------------------------------

NO_FACT_REASON = (
    "the nuggets state no fact for a chunk to hold: they only say that the answer is not known, or have no content "
    "word or number"
)


def test_a_bare_no_in_the_reference_is_joined_to_the_fact_after_it() -> None:
    no = {
        **A,
        "id": "N1",
        "question": "Does the museum open at 8:00?",
        "answer": "No. The museum opens at 9:00 on weekdays.",
        "references": ["No. The museum opens at 9:00."],
    }
    result, graded, _ = _graded_once(no)
    assert graded.count("<nugget n=") == 1 and "No. The museum opens at 9:00." in graded
    # one nugget, stated, whose words chunk 1 holds: "No." alone was a second nugget that no chunk can hold
    # (context_claim_recall 1/2, and a retrieval failure for an answer that left it out)
    values = _values(result, 0)
    assert values["nugget_recall"] == values["context_claim_recall"] == 1.0


def test_a_reference_that_is_only_no_is_a_nugget_the_retriever_cannot_have_lost() -> None:
    no = {**A, "id": "N", "question": "Is parking free?", "answer": "Parking is free.", "references": ["No."]}
    with Judge(ScriptedBackend(reply_to), claims="verify") as judge:
        result = evaluate([no], metrics=["claim_level"], judge=judge, settings=Settings(n_resamples=200))
    # "No." graded none; the chunks' check can place it in no chunk: the generator's failure, not the retriever's
    assert result.scores["nugget_recall"][0] == 0.0
    assert (result.scores["retrieval_failure"][0], result.scores["generation_failure"][0]) == (0.0, 1.0)
    assert result.undefined["context_claim_recall"][0] == NO_FACT_REASON


def test_an_answer_claim_with_no_content_word_is_no_claim() -> None:
    particle = {**A, "id": "P", "answer": "No. Parking costs 3 dollars."}
    with Judge(ScriptedBackend(reply_to), claims="verify") as judge:
        result = evaluate([particle], metrics=["claim_level"], judge=judge, settings=Settings(n_resamples=200))
    # the one claim left: "Parking costs 3 dollars.", which chunk 2 states and the reference does not; "No." passed
    # the check against the reference vacuously (claim_precision 1/2) and was in no chunk (self_knowledge 1/2)
    values = _values(result, 0)
    assert values["claim_precision"] == values["self_knowledge"] == 0.0
    assert values["claim_faithfulness"] == 1.0


def test_a_claim_of_the_reference_with_no_content_word_is_no_nugget() -> None:
    no = {**A, "id": "N2", "references": ["No. The museum opens at 9:00."]}
    result, graded, _ = _graded_once(no, nugget_source="claims")
    # the scripted split gives "No." and "The museum opens at 9:00.": the first is left out
    assert graded.count("<nugget n=") == 1
    assert result.scores["nugget_recall"][0] == result.scores["context_claim_recall"][0] == 1.0


def test_an_answer_of_no_content_word_says_so() -> None:
    no = {**A, "id": "N3", "answer": "No."}
    with Judge(ScriptedBackend(reply_to), claims="verify") as judge:
        result = evaluate([no], metrics=["claim_level"], judge=judge, settings=Settings(n_resamples=200))
    assert result.undefined["claim_precision"][0] == NO_WORD_CLAIM
    assert result.scores["nugget_recall"][0] == 0.0  # its nuggets are graded all the same
    assert result.scores["claim_f1"][0] == 0.0  # it states none of them: F1 0 whatever its precision


@pytest.mark.parametrize(
    ("reference", "f1"),
    [(REFERENCE, 0.0), ("The passages do not say what entry costs.", None)],
)
def test_an_abstaining_answer_scores_no_claim_f1_above_an_answer_that_states_nothing(
    reference: str, f1: float | None
) -> None:
    answer = "I am sorry: the passages do not say what entry costs."
    declines = {**A, "id": "I", "answer": answer, "references": [reference]}
    with Judge(ScriptedBackend(reply_to), claims="verify") as judge:
        result = evaluate([declines], metrics=["claim_level"], judge=judge, settings=Settings(n_resamples=200))
    assert result.undefined["claim_precision"][0] == "the answer abstains: no claim"
    # to an answerable question it states no nugget: F1 0 (RAGChecker's), not left out of the mean, which abstaining
    # would then raise; declining where the reference declines states the nugget: no precision to weigh, undefined
    if f1 is None:
        assert result.scores["nugget_recall"][0] == 1.0
        assert result.undefined["claim_f1"][0] == "the answer abstains: no claim"
    else:
        assert result.scores["claim_f1"][0] == f1


def test_a_bare_no_as_a_list_item_gets_a_stop_when_joined() -> None:
    listed = {**A, "id": "N4", "references": ["Short answer:\n- No\n- The museum opens at 9:00."]}
    _, graded, _ = _graded_once(listed)
    assert "No. The museum opens at 9:00." in graded and graded.count("<nugget n=") == 2


def test_a_reference_split_into_no_content_word_only_keeps_it() -> None:
    # the scripted split of "No." is "No.": all the judge wrote of the reference, kept as a nugget no chunk can hold
    no = {**A, "id": "N5", "question": "Is parking free?", "answer": "No, it costs 3 dollars.", "references": ["No."]}
    result, graded, _ = _graded_once(no, nugget_source="claims")
    assert graded.count("<nugget n=") == 1
    assert result.scores["nugget_recall"][0] == 1.0  # "no" is words of the answer: support
    assert result.undefined["context_claim_recall"][0] == NO_FACT_REASON


#: The metrics that read the answer's claims.
OF_THE_ANSWER = {
    "claim_precision",
    "claim_f1",
    "noise_sensitivity_relevant",
    "noise_sensitivity_irrelevant",
    "hallucination",
    "self_knowledge",
    "claim_faithfulness",
}


def test_a_claims_list_at_its_cap_is_noted_on_the_metrics_of_the_answers_claims() -> None:
    one_sentence = {**A, "id": "K", "answer": "The museum opens at 9:00."}
    claim = {"claim": one_sentence["answer"], "evidence": "", "differences": "none", "verdict": "supported"}

    def reply(request: ChatRequest) -> str:
        if request.schema_name == "claims":  # one sentence: the cap is 4 + 2 = 6
            return json.dumps({"claims": [{**claim, "chunks": [1]}] * 6})
        return reply_to(request)

    with Judge(ScriptedBackend(reply), claims="verify") as judge:
        result = evaluate([one_sentence], metrics=["claim_level"], judge=judge, settings=Settings(n_resamples=200))
    note = "the judge listed the most claims allowed (6): later ones may be missing"
    assert {name for name in NAMES if result.notes.get(name, {}).get(0) == note} == OF_THE_ANSWER
    assert {name for name in NAMES if 0 in result.notes.get(name, {})} == OF_THE_ANSWER
    assert result.scores["claim_precision"][0] == result.scores["claim_faithfulness"][0] == 1.0


# --- compare: nuggets written from each run's relevant chunks -----------------------------------------------

OPENS = {"doc_id": "c1", "text": "The museum opens at 9:00."}
FREE = {"doc_id": "c3", "text": "Entry is free."}


def _scored(name: str, chunks: list[dict], **record: object) -> ScoredRun:
    """One answer without a reference, the chunks it retrieved judged relevant by the qrels, scored on the judge's
    nuggets (written from those chunks)."""
    answer = {
        "id": "q",
        "question": QUESTION,
        "answer": "The museum opens at 9:00.",
        "contexts": chunks,
        "qrels": {"c1": 1, "c3": 1},
        **record,
    }
    with Judge(ScriptedBackend(reply_to), claims="verify") as judge:
        result = evaluate([answer], metrics=["nugget_recall"], judge=judge, settings=Settings(n_resamples=200))
    return ScoredRun.from_result(result, name=name, records=[record_from_dict(answer)])


def test_compare_says_where_the_runs_nuggets_come_from_different_relevant_chunks() -> None:
    # run a found the opening hours (its nugget, stated: 1.0), run b only the entry fee (its nugget, not stated: 0.0)
    a, b = _scored("a", [OPENS]), _scored("b", [FREE])
    [comparison] = compare(a, b)
    (note,) = comparison.notes
    assert note == (
        "1 pair(s) have no reference answer or nuggets of their own, and the relevant chunks their nuggets are "
        "written from differ between the runs (other chunks, or the same in another order): the claim-level metrics "
        "score the two sides on different nuggets there. Give the records references or nuggets to compare "
        "retrievers."
    )
    [nugget_recall] = comparison.overall
    assert (nugget_recall.mean_a, nugget_recall.mean_b) == (1.0, 0.0)
    # with the same relevant chunks, or a reference, both sides are scored on the same nuggets: nothing to say
    assert compare(a, _scored("b", [OPENS]))[0].notes == ()
    with_reference = {"references": [REFERENCE]}
    assert compare(_scored("a", [OPENS], **with_reference), _scored("b", [FREE], **with_reference))[0].notes == ()


def test_compare_counts_no_pair_whose_record_a_run_does_not_know_nor_for_claims_read_without_nuggets() -> None:
    a, b = _scored("a", [OPENS]), _scored("b", [FREE])
    unknown = ScoredRun.from_result(
        evaluate([{"id": "q", "question": QUESTION, "answer": "x"}], metrics=["token_f1"]), name="b", records=[]
    )
    assert unknown.written_from == ("?",)
    unknown = replace(b, written_from=unknown.written_from)
    assert compare(a, unknown)[0].notes == ()
    # claim_faithfulness reads the answer's claims and the chunks only: the same whatever the nuggets
    faithfulness, same = {"claim_faithfulness": np.array([1.0])}, {"claim_faithfulness": "same"}
    [comparison] = compare(*(replace(run, scores=faithfulness, signatures=same) for run in (a, b)))
    assert comparison.notes == ()


def test_a_run_folder_is_compared_with_the_qrels_file_it_was_scored_with(tmp_path: Path) -> None:
    # the records carry no qrels: the run's qrels file (run.json) says which chunks were relevant
    def folder(name: str, chunk: dict, qrels: str | None) -> Path:
        run = tmp_path / name
        run.mkdir()
        answer = {"id": "q", "question": QUESTION, "answer": "The museum opens at 9:00.", "contexts": [chunk]}
        (run / "in.jsonl").write_text(json.dumps(answer) + "\n", encoding="utf-8")
        (run / "items.jsonl").write_text(json.dumps({"id": "q", "scores": {"nugget_recall": 1.0}}) + "\n")
        manifest = {"status": "finished", "input": str(run / "in.jsonl"), "qrels": qrels}
        (run / "run.json").write_text(json.dumps(manifest), encoding="utf-8")
        (run / "summary.json").write_text(json.dumps({"signatures": {"nugget_recall": "same"}}), encoding="utf-8")
        return run

    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q 0 c1 1\nq 0 c3 1\n", encoding="utf-8")
    a, b = load_run(folder("a", OPENS, str(qrels))), load_run(folder("b", FREE, str(qrels)))
    assert len(compare(a, b)[0].notes) == 1
    # without the qrels neither record has a relevant chunk; with its file gone, which chunks were is not known
    assert compare(load_run(folder("c", OPENS, None)), load_run(folder("d", FREE, None)))[0].notes == ()
    qrels.write_text("a line that is no judgment\n", encoding="utf-8")  # no longer reads: compared all the same
    assert load_run(tmp_path / "a").written_from == ()
    qrels.unlink()
    assert load_run(tmp_path / "a").written_from == ()
