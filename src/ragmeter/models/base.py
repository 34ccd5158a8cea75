"""The embedder protocol, a run-wide cache in front of any embedder, and shared helpers."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from ragmeter.errors import ModelError

__all__ = ["CachedEmbedder", "CachedTokenEncoder", "Embedder", "TokenEmbeddings", "TokenEncoder", "check_sha256",
           "length_sorted_batches"]


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


class CachedEmbedder:
    """Embeds each distinct text once, for as long as the cache holds it.

    ``encode`` sends only texts it has not seen to the wrapped embedder, in one call, so a batch of
    records shares one length-sorted pass. The cache forgets the least recently used vectors beyond
    ``max_bytes`` (default 256 MiB, about 170,000 MiniLM vectors), which bounds a run's memory.
    """

    def __init__(self, embedder: Embedder, *, max_bytes: int = 256 * 2**20) -> None:
        self.embedder = embedder
        self.max_bytes = max_bytes
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._bytes = 0
        self.texts_encoded = 0

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(text for text in texts if text not in self._vectors))
        fresh = dict(zip(missing, self.embedder.encode(missing))) if missing else {}
        self.texts_encoded += len(fresh)
        rows = []
        for text in texts:
            vector = fresh.get(text)
            if vector is None:
                vector = self._vectors[text]
                self._vectors.move_to_end(text)
            rows.append(vector)
        for text, vector in fresh.items():
            self._store(text, vector)
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack(rows)

    def _store(self, text: str, vector: np.ndarray) -> None:
        self._vectors[text] = vector
        self._bytes += vector.nbytes
        while self._bytes > self.max_bytes and len(self._vectors) > 1:
            _, evicted = self._vectors.popitem(last=False)
            self._bytes -= evicted.nbytes


class CachedTokenEncoder:
    """Token embeddings of each distinct text, kept while they fit in ``max_bytes`` (default 512 MiB;
    least recently used forgotten first). Passages shared by many records are encoded once."""

    def __init__(self, encoder: TokenEncoder, *, max_bytes: int = 512 * 2**20) -> None:
        self.encoder = encoder
        self.max_bytes = max_bytes
        self._cache: OrderedDict[str, TokenEmbeddings] = OrderedDict()
        self._bytes = 0
        self.texts_encoded = 0

    @property
    def token_model_id(self) -> str:
        return self.encoder.token_model_id

    def encode_tokens(self, texts: Sequence[str]) -> list[TokenEmbeddings]:
        missing = list(dict.fromkeys(text for text in texts if text not in self._cache))
        fresh = dict(zip(missing, self.encoder.encode_tokens(missing))) if missing else {}
        self.texts_encoded += len(fresh)
        out = []
        for text in texts:
            tokens = fresh.get(text)
            if tokens is None:
                tokens = self._cache[text]
                self._cache.move_to_end(text)
            out.append(tokens)
        for text, tokens in fresh.items():
            self._cache[text] = tokens
            self._bytes += tokens.vectors.nbytes
            while self._bytes > self.max_bytes and len(self._cache) > 1:
                _, evicted = self._cache.popitem(last=False)
                self._bytes -= evicted.vectors.nbytes
        return out


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> list[np.ndarray]:
    """Indices grouped into batches of similar length, so padding is minimal."""
    order = np.argsort(np.asarray(lengths), kind="stable")
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def check_sha256(path: Path, expected: str, what: str) -> None:
    """Raise :class:`ModelError` unless the file exists and its sha256 equals ``expected``."""
    if not path.is_file():
        raise ModelError(f"{what} is missing at {path}: reinstall ragmeter (pip install --force-reinstall ragmeter)")
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        raise ModelError(f"{what} at {path} has sha256 {digest.hexdigest()}, expected {expected}: "
                         "the file is corrupt or a different version; reinstall the package that ships it")
