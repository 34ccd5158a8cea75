"""How far an automatic score agrees with human judgements (SPEC §6): correlations for rating scales, and
ranking and agreement figures for 0/1 labels, each with a bootstrap interval over conversations.

- Scales: Spearman's ρ, Kendall's τ-b and Pearson's r (scipy.stats).
- 0/1 labels: AUROC, the probability that a random positive item scores above a random negative one (ties
  count one half), from the Mann–Whitney rank sum; balanced accuracy of "score ≥ threshold" (the mean of
  the true positive and true negative rates); Cohen's κ between that decision and the label.

:func:`cluster_bootstrap` resamples whole conversations with replacement (items when none are given) and
recomputes a statistic; the interval is the percentile one. Resamples where the statistic is undefined (a
constant column, a single class) are left out, and their count is returned.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from scipy.stats import kendalltau, pearsonr, rankdata, spearmanr

from ragmeter.stats.inter_annotator import cohen_kappa

__all__ = [
    "BINARY",
    "SCALE",
    "auroc",
    "balanced_accuracy",
    "cluster_bootstrap",
    "decision_kappa",
    "kendall",
    "pearson",
    "spearman",
]


def _defined(value: float) -> float:
    return float(value) if value is not None and not math.isnan(value) else math.nan


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's ρ (average ranks for ties); NaN when either column is constant.

    >>> round(spearman(np.array([1.0, 2, 3, 4]), np.array([10.0, 20, 30, 25])), 12)  # 1 − 6·(0 + 0 + 1 + 1)/(4·15)
    0.8
    """
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return _defined(spearmanr(x, y).statistic)


def kendall(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's τ-b (ties in either column accounted for); NaN when either column is constant."""
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return _defined(kendalltau(x, y, variant="b").statistic)


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r; NaN when either column is constant."""
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return _defined(pearsonr(x, y).statistic)


def auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve of ``scores`` for 0/1 ``labels``: (R₁ − n₁(n₁+1)/2) / (n₁ n₀), R₁ the rank sum
    of the positives (average ranks); NaN without both classes.

    >>> auroc(np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 0, 1, 1]))
    0.75
    """
    positives = labels == 1
    n1, n0 = int(positives.sum()), int((~positives).sum())
    if n1 == 0 or n0 == 0:
        return math.nan
    ranks = rankdata(scores)
    return float((ranks[positives].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def balanced_accuracy(scores: np.ndarray, labels: np.ndarray, threshold: float) -> float:
    """The mean of the true positive and true negative rates of "score ≥ threshold"; NaN without both classes.

    >>> balanced_accuracy(np.array([0.2, 0.6, 0.7, 0.9]), np.array([0, 0, 1, 1]), 0.5)
    0.75
    """
    decided = scores >= threshold
    positives = labels == 1
    if positives.all() or not positives.any():
        return math.nan
    return float((decided[positives].mean() + (~decided[~positives]).mean()) / 2)


def decision_kappa(scores: np.ndarray, labels: np.ndarray, threshold: float) -> float:
    """Cohen's κ between the decision "score ≥ threshold" and the 0/1 labels."""
    return cohen_kappa([int(s >= threshold) for s in scores], [int(v) for v in labels])


Statistic = Callable[[np.ndarray, np.ndarray], float]
#: The statistics reported for a rating scale and for a 0/1 label (the latter take the threshold first).
SCALE: dict[str, Statistic] = {"Spearman": spearman, "Kendall tau-b": kendall, "Pearson": pearson}
BINARY: dict[str, Callable[[float], Statistic]] = {
    "AUROC": lambda threshold: auroc,
    "balanced accuracy": lambda threshold: lambda s, y: balanced_accuracy(s, y, threshold),
    "Cohen's kappa": lambda threshold: lambda s, y: decision_kappa(s, y, threshold),
}


def cluster_bootstrap(
    statistic: Statistic,
    x: np.ndarray,
    y: np.ndarray,
    *,
    clusters: Sequence[object] | None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, int]:
    """Percentile interval of ``statistic(x, y)`` over resampled conversations (or items), and the number of
    resamples left out because the statistic was undefined on them."""
    labels = [str(c) for c in clusters] if clusters is not None else [str(i) for i in range(len(x))]
    _, codes = np.unique(np.asarray(labels), return_inverse=True)
    members = [np.flatnonzero(codes == k) for k in range(codes.max() + 1)] if len(codes) else []
    if len(members) < 2:
        return math.nan, math.nan, n_resamples
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n_resamples):
        picked = np.concatenate([members[k] for k in rng.integers(0, len(members), len(members))])
        value = statistic(x[picked], y[picked])
        if not math.isnan(value):
            values.append(value)
    if not values:
        return math.nan, math.nan, n_resamples
    alpha = (1 - confidence) / 2
    low, high = np.quantile(values, [alpha, 1 - alpha])
    return float(low), float(high), n_resamples - len(values)
