"""A written question that repeats a kept one: the same words, or an embedding at or above its threshold, after the
same conversation; and a test set's run that drops it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from ragmeter.judges import Judge, ScriptedBackend
from ragmeter.models import EMBEDDER_BACKENDS
from ragmeter.testing.scripted_judge import reply_to
from ragmeter.testsets.chunking import Chunk
from ragmeter.testsets.corpus import CorpusChunks
from ragmeter.testsets.duplicates import NEAR_DUPLICATE_COSINE, KeptQuestions, near_duplicate_cosine
from ragmeter.testsets.pipeline import DUPLICATE, generate

MUSEUM, MUSEUMS = "What does the text say about the museum?", "What does the text say about the museums?"


class TwoVectors:
    """MUSEUM at (1, 0, 0) and MUSEUMS at (0.8, 0.6, 0): a cosine of 0.8 by hand; any other text at (0, 0, 1)."""

    model_id = "two-vectors"

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.encoded.extend(texts)
        table = {MUSEUM: [1.0, 0.0, 0.0], MUSEUMS: [0.8, 0.6, 0.0]}
        return np.array([table.get(text, [0.0, 0.0, 1.0]) for text in texts], dtype=np.float32)


def test_the_same_words_repeat_after_the_same_conversation_only() -> None:
    kept = KeptQuestions()
    kept.add("When does it open?", ["user: the pool", "assistant: it is heated"], "en")
    assert kept.repeats("  when DOES it   open? ", ["user:  the pool", "assistant: it is heated"], "en")
    assert not kept.repeats("When does it open?", ["user: the gym", "assistant: it is new"], "en")
    assert not kept.repeats("When does it open?", [], "en")


def test_a_question_repeats_a_kept_one_from_its_embedders_cosine() -> None:
    embedder = TwoVectors()
    at = {"en": 0.8, "id": 0.81}
    kept = KeptQuestions(lambda code: embedder, at.__getitem__)
    kept.add(MUSEUM, [], "en")
    kept.add(MUSEUM, [], "id")
    assert kept.repeats(MUSEUMS, [], "en")  # 0.8 reaches 0.8
    assert not kept.repeats(MUSEUMS, [], "id")  # not 0.81
    assert not kept.repeats(MUSEUMS, ["user: the zoo"], "en")  # after another conversation
    assert embedder.encoded.count(MUSEUMS) == 2  # once for en, once for id; none without a kept one
    with pytest.raises(ValueError, match="together"):
        KeptQuestions(lambda code: embedder)


def test_every_embedder_backend_has_its_threshold() -> None:
    assert set(NEAR_DUPLICATE_COSINE) == set(EMBEDDER_BACKENDS) - {"auto"}
    assert all(0.0 < near_duplicate_cosine(backend) < 1.0 for backend in NEAR_DUPLICATE_COSINE)
    assert near_duplicate_cosine("torch") == near_duplicate_cosine("onnx")  # one model, two runtimes


@pytest.mark.parametrize(("cosine", "kept_questions"), [(0.8, 1), (0.81, 2)])
def test_a_run_drops_a_question_that_nearly_repeats_a_kept_one(cosine: float, kept_questions: int) -> None:
    chunks = (Chunk("a", "d1", "The museum closes at six.", 0), Chunk("b", "d2", "The museums close at six.", 0))
    judge = Judge(ScriptedBackend(reply_to), claims="split", max_attempts=1)
    with judge:
        records, report = generate(
            CorpusChunks(chunks, {"a": "en", "b": "en"}),
            judge,
            n=2,
            kinds=("factoid",),
            embedder_for=lambda code: TwoVectors(),
            duplicate_cosine_for=lambda code: cosine,
        )
    assert {r.question for r in records} <= {MUSEUM, MUSEUMS} and len(records) == kept_questions
    assert report.dropped == ({("factoid", DUPLICATE): 1} if kept_questions == 1 else {})
    assert f"near_duplicate.en:{cosine}" in report.signature
