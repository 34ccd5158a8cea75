"""Confidence intervals for run figures (SPEC §6).

- Means: bootstrap, BCa (bias-corrected and accelerated, Efron 1987) or percentile, resampling
  clusters (conversations) when given, so that correlated turns do not shrink the interval.
- Rates of 0/1 values: the Wilson score interval (Wilson 1927); with clusters, Wilson's interval on the
  effective sample size n / deff, Kish's design effect estimated from the clusters (Kish 1965).
- Quantiles (P50/P95 latency): percentile bootstrap over items, numpy's linear interpolation.

Resampling draws come from ``numpy.random.default_rng(seed)``; resamples are generated in blocks so
memory stays bounded on large runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

__all__ = [
    "WilsonDeff",
    "bootstrap_mean_interval",
    "bootstrap_mean_intervals",
    "bootstrap_quantile_interval",
    "wilson_deff_interval",
    "wilson_interval",
]

#: Draws per block of resamples (at least one resample): a block's draws and counts (2 MB each) stay in the
#: processor's cache between the steps that read them.
_BLOCK_ELEMENTS = 250_000


def wilson_interval(successes: int, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``successes / n``.

    With p̂ = k/n and z the two-sided normal quantile:
    centre = (p̂ + z²/2n) / (1 + z²/n), half-width = z·sqrt(p̂(1−p̂)/n + z²/4n²) / (1 + z²/n).
    ``n = 0`` gives ``(nan, nan)``.

    >>> [round(x, 4) for x in wilson_interval(8, 10)]
    [0.4902, 0.9433]
    """
    if n == 0:
        return (math.nan, math.nan)
    return _wilson(successes / n, n, confidence)


def _wilson(p: float, n: float, confidence: float) -> tuple[float, float]:
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # At p̂ = 0 and p̂ = 1 the bound is exactly 0 (or 1); computed, it drifts by a rounding error past p̂.
    low = 0.0 if p == 0 else max(0.0, centre - half)
    high = 1.0 if p == 1 else min(1.0, centre + half)
    return (low, high)


class WilsonDeff(NamedTuple):
    """A Wilson interval on the effective sample size, with the design effect that made it; ``estimated``
    is ``False`` when the data could not estimate the design effect and the worst case stood in."""

    low: float
    high: float
    deff: float
    estimated: bool


def wilson_deff_interval(
    values: Sequence[float] | np.ndarray,
    clusters: Sequence[object],
    *,
    confidence: float = 0.95,
    min_clusters: int = 10,
) -> WilsonDeff:
    """Wilson score interval for the share of 1s among 0/1 ``values`` whose items come in ``clusters`` (one
    label per value): Wilson's interval at p̂ with n_eff = n / deff trials.

    Cluster i holds n_i items, y_i of them 1s; m clusters, n = Σ n_i, p̂ = Σ y_i / n. Kish's design effect
    is the variance of p̂ given the clusters (the ratio estimator's, clusters drawn with replacement) over
    its variance were the n items independent (s²/n):

        deff = [m/(m−1) · Σ (y_i − p̂·n_i)² / n²] / [p̂(1−p̂) / (n−1)],   floored at 1.

    Items that are each their own cluster give deff = 1, so plain Wilson. Edge cases:

    - The floor: deff < 1 needs items of a cluster that pull against each other; with independent items
      the estimate scatters around 1, and without the floor half of them would get an interval narrower
      than plain Wilson by chance.
    - p̂ = 0 or 1 (both variances are 0) or fewer than ``min_clusters`` clusters (an estimate from m − 1
      degrees of freedom is too loose to trust): deff cannot be estimated, so the worst case stands in, all
      items of a cluster alike (ρ = 1 in Kish's deff = 1 + (m̄ − 1)·ρ, with m̄ = Σ n_i² / n the size-weighted
      mean cluster size): deff = Σ n_i² / n, and m equal clusters count as m items. ``estimated`` is then
      ``False``. So 0 of 40 in 10 clusters gets Wilson's 0 of 10, wider than 1 of 40 (whose one 1 among 0s
      of its cluster shows that a cluster's items differ).
    - No values: ``(nan, nan, nan, False)``.

    The interval stays inside [0, 1], contains p̂ and is never of zero width.

    >>> tens = wilson_deff_interval([1.0] * 40, [i // 4 for i in range(40)])  # 40 of 40, 10 clusters of 4
    >>> round(tens.low, 4), tens.high, tens.deff, tens.estimated
    (0.7225, 1.0, 4.0, False)
    >>> mixed = wilson_deff_interval([1, 1, 1, 0] * 5 + [0, 0, 0, 0] * 5, [i // 4 for i in range(40)])
    >>> round(mixed.low, 4), round(mixed.high, 4), round(mixed.deff, 2), mixed.estimated
    (0.1821, 0.6178, 2.6, True)

    References: L. Kish, *Survey Sampling* (1965); E. B. Wilson, JASA 22 (1927).
    """
    data = np.asarray(values, dtype=float)
    if len(clusters) != len(data):
        raise ValueError(f"{len(clusters)} cluster labels for {len(data)} values")
    if not np.all((data == 0) | (data == 1)):
        raise ValueError("a rate's values must be 0 or 1")
    n = len(data)
    if n == 0:
        return WilsonDeff(math.nan, math.nan, math.nan, False)
    ones, sizes = _cluster_totals(data, clusters)
    m = len(sizes)
    p = float(ones.sum()) / n
    if m < max(2, min_clusters) or p in (0.0, 1.0):
        deff, estimated = float(np.sum(sizes**2)) / n, False
    else:
        clustered = m / (m - 1) * float(np.sum((ones - p * sizes) ** 2)) / (n * n)
        deff, estimated = max(1.0, clustered / (p * (1 - p) / (n - 1))), True
    return WilsonDeff(*_wilson(p, n / deff, confidence), deff, estimated)


