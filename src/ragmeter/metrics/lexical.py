"""Lexical answer accuracy: SQuAD v1.1 Exact Match and token F1 (seeds 000/001, SPEC §2).

The registered metrics compare the answer with its ``[CIT:doc_id]`` markers removed: they are the
citation contract's metadata, not answer text (signature setting ``citations:stripped``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ragmeter.core.errors import ConfigError
from ragmeter.metrics._registry import Aggregation, Metric, register
from ragmeter.text.citations import strip_citations
from ragmeter.text.normalize import answer_tokens, normalize_answer

__all__ = ["exact_match", "token_f1"]

#: What the registered metrics' values depend on, for their signatures.
SIGNATURE = {"normalizer": "squad-v1.1", "citations": "stripped"}


def _check_references(references: Sequence[str]) -> None:
    if isinstance(references, str) or not references:
        raise ConfigError("references must be a non-empty sequence of strings")


def exact_match(prediction: str, references: Sequence[str]) -> float:
    """1.0 if the normalised prediction equals any normalised reference, else 0.0.

    EM = max over references r of [normalize(prediction) == normalize(r)], with SQuAD v1.1
    normalisation (lowercase, ASCII punctuation and the articles a/an/the removed, whitespace
    collapsed). Two answers that normalise to the empty string match (1.0).

    >>> exact_match("The Eiffel Tower.", ["eiffel tower", "Tour Eiffel"])
    1.0
    """
    _check_references(references)
    normalized = normalize_answer(prediction)
    return float(any(normalized == normalize_answer(reference) for reference in references))


def _f1(prediction_tokens: list[str], reference_tokens: list[str]) -> float:
    if not prediction_tokens or not reference_tokens:
        return float(prediction_tokens == reference_tokens)
    common = sum((Counter(prediction_tokens) & Counter(reference_tokens)).values())
    if common == 0:
        return 0.0
    precision = common / len(prediction_tokens)
    recall = common / len(reference_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, references: Sequence[str]) -> float:
    """Token-level F1 between prediction and the best-matching reference, in [0, 1].

    With p and r the normalised token lists and c = |p ∩ r| (multiset intersection),
    P = c/|p|, R = c/|r|, F1 = 2PR/(P+R); the score is the max over references. Edge cases (SPEC §2):
    both empty → 1.0; exactly one empty → 0.0; no common token → 0.0.

    >>> round(token_f1("the cat sat on a mat", ["a cat sat"]), 4)
    0.6667
    """
    _check_references(references)
    tokens = answer_tokens(prediction)
    return max(_f1(tokens, answer_tokens(reference)) for reference in references)


register(Metric(
    name="exact_match", family="lexical",
    description="Answer equals a reference after SQuAD normalisation (max over references).",
    needs=("answer", "references"), aggregation=Aggregation.RATE, value_range=(0.0, 1.0),
    higher_is_better=True, signature=lambda run: SIGNATURE,
    compute=lambda record, item, run: exact_match(strip_citations(record.answer), record.references)))

register(Metric(
    name="token_f1", family="lexical",
    description="Token F1 with the best-matching reference after SQuAD normalisation.",
    needs=("answer", "references"), aggregation=Aggregation.MEAN, value_range=(0.0, 1.0),
    higher_is_better=True, signature=lambda run: SIGNATURE,
    compute=lambda record, item, run: token_f1(strip_citations(record.answer), record.references)))
