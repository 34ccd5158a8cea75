"""Setting τ_sim from labelled data (``ragmeter calibrate-tau``): seeds 000/001 leave it at "0.6–0.7".

The input is cited sentences labelled by people: JSONL or CSV with ``sentence`` (the answer's sentence, its
``[CIT:…]`` markers are removed as Overlap removes them), ``chunk`` (the text of the chunk it cites) and ``label``
(:data:`LABELS`: ``1``, ``true``, ``yes``, ``supported`` / ``0``, ``false``, ``no``, ``not supported``,
``unsupported``, in any case), and optionally ``conversation_id`` (the resampling unit of the interval). Each
pair's cosine comes from the same embedder Overlap uses.

The result: the ROC of the cosine as a classifier of "supported" (true and false positive rate, precision and
balanced accuracy at a grid of τ), its AUROC with a bootstrap interval, the τ that maximises balanced accuracy
(over every observed cosine; ties go to the higher, stricter τ), the lowest τ whose precision reaches a target
when one is given, and, for a run's records, the Overlap that run would have at each τ of the grid. An AUROC
interval that cannot be computed (the pairs come from one conversation, or no resample holds both classes) is NaN
with its reason in ``auroc_interval_undefined`` (``null`` and the reason in JSON).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.core.errors import ConfigError, InputError
from ragmeter.core.records import Record
from ragmeter.core.settings import Settings
from ragmeter.core.signature import Signature
from ragmeter.engine.evaluation import evaluate
from ragmeter.human.with_people import interval_undefined
from ragmeter.io.readers import object_rows
from ragmeter.models import CachedEmbedder, Embedder, load_embedder
from ragmeter.stats.correlation import auroc, cluster_bootstrap
from ragmeter.text.citations import strip_citations
from ragmeter.text.languages import AUTO, detect_language

__all__ = ["GRID", "LABELS", "Calibration", "calibrate_tau", "read_labelled"]

#: The τ values of the ROC table and of the Overlap a run would have.
GRID = tuple(round(0.30 + 0.05 * i, 2) for i in range(14))
_POSITIVE = ("1", "1.0", "true", "yes", "supported")
_NEGATIVE = ("0", "0.0", "false", "no", "not supported", "unsupported")


def _either(words: tuple[str, ...]) -> str:
    return f"{', '.join(words[:-1])} or {words[-1]}"


#: The labels read, in words (for the command's help and the error of a label it cannot read).
LABELS = f"{_either(_POSITIVE)} for a sentence its chunk supports; {_either(_NEGATIVE)} for one it does not (any case)"


@dataclass(frozen=True)
class Labelled:
    sentence: str
    chunk: str
    supported: bool
    conversation: str


def read_labelled(path: str | Path) -> list[Labelled]:
    """The labelled pairs of ``path``; a row without a sentence, chunk or readable label is an error naming it."""
    path = Path(path)
    out = []
    for line, row in object_rows(path):
        for name in ("sentence", "chunk", "label"):
            if row.get(name) in (None, ""):
                raise InputError("missing", path=str(path), line=line, field=name)
        label = str(row["label"]).strip().lower()
        if label not in _POSITIVE + _NEGATIVE:
            raise InputError(f"a label is {LABELS}; got {row['label']!r}", path=str(path), line=line, field="label")
        out.append(
            Labelled(
                str(row["sentence"]),
                str(row["chunk"]),
                label in _POSITIVE,
                str(row.get("conversation_id") or f"line{line}"),
            )
        )
    if not out:
        raise ConfigError(f"{path} has no labelled sentence")
    return out


@dataclass(frozen=True)
class RocPoint:
    tau: float
    true_positive_rate: float
    false_positive_rate: float
    precision: float
    balanced_accuracy: float


@dataclass(frozen=True)
class Calibration:
    """See the module docstring. ``overlap_at`` maps τ to the run's mean Overlap (empty without a run);
    ``auroc_interval_undefined`` says why the AUROC interval is NaN (``None`` when it is defined)."""

    n: int
    n_supported: int
    auroc: float
    auroc_low: float
    auroc_high: float
    roc: tuple[RocPoint, ...]
    best: RocPoint
    for_precision: RocPoint | None
    precision_target: float | None
    embedder: str
    signature: str
    overlap_at: dict[float, float] = field(default_factory=dict)
    auroc_interval_undefined: str | None = None

    def to_dict(self) -> dict[str, Any]:
        def clean(value: Any) -> Any:
            return None if isinstance(value, float) and math.isnan(value) else value

        return {
            "n": self.n,
            "n_supported": self.n_supported,
            "auroc": clean(self.auroc),
            "auroc_interval": [clean(self.auroc_low), clean(self.auroc_high)],
            "auroc_interval_undefined": self.auroc_interval_undefined,
            "roc": [{k: clean(v) for k, v in p.__dict__.items()} for p in self.roc],
            "best_balanced_accuracy": {k: clean(v) for k, v in self.best.__dict__.items()},
            "for_precision": (
                {k: clean(v) for k, v in self.for_precision.__dict__.items()} if self.for_precision else None
            ),
            "precision_target": self.precision_target,
            "embedder": self.embedder,
            "overlap_at": {str(k): clean(v) for k, v in self.overlap_at.items()},
            "signature": self.signature,
        }


def _point(tau: float, cosines: np.ndarray, supported: np.ndarray) -> RocPoint:
    decided = cosines >= tau
    tpr = float(decided[supported].mean()) if supported.any() else math.nan
    fpr = float(decided[~supported].mean()) if (~supported).any() else math.nan
    precision = float(supported[decided].mean()) if decided.any() else math.nan
    return RocPoint(tau, tpr, fpr, precision, (tpr + 1 - fpr) / 2)


def _language(pairs: Sequence[Labelled], setting: str) -> str:
    """The pairs' language: ``setting``, or under ``auto`` the one most of the sentences are written in."""
    if setting != AUTO:
        return setting
    return Counter(detect_language(pair.sentence) for pair in pairs).most_common(1)[0][0]


