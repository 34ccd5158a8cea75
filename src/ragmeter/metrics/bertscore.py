"""BERTScore (Zhang et al., 2020): greedy matching of contextual token embeddings, no idf.

For candidate tokens x_i and reference tokens y_j (unit vectors), with content weights w (0 for the
special tokens [CLS]/[SEP], 1 otherwise):

    P = Σ_i w_i · max_j x_i·y_j / Σ_i w_i        R = Σ_j w_j · max_i x_i·y_j / Σ_j w_j
    F = 2PR / (P + R)

The max runs over every token of the other side, special tokens included, as bert-score does. A side
without content tokens (an empty text) gives P = R = F = 0 before rescaling. One difference from the
bert-score package: it scores each padded position of a batch as a cosine of 0, so a token whose real
cosines are all negative gets 0 there and a pair's value depends on its batch (up to 0.003 in P on
MT-RAG's 477 pairs); ragmeter takes the maximum over real tokens only, as the definition does. With a baseline b,
each of P, R, F is rescaled to (x − b) / (1 − b).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragmeter.core.errors import ConfigError
from ragmeter.models.base import TokenEmbeddings, TokenEncoder

__all__ = ["MTRAG_DEBERTA_BASELINE", "Baseline", "BertScore", "bert_score", "greedy_match", "load_baseline"]


@dataclass(frozen=True)
class BertScore:
    precision: float
    recall: float
    f1: float


@dataclass(frozen=True)
class Baseline:
    """Rescaling baselines b_P, b_R, b_F for one model and layer, with a name for signatures."""

    precision: float
    recall: float
    f1: float
    name: str

    @classmethod
    def from_file(cls, path: str | Path, *, layer: int) -> Baseline:
        """Row ``layer`` of a bert-score baseline file (CSV with columns LAYER,P,R,F)."""
        try:
            with Path(path).open(encoding="utf-8", newline="") as handle:
                rows = {int(row["LAYER"]): row for row in csv.DictReader(handle)}
            row = rows[layer]
            return cls(float(row["P"]), float(row["R"]), float(row["F"]), name=f"{Path(path).name}@{layer}")
        except (OSError, KeyError, ValueError) as exc:
            raise ConfigError(
                f"cannot read layer {layer} from the baseline file {path}: expected CSV columns LAYER,P,R,F ({exc})"
            ) from exc

    def rescale(self, score: BertScore) -> BertScore:
        return BertScore(
            (score.precision - self.precision) / (1 - self.precision),
            (score.recall - self.recall) / (1 - self.recall),
            (score.f1 - self.f1) / (1 - self.f1),
        )


#: MT-RAG's setting: microsoft/deberta-xlarge-mnli, layer 40, English baselines (SPEC §5).
MTRAG_DEBERTA_BASELINE = Baseline(0.5169066, 0.5170288, 0.5150192, name="deberta-xlarge-mnli@40")


def greedy_match(candidate: TokenEmbeddings, reference: TokenEmbeddings) -> BertScore:
    """Raw BERTScore of two encoded texts (see the module docstring for the formula)."""
    if candidate.weights.sum() == 0 or reference.weights.sum() == 0:
        return BertScore(0.0, 0.0, 0.0)
    similarity = candidate.vectors.astype(np.float64) @ reference.vectors.astype(np.float64).T
    precision = float(similarity.max(axis=1) @ candidate.weights / candidate.weights.sum())
    recall = float(similarity.max(axis=0) @ reference.weights / reference.weights.sum())
    f1 = 2 * precision * recall / (precision + recall) if precision + recall != 0 else 0.0
    return BertScore(precision, recall, f1)


def bert_score(
    prediction: str, reference: str, *, encoder: TokenEncoder, baseline: Baseline | None = None
) -> BertScore:
    """BERTScore of ``prediction`` against ``reference``: P, R and F, each in [-1, 1] (raw cosines are
    usually positive; rescaled values can fall below 0).

    >>> from ragmeter.models import OnnxMiniLM                     # doctest: +SKIP
    >>> bert_score("The cat sat.", "A cat was sitting.", encoder=OnnxMiniLM())  # doctest: +SKIP
    """
    candidate, target = encoder.encode_tokens([prediction, reference])
    score = greedy_match(candidate, target)
    return baseline.rescale(score) if baseline else score


def load_baseline(spec: str | None, layer: int | None) -> Baseline | None:
    """``None`` → no rescaling; ``mtrag-deberta`` → MT-RAG's values; else a baseline CSV read at ``layer``."""
    if spec is None:
        return None
    if spec == "mtrag-deberta":
        return MTRAG_DEBERTA_BASELINE
    if layer is None:
        raise ConfigError("a BERTScore baseline file needs the layer to read: set bertscore_layer")
    return Baseline.from_file(spec, layer=layer)
