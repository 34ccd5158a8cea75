"""Two independent samples (two windows of production traffic, a window against a stored run): is B's mean
different from A's? The items differ between the samples, so nothing is paired.

- The difference of means ``mean(b) − mean(a)`` with a percentile bootstrap interval: each sample resampled on its
  own, by item or by whole cluster (a conversation: its turns are not independent), a resample's mean being
  Σ values / Σ items over the drawn units, as :func:`~ragmeter.stats.intervals.bootstrap_mean_interval` takes it.
- The permutation test: under "A and B come from one distribution", which sample a unit (an item, or a whole
  cluster) fell into is arbitrary. The p-value is the share of reassignments of the units to samples of the
  observed sizes (in units) whose |mean(b) − mean(a)| is at least the observed one: exact (every reassignment) when
  there are at most ``n_resamples`` of them, else from ``n_resamples`` random ones, as (count + 1) /
  (n_resamples + 1) so that it is never 0.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

__all__ = ["difference_interval", "permutation_test"]


def _units(values: Sequence[float] | np.ndarray, clusters: Sequence[object] | None) -> tuple[np.ndarray, np.ndarray]:
    """Per unit (an item, or a cluster): the sum of its values and how many items it holds."""
    data = np.asarray(values, dtype=float)
    if clusters is None:
        return data, np.ones_like(data)
    if len(clusters) != len(data):
        raise ValueError(f"{len(clusters)} cluster labels for {len(data)} values")
    _, codes = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
    return np.bincount(codes, weights=data), np.bincount(codes).astype(float)


def difference_interval(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    clusters_a: Sequence[object] | None = None,
    clusters_b: Sequence[object] | None = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``mean(b) − mean(a)``, each sample resampled by its own units (items, or
    whole ``clusters_*``). ``(nan, nan)`` when either sample has fewer than two units; ``(d, d)`` when neither
    varies."""
    sums_a, counts_a = _units(a, clusters_a)
    sums_b, counts_b = _units(b, clusters_b)
    if len(sums_a) < 2 or len(sums_b) < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = []
    for sums, counts in ((sums_a, counts_a), (sums_b, counts_b)):
        times = rng.multinomial(len(sums), np.full(len(sums), 1 / len(sums)), size=n_resamples).astype(float)
        means.append(times @ sums / (times @ counts))
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means[1] - means[0], [alpha, 1 - alpha])
    return (float(low), float(high))


def permutation_test(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    clusters_a: Sequence[object] | None = None,
    clusters_b: Sequence[object] | None = None,
    n_resamples: int = 9999,
    seed: int = 0,
) -> float:
    """Two-sided p-value of the permutation test of ``mean(b) = mean(a)`` (see the module docstring); NaN when
    either sample is empty.

    >>> permutation_test([0.0, 0.0], [1.0, 1.0])  # 2 of the 6 ways to pick B's two items are as extreme
    0.3333333333333333
    """
    sums_a, counts_a = _units(a, clusters_a)
    sums_b, counts_b = _units(b, clusters_b)
    if len(sums_a) == 0 or len(sums_b) == 0:
        return math.nan
    sums, counts = np.concatenate([sums_a, sums_b]), np.concatenate([counts_a, counts_b])
    total, items = sums.sum(), counts.sum()

    def gaps(in_b: np.ndarray) -> np.ndarray:
        """|mean(b) − mean(a)| of each row's assignment (a row: 1.0 where the unit is in B)."""
        b_sums, b_counts = in_b @ sums, in_b @ counts
        return np.abs(b_sums / b_counts - (total - b_sums) / (items - b_counts))

    observed = float(gaps(np.concatenate([np.zeros(len(sums_a)), np.ones(len(sums_b))])[None, :])[0])
    threshold = observed - 1e-9 * max(1.0, observed)
    units, picked = len(sums), len(sums_b)
    if math.comb(units, picked) <= n_resamples:
        rows = np.zeros((math.comb(units, picked), units))
        for row, chosen in enumerate(itertools.combinations(range(units), picked)):
            rows[row, list(chosen)] = 1.0
        return float(np.mean(gaps(rows) >= threshold))
    rng = np.random.default_rng(seed)
    extreme = 0
    for start in range(0, n_resamples, 1000):
        block = min(1000, n_resamples - start)
        order = np.argsort(rng.random((block, units)), axis=1)
        rows = (order < picked).astype(float)  # each row: a random set of ``picked`` units goes to B
        extreme += int(np.sum(gaps(rows) >= threshold))
    return (extreme + 1) / (n_resamples + 1)
