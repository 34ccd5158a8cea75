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

from ragmeter.stats.intervals import bootstrap_mean_interval, bootstrap_mean_intervals

__all__ = [
    "MCNEMAR_EXACT_BELOW",
    "holm",
    "mcnemar",
    "paired_difference_interval",
    "paired_difference_intervals",
    "sign_flip_test",
    "sign_flip_tests",
]

#: Discordant pairs below which McNemar's test is the exact binomial one.
MCNEMAR_EXACT_BELOW = 25
_BLOCK = 2_000_000
#: The bits of the float −1.0; XOR with a 0/1 draw shifted to the sign bit gives ±1.0 (1 → +1.0).
_MINUS_ONE_BITS = np.array(-1.0).view(np.int64)


def paired_difference_interval(
    a: np.ndarray,
    b: np.ndarray,
    *,
    clusters: Sequence[object] | None = None,
    n_resamples: int = 2000,
    method: str = "bca",
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Bootstrap interval of mean(b − a), resampling pairs (or whole ``clusters`` of pairs)."""
    return bootstrap_mean_interval(
        np.asarray(b, float) - np.asarray(a, float),
        clusters=clusters,
        n_resamples=n_resamples,
        method=method,
        confidence=confidence,
        seed=seed,
    )


def paired_difference_intervals(
    a_columns: Sequence[np.ndarray],
    b_columns: Sequence[np.ndarray],
    *,
    clusters: Sequence[object] | None = None,
    n_resamples: int = 2000,
    method: str = "bca",
    confidence: float = 0.95,
    seed: int = 0,
) -> list[tuple[float, float]]:
    """:func:`paired_difference_interval` of several metrics over the same pairs (and ``clusters``), from one
    set of draws: each interval equals the one computed alone with the same seed."""
    differences = [np.asarray(b, float) - np.asarray(a, float) for a, b in zip(a_columns, b_columns, strict=True)]
    return bootstrap_mean_intervals(
        differences, clusters=clusters, n_resamples=n_resamples, method=method, confidence=confidence, seed=seed
    )


def sign_flip_test(
    a: np.ndarray, b: np.ndarray, *, clusters: Sequence[object] | None = None, n_resamples: int = 9999, seed: int = 0
) -> float:
    """Two-sided p-value of the paired permutation test of mean(b − a) = 0 (see the module docstring).

    >>> sign_flip_test(np.zeros(4), np.array([1.0, 2.0, 3.0, 4.0]))  # 2 of the 16 assignments are as extreme
    0.125
    """
    return sign_flip_tests([a], [b], clusters=clusters, n_resamples=n_resamples, seed=seed)[0]


def sign_flip_tests(
    a_columns: Sequence[np.ndarray],
    b_columns: Sequence[np.ndarray],
    *,
    clusters: Sequence[object] | None = None,
    n_resamples: int = 9999,
    seed: int = 0,
) -> list[float]:
    """:func:`sign_flip_test` of several metrics over the same pairs (and ``clusters``); each p-value equals the
    one computed alone. The random sign assignments depend only on the seed and on how many units differ, so
    metrics with as many differing units share one set of draws (the cost of a comparison of many metrics on
    a large run)."""
    differences = [np.asarray(b, float) - np.asarray(a, float) for a, b in zip(a_columns, b_columns, strict=True)]
    codes = None
    if clusters is not None:
        _, codes = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
    p_values = [math.nan] * len(differences)
    random: list[tuple[int, np.ndarray, float]] = []
    for k, d in enumerate(differences):
        units = d if codes is None else np.bincount(codes, weights=d)
        if len(units) == 0:
            continue
        observed = abs(units.sum())
        tolerance = 1e-9 * max(1.0, float(np.abs(units).sum()))
        units = units[np.abs(units) > tolerance]  # a unit with no difference looks the same either way round
        if len(units) == 0:
            p_values[k] = 1.0
        elif 2 ** len(units) <= n_resamples:
            signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(units))))
            totals = np.abs(signs @ units)
            p_values[k] = float(np.mean(totals >= observed - tolerance))
        else:
            random.append((k, units, observed - tolerance))
    for (k, _, _), count in zip(random, _extreme_counts(random, n_resamples, seed), strict=True):
        p_values[k] = (count + 1) / (n_resamples + 1)
    return p_values


def _extreme_counts(tests: list[tuple[int, np.ndarray, float]], n_resamples: int, seed: int) -> list[int]:
    """For each (_, units, threshold): of ``n_resamples`` random sign assignments, how many reach |Σ ±units| ≥
    threshold. A test of n units reads its assignments as rows of n from one stream of draws of
    ``default_rng(seed)`` (its r-th assignment: draws r·n to (r+1)·n − 1), so every test reads the same stream:
    it is drawn once, for the longest test, in windows of about ``_BLOCK`` draws, and each test takes the rows
    that a window completes (a row cut by the window's end waits for the next)."""
    if not tests:
        return []
    rng = np.random.default_rng(seed)
    sizes = [len(units) for _, units, _ in tests]
    end = n_resamples * max(sizes)
    done = [0] * len(tests)  # rows counted per test
    extreme = [0] * len(tests)
    start, window = 0, np.empty(0)  # window: the draws from position start on, as ±1.0
    while start + len(window) < end:
        fresh = _random_signs(rng, 1, min(max(_BLOCK, *sizes), end - start - len(window)))[0]
        window = np.concatenate([window, fresh])
        stop = start + len(window)
        for t, (_, units, threshold) in enumerate(tests):
            n = sizes[t]
            rows = min(n_resamples, stop // n) - done[t]
            if rows > 0:
                first = done[t] * n - start
                signs = window[first : first + rows * n].reshape(rows, n)
                extreme[t] += int(np.sum(np.abs(signs @ units) >= threshold))
                done[t] += rows
        keep = min((done[t] * sizes[t] for t in range(len(tests)) if done[t] < n_resamples), default=stop)
        window, start = window[keep - start :], keep
    return extreme


def _random_signs(rng: np.random.Generator, rows: int, columns: int) -> np.ndarray:
    """``rng.integers(0, 2, size=(rows, columns)) * 2.0 - 1.0``, bit for bit, without the float arithmetic:
    each 0/1 draw moved to the sign bit and XORed with the bits of −1.0."""
    bits = rng.integers(0, 2, size=(rows, columns), dtype=np.int64)
    np.left_shift(bits, 63, out=bits)
    np.bitwise_xor(bits, _MINUS_ONE_BITS, out=bits)
    return bits.view(np.float64)


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
        tail = sum(math.comb(discordant, k) for k in range(min(only_a, only_b) + 1)) / 2**discordant
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