def _cluster_totals(values: np.ndarray, clusters: Sequence[object] | None) -> tuple[np.ndarray, np.ndarray]:
    if clusters is None:
        return values, np.ones_like(values)
    _, codes = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
    return np.bincount(codes, weights=values), np.bincount(codes).astype(float)


def bootstrap_mean_interval(
    values: Sequence[float] | np.ndarray,
    *,
    clusters: Sequence[object] | None = None,
    n_resamples: int = 2000,
    method: str = "bca",
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Bootstrap interval for the mean of ``values``.

    Resampling units are items, or whole clusters when ``clusters`` (one label per value) is given; the
    statistic of a resample is Σ values / Σ items over the drawn units. ``method`` is ``percentile`` or
    ``bca``; BCa's acceleration comes from the leave-one-unit-out jackknife. Fewer than two units give
    ``(nan, nan)``; constant values give ``(v, v)``.
    """
    return bootstrap_mean_intervals(
        [values], clusters=clusters, n_resamples=n_resamples, method=method, confidence=confidence, seed=seed
    )[0]


def bootstrap_mean_intervals(
    columns: Sequence[Sequence[float] | np.ndarray],
    *,
    clusters: Sequence[object] | None = None,
    n_resamples: int = 2000,
    method: str = "bca",
    confidence: float = 0.95,
    seed: int = 0,
) -> list[tuple[float, float]]:
    """:func:`bootstrap_mean_interval` of several columns over the same items (and ``clusters``), from one
    set of draws: each column's interval equals the one computed alone with the same seed."""
    if method not in ("bca", "percentile"):
        raise ValueError(f"method must be 'bca' or 'percentile', got {method!r}")
    data = [np.asarray(values, dtype=float) for values in columns]
    totals = [_cluster_totals(values, clusters) for values in data]
    results: list[tuple[float, float]] = [(math.nan, math.nan)] * len(data)
    if not data or len(totals[0][0]) < 2:
        return results
    counts = totals[0][1]
    units = len(counts)
    varying = []
    for j, values in enumerate(data):
        if np.all(values == values[0]):
            results[j] = (float(values[0]), float(values[0]))
        else:
            varying.append(j)
    if not varying:
        return results
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_ELEMENTS // units)
    stats = np.empty((len(varying), n_resamples))
    for start in range(0, n_resamples, block):
        stop = min(n_resamples, start + block)
        draws = rng.integers(0, units, size=(stop - start, units))
        # how often each resample drew each unit; a resample's total is then a product, column by column (so that
        # a column's interval does not depend on the others)
        draws += units * np.arange(stop - start)[:, None]  # resample r's units are r · units + unit
        times_drawn = np.bincount(draws.ravel(), minlength=draws.size).reshape(draws.shape).astype(float)
        items = times_drawn @ counts if clusters is not None else units
        for row, j in enumerate(varying):
            stats[row, start:stop] = times_drawn @ totals[j][0] / items
    alpha = (1 - confidence) / 2
    for row, j in enumerate(varying):
        if method == "percentile":
            low, high = np.quantile(stats[row], [alpha, 1 - alpha])
            results[j] = (float(low), float(high))
        else:
            sums = totals[j][0]
            results[j] = _bca(stats[row], sums.sum() / counts.sum(), sums, counts, alpha)
    return results


def _bca(stats: np.ndarray, estimate: float, sums: np.ndarray, counts: np.ndarray, alpha: float) -> tuple[float, float]:
    normal = NormalDist()
    below = (np.sum(stats < estimate) + 0.5 * np.sum(stats == estimate)) / len(stats)
    below = min(max(below, 1 / (2 * len(stats))), 1 - 1 / (2 * len(stats)))
    z0 = normal.inv_cdf(below)
    jackknife = (sums.sum() - sums) / (counts.sum() - counts)
    deviation = jackknife.mean() - jackknife
    spread = float(np.sum(deviation**2))
    acceleration = float(np.sum(deviation**3)) / (6 * spread**1.5) if spread > 0 else 0.0
    levels = []
    for tail in (alpha, 1 - alpha):
        z = normal.inv_cdf(tail)
        levels.append(normal.cdf(z0 + (z0 + z) / (1 - acceleration * (z0 + z))))
    low, high = np.quantile(stats, levels)
    return (float(low), float(high))


def bootstrap_quantile_interval(
    values: Sequence[float] | np.ndarray, q: float, *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile-bootstrap interval for the ``q``-th percentile (0–100, linear interpolation)."""
    data = np.asarray(values, dtype=float)
    if len(data) < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_ELEMENTS // len(data))
    stats = np.empty(n_resamples)
    for start in range(0, n_resamples, block):
        stop = min(n_resamples, start + block)
        stats[start:stop] = np.percentile(data[rng.integers(0, len(data), size=(stop - start, len(data)))], q, axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(stats, [alpha, 1 - alpha])
    return (float(low), float(high))
