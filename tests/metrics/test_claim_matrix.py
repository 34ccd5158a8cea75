"""RAGChecker's claim metrics and the failure shares: a matrix worked by hand, and RAGChecker's own computation
(``ragchecker.computation`` of its 0.1.9 wheel) fed the same random matrices."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from conftest import reference_module

from ragmeter.metrics import claim_matrix as cm

# One answer worked by hand. Answer claims a1..a4, reference claims r1..r3, chunks c1..c3.
#   the reference states a1, a2 (a3, a4 wrong);   the answer states r1, r3
#   r1 in c1; r2 in c2; r3 in no chunk             → relevant chunks c1, c2; c3 irrelevant
#   a1 in c1; a2 in no chunk; a3 in c2; a4 in c3   → a3 wrong from a relevant chunk, a4 from an irrelevant one
ANSWER_IN_REFERENCE = [True, True, False, False]
REFERENCE_IN_ANSWER = [True, False, True]
REFERENCE_IN_CHUNKS = [[True, False, False], [False, True, False], [False, False, False]]
ANSWER_IN_CHUNKS = [[True, False, False], [False, False, False], [False, True, False], [False, False, True]]


def test_a_matrix_worked_by_hand() -> None:
    assert cm.claim_precision(ANSWER_IN_REFERENCE) == pytest.approx(2 / 4)
    assert cm.claim_recall(REFERENCE_IN_ANSWER) == pytest.approx(2 / 3)
    assert cm.claim_f1(ANSWER_IN_REFERENCE, REFERENCE_IN_ANSWER) == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert cm.context_claim_recall(REFERENCE_IN_CHUNKS) == pytest.approx(2 / 3)  # r1, r2 retrieved
    assert cm.claim_context_precision(REFERENCE_IN_CHUNKS) == pytest.approx(2 / 3)  # c1, c2 relevant
    assert cm.context_utilization(REFERENCE_IN_CHUNKS, REFERENCE_IN_ANSWER) == pytest.approx(1 / 2)  # r1 of r1, r2
    assert cm.noise_sensitivity_relevant(ANSWER_IN_CHUNKS, ANSWER_IN_REFERENCE, REFERENCE_IN_CHUNKS) == 1 / 4  # a3
    assert cm.noise_sensitivity_irrelevant(ANSWER_IN_CHUNKS, ANSWER_IN_REFERENCE, REFERENCE_IN_CHUNKS) == 1 / 4  # a4
    assert cm.hallucination(ANSWER_IN_CHUNKS, ANSWER_IN_REFERENCE) == 0.0  # the wrong claims a3, a4 are in chunks
    assert cm.self_knowledge(ANSWER_IN_CHUNKS, ANSWER_IN_REFERENCE) == 1 / 4  # a2: right, in no chunk
    assert cm.claim_faithfulness(ANSWER_IN_CHUNKS) == 3 / 4


def test_where_a_vital_nugget_was_lost() -> None:
    # vital nuggets n1..n4 (n5 okay): n1 stated; n2 missed, in no chunk; n3 missed, in a chunk; n4 partly stated
    grades = ["support", "none", "none", "partial", "none"]
    vital = [True, True, True, True, False]
    in_chunks = [[True, False], [False, False], [False, True], [False, False], [False, False]]
    assert cm.vital_missed_unretrieved(grades, vital, in_chunks) == 1 / 4
    assert cm.vital_missed_retrieved(grades, vital, in_chunks) == 1 / 4
    assert cm.retrieval_failure(grades, vital, in_chunks) == 1.0
    assert cm.generation_failure(grades, vital, in_chunks) == 1.0
    stated = ["support", "support", "support", "partial", "none"]
    assert cm.retrieval_failure(stated, vital, in_chunks) == 0.0
    assert cm.generation_failure(stated, vital, in_chunks) == 0.0
    assert math.isnan(cm.retrieval_failure(["none"], [False], [[False]]))
    # nothing retrieved: every missed vital nugget is the retriever's
    assert cm.vital_missed_unretrieved(["none", "support"], [True, True], [[], []]) == 1 / 2


def test_a_ratio_with_nothing_to_count_has_no_value() -> None:
    assert math.isnan(cm.claim_precision([]))  # the answer states nothing
    assert math.isnan(cm.claim_f1([], [False, True]))  # no claim, half the reference stated: F1 unknown
    assert cm.claim_f1([], [False, False]) == 0.0  # no claim, nothing stated: F1 0 whatever P (RAGChecker: 0)
    assert cm.claim_f1([False], [True]) == 0.0
    assert math.isnan(cm.context_claim_recall([[], []]))  # no chunk
    assert math.isnan(cm.claim_context_precision([]))  # no reference claim
    assert math.isnan(cm.context_utilization([[False], [False]], [True, True]))  # nothing retrieved
    assert math.isnan(cm.hallucination([[], []], [True, False]))
    assert math.isnan(cm.noise_sensitivity_relevant([[True]], [False], []))


def test_mismatched_matrices_are_refused() -> None:
    with pytest.raises(ValueError, match="2 rows for 3 claims"):
        cm.context_utilization([[True], [False]], [True, False, True])
    with pytest.raises(ValueError, match="against the same chunks"):
        cm.noise_sensitivity_relevant([[True, False]], [False], [[True, False, True]])


def _ragchecker_metrics(
    computation, answer_in_reference, reference_in_answer, reference_in_chunks, answer_in_chunks
) -> dict[str, float]:
    """RAGChecker's eleven metrics of one result whose checks are these verdicts."""

    def label(verdict: bool) -> str:
        return "Entailment" if verdict else "Neutral"

    result = computation.RAGResult(
        query_id="q",
        query="",
        gt_answer="",
        response="",
        answer2response=[label(v) for v in answer_in_reference],
        response2answer=[label(v) for v in reference_in_answer],
        retrieved2answer=[[label(v) for v in row] for row in reference_in_chunks],
        retrieved2response=[[label(v) for v in row] for row in answer_in_chunks],
    )
    for evaluate in computation.METRIC_FUNC_MAP.values():
        evaluate(result)
    return result.metrics


