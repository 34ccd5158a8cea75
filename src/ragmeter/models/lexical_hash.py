"""A deterministic, model-free embedder for tests and quick dry runs.

Each lowercase word is hashed (blake2b) into one of ``dim`` buckets with a sign; a text's vector is
the normalised sum. Texts sharing words get a positive cosine, identical word bags cosine 1. It knows
nothing of meaning: use it to test plumbing, never to report results.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

__all__ = ["HashingEmbedder"]

_WORD = re.compile(r"\w+")


class HashingEmbedder:
    """Signed feature hashing of words into ``dim`` dimensions (default 256)."""

    def __init__(self, *, dim: int = 256) -> None:
        self.dim = dim

    @property
    def model_id(self) -> str:
        return f"hashing-bow/dim:{self.dim}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
                vectors[row, digest % self.dim] += 1.0 if (digest >> 63) else -1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1.0, norms)
