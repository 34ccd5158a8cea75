"""RAGChecker's claim-level metrics (Ru et al. 2024) and where a pipeline lost a vital fact, from one answer's verdicts.

Four checks make one answer's matrix (RAGChecker's names in brackets; the reference's claims are its nuggets,
:mod:`ragmeter.metrics.nuggets`):

- ``answer_in_reference`` (answer claims,): the reference states answer claim i [``answer2response``];
- ``reference_in_answer`` (reference claims,): the answer states reference claim j [``response2answer``];
- ``reference_in_chunks`` (reference claims × chunks): chunk k states reference claim j [``retrieved2answer``];
- ``answer_in_chunks`` (answer claims × chunks): chunk k states answer claim i [``retrieved2response``].

A chunk is *relevant* when it states some reference claim; a reference claim is *retrieved* when some chunk
states it; an answer claim is *correct* when the reference states it and *faithful* when some chunk does.

- Overall: ``claim_precision`` = correct answer claims / answer claims; ``claim_recall`` = reference claims the
  answer states / reference claims; ``claim_f1`` their harmonic mean (0 when either is 0).
- Retriever: ``context_claim_recall`` = retrieved reference claims / reference claims;
  ``claim_context_precision`` = relevant chunks / chunks.
- Generator: ``context_utilization`` = retrieved reference claims the answer states / retrieved reference
  claims; ``noise_sensitivity_relevant`` = answer claims that are incorrect and stated by a relevant chunk /
  answer claims; ``noise_sensitivity_irrelevant`` = incorrect answer claims stated by an irrelevant chunk and by
  no relevant one / answer claims; ``hallucination`` = incorrect answer claims no chunk states / answer claims;
  ``self_knowledge`` = correct answer claims no chunk states / answer claims; ``claim_faithfulness`` = faithful
  answer claims / answer claims.

Where a ratio has nothing to count (no answer claim, no reference claim, no chunk, no retrieved reference claim
for ``context_utilization``) it is NaN here (``claim_f1`` is 0 all the same where the other is 0); RAGChecker's
computation writes 0 there. Everywhere else the values
equal RAGChecker's (``tests/metrics/test_claim_matrix.py`` feeds both the same matrices).

Where the pipeline failed (after the TREC nugget grades): a vital nugget the answer does not state (grade
``none``) was either never retrieved — no chunk states it, the retriever's failure — or retrieved and not used,
the generator's. ``vital_missed_unretrieved`` and ``vital_missed_retrieved`` are those shares of the vital
nuggets; ``retrieval_failure`` and ``generation_failure`` say whether an answer has one such nugget at all.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "claim_context_precision",
    "claim_f1",
    "claim_faithfulness",
    "claim_precision",
    "claim_recall",
    "context_claim_recall",
    "context_utilization",
    "generation_failure",
    "hallucination",
    "harmonic_mean",
    "noise_sensitivity_irrelevant",
    "noise_sensitivity_relevant",
    "retrieval_failure",
    "self_knowledge",
    "vital_missed_retrieved",
    "vital_missed_unretrieved",
]

Verdicts = Sequence[bool]
VerdictMatrix = Sequence[Sequence[bool]]
NAN = float("nan")


def _vector(verdicts: Verdicts) -> np.ndarray:
    return np.asarray(verdicts, dtype=bool).reshape(-1)


def _matrix(verdicts: VerdictMatrix, rows: int | None = None) -> np.ndarray:
    """A (claims × chunks) verdict matrix; an empty one is (claims × 0) when its claims are known."""
    matrix = np.asarray(verdicts, dtype=bool)
    if matrix.size == 0:
        return np.zeros((rows if rows is not None else len(verdicts), 0), dtype=bool)
    if matrix.ndim != 2:
        raise ValueError(f"a claims × chunks verdict matrix has 2 dimensions, got shape {matrix.shape}")
    if rows is not None and matrix.shape[0] != rows:
        raise ValueError(f"the matrix has {matrix.shape[0]} rows for {rows} claims: give one row per claim")
    return matrix


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else NAN


def claim_precision(answer_in_reference: Verdicts) -> float:
    """Correct answer claims / answer claims: the share of what the answer says that the reference states.

    >>> claim_precision([True, False, True, True])
    0.75
    """
    return _mean(_vector(answer_in_reference))


def claim_recall(reference_in_answer: Verdicts) -> float:
    """Reference claims the answer states / reference claims.

    >>> claim_recall([True, False])
    0.5
    """
    return _mean(_vector(reference_in_answer))


def claim_f1(answer_in_reference: Verdicts, reference_in_answer: Verdicts) -> float:
    """2·P·R / (P + R) of :func:`claim_precision` P and :func:`claim_recall` R; 0 when either is 0 (an answer with
    no claim that states no reference claim included), NaN when either is and the other is not 0.

    >>> round(claim_f1([True, False, True, True], [True, False]), 4)
    0.6
    """
    return harmonic_mean(claim_precision(answer_in_reference), claim_recall(reference_in_answer))


def harmonic_mean(precision: float, recall: float) -> float:
    """2·P·R / (P + R); 0 when either is 0, whatever the other (NaN included: the mean is at most twice the
    smaller), else NaN when either is NaN.

    >>> harmonic_mean(0.75, 0.5), harmonic_mean(0.0, 0.5), harmonic_mean(float("nan"), 0.0)
    (0.6, 0.0, 0.0)
    """
    if precision == 0 or recall == 0:
        return 0.0
    if np.isnan(precision) or np.isnan(recall):
        return NAN
    return 2 * precision * recall / (precision + recall)


def context_claim_recall(reference_in_chunks: VerdictMatrix) -> float:
    """Reference claims some chunk states / reference claims (the retriever's claim recall). NaN without a
    reference claim or a chunk.

    >>> context_claim_recall([[True, False], [False, False], [False, True]])
    0.6666666666666666
    """
    matrix = _matrix(reference_in_chunks)
    return _mean(matrix.any(axis=1)) if matrix.shape[1] else NAN


def claim_context_precision(reference_in_chunks: VerdictMatrix) -> float:
    """Relevant chunks (stating some reference claim) / chunks. NaN without a reference claim or a chunk.

    >>> claim_context_precision([[True, False, False], [True, False, False]])
    0.3333333333333333
    """
    matrix = _matrix(reference_in_chunks)
    return _mean(matrix.any(axis=0)) if matrix.shape[0] else NAN


def context_utilization(reference_in_chunks: VerdictMatrix, reference_in_answer: Verdicts) -> float:
    """Retrieved reference claims the answer states / retrieved reference claims. NaN when no reference claim
    was retrieved (RAGChecker: 0).

    >>> context_utilization([[True, False], [False, True], [False, False]], [True, False, True])
    0.5
    """
    stated = _vector(reference_in_answer)
    retrieved = _matrix(reference_in_chunks, len(stated)).any(axis=1)
    return float((retrieved & stated).sum() / retrieved.sum()) if retrieved.any() else NAN


def _noise(
    answer_in_chunks: VerdictMatrix, answer_in_reference: Verdicts, reference_in_chunks: VerdictMatrix
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per answer claim: stated by a relevant chunk; by an irrelevant one and no relevant one; incorrect.
    ``None`` when there is no answer claim, no chunk or no reference claim to tell relevant chunks by."""
    correct = _vector(answer_in_reference)
    answer = _matrix(answer_in_chunks, len(correct))
    reference = _matrix(reference_in_chunks)
    if not correct.size or not answer.shape[1] or not reference.shape[0]:
        return None
    if reference.shape[1] != answer.shape[1]:
        raise ValueError(
            f"the answer's claims were checked against {answer.shape[1]} chunks and the reference's "
            f"against {reference.shape[1]}: check both against the same chunks"
        )
    relevant = reference.any(axis=0)
    from_relevant = (answer & relevant).any(axis=1)
    from_irrelevant = (answer & ~relevant).any(axis=1) & ~from_relevant
    return from_relevant, from_irrelevant, ~correct


def noise_sensitivity_relevant(
    answer_in_chunks: VerdictMatrix, answer_in_reference: Verdicts, reference_in_chunks: VerdictMatrix
) -> float:
    """Incorrect answer claims a relevant chunk states / answer claims: wrong facts taken from the right
    chunks. NaN without an answer claim, a chunk or a reference claim.

    >>> noise_sensitivity_relevant([[True, False], [False, True], [True, False]], [True, False, False],
    ...                            [[True, False]])
    0.3333333333333333
    """
    parts = _noise(answer_in_chunks, answer_in_reference, reference_in_chunks)
    return NAN if parts is None else float((parts[0] & parts[2]).mean())


def noise_sensitivity_irrelevant(
    answer_in_chunks: VerdictMatrix, answer_in_reference: Verdicts, reference_in_chunks: VerdictMatrix
) -> float:
    """Incorrect answer claims an irrelevant chunk states, and no relevant one / answer claims: wrong facts
    taken from chunks that hold none of the reference's. NaN as :func:`noise_sensitivity_relevant`.

    >>> noise_sensitivity_irrelevant([[True, False], [False, True], [True, False]], [True, False, False],
    ...                              [[True, False]])
    0.3333333333333333
    """
    parts = _noise(answer_in_chunks, answer_in_reference, reference_in_chunks)
    return NAN if parts is None else float((parts[1] & parts[2]).mean())


def _unfaithful(answer_in_chunks: VerdictMatrix, answer_in_reference: Verdicts) -> tuple[np.ndarray, np.ndarray] | None:
    correct = _vector(answer_in_reference)
    answer = _matrix(answer_in_chunks, len(correct))
    if not correct.size or not answer.shape[1]:
        return None
    return ~answer.any(axis=1), correct


def hallucination(answer_in_chunks: VerdictMatrix, answer_in_reference: Verdicts) -> float:
    """Incorrect answer claims that no chunk states / answer claims. NaN without an answer claim or a chunk.

    >>> hallucination([[False, False], [True, False], [False, False]], [True, False, False])
    0.3333333333333333
    """
    parts = _unfaithful(answer_in_chunks, answer_in_reference)
    return NAN if parts is None else float((parts[0] & ~parts[1]).mean())


def self_knowledge(answer_in_chunks: VerdictMatrix, answer_in_reference: Verdicts) -> float:
    """Correct answer claims that no chunk states / answer claims: right from the model's own knowledge. NaN
    without an answer claim or a chunk.

    >>> self_knowledge([[False, False], [True, False], [False, False]], [True, False, False])
    0.3333333333333333
    """
    parts = _unfaithful(answer_in_chunks, answer_in_reference)
    return NAN if parts is None else float((parts[0] & parts[1]).mean())


def claim_faithfulness(answer_in_chunks: VerdictMatrix) -> float:
    """Answer claims some chunk states / answer claims. NaN without an answer claim or a chunk.

    >>> claim_faithfulness([[False, False], [True, False], [False, True]])
    0.6666666666666666
    """
    matrix = _matrix(answer_in_chunks)
    return _mean(matrix.any(axis=1)) if matrix.shape[1] else NAN


def _missed_share(
    grades: Sequence[str], vital: Verdicts, nuggets_in_chunks: VerdictMatrix, *, retrieved: bool
) -> float:
    """Vital nuggets graded ``none`` that some chunk states (``retrieved``) or that none does / vital nuggets;
    NaN without a vital nugget."""
    is_vital = _vector(vital)
    if len(grades) != is_vital.size:
        raise ValueError(f"{len(grades)} grades for {is_vital.size} nuggets: give one grade per nugget")
    if not is_vital.any():
        return NAN
    missed = is_vital & (np.asarray(grades, dtype=object) == "none")
    in_chunks = _matrix(nuggets_in_chunks, is_vital.size).any(axis=1)
    return float((missed & (in_chunks if retrieved else ~in_chunks)).sum() / is_vital.sum())


def vital_missed_unretrieved(grades: Sequence[str], vital: Verdicts, nuggets_in_chunks: VerdictMatrix) -> float:
    """Vital nuggets the answer does not state and no chunk states / vital nuggets: lost by the retriever. NaN
    without a vital nugget.

    >>> vital_missed_unretrieved(["none", "none", "support", "none"], [True, True, True, False],
    ...                          [[False], [True], [True], [False]])
    0.3333333333333333
    """
    return _missed_share(grades, vital, nuggets_in_chunks, retrieved=False)


def vital_missed_retrieved(grades: Sequence[str], vital: Verdicts, nuggets_in_chunks: VerdictMatrix) -> float:
    """Vital nuggets the answer does not state though a chunk does / vital nuggets: lost by the generator. NaN
    without a vital nugget.

    >>> vital_missed_retrieved(["none", "none", "support", "none"], [True, True, True, False],
    ...                        [[False], [True], [True], [False]])
    0.3333333333333333
    """
    return _missed_share(grades, vital, nuggets_in_chunks, retrieved=True)


def _any(share: float) -> float:
    return share if np.isnan(share) else float(share > 0)


def retrieval_failure(grades: Sequence[str], vital: Verdicts, nuggets_in_chunks: VerdictMatrix) -> float:
    """1 when the answer misses a vital nugget that no chunk states, else 0; NaN without a vital nugget.

    >>> retrieval_failure(["none", "support"], [True, True], [[False], [True]])
    1.0
    """
    return _any(vital_missed_unretrieved(grades, vital, nuggets_in_chunks))


def generation_failure(grades: Sequence[str], vital: Verdicts, nuggets_in_chunks: VerdictMatrix) -> float:
    """1 when the answer misses a vital nugget that some chunk states, else 0; NaN without a vital nugget.

    >>> generation_failure(["none", "support"], [True, True], [[False], [True]])
    0.0
    """
    return _any(vital_missed_retrieved(grades, vital, nuggets_in_chunks))
