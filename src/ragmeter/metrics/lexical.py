"""Lexical answer accuracy: SQuAD v1.1 Exact Match and token F1 (seeds 000/001, SPEC §2).

The registered metrics compare the answer with its ``[CIT:doc_id]`` markers removed: they are the
citation contract's metadata, not answer text (signature setting ``citations:stripped``). They normalise as
the SQuAD v1.1 script does, or, with the setting ``normalization="extended"`` (``--normalize extended``), as
:func:`~ragmeter.text.normalize.normalize_answer_extended` does (signature setting ``normalizer``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragmeter.core.errors import ConfigError
from ragmeter.metrics._registry import Aggregation, Metric, register
from ragmeter.text.citations import strip_citations
from ragmeter.text.normalize import (
    EXTENDED_VERSION,
    answer_tokens,
    normalize_answer,
    normalize_answer_extended,
)

if TYPE_CHECKING:
    from ragmeter.engine.context import RunContext

__all__ = ["exact_match", "token_f1"]


def _extended(run: RunContext) -> bool:
    return run.settings.normalization == "extended"


def _signature(run: RunContext) -> Mapping[str, Any]:
    return {"normalizer": EXTENDED_VERSION if _extended(run) else "squad-v1.1", "citations": "stripped"}


def _check_references(references: Sequence[str]) -> None:
    if isinstance(references, str) or not references:
        raise ConfigError("references must be a non-empty sequence of strings")


def exact_match(prediction: str, references: Sequence[str], *, extended: bool = False) -> float:
    """1.0 if the normalised prediction equals any normalised reference, else 0.0.

    EM = max over references r of [normalize(prediction) == normalize(r)], with SQuAD v1.1
    normalisation (lowercase, ASCII punctuation and the articles a/an/the removed, whitespace
    collapsed); ``extended``: :func:`~ragmeter.text.normalize.normalize_answer_extended`'s. Two answers that
    normalise to the empty string match (1.0).

    >>> exact_match("The Eiffel Tower.", ["eiffel tower", "Tour Eiffel"])
    1.0
    >>> exact_match("Rp25.000", ["Rp 25.000"]), exact_match("Rp25.000", ["Rp 25.000"], extended=True)
    (0.0, 1.0)
    """
    _check_references(references)
    normalize = normalize_answer_extended if extended else normalize_answer
    normalized = normalize(prediction)
    return float(any(normalized == normalize(reference) for reference in references))


def _f1(prediction_tokens: list[str], reference_tokens: list[str]) -> float:
    if not prediction_tokens or not reference_tokens:
        return float(prediction_tokens == reference_tokens)
    common = sum((Counter(prediction_tokens) & Counter(reference_tokens)).values())
    if common == 0:
        return 0.0
    precision = common / len(prediction_tokens)
    recall = common / len(reference_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, references: Sequence[str], *, extended: bool = False) -> float:
    """Token-level F1 between prediction and the best-matching reference, in [0, 1].

    With p and r the normalised token lists and c = |p ∩ r| (multiset intersection),
    P = c/|p|, R = c/|r|, F1 = 2PR/(P+R); the score is the max over references. Edge cases (SPEC §2):
    both empty → 1.0; exactly one empty → 0.0; no common token → 0.0. ``extended``: tokens of
    :func:`~ragmeter.text.normalize.normalize_answer_extended`.

    >>> round(token_f1("the cat sat on a mat", ["a cat sat"]), 4)
    0.6667
    >>> token_f1("anak-anak", ["anak anak"]), token_f1("anak-anak", ["anak anak"], extended=True)
    (0.0, 1.0)
    """
    _check_references(references)
    tokens = answer_tokens(prediction, extended=extended)
    return max(_f1(tokens, answer_tokens(reference, extended=extended)) for reference in references)


register(
    Metric(
        name="exact_match",
        family="lexical",
        description="Answer equals a reference after SQuAD normalisation (max over references).",
        needs=("answer", "references"),
        aggregation=Aggregation.RATE,
        value_range=(0.0, 1.0),
        higher_is_better=True,
        signature=_signature,
        compute=lambda record, item, run: exact_match(
            strip_citations(record.answer), record.references, extended=_extended(run)
        ),
    )
)

register(
    Metric(
        name="token_f1",
        family="lexical",
        description="Token F1 with the best-matching reference after SQuAD normalisation.",
        needs=("answer", "references"),
        aggregation=Aggregation.MEAN,
        value_range=(0.0, 1.0),
        higher_is_better=True,
        signature=_signature,
        compute=lambda record, item, run: token_f1(
            strip_citations(record.answer), record.references, extended=_extended(run)
        ),
    )
)
