"""The shared-draw paths of ragmeter.stats.paired (several metrics from one set of bootstrap draws and random sign
flips, the path ``compare`` takes) give, bit for bit, the values of the one-metric-at-a-time code they replaced."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragmeter.stats.paired import (
    paired_difference_interval,
    paired_difference_intervals,
    sign_flip_test,
    sign_flip_tests,
)

_BLOCK = 2_000_000


def _old_sign_flip_test(
    a: np.ndarray, b: np.ndarray, *, clusters: list[str] | None, n_resamples: int, seed: int
) -> float:
    """The random branch of ``sign_flip_test`` before the draws were shared, verbatim."""
    differences = np.asarray(b, float) - np.asarray(a, float)
    if clusters is None:
        units = differences
    else:
        _, codes = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
        units = np.bincount(codes, weights=differences)
    observed = abs(units.sum())
    tolerance = 1e-9 * max(1.0, float(np.abs(units).sum()))
    units = units[np.abs(units) > tolerance]
    assert 2 ** len(units) > n_resamples
    rng = np.random.default_rng(seed)
    extreme = 0
    block = max(1, _BLOCK // len(units))
    for start in range(0, n_resamples, block):
        size = min(block, n_resamples - start)
        signs = rng.integers(0, 2, size=(size, len(units))) * 2.0 - 1.0
        extreme += int(np.sum(np.abs(signs @ units) >= observed - tolerance))
    return (extreme + 1) / (n_resamples + 1)


def _columns(n: int, seed: int) -> tuple[list[np.ndarray], list[np.ndarray], list[str]]:
    """Five metrics over ``n`` pairs in conversations of 1–6 items: continuous, shifted, 0/1 with ties, one with
    the same number of differing units as another, a constant one."""
    rng = np.random.default_rng(seed)
    clusters = [f"c{i}" for i in np.repeat(np.arange(n), rng.integers(1, 7, size=n))[:n]]
    a = [
        rng.normal(size=n),
        rng.uniform(size=n),
        (rng.uniform(size=n) < 0.3).astype(float),
        rng.normal(size=n),
        np.full(n, 2.0),
    ]
    b = [
        a[0] + rng.normal(0.0, 1.0, size=n),
        a[1] - 0.05 * rng.uniform(size=n),
        (rng.uniform(size=n) < 0.35).astype(float),
        a[3] + rng.normal(0.1, 1.0, size=n),
        np.full(n, 2.0),
    ]
    return a, b, clusters


@pytest.mark.parametrize(
    ("n", "seed", "clustered"), [(400, 0, True), (400, 1, False), (3000, 2, True), (2500, 4, False)]
)
def test_shared_sign_flips_equal_the_old_one_metric_code(n: int, seed: int, clustered: bool) -> None:
    a, b, clusters = _columns(n, seed)
    groups = clusters if clustered else None
    shared = sign_flip_tests(a, b, clusters=groups, n_resamples=9999, seed=seed)
    for k in range(4):  # the constant fifth metric has no differing unit: p = 1
        old = _old_sign_flip_test(a[k], b[k], clusters=groups, n_resamples=9999, seed=seed)
        assert shared[k] == old
        assert sign_flip_test(a[k], b[k], clusters=groups, n_resamples=9999, seed=seed) == old
    assert shared[4] == 1.0


def test_shared_bootstrap_intervals_equal_each_metric_alone() -> None:
    a, b, clusters = _columns(500, 3)
    for method in ("percentile", "bca"):
        shared = paired_difference_intervals(a, b, clusters=clusters, n_resamples=500, method=method, seed=4)
        alone = [
            paired_difference_interval(x, y, clusters=clusters, n_resamples=500, method=method, seed=4)
            for x, y in zip(a, b, strict=True)
        ]
        assert shared == alone


def test_shared_sign_flips_keep_the_edge_cases() -> None:
    empty = sign_flip_tests([np.array([])], [np.array([])])
    assert math.isnan(empty[0])
    exact = sign_flip_tests([np.zeros(4), np.zeros(3)], [np.array([1.0, 2.0, 3.0, 4.0]), np.zeros(3)])
    assert exact == [0.125, 1.0]
