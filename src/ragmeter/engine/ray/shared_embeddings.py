"""Embeddings shared by the actors of a Ray run, so that each distinct text is embedded once on the cluster,
not once per actor: where answers and chunks repeat across the input (the usual case), every actor would
otherwise embed the same corpus.

:class:`EmbeddingStore` runs as one Ray actor. An actor's :class:`SharedEmbedder` asks it for the texts it
lacks; the store answers with the vectors it holds and *claims* a slice of the others for the caller to embed
(at most ``CLAIM`` texts a call, so that actors that start together share the work instead of one taking all
of it), and the caller waits for texts another actor has claimed. A claim not fulfilled within
``CLAIM_TIMEOUT_S`` (its actor died) is handed to the next caller. The store keeps at most ``max_bytes`` of
vectors, forgetting the oldest first; a forgotten text is embedded again when asked for. The vectors of the
packaged ONNX model do not depend on the batch a text is embedded in, so who embeds a text never changes a
score.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragmeter.models import Embedder

__all__ = ["CLAIM", "EmbeddingStore", "SharedEmbedder"]

#: Texts one call may claim to embed (a few forward passes' worth).
CLAIM = 128
CLAIM_TIMEOUT_S = 300.0
_WAIT_S = 0.02


class EmbeddingStore:
    """The cluster's vectors by text, and who is embedding which text now (run as a Ray actor)."""

    def __init__(self, max_bytes: int = 512 * 2**20) -> None:
        self.max_bytes = max_bytes
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._bytes = 0
        self._claims: dict[str, float] = {}  # text → when it was claimed

    def take(self, texts: Sequence[str]) -> tuple[dict[str, np.ndarray], list[str]]:
        """The vectors held for ``texts``, and up to :data:`CLAIM` of the others, now claimed by the caller."""
        found = {text: self._vectors[text] for text in texts if text in self._vectors}
        now = time.monotonic()
        claimed: list[str] = []
        for text in texts:
            if len(claimed) == CLAIM:
                break
            if text in found or now - self._claims.get(text, -CLAIM_TIMEOUT_S) < CLAIM_TIMEOUT_S:
                continue
            self._claims[text] = now
            claimed.append(text)
        return found, claimed

    def put(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        for text, vector in zip(texts, vectors, strict=True):
            self._claims.pop(text, None)
            if text not in self._vectors:
                self._vectors[text] = vector
                self._bytes += vector.nbytes
        while self._bytes > self.max_bytes and len(self._vectors) > 1:
            _, evicted = self._vectors.popitem(last=False)
            self._bytes -= evicted.nbytes


class SharedEmbedder:
    """An :class:`~ragmeter.models.Embedder` that embeds only what no other actor has embedded or is embedding,
    through the ``store`` (a Ray actor handle of :class:`EmbeddingStore`)."""

    def __init__(self, embedder: Embedder, store: Any) -> None:
        self.embedder = embedder
        self.store = store

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import ray

        vectors: dict[str, np.ndarray] = {}
        pending = list(dict.fromkeys(texts))
        while pending:
            found, mine = ray.get(self.store.take.remote(pending))
            vectors.update(found)
            if mine:
                encoded = self.embedder.encode(mine)
                self.store.put.remote(mine, encoded)
                vectors.update(zip(mine, encoded, strict=True))
            else:
                time.sleep(_WAIT_S)  # the rest is being embedded by other actors
            pending = [text for text in pending if text not in vectors]
        return np.stack([vectors[text] for text in texts]) if texts else np.zeros((0, 0), dtype=np.float32)
