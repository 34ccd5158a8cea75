"""Token embeddings from any local Hugging Face encoder at a chosen layer, for BERTScore (torch extra).

This is how MT-RAG's exact setting runs: ``microsoft/deberta-xlarge-mnli`` at layer 40, when the user
has those weights in a local directory. Layers above the chosen one are dropped before the forward
pass, as bert-score does; texts are stripped and truncated to the tokenizer's ``model_max_length``.
Nothing is fetched from a hub.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.core.errors import ConfigError, MissingDependencyError
from ragmeter.models.base import TokenEmbeddings, length_sorted_batches, normalise_rows

__all__ = ["HFTokenEncoder"]


class HFTokenEncoder:
    """Layer ``layer`` token embeddings of the transformers model in ``model_dir`` (``layer`` counts
    from 1; 0 is the embedding layer)."""

    def __init__(self, model_dir: str | Path, *, layer: int, batch_size: int = 16) -> None:
        try:
            import torch
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:
            raise MissingDependencyError("torch", "torch", "BERTScore with a Hugging Face model") from exc
        directory = Path(model_dir)
        if not directory.is_dir():
            raise ConfigError(
                f"BERTScore model directory {directory} does not exist: give a local copy of "
                "the model (ragmeter never downloads one)"
            )
        self._torch: Any = torch
        self._tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
        model = AutoModel.from_pretrained(str(directory), local_files_only=True).eval()
        if hasattr(model, "decoder") and hasattr(model, "encoder"):
            model = model.encoder
        layers = getattr(getattr(model, "encoder", None), "layer", None)
        if layers is None:
            raise ConfigError(f"{directory} is not an encoder with numbered layers (model.encoder.layer)")
        if not 0 <= layer <= len(layers):
            raise ConfigError(f"layer must lie in 0..{len(layers)} for {directory.name}, got {layer}")
        model.encoder.layer = torch.nn.ModuleList(list(layers)[:layer])
        self._model = model
        self.batch_size = batch_size
        self.max_length = int(self._tokenizer.model_max_length)
        self._token_model_id = f"{directory.name}-torch/layer:{layer}/max_len:{self.max_length}"

    @property
    def token_model_id(self) -> str:
        return self._token_model_id

    def encode_tokens(self, texts: Sequence[str]) -> list[TokenEmbeddings]:
        torch = self._torch
        encoded = [
            self._tokenizer(text.strip(), truncation=True, max_length=self.max_length, return_special_tokens_mask=True)
            for text in texts
        ]
        out: list[TokenEmbeddings | None] = [None] * len(texts)
        with torch.inference_mode():
            for batch in length_sorted_batches([len(e["input_ids"]) for e in encoded], self.batch_size):
                inputs = self._tokenizer.pad(
                    [{"input_ids": encoded[i]["input_ids"]} for i in batch], return_tensors="pt"
                )
                hidden = self._model(**inputs).last_hidden_state.float().numpy()
                for row, index in enumerate(batch):
                    length = len(encoded[index]["input_ids"])
                    special = np.asarray(encoded[index]["special_tokens_mask"], dtype=np.float32)
                    out[index] = TokenEmbeddings(normalise_rows(hidden[row, :length]), 1.0 - special)
        return out  # type: ignore[return-value]
