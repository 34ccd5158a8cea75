"""Agreement between annotators on a 0/1 label, and the majority label that several annotators give.

A *unit* is one thing labelled (an answer, or a chunk at a rank); its votes map each annotator who
labelled it to 0 or 1. Chance-corrected agreement is undefined (NaN) when chance agreement is already
perfect, for instance when every rating is the same class: kappa then says nothing, and raw agreement
and prevalence, reported beside it, say what happened.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

__all__ = [
    "TIE_RULES",
    "LabelAgreement",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "label_agreement",
    "majority",
    "raw_agreement",
]

#: What a tie among annotators gives: no label (the item is undefined for metrics reading it), 1 or 0.
TIE_RULES = ("undefined", "positive", "negative")


def majority(votes: Sequence[int], *, ties: str = "undefined") -> int | None:
    """The label most annotators gave; a tie gives ``None``, 1 or 0 by ``ties`` (see :data:`TIE_RULES`).

    >>> majority([1, 1, 0]), majority([1, 0]), majority([1, 0], ties="positive")
    (1, None, 1)
    """
    if ties not in TIE_RULES:
        raise ValueError(f"ties must be one of {', '.join(TIE_RULES)}, got {ties!r}")
    if not votes:
        raise ValueError("majority of no votes")
    positive = sum(votes)
    if 2 * positive == len(votes):
        return None if ties == "undefined" else int(ties == "positive")
    return int(2 * positive > len(votes))


def cohen_kappa(first: Sequence[int], second: Sequence[int]) -> float:
    """Cohen's κ = (p_o − p_e) / (1 − p_e) for two annotators over the same units, with p_o the share of
    units they agree on and p_e = p₁ q₁ + (1 − p₁)(1 − q₁) from each one's share of 1s. NaN when
    p_e = 1 or there are no units.

    >>> cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0])
    0.5
    """
    n = len(first)
    if n != len(second):
        raise ValueError(f"both annotators must rate the same units ({n} vs {len(second)})")
    if n == 0:
        return math.nan
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / n
    p, q = sum(first) / n, sum(second) / n
    expected = p * q + (1 - p) * (1 - q)
    return math.nan if expected == 1 else (observed - expected) / (1 - expected)


def fleiss_kappa(units: Sequence[Sequence[int]]) -> float:
    """Fleiss' κ = (P̄ − P̄_e) / (1 − P̄_e) for units each rated by the same number m ≥ 2 of annotators:
    P̄ is the mean over units of Σ_j n_ij (n_ij − 1) / (m (m − 1)) and P̄_e = Σ_j p_j² with p_j the share
    of all ratings in class j. NaN when P̄_e = 1 or there are no units.

    >>> round(fleiss_kappa([[1, 1, 1], [0, 0, 0], [1, 1, 0], [0, 0, 1]]), 4)
    0.3333
    """
    if not units:
        return math.nan
    m = len(units[0])
    if m < 2 or any(len(unit) != m for unit in units):
        raise ValueError("Fleiss' kappa needs every unit rated by the same number (≥ 2) of annotators")
    ones = [sum(unit) for unit in units]
    per_unit = [(k * (k - 1) + (m - k) * (m - k - 1)) / (m * (m - 1)) for k in ones]
    mean_agreement = sum(per_unit) / len(units)
    p = sum(ones) / (m * len(units))
    expected = p * p + (1 - p) * (1 - p)
    return math.nan if expected == 1 else (mean_agreement - expected) / (1 - expected)


def krippendorff_alpha(units: Sequence[Sequence[int]]) -> float:
    """Krippendorff's α for nominal data, any number of annotators per unit (missing ratings allowed):
    α = 1 − D_o / D_e over the units with m_u ≥ 2 ratings (n = Σ m_u of them, n₀ zeros and n₁ ones), with
    observed disagreement D_o = (1/n) · Σ_u 2 n_u0 n_u1 / (m_u − 1) and expected disagreement
    D_e = 2 n₀ n₁ / (n (n − 1)). NaN when D_e = 0 (a single class) or nothing is pairable.

    >>> round(krippendorff_alpha([[1, 1], [0, 0], [1, 0], [0, 0, 0]]), 4)
    0.5556
    """
    pairable = [unit for unit in units if len(unit) >= 2]
    n = sum(len(unit) for unit in pairable)
    if n < 2:
        return math.nan
    ones = sum(sum(unit) for unit in pairable)
    zeros = n - ones
    expected = 2 * zeros * ones / (n * (n - 1))
    if expected == 0:
        return math.nan
    observed = sum(2 * sum(unit) * (len(unit) - sum(unit)) / (len(unit) - 1) for unit in pairable) / n
    return 1 - observed / expected


def raw_agreement(units: Sequence[Sequence[int]]) -> float:
    """Mean over units with ≥ 2 ratings of the share of annotator pairs that agree (for two annotators:
    the share of units they agree on). NaN when no unit has two ratings.

    >>> raw_agreement([[1, 1], [1, 0], [0, 0, 1]])
    0.4444444444444444
    """
    shares = [
        sum(a == b for a, b in combinations(unit, 2)) / math.comb(len(unit), 2) for unit in units if len(unit) >= 2
    ]
    return sum(shares) / len(shares) if shares else math.nan


@dataclass(frozen=True)
class LabelAgreement:
    """How annotators agreed on one label.

    ``n_units`` counts units with any rating, ``n_shared`` those with two or more; ``prevalence`` is
    the share of 1s among all ratings; ``cohen_kappa`` is set for exactly two annotators (over the
    units both rated), ``fleiss_kappa`` for three or more (over the units all of them rated);
    ``krippendorff_alpha`` uses every unit with two ratings; ``n_ties`` counts units whose majority is a
    tie.
    """

    label: str
    annotators: tuple[str, ...]
    n_units: int
    n_shared: int
    n_ratings: int
    raw_agreement: float
    prevalence: float
    cohen_kappa: float | None
    fleiss_kappa: float | None
    krippendorff_alpha: float
    n_ties: int

    def to_dict(self) -> dict[str, Any]:
        def number(value: float | None) -> float | None:
            return None if value is None or math.isnan(value) else value

        return {
            "label": self.label,
            "annotators": list(self.annotators),
            "n_units": self.n_units,
            "n_shared": self.n_shared,
            "n_ratings": self.n_ratings,
            "raw_agreement": number(self.raw_agreement),
            "prevalence": number(self.prevalence),
            "cohen_kappa": number(self.cohen_kappa),
            "fleiss_kappa": number(self.fleiss_kappa),
            "krippendorff_alpha": number(self.krippendorff_alpha),
            "n_ties": self.n_ties,
        }


def label_agreement(label: str, units: Sequence[Mapping[str, int]]) -> LabelAgreement:
    """Agreement on ``label`` from each unit's votes (annotator → 0/1)."""
    annotators = tuple(sorted({name for votes in units for name in votes}))
    ratings = [list(votes.values()) for votes in units if votes]
    n_ratings = sum(len(r) for r in ratings)
    cohen = fleiss = None
    if len(annotators) == 2:
        both = [votes for votes in units if len(votes) == 2]
        cohen = cohen_kappa([v[annotators[0]] for v in both], [v[annotators[1]] for v in both])
    elif len(annotators) > 2:
        fleiss = fleiss_kappa([list(votes.values()) for votes in units if len(votes) == len(annotators)])
    ties = Counter(2 * sum(r) == len(r) for r in ratings)[True]
    return LabelAgreement(
        label=label,
        annotators=annotators,
        n_units=len(ratings),
        n_shared=sum(len(r) >= 2 for r in ratings),
        n_ratings=n_ratings,
        raw_agreement=raw_agreement(ratings),
        prevalence=sum(map(sum, ratings)) / n_ratings if n_ratings else math.nan,
        cohen_kappa=cohen,
        fleiss_kappa=fleiss,
        krippendorff_alpha=krippendorff_alpha(ratings),
        n_ties=ties,
    )
