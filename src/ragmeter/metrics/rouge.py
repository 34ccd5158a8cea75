"""ROUGE-L, value for value as Google's ``rouge-score`` computes it, with a fast LCS.

Tokens are rouge-score's default tokenisation without stemming: lowercase, every run of characters
other than ``a-z0-9`` becomes a space, split on whitespace, keep tokens matching ``^[a-z0-9]+$``.
The longest common subsequence comes from rapidfuzz's bit-parallel ``LCSseq`` on token ids (exact:
tokens are mapped to integers through a per-pair vocabulary, so no hash can collide).
"""

from __future__ import annotations

import re

from rapidfuzz.distance import LCSseq

from ragmeter.metrics._registry import Aggregation, Metric, register
from ragmeter.text.citations import strip_citations

__all__ = ["lcs_length", "rouge_l", "rouge_tokens"]

_NON_ALPHANUMERIC = re.compile(r"[^a-z0-9]+")
_SPACES = re.compile(r"\s+")
_VALID_TOKEN = re.compile(r"^[a-z0-9]+$")


def rouge_tokens(text: str) -> list[str]:
    """rouge-score's default tokens (no stemming).

    >>> rouge_tokens("Don't panic: 42 towels!")
    ['don', 't', 'panic', '42', 'towels']
    """
    spaced = _NON_ALPHANUMERIC.sub(" ", text.lower())
    return [token for token in _SPACES.split(spaced) if _VALID_TOKEN.match(token)]


def lcs_length(first: list[str], second: list[str]) -> int:
    """Length of the longest common subsequence of two token lists."""
    vocabulary: dict[str, int] = {}
    a = [vocabulary.setdefault(token, len(vocabulary)) for token in first]
    b = [vocabulary.setdefault(token, len(vocabulary)) for token in second]
    return int(LCSseq.similarity(a, b))


def rouge_l(prediction: str, reference: str) -> float:
    """ROUGE-L F-measure of ``prediction`` against ``reference``, in [0, 1].

    With L the LCS length of the two token lists, P = L/|prediction|, R = L/|reference| and
    F = 2PR/(P+R); 0.0 when either side has no token or there is no common token. Symmetric in its
    arguments. Equal to ``rouge_score.rouge_scorer.RougeScorer(["rougeL"]).score(reference,
    prediction)["rougeL"].fmeasure``.

    >>> round(rouge_l("the cat sat on the mat", "the cat is on the mat"), 4)
    0.8333
    """
    predicted, expected = rouge_tokens(prediction), rouge_tokens(reference)
    if not predicted or not expected:
        return 0.0
    common = lcs_length(expected, predicted)
    precision = common / len(predicted)
    recall = common / len(expected)
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


register(
    Metric(
        name="rouge_l",
        family="lexical",
        description="ROUGE-L F-measure (rouge-score, no stemmer) with the best-matching reference.",
        needs=("answer", "references"),
        aggregation=Aggregation.MEAN,
        value_range=(0.0, 1.0),
        higher_is_better=True,
        signature=lambda run: {"citations": "stripped", "stemmer": "no"},
        compute=lambda record, item, run: max(
            rouge_l(strip_citations(record.answer), reference) for reference in record.references
        ),
    )
)
