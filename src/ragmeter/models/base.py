"""The embedder protocol, a run-wide cache in front of any embedder, and shared helpers."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar, runtime_checkable

import numpy as np

from ragmeter.core.errors import ModelError

__all__ = [
    "CachedEmbedder",
    "CachedTokenEncoder",
    "Embedder",
    "TokenEmbeddings",
    "TokenEncoder",
    "check_sha256",
    "length_sorted_batches",
]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors.

    ``model_id`` names the model and every setting that changes its vectors; it goes into signatures.
    ``encode`` returns a float32 array of shape ``(len(texts), dim)`` whose rows have L2 norm 1.
    """

    @property
    def model_id(self) -> str: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class TokenEmbeddings:
    """Contextual embeddings of one text's tokens: ``vectors`` (n_tokens × dim, rows L2-normalised,
    special tokens included) and ``weights`` (1.0 for content tokens, 0.0 for special tokens such as
    [CLS] and [SEP], which BERTScore matches against but does not average over)."""

    vectors: np.ndarray
    weights: np.ndarray


@runtime_checkable
class TokenEncoder(Protocol):
    """Turns texts into per-token embeddings, for BERTScore. ``token_model_id`` names the model, layer
    and truncation; texts are stripped and truncated to the model's maximum length."""

    @property
    def token_model_id(self) -> str: ...

    def encode_tokens(self, texts: Sequence[str]) -> list[TokenEmbeddings]: ...


def normalise_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero)."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


V = TypeVar("V")


class _LruCache(Generic[V]):
    """Values by text, forgetting the least recently used beyond ``max_bytes`` (``size`` measures one)."""

    def __init__(self, max_bytes: int, size: Callable[[V], int]) -> None:
        self.max_bytes = max_bytes
        self._size = size
        self._values: OrderedDict[str, V] = OrderedDict()
        self._bytes = 0
        self.computed = 0

    def get_many(self, texts: Sequence[str], compute: Callable[[list[str]], Sequence[V]]) -> list[V]:
        """The value of every text, computing the ones not held in one call (each distinct text once)."""
        missing = list(dict.fromkeys(text for text in texts if text not in self._values))
        fresh = dict(zip(missing, compute(missing), strict=True)) if missing else {}
        self.computed += len(fresh)
        out = []
        for text in texts:
            value = fresh.get(text)
            if value is None:
                value = self._values[text]
                self._values.move_to_end(text)
            out.append(value)
        for text, value in fresh.items():  # stored after the lookups: eviction cannot lose a requested text
            self._values[text] = value
            self._bytes += self._size(value)
            while self._bytes > self.max_bytes and len(self._values) > 1:
                _, evicted = self._values.popitem(last=False)
                self._bytes -= self._size(evicted)
        return out


class CachedEmbedder:
    """Embeds each distinct text once, for as long as the cache holds it.

    ``encode`` sends only texts it has not seen to the wrapped embedder, in one call, so a batch of
    records shares one length-sorted pass. The cache forgets the least recently used vectors beyond
    ``max_bytes`` (default 256 MiB, about 170,000 MiniLM vectors), which bounds a run's memory.
    """

    def __init__(self, embedder: Embedder, *, max_bytes: int = 256 * 2**20) -> None:
        self.embedder = embedder
        self._cache: _LruCache[np.ndarray] = _LruCache(max_bytes, lambda vector: vector.nbytes)

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    @property
    def texts_encoded(self) -> int:
        return self._cache.computed

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = self._cache.get_many(texts, lambda missing: list(self.embedder.encode(missing)))
        return np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)


class CachedTokenEncoder:
    """Token embeddings of each distinct text, kept while they fit in ``max_bytes`` (default 512 MiB;
    least recently used forgotten first). Passages shared by many records are encoded once."""

    def __init__(self, encoder: TokenEncoder, *, max_bytes: int = 512 * 2**20) -> None:
        self.encoder = encoder
        self._cache: _LruCache[TokenEmbeddings] = _LruCache(max_bytes, lambda tokens: tokens.vectors.nbytes)

    @property
    def token_model_id(self) -> str:
        return self.encoder.token_model_id

    @property
    def texts_encoded(self) -> int:
        return self._cache.computed

    def encode_tokens(self, texts: Sequence[str]) -> list[TokenEmbeddings]:
        return self._cache.get_many(texts, self.encoder.encode_tokens)


def length_sorted_batches(
    lengths: Sequence[int], batch_size: int, *, max_attention: int | None = None
) -> list[np.ndarray]:
    """Indices grouped into batches of similar length, so padding is minimal: at most ``batch_size`` texts
    each and, with ``max_attention``, at most that many attention cells (texts × longest length²), which
    bounds the memory of a transformer's attention scores: 32 texts of 512 tokens would take 12 heads × 32 ×
    512² floats, 400 MB, per layer's scores, where a bound of 32 × 128² keeps any batch at 25 MB."""
    order = np.argsort(np.asarray(lengths), kind="stable")
    if max_attention is None:
        return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    batches, start = [], 0
    while start < len(order):
        # the batch ends where its longest (last, as sorted) text would take it over the bound
        end = min(start + batch_size, len(order))
        while end - start > 1 and (end - start) * int(lengths[order[end - 1]]) ** 2 > max_attention:
            end -= 1
        batches.append(order[start:end])
        start = end
    return batches


def check_sha256(path: Path, expected: str, what: str) -> None:
    """Raise :class:`ModelError` unless the file exists and its sha256 equals ``expected``."""
    if not path.is_file():
        raise ModelError(f"{what} is missing at {path}: reinstall ragmeter (pip install --force-reinstall ragmeter)")
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        raise ModelError(
            f"{what} at {path} has sha256 {digest.hexdigest()}, expected {expected}: "
            "the file is corrupt or a different version; reinstall the package that ships it"
        )
