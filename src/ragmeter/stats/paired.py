"""Paired tests between two runs on the same items (SPEC §6): is B's mean different from A's?

- The difference of means with a paired bootstrap interval: the per-item differences d = b − a resampled by
  item, or by whole conversation when ``clusters`` is given (:func:`~ragmeter.stats.intervals.bootstrap_mean_interval`
  on d, which is the paired bootstrap).
- The paired permutation test: under "A and B are exchangeable", each pair's two values may be swapped, which
  flips the sign of its difference. The p-value is the share of sign assignments whose |mean d| is at least the
  observed one: exact (every assignment) when at most ``log2(n_resamples)`` units differ (a unit with no
  difference is the same either way round, so it is left out), else from ``n_resamples`` random ones, as
  (count + 1) / (n_resamples + 1) so that it is never 0. With clusters, a conversation's differences are
  flipped together.
- McNemar's test for 0/1 values: only the discordant pairs count; exact binomial (two-sided) when there are
  fewer than ``MCNEMAR_EXACT_BELOW`` of them, else the χ² statistic with continuity correction.
- Holm's step-down correction of several p-values (family-wise error).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from ragmeter.stats.intervals import bootstrap_mean_interval

__all__ = ["MCNEMAR_EXACT_BELOW", "holm", "mcnemar", "paired_difference_interval", "sign_flip_test"]

#: Discordant pairs below which McNemar's test is the exact binomial one.
MCNEMAR_EXACT_BELOW = 25
_BLOCK = 2_000_000


def paired_difference_interval(a: np.ndarray, b: np.ndarray, *, clusters: Sequence[object] | None = None,
                               n_resamples: int = 2000, method: str = "bca", confidence: float = 0.95,
                               seed: int = 0) -> tuple[float, float]:
    """Bootstrap interval of mean(b − a), resampling pairs (or whole ``clusters`` of pairs)."""
    return bootstrap_mean_interval(np.asarray(b, float) - np.asarray(a, float), clusters=clusters,
                                   n_resamples=n_resamples, method=method, confidence=confidence, seed=seed)


def sign_flip_test(a: np.ndarray, b: np.ndarray, *, clusters: Sequence[object] | None = None,
                   n_resamples: int = 9999, seed: int = 0) -> float:
    """Two-sided p-value of the paired permutation test of mean(b − a) = 0 (see the module docstring).

    >>> sign_flip_test(np.zeros(4), np.array([1.0, 2.0, 3.0, 4.0]))  # 2 of the 16 assignments are as extreme
    0.125
    """
    differences = np.asarray(b, float) - np.asarray(a, float)
    if clusters is None:
        units = differences
    else:
        _, codes = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
        units = np.bincount(codes, weights=differences)
    if len(units) == 0:
        return math.nan
    observed = abs(units.sum())
    tolerance = 1e-9 * max(1.0, float(np.abs(units).sum()))
    units = units[np.abs(units) > tolerance]  # a unit with no difference looks the same either way round
    if len(units) == 0:
        return 1.0
    if 2 ** len(units) <= n_resamples:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(units))))
        totals = np.abs(signs @ units)
        return float(np.mean(totals >= observed - tolerance))
    rng = np.random.default_rng(seed)
    extreme = 0
    block = max(1, _BLOCK // len(units))
    for start in range(0, n_resamples, block):
        size = min(block, n_resamples - start)
        signs = rng.integers(0, 2, size=(size, len(units))) * 2.0 - 1.0
        extreme += int(np.sum(np.abs(signs @ units) >= observed - tolerance))
    return (extreme + 1) / (n_resamples + 1)


def mcnemar(a: np.ndarray, b: np.ndarray) -> tuple[int, int, float, bool]:
    """McNemar's test for paired 0/1 values: (pairs with a=1, b=0; pairs with a=0, b=1; p-value; exact?).

    >>> mcnemar(np.array([1, 1, 1, 0, 0]), np.array([0, 0, 0, 0, 1]))  # 3 against 1: exact, 2·P(X ≤ 1 | 4, ½)
    (3, 1, 0.625, True)
    """
    a, b = np.asarray(a) == 1, np.asarray(b) == 1
    only_a, only_b = int(np.sum(a & ~b)), int(np.sum(~a & b))
    discordant = only_a + only_b
    if discordant == 0:
        return only_a, only_b, 1.0, True
    if discordant < MCNEMAR_EXACT_BELOW:
        tail = sum(math.comb(discordant, k) for k in range(min(only_a, only_b) + 1)) / 2 ** discordant
        return only_a, only_b, min(1.0, 2 * tail), True
    statistic = (abs(only_a - only_b) - 1) ** 2 / discordant
    return only_a, only_b, math.erfc(math.sqrt(statistic / 2)), False  # χ² with 1 degree of freedom: P(X ≥ x)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given; NaN stays NaN and is not counted.

    >>> holm([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]
    """
    order = [i for i in sorted(range(len(p_values)), key=lambda i: p_values[i]) if not math.isnan(p_values[i])]
    adjusted = [math.nan] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