def calibrate_tau(
    labelled: str | Path | Sequence[Labelled],
    *,
    embedder: Embedder | None = None,
    precision: float | None = None,
    records: Iterable[Record] | None = None,
    settings: Settings | None = None,
) -> Calibration:
    """Calibrate τ_sim on ``labelled`` pairs (a file or :func:`read_labelled`'s pairs); see the module docstring."""
    settings = settings or Settings()
    pairs = read_labelled(labelled) if isinstance(labelled, (str, Path)) else list(labelled)
    supported = np.array([p.supported for p in pairs])
    if supported.all() or not supported.any():
        raise ConfigError("calibrating τ needs sentences labelled supported and others labelled not supported")
    cached = CachedEmbedder(embedder or load_embedder(settings.embedder, _language(pairs, settings.language)))
    texts = list(dict.fromkeys(t for p in pairs for t in (strip_citations(p.sentence), p.chunk)))
    vectors = dict(zip(texts, cached.encode(texts), strict=True))
    cosines = np.array([float(vectors[strip_citations(p.sentence)] @ vectors[p.chunk]) for p in pairs])
    area = auroc(cosines, supported.astype(int))
    clusters = [p.conversation for p in pairs]
    low, high, _ = cluster_bootstrap(
        lambda x, y: auroc(x, y.astype(int)),
        cosines,
        supported.astype(float),
        clusters=clusters,
        n_resamples=settings.n_resamples,
        confidence=settings.confidence,
        seed=settings.seed,
    )
    why = interval_undefined(clusters, settings.n_resamples, "labelled pairs") if math.isnan(low) else None
    observed = sorted(set(cosines.tolist()), reverse=True)  # descending: ties go to the higher τ
    best = max((_point(t, cosines, supported) for t in observed), key=lambda p: p.balanced_accuracy)
    for_precision = None
    if precision is not None:
        reaching = [p for p in (_point(t, cosines, supported) for t in observed) if p.precision >= precision]
        for_precision = min(reaching, key=lambda p: p.tau) if reaching else None
    overlap_at = {}
    if records is not None:
        kept = list(records)
        for tau in GRID:
            result = evaluate(kept, metrics=["overlap"], settings=replace(settings, tau_sim=tau), embedder=cached)
            overlap_at[tau] = result.summary("overlap").value
    signature = Signature(
        "calibrate-tau",
        {
            "embedder": cached.model_id,
            "ci": "percentile",
            "confidence": settings.confidence,
            "n_resamples": settings.n_resamples,
            "resample": "clusters",
            "seed": settings.seed,
        },
        sort_keys=False,
    ).render()
    return Calibration(
        len(pairs),
        int(supported.sum()),
        area,
        low,
        high,
        tuple(_point(t, cosines, supported) for t in GRID),
        best,
        for_precision,
        precision,
        cached.model_id,
        signature,
        overlap_at,
        why,
    )
