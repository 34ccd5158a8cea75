"""Seeds 000/001 citation rules (SPEC §2), with cosines fixed by a table embedder."""

import math

import numpy as np
import pytest

from ragmeter import (
    Answerability,
    Chunk,
    Record,
    Settings,
    abstained,
    evaluate,
    faithfulness_fallback,
    idk_citation_count,
    overlap,
)
from ragmeter.metrics.citation import analyze_answer

A, U = Answerability.ANSWERABLE, Answerability.UNANSWERABLE


class TableEmbedder:
    """Known texts get fixed unit vectors: chunk i is e_i; a sentence given (i, c) is c·e_i + √(1−c²)·e_9.
    So cos(sentence, chunk i) = c exactly, and 0 with any other chunk."""

    model_id = "table"

    def __init__(self, chunks, sentences):
        self.vectors = {}
        for i, text in enumerate(chunks):
            self.vectors[text] = np.eye(10)[i]
        for text, (i, c) in sentences.items():
            self.vectors[text] = c * np.eye(10)[i] + math.sqrt(1 - c * c) * np.eye(10)[9]
        self.calls = []

    def encode(self, texts):
        self.calls.append(list(texts))
        return np.stack([self.vectors[t] for t in texts]).astype(np.float64)


CHUNKS = [Chunk("d1", "Chunk one."), Chunk("d2", "Chunk two.")]


def embedder(**cosines):
    """cosines: sentence text (citations stripped) → (chunk index, cosine)."""
    return TableEmbedder([c.text for c in CHUNKS], {k.replace("_", " ") + ".": v for k, v in cosines.items()})


def test_one_citation_to_a_retrieved_doc_above_tau_is_supported():
    e = embedder(Alpha=(0, 0.9))
    assert overlap("Alpha [CIT:d1].", CHUNKS, embedder=e) == 1.0


def test_no_citation_and_two_citations_are_unsupported():
    e = embedder(Alpha=(0, 0.9), Beta=(0, 0.9), Gamma=(1, 0.9))
    analysis = analyze_answer("Alpha. Beta [CIT:d1][CIT:d2]. Gamma [CIT:d2].", CHUNKS, embedder=e)
    assert [s.reason for s in analysis.sentences] == ["no citation", "several citations", "supported"]
    assert analysis.overlap == pytest.approx(1 / 3)


def test_two_citations_of_the_same_doc_are_still_two_citations():
    e = embedder(Alpha=(0, 0.9))
    assert overlap("Alpha [CIT:d1] [CIT:d1].", CHUNKS, embedder=e) == 0.0


def test_a_cited_doc_id_that_was_not_retrieved_is_unsupported_without_embedding():
    e = embedder(Alpha=(0, 0.99))
    analysis = analyze_answer("Alpha [CIT:d7].", CHUNKS, embedder=e)
    assert analysis.sentences[0].reason == "cited doc not retrieved" and analysis.overlap == 0.0
    assert e.calls == []


def test_the_cited_doc_is_compared_not_another_chunk():
    e = embedder(Alpha=(0, 0.9))  # close to d1 only
    assert overlap("Alpha [CIT:d2].", CHUNKS, embedder=e) == 0.0


def test_tau_boundary_is_inclusive():
    # 0.625 is exact in binary, so cosine == tau exactly.
    e = embedder(Alpha=(0, 0.625), Beta=(0, 0.6249))
    assert overlap("Alpha [CIT:d1].", CHUNKS, embedder=e, tau_sim=0.625) == 1.0
    assert overlap("Beta [CIT:d1].", CHUNKS, embedder=e, tau_sim=0.625) == 0.0
    e = embedder(Alpha=(0, 0.6501), Beta=(0, 0.6499))
    assert overlap("Alpha [CIT:d1]. Beta [CIT:d1].", CHUNKS, embedder=e) == 0.5  # default tau 0.65


