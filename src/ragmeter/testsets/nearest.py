"""The chunks of a corpus nearest to a question, by the cosine of their embeddings: what a retriever would show a
system asked an unanswerable question, and so what the question must not be answered by."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ragmeter.models import Embedder
from ragmeter.testsets.chunking import Chunk

__all__ = ["NEAREST", "NearestChunks"]

#: Chunks an unanswerable question is checked against: a retriever's usual top five.
NEAREST = 5


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


class NearestChunks:
    """``chunks`` searched by cosine with the embedder of a question's language (``embedder_for(code)``, each
    embedding the whole corpus once, when first asked)."""

    def __init__(self, chunks: Sequence[Chunk], embedder_for: Callable[[str], Embedder]) -> None:
        self.chunks = list(chunks)
        self._embedder_for = embedder_for
        self._index: dict[str, tuple[Embedder, np.ndarray]] = {}

    def top(self, question: str, language: str, k: int = NEAREST) -> list[Chunk]:
        """The ``k`` chunks nearest to ``question``, nearest first (the corpus's order on a tie)."""
        if language not in self._index:
            embedder = self._embedder_for(language)
            self._index[language] = (embedder, _unit(np.asarray(embedder.encode([c.text for c in self.chunks]))))
        embedder, matrix = self._index[language]
        scores = matrix @ _unit(np.asarray(embedder.encode([question])))[0]
        order = np.argsort(-scores, kind="stable")[:k]
        return [self.chunks[i] for i in order]
