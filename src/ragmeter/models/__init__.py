"""Embedders: the :class:`Embedder` protocol, the packaged ONNX default, an optional PyTorch
backend, and a deterministic hashing embedder for tests."""

from __future__ import annotations

from ragmeter.core.errors import ConfigError
from ragmeter.models.base import CachedEmbedder, Embedder, TokenEncoder
from ragmeter.models.lexical_hash import HashingEmbedder
from ragmeter.models.onnx_minilm import OnnxMiniLM

__all__ = [
    "EMBEDDER_BACKENDS",
    "CachedEmbedder",
    "Embedder",
    "HashingEmbedder",
    "OnnxMiniLM",
    "TokenEncoder",
    "load_embedder",
    "load_token_encoder",
]

EMBEDDER_BACKENDS = ("onnx", "torch", "hashing")


def load_embedder(backend: str = "onnx") -> Embedder:
    """The embedder for a backend name: ``onnx`` (default), ``torch`` (extra) or ``hashing`` (tests)."""
    if backend == "onnx":
        return OnnxMiniLM()
    if backend == "torch":
        from ragmeter.models.torch_minilm import TorchEmbedder

        return TorchEmbedder()
    if backend == "hashing":
        return HashingEmbedder()
    raise ConfigError(f"unknown embedder backend {backend!r}: choose one of {', '.join(EMBEDDER_BACKENDS)}")


def load_token_encoder(model: str = "minilm", layer: int | None = None) -> TokenEncoder:
    """The BERTScore token encoder: ``minilm`` (packaged ONNX, layer 6) or a local Hugging Face model
    directory at ``layer`` (torch extra)."""
    if model == "minilm":
        return OnnxMiniLM()
    if layer is None:
        raise ConfigError(f"BERTScore with {model} needs a layer number")
    from ragmeter.models.hf_tokens import HFTokenEncoder

    return HFTokenEncoder(model, layer=layer)
