"""Questions a test set already holds: the same words, or nearly the same question by the cosine of its embedding.

A written question repeats a kept one when, after the same conversation (a follow-up's history, word for word;
none for a first turn), it has the same words (case and spacing aside) or its embedding's cosine with the kept
question's is at least its embedder's :func:`near_duplicate_cosine`. The question alone is embedded, not its
history: two follow-ups after different conversations may read alike ("And its price?") and still ask different
things.

Each embedder's threshold is the cosine that at most 1 % of pairs of *distinct* questions people wrote about the
same passage reach, chosen on some data and checked on other (``benchmarks/validity/bench_generate.py duplicates``): the
multilingual embedder's on IDK-MRC's validation paragraphs (reported on its test split, where people wrote an
unanswerable question by editing an answerable one, so pairs of different questions can differ by one word);
MiniLM's and the hashing embedder's on MTRAG-UN's questions of one conversation, chosen on three collections
and reported on the fourth. What it catches, two wordings of one question, is not measured: no set of question
paraphrases is at hand.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from ragmeter.models import Embedder

__all__ = ["NEAR_DUPLICATE_COSINE", "KeptQuestions", "near_duplicate_cosine"]

#: Each embedder backend's cosine from which two questions are the same (``bench_generate.py duplicates``): on
#: held-out data 0.9 % of distinct pairs reach the multilingual one's (IDK-MRC test), 0.4–1.4 % MiniLM's and 0.7–1.7 %
#: the hashing one's (MTRAG-UN, each collection held out). The PyTorch backend runs MiniLM too (fp32, where the ONNX
#: one is int8) and takes its threshold.
NEAR_DUPLICATE_COSINE = {"onnx": 0.796, "torch": 0.796, "multilingual": 0.993, "hashing": 0.651}


def near_duplicate_cosine(backend: str) -> float:
    """The cosine from which two questions embedded by ``backend`` (a concrete one, not ``auto``) are the same."""
    return NEAR_DUPLICATE_COSINE[backend]


def _words(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


class KeptQuestions:
    """The questions kept so far, to tell whether a new one repeats one of them (see the module docstring).

    ``embedder_for`` (a language code's embedder) and ``cosine_for`` (its threshold) are given together, or neither:
    then only the same words repeat.
    """

    def __init__(
        self, embedder_for: Callable[[str], Embedder] | None = None, cosine_for: Callable[[str], float] | None = None
    ) -> None:
        if (embedder_for is None) != (cosine_for is None):
            raise ValueError("give an embedder and its near-duplicate cosine together, or neither")
        self._embedder_for = embedder_for
        self._cosine_for = cosine_for
        self._words: set[tuple[str, str]] = set()
        self._vectors: dict[tuple[str, str], list[np.ndarray]] = {}
        self._last: tuple[tuple[str, str], np.ndarray] | None = None

    def repeats(self, question: str, history: Sequence[str], language: str) -> bool:
        """Whether ``question``, after ``history`` (its turns' texts), repeats a kept question."""
        after = "\n".join(_words(text) for text in history)
        if (after, _words(question)) in self._words:
            return True
        if self._embedder_for is None or self._cosine_for is None:
            return False
        kept = self._vectors.get((language, after))
        if not kept:
            return False
        vector = self._embed(question, language)
        return bool(np.max(np.stack(kept) @ vector) >= self._cosine_for(language))

    def add(self, question: str, history: Sequence[str], language: str) -> None:
        """Keep ``question`` (after ``history``) as one later questions may repeat."""
        after = "\n".join(_words(text) for text in history)
        self._words.add((after, _words(question)))
        if self._embedder_for is not None:
            self._vectors.setdefault((language, after), []).append(self._embed(question, language))

    def _embed(self, question: str, language: str) -> np.ndarray:
        """``question``'s vector (the last one asked is kept: :meth:`repeats` then :meth:`add` embed it once)."""
        assert self._embedder_for is not None
        if self._last is None or self._last[0] != (language, question):
            self._last = (
                (language, question),
                np.asarray(self._embedder_for(language).encode([question]), dtype=np.float64)[0],
            )
        return self._last[1]