def test_best_chunk_of_a_repeated_doc_id_counts():
    chunks = [Chunk("d1", "Chunk one."), Chunk("d1", "Chunk two.")]
    e = TableEmbedder(["Chunk one.", "Chunk two."], {"Alpha.": (1, 0.8)})
    assert overlap("Alpha [CIT:d1].", chunks, embedder=e) == 1.0


def test_idk_sentences_are_not_claims_and_idk_with_citation_is_counted():
    e = embedder(Alpha=(0, 0.9))
    answer = "Alpha [CIT:d1]. I don't know the rest [CIT:d2]. Saya tidak tahu."
    assert overlap(answer, CHUNKS, embedder=e) == 1.0  # 1 supported / 1 claim
    assert idk_citation_count(answer) == 1.0
    assert idk_citation_count("I don't know.") == 0.0
    assert abstained(answer) == 0.0


@pytest.mark.parametrize(
    ("answerability", "expected"),
    [(A, 0.0), (None, 0.0), (U, 1.0), (Answerability.PARTIAL, 0.0), (Answerability.CONVERSATIONAL, 1.0)],
)
def test_an_all_idk_answer_abstains_and_faithfulness_depends_on_answerability(answerability, expected):
    e = embedder()
    answer = "I don't know. I do not have specific information about that."
    assert abstained(answer) == 1.0
    assert overlap(answer, CHUNKS, embedder=e) == 0.0
    assert faithfulness_fallback(answer, CHUNKS, answerability=answerability, embedder=e) == expected


def test_explicit_abstain_action_abstains_even_with_claims():
    e = embedder(Alpha=(0, 0.9))
    assert abstained("Alpha [CIT:d1].", action="abstain") == 1.0
    assert faithfulness_fallback("Alpha [CIT:d1].", CHUNKS, answerability=A, embedder=e, action="ABSTAIN") == 0.0


def test_empty_answer_has_no_claims_overlap_zero_and_abstains():
    assert overlap("", CHUNKS, embedder=embedder()) == 0.0
    assert abstained("  ") == 1.0


@pytest.mark.parametrize(("supported", "claims", "expected"), [(0, 2, 0.6), (1, 2, 0.8), (2, 2, 1.0), (1, 4, 0.7)])
def test_faithfulness_is_06_plus_04_overlap_for_answers(supported, claims, expected):
    sentences = {f"S{i}": (0, 0.9 if i < supported else 0.1) for i in range(claims)}
    e = embedder(**sentences)
    answer = " ".join(f"S{i} [CIT:d1]." for i in range(claims))
    assert faithfulness_fallback(answer, CHUNKS, answerability=U, embedder=e) == pytest.approx(expected)


def test_run_scores_match_the_functions_and_prefetch_embeds_each_text_once():
    e = embedder(Alpha=(0, 0.9), Beta=(1, 0.3))
    records = [
        Record(id="1", question="q", answer="Alpha [CIT:d1]. Beta [CIT:d2].", contexts=tuple(CHUNKS), answerability=A),
        Record(
            id="2",
            question="q",
            answer="Alpha [CIT:d1]. I don't know [CIT:d1].",
            contexts=tuple(CHUNKS),
            answerability=U,
        ),
        Record(id="3", question="q", answer="I don't know.", contexts=tuple(CHUNKS), answerability=U),
    ]
    result = evaluate(
        records,
        metrics=["overlap", "faithfulness_fallback", "abstained", "idk_citation_count"],
        embedder=e,
        settings=Settings(n_resamples=200),
    )
    assert list(result.scores["overlap"]) == [0.5, 1.0, 0.0]
    assert list(result.scores["faithfulness_fallback"]) == pytest.approx([0.8, 1.0, 1.0])
    assert list(result.scores["abstained"]) == [0.0, 0.0, 1.0]
    assert result.summary("idk_citation_count").value == 1.0
    assert len(e.calls) == 1 and sorted(e.calls[0]) == ["Alpha.", "Beta.", "Chunk one.", "Chunk two."]
    signature = result.signatures["overlap"].render()
    assert "tau_sim:0.65" in signature and "embedder:table" in signature and "idk:idk-en-1+id-3" in signature
