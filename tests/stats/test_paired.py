"""Paired tests between runs (ragmeter.stats.paired) against reference implementations on random data: scipy's
permutation_test and bootstrap (paired resampling), statsmodels' McNemar test and Holm correction."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from scipy.stats import bootstrap, permutation_test
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests

from ragmeter.stats.paired import holm, mcnemar, paired_difference_interval, sign_flip_test


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(y - x, axis=axis)


@pytest.mark.parametrize("seed", range(5))
def test_exact_sign_flip_p_value_equals_scipys_exact_permutation_test(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=11)
    b = a + rng.normal(0.4, 1.0, size=11)
    theirs = permutation_test(
        (a, b),
        _mean_difference,
        permutation_type="samples",
        vectorized=True,
        n_resamples=np.inf,
        alternative="two-sided",
    ).pvalue
    assert sign_flip_test(a, b, n_resamples=9999) == pytest.approx(theirs, abs=1e-12)


def test_random_sign_flip_p_value_is_within_monte_carlo_error_of_scipys() -> None:
    rng = np.random.default_rng(7)
    a = rng.normal(size=60)
    b = a + rng.normal(0.25, 1.0, size=60)
    theirs = permutation_test(
        (a, b),
        _mean_difference,
        permutation_type="samples",
        vectorized=True,
        n_resamples=40_000,
        alternative="two-sided",
        random_state=1,
    ).pvalue
    ours = sign_flip_test(a, b, n_resamples=40_000, seed=3)
    assert 0.005 < theirs < 0.5  # a p-value where the comparison means something
    assert ours == pytest.approx(theirs, abs=4 * np.sqrt(theirs * (1 - theirs) / 40_000) + 1e-3)


def test_clusters_flip_a_conversation_as_one() -> None:
    # two conversations, each with differences summing to +3 and +1: assignments ±3 ±1, |sum| ≥ 4 in 2 of 4
    a = np.zeros(4)
    b = np.array([1.0, 2.0, 0.5, 0.5])
    assert sign_flip_test(a, b, clusters=["x", "x", "y", "y"]) == 0.5
    assert sign_flip_test(a, b) == 2 / 16  # item by item: only all-plus and all-minus reach |4|


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_paired_bootstrap_interval_agrees_with_scipys_paired_bootstrap(method: str) -> None:
    rng = np.random.default_rng(11)
    a = rng.beta(2, 3, size=80)
    b = np.clip(a + rng.normal(0.05, 0.1, size=80), 0, 1)
    theirs = bootstrap(
        (a, b),
        _mean_difference,
        paired=True,
        vectorized=True,
        n_resamples=40_000,
        method="BCa" if method == "bca" else "percentile",
        random_state=2,
    ).confidence_interval
    low, high = paired_difference_interval(a, b, n_resamples=40_000, method=method, seed=5)
    width = theirs.high - theirs.low
    assert low == pytest.approx(theirs.low, abs=0.03 * width)
    assert high == pytest.approx(theirs.high, abs=0.03 * width)


@pytest.mark.parametrize(("n", "p_one", "shift", "exact"), [(30, 0.5, 0.15, True), (400, 0.5, 0.08, False)])
def test_mcnemar_equals_statsmodels(n: int, p_one: float, shift: float, exact: bool) -> None:
    rng = np.random.default_rng(n)
    a = (rng.random(n) < p_one).astype(float)
    flip = rng.random(n) < 0.25
    b = np.where(flip, (rng.random(n) < p_one + shift).astype(float), a)
    only_a, only_b, p, used_exact = mcnemar(a, b)
    table = [[int(np.sum((a == 1) & (b == 1))), only_a], [only_b, int(np.sum((a == 0) & (b == 0)))]]
    assert used_exact is exact
    reference = sm_mcnemar(table, exact=exact, correction=True)
    assert p == pytest.approx(reference.pvalue, abs=1e-12)


def test_holm_equals_statsmodels_on_random_p_values(monkeypatch: pytest.MonkeyPatch) -> None:
    # statsmodels' Holm runs a full garbage collection on every call: over a second each in the whole suite's
    # heap, and nothing in its values depends on it
    monkeypatch.setattr(gc, "collect", lambda generation=2: 0)
    rng = np.random.default_rng(3)
    for _ in range(20):
        p_values = rng.random(rng.integers(1, 12)) ** 3
        assert holm(list(p_values)) == pytest.approx(list(multipletests(p_values, method="holm")[1]), abs=1e-12)


def test_holm_leaves_undefined_p_values_out_of_the_count() -> None:
    assert holm([0.01, float("nan"), 0.02]) == pytest.approx([0.02, float("nan"), 0.02], nan_ok=True)


def test_pairs_without_a_difference_keep_the_test_exact_and_equal_to_scipys() -> None:
    rng = np.random.default_rng(4)
    a = rng.normal(size=14)
    b = a.copy()
    b[:5] += np.array([0.9, 0.4, 1.2, -0.3, 0.8])  # 9 of 14 pairs tie
    theirs = permutation_test(
        (a, b),
        _mean_difference,
        permutation_type="samples",
        vectorized=True,
        n_resamples=np.inf,
        alternative="two-sided",
    ).pvalue
    assert sign_flip_test(a, b, n_resamples=100) == pytest.approx(theirs, abs=1e-12)  # 2^5 assignments: exact
    assert sign_flip_test(a, a) == 1.0