#: Ours → RAGChecker's name, and which of the four checks each reads.
PAIRS = {
    "claim_precision": ("precision", ("answer_in_reference",)),
    "claim_recall": ("recall", ("reference_in_answer",)),
    "claim_f1": ("f1", ("answer_in_reference", "reference_in_answer")),
    "context_claim_recall": ("claim_recall", ("reference_in_chunks",)),
    "claim_context_precision": ("context_precision", ("reference_in_chunks",)),
    "context_utilization": ("context_utilization", ("reference_in_chunks", "reference_in_answer")),
    "noise_sensitivity_relevant": (
        "noise_sensitivity_in_relevant",
        ("answer_in_chunks", "answer_in_reference", "reference_in_chunks"),
    ),
    "noise_sensitivity_irrelevant": (
        "noise_sensitivity_in_irrelevant",
        ("answer_in_chunks", "answer_in_reference", "reference_in_chunks"),
    ),
    "hallucination": ("hallucination", ("answer_in_chunks", "answer_in_reference")),
    "self_knowledge": ("self_knowledge", ("answer_in_chunks", "answer_in_reference")),
    "claim_faithfulness": ("faithfulness", ("answer_in_chunks",)),
}


def test_the_metrics_equal_ragchecker_s_computation() -> None:
    computation = reference_module("ragchecker==0.1.9", "ragchecker.computation")
    generator = random.Random(47)
    compared = dict.fromkeys(PAIRS, 0)
    for _ in range(400):
        n_answer, n_reference, n_chunks = (generator.randint(1, 6), generator.randint(1, 6), generator.randint(1, 5))
        density = generator.choice([0.1, 0.3, 0.6])

        def verdicts(*shape: int, density: float = density) -> list:
            return (np.random.default_rng(generator.randrange(2**32)).random(shape) < density).tolist()

        checks = {
            "answer_in_reference": verdicts(n_answer),
            "reference_in_answer": verdicts(n_reference),
            "reference_in_chunks": verdicts(n_reference, n_chunks),
            "answer_in_chunks": verdicts(n_answer, n_chunks),
        }
        expected = _ragchecker_metrics(
            computation,
            *(
                checks[name]
                for name in ("answer_in_reference", "reference_in_answer", "reference_in_chunks", "answer_in_chunks")
            ),
        )
        for ours, (theirs, reads) in PAIRS.items():
            value = getattr(cm, ours)(*(checks[name] for name in reads))
            if math.isnan(value):  # only context_utilization with no retrieved reference claim: RAGChecker's 0
                assert ours == "context_utilization" and not np.any(checks["reference_in_chunks"])
                assert expected[theirs] == 0.0
                continue
            assert value == pytest.approx(float(expected[theirs]), abs=1e-12), ours
            compared[ours] += 1
    assert min(compared.values()) > 200, compared


def test_an_answer_without_claims_that_states_no_reference_claim_has_ragchecker_s_f1() -> None:
    computation = reference_module("ragchecker==0.1.9", "ragchecker.computation")
    stated_none, stated_one = [False, False], [True, False]
    in_chunks = [[True], [False]]
    # RAGChecker writes 0 for every answer without claims; ours is the same value where it is determined (R = 0)
    assert _ragchecker_metrics(computation, [], stated_none, in_chunks, [])["f1"] == cm.claim_f1([], stated_none) == 0
    assert _ragchecker_metrics(computation, [], stated_one, in_chunks, [])["f1"] == 0
    assert math.isnan(cm.claim_f1([], stated_one))  # P unknown, R = ½: no value (RAGChecker's 0 takes P as 0)
