"""Embedders: the :class:`Embedder` protocol, the packaged ONNX default, the packaged multilingual one, an optional
PyTorch backend, and a deterministic hashing embedder for tests."""

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
    "default_tau_sim",
    "embedder_backend",
    "embedder_model_id",
    "load_embedder",
    "load_token_encoder",
]

EMBEDDER_BACKENDS = ("auto", "onnx", "torch", "multilingual", "hashing")
#: The backend ``auto`` takes for each language; a language not named takes ``onnx``.
LANGUAGE_EMBEDDERS = {"id": "multilingual"}
#: Overlap's τ_sim for each backend when none is set: MiniLM's is seeds 000/001's middle, the multilingual one's
#: is calibrated (:data:`~ragmeter.models.multilingual_e5.TAU_SIM`).
_TAU_SIM = {"onnx": 0.65, "torch": 0.65, "hashing": 0.65}


def embedder_backend(backend: str, language: str = "en") -> str:
    """The backend ``backend`` means for a record in ``language``: ``auto`` is the language's own."""
    return LANGUAGE_EMBEDDERS.get(language, "onnx") if backend == "auto" else backend


def default_tau_sim(backend: str) -> float:
    """Overlap's τ_sim when none is set, for a concrete backend (not ``auto``)."""
    if backend == "multilingual":
        from ragmeter.models.multilingual_e5 import TAU_SIM

        return TAU_SIM
    return _TAU_SIM[backend]


def embedder_model_id(backend: str) -> str | None:
    """The ``model_id`` of a concrete backend's embedder where it is known without loading the model (the
    multilingual one's), else ``None``."""
    if backend == "multilingual":
        from ragmeter.models.multilingual_e5 import model_id

        return model_id()
    return None


def load_embedder(backend: str = "auto", language: str = "en") -> Embedder:
    """The embedder for a backend name: ``auto`` (the default: the language's own, :func:`embedder_backend`),
    ``onnx`` (MiniLM), ``multilingual`` (multilingual-e5-small), ``torch`` (extra) or ``hashing`` (tests)."""
    backend = embedder_backend(backend, language)
    if backend == "onnx":
        return OnnxMiniLM()
    if backend == "multilingual":
        from ragmeter.models.multilingual_e5 import MultilingualE5

        return MultilingualE5()
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
