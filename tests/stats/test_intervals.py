"""Confidence intervals (SPEC §6) checked against values worked out independently of the code:
hand arithmetic and statsmodels for Wilson and for Wilson on the design effect's effective sample size,
scipy.stats.bootstrap for the bootstrap, and small coverage studies."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

import ragmeter
from ragmeter import Settings
from ragmeter.core.signature import Signature
from ragmeter.metrics import Aggregation, get_metric
from ragmeter.results.aggregate import MIN_CLUSTERS, Column, cluster_labels, summarize, summarize_columns
from ragmeter.stats.intervals import (
    bootstrap_mean_interval,
    bootstrap_mean_intervals,
    bootstrap_quantile_interval,
    wilson_deff_interval,
    wilson_interval,
)

# --------------------------------------------------------------------------------------------------
# Wilson score interval
#
# z = Φ⁻¹(0.975) = 1.959963984540054, z² = 3.841458820694124.
# Wilson: centre = (p̂ + z²/2n) / (1 + z²/n), half = z·sqrt(p̂(1−p̂)/n + z²/4n²) / (1 + z²/n).
#
# 8/10:  p̂ = 0.8, z²/n = 0.3841458821, denominator = 1.3841458821
#        centre = (0.8 + 0.1920729410) / 1.3841458821 = 0.9920729410 / 1.3841458821 = 0.7167401600
#        p̂(1−p̂)/n = 0.016, z²/4n² = 3.8414588207/400 = 0.0096036471 → sum 0.0256036471
#        sqrt = 0.1600113966, × z = 0.3136165745, / 1.3841458821 = 0.2265776885
#        → (0.7167401600 − 0.2265776885, 0.7167401600 + 0.2265776885) = (0.4901624715, 0.9433178485)
# 0/10:  p̂ = 0: centre = 0.1920729410 / 1.3841458821 = 0.1387663999
#        half = z·sqrt(0.0096036471) / 1.3841458821 = 1.9599639845 × 0.0979981992 / 1.3841458821
#             = 0.1920729410 / 1.3841458821 = 0.1387663999  (= centre: z·sqrt(z²/4n²) = z²/2n)
#        → (0, 0.2775327999)
# 10/10: the mirror image of 0/10: (1 − 0.2775327999, 1) = (0.7224672001, 1)
# 1/1:   p̂ = 1, z²/n = 3.8414588207, denominator = 4.8414588207
#        centre = (1 + 1.9207294103) / 4.8414588207 = 2.9207294103 / 4.8414588207 = 0.6032746572
#        half = z·sqrt(0 + 3.8414588207/4) / 4.8414588207 = 1.9599639845 × 0.9799819923 / 4.8414588207
#             = 1.9207294103 / 4.8414588207 = 0.3967253428
#        → (0.2065493144, 1)
# --------------------------------------------------------------------------------------------------

WILSON_BY_HAND = [
    (8, 10, 0.4901624715, 0.9433178485),
    (0, 10, 0.0, 0.2775327999),
    (10, 10, 0.7224672001, 1.0),
    (1, 1, 0.2065493144, 1.0),
]


@pytest.mark.parametrize("k, n, low, high", WILSON_BY_HAND)
def test_wilson_matches_hand_arithmetic(k: int, n: int, low: float, high: float) -> None:
    got_low, got_high = wilson_interval(k, n)
    # Hand values carry 10 decimals.
    assert got_low == pytest.approx(low, abs=1e-9)
    assert got_high == pytest.approx(high, abs=1e-9)
    assert got_low >= 0.0 and got_high <= 1.0


@pytest.mark.parametrize("k, n", [(0, 10), (0, 1000), (13, 13), (40, 40)])
def test_wilson_edges_are_exact(k: int, n: int) -> None:
    # In exact arithmetic half = centre at p̂ = 0 (and centre + half = 1 at p̂ = 1): the bound is 0 (1).
    # Computed naively it drifts by a rounding error past p̂ (2.8e-17 for 0/10, 1 − 1.1e-16 for 13/13).
    low, high = wilson_interval(k, n)
    assert low <= k / n <= high
    assert (low == 0.0) if k == 0 else (high == 1.0)


@pytest.mark.parametrize("k, n", [(1, 10), (3, 10), (8, 10), (10, 10), (1, 1), (17, 43), (999, 1000)])
def test_wilson_contains_the_point_estimate(k: int, n: int) -> None:
    low, high = wilson_interval(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0


@pytest.mark.parametrize("k, n", [(0, 10), (3, 10), (8, 10), (10, 10), (1, 1), (17, 43), (250, 1000)])
def test_wilson_are_the_roots_of_the_score_equation(k: int, n: int) -> None:
    # Independent derivation: the Wilson bounds are the p solving (p̂ − p)² = z²·p(1−p)/n, i.e.
    # (1 + z²/n)·p² − (2p̂ + z²/n)·p + p̂² = 0.
    z2 = 1.959963984540054**2
    p_hat = k / n
    roots = sorted(np.roots([1 + z2 / n, -(2 * p_hat + z2 / n), p_hat**2]).real)
    low, high = wilson_interval(k, n)
    assert low == pytest.approx(roots[0], abs=1e-9)
    assert high == pytest.approx(roots[1], abs=1e-9)


def test_wilson_other_confidence_is_narrower_or_wider() -> None:
    narrow = wilson_interval(8, 10, confidence=0.80)
    wide = wilson_interval(8, 10, confidence=0.99)
    base = wilson_interval(8, 10)
    assert wide[0] < base[0] < narrow[0] < 0.8 < narrow[1] < base[1] < wide[1]


def test_wilson_empty_is_nan() -> None:
    low, high = wilson_interval(0, 0)
    assert math.isnan(low) and math.isnan(high)


@pytest.mark.parametrize("k, n", [(0, 10), (8, 10), (10, 10), (1, 1), (17, 43)])
def test_wilson_matches_statsmodels(k: int, n: int) -> None:
    from statsmodels.stats import proportion

    expected = proportion.proportion_confint(k, n, alpha=0.05, method="wilson")
    assert wilson_interval(k, n) == pytest.approx(expected, abs=1e-9)


# --------------------------------------------------------------------------------------------------
# Wilson on the effective sample size n / deff (rates of items in clusters)
#
# Hand example: clusters of sizes 2, 2, 3, 1 holding [1, 1], [0, 0], [1, 0, 1], [0] (min_clusters=2).
#   n = 8, m = 4, y = (2, 0, 2, 0), p̂ = 4/8 = 0.5
#   y_i − p̂·n_i = (2 − 1, 0 − 1, 2 − 1.5, 0 − 0.5) = (1, −1, 0.5, −0.5); squares sum to 2.5
#   clustered variance = m/(m−1) · 2.5 / n² = 4/3 · 2.5/64 = 10/192 = 0.0520833333
#   independent variance = p̂(1−p̂)/(n−1) = 0.25/7 = 0.0357142857
#   deff = (10/192) / (1/28) = 280/192 = 1.4583333333;  n_eff = 8 / 1.4583333333 = 192/35 = 5.4857142857
#   Wilson at p̂ = 0.5 with n_eff trials: centre = 0.5 (symmetric);
#   z²/n_eff = 3.8414588207 / 5.4857142857 = 0.7002659309 → denominator 1.7002659309
#   p̂(1−p̂)/n_eff = 0.25/5.4857142857 = 0.0455729167, z²/4n_eff² = 0.0319131609 → sum 0.0774860776
#   sqrt = 0.2783632116, × z = 0.5455818694, / 1.7002659309 = 0.3208803161
#   → (0.5 − 0.3208803161, 0.5 + 0.3208803161) = (0.1791196839, 0.8208803161)
# Worst case (deff not estimable): deff = Σ n_i² / n. At p̂ = 0 Wilson's upper bound is
#   2·(z²/2n)/(1 + z²/n) = z²/(n + z²):
#   0 of 45 in 15 clusters of 3: deff = 15·9/45 = 3, n_eff = 15 → 3.8414588207/18.8414588207 = 0.2038833010
#   0 of 45 in clusters of sizes 1, 2, …, 9: Σ n_i² = 285, deff = 285/45, n_eff = 45²/285 = 7.1052631579
#                                            → 3.8414588207/10.9467219786 = 0.3509232105
# --------------------------------------------------------------------------------------------------

HAND_VALUES = [1, 1, 0, 0, 1, 0, 1, 0]
HAND_CLUSTERS = ["a", "a", "b", "b", "c", "c", "c", "d"]


def test_wilson_deff_matches_hand_arithmetic() -> None:
    got = wilson_deff_interval(HAND_VALUES, HAND_CLUSTERS, min_clusters=2)
    assert got.deff == pytest.approx(280 / 192, abs=1e-12)
    assert got.estimated
    assert (got.low, got.high) == pytest.approx((0.1791196839, 0.8208803161), abs=1e-9)


def test_wilson_deff_of_the_hand_example_matches_statsmodels() -> None:
    # Two independent references: the design effect as the ratio of statsmodels' cluster-robust (CR1:
    # G/(G−1) · Σ scores²) to classical variance of an intercept-only OLS, which for a mean are the
    # ratio estimator's variance and s²/n; the interval as statsmodels' Wilson on n_eff trials.
    import statsmodels.api as sm

    y = np.asarray(HAND_VALUES, dtype=float)
    x = np.ones((len(y), 1))
    groups = np.unique(HAND_CLUSTERS, return_inverse=True)[1]
    classical = sm.OLS(y, x).fit().bse[0] ** 2
    robust = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": groups}).bse[0] ** 2
    got = wilson_deff_interval(HAND_VALUES, HAND_CLUSTERS, min_clusters=2)
    assert got.deff == pytest.approx(robust / classical, rel=1e-12)
    n_eff = len(y) / got.deff
    assert (got.low, got.high) == pytest.approx(proportion_confint(y.mean() * n_eff, n_eff, method="wilson"), abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_wilson_deff_matches_statsmodels_on_unequal_clusters(seed: int) -> None:
    import statsmodels.api as sm

    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 8, size=25)
    codes = np.repeat(np.arange(25), sizes)
    y = (rng.random(len(codes)) < rng.beta(2, 3, size=25)[codes]).astype(float)  # correlated within clusters
    x = np.ones((len(y), 1))
    ratio = (sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": codes}).bse[0] / sm.OLS(y, x).fit().bse[0]) ** 2
    got = wilson_deff_interval(y, [f"conv-{c}" for c in codes])
    assert got.estimated
    assert got.deff == pytest.approx(max(1.0, ratio), rel=1e-9)
    n_eff = len(y) / got.deff
    assert (got.low, got.high) == pytest.approx(proportion_confint(y.mean() * n_eff, n_eff, method="wilson"), abs=1e-12)


@pytest.mark.parametrize(
    "values, clusters, deff, high",
    [
        ([1.0] * 40, [i // 4 for i in range(40)], 4.0, 1.0),  # 40 of 40 in 10 conversations
        ([0.0] * 45, [i // 3 for i in range(45)], 3.0, 0.2038833010),  # 0 of 45 in 15 conversations
        ([0.0] * 45, [size for size in range(1, 10) for _ in range(size)], 285 / 45, 0.3509232105),  # 9 unequal
    ],
)
def test_wilson_deff_takes_the_worst_case_when_deff_cannot_be_estimated(
    values: list[float], clusters: list[int], deff: float, high: float
) -> None:
    got = wilson_deff_interval(values, clusters)
    assert got.deff == pytest.approx(deff, abs=1e-12) and not got.estimated
    if values[0] == 1.0:
        assert (got.low, got.high) == pytest.approx((0.7224672001, 1.0), abs=1e-9)  # Wilson's 10/10, above
    else:
        assert (got.low, got.high) == pytest.approx((0.0, high), abs=1e-9)
    # Open: it claims no certainty, stays inside [0, 1] and contains p̂.
    assert 0.0 <= got.low <= values[0] <= got.high <= 1.0 and got.low < got.high


def test_wilson_deff_equals_kish_rho_one_for_alike_clusters() -> None:
    # 12 clusters of 3 alike items, 5 of them 1s: n = 36, p̂ = 15/36 = 5/12; y_i − 3p̂ = 1.75 (×5) and
    # −1.25 (×7), squares 5·3.0625 + 7·1.5625 = 26.25; clustered 12/11 · 26.25/1296, independent
    # (5/12)(7/12)/35 = 1/144 → deff = 12/11 · 26.25 · 144/1296 = 35/11 = (n − 1)/(m − 1): Kish's m̄ = 3 at
    # ρ = 1, times the small-sample factors.
    values = np.repeat([1.0] * 5 + [0.0] * 7, 3)
    got = wilson_deff_interval(values, [i // 3 for i in range(36)])
    assert got.deff == pytest.approx(35 / 11, rel=1e-12) and got.estimated


def test_wilson_deff_of_singleton_clusters_is_plain_wilson() -> None:
    values = (np.random.default_rng(3).random(60) < 0.3).astype(float)
    got = wilson_deff_interval(values, [f"item-{i}" for i in range(60)])
    assert got.deff == 1.0
    assert (got.low, got.high) == pytest.approx(wilson_interval(int(values.sum()), 60), abs=1e-12)
    # Few singleton "clusters" or a rate of 1: the worst case Σ n_i²/n is 1 too.
    assert wilson_deff_interval([1.0] * 5, list("abcde")) == (*wilson_interval(5, 5), 1.0, False)


def test_wilson_deff_is_floored_at_one() -> None:
    # Each cluster holds one 1 and one 0: Σ (y_i − p̂·n_i)² = 0, an estimated deff of 0, floored to 1.
    got = wilson_deff_interval([1.0, 0.0] * 10, [i // 2 for i in range(20)])
    assert got.deff == 1.0 and got.estimated
    assert (got.low, got.high) == pytest.approx(wilson_interval(10, 20), abs=1e-12)


def test_wilson_deff_with_few_clusters_takes_the_worst_case() -> None:
    # Five clusters of sizes 2, 2, 3, 1, 2: too few to estimate deff from, so Σ n_i²/n = 22/10 stands in.
    values = [1, 1, 0, 0, 1, 0, 1, 0, 1, 0]
    clusters = ["a", "a", "b", "b", "c", "c", "c", "d", "e", "e"]
    few = wilson_deff_interval(values, clusters)
    assert few.deff == pytest.approx(2.2) and not few.estimated
    assert (few.low, few.high) == pytest.approx(proportion_confint(0.5 * 10 / 2.2, 10 / 2.2, method="wilson"))
    assert wilson_deff_interval(values, clusters, min_clusters=5).estimated


def test_wilson_deff_rejects_bad_input_and_gives_nan_when_empty() -> None:
    with pytest.raises(ValueError, match="0 or 1"):
        wilson_deff_interval([0.5, 1.0], ["a", "a"])
    with pytest.raises(ValueError, match="cluster labels"):
        wilson_deff_interval([0.0, 1.0], ["a"])
    empty = wilson_deff_interval([], [])
    assert all(math.isnan(x) for x in empty[:3]) and not empty.estimated


def test_wilson_deff_covers_where_plain_wilson_does_not() -> None:
    # 30 conversations of 4 turns whose success rates vary (beta-binomial, mean 0.3, ρ = 1/(a + b + 1) = 0.2,
    # so deff ≈ 1 + 3·0.2 = 1.6): plain Wilson treats 120 turns as independent and under-covers.
    rng = np.random.default_rng(11)
    trials, true_rate = 400, 0.3
    clusters = [i // 4 for i in range(120)]
    covered = {"deff": 0, "plain": 0}
    for _ in range(trials):
        rates = np.repeat(rng.beta(1.2, 2.8, size=30), 4)
        values = (rng.random(120) < rates).astype(float)
        low, high, _, _ = wilson_deff_interval(values, clusters)
        covered["deff"] += low <= true_rate <= high
        low, high = wilson_interval(int(values.sum()), 120)
        covered["plain"] += low <= true_rate <= high
    # Binomial sd over 400 trials ≈ 1.1 points at 95%: [91%, 99%] accepts noise and a slightly
    # conservative interval; plain Wilson's coverage is near 1.96/√1.6 → 88%.
    assert 0.91 * trials <= covered["deff"] <= 0.99 * trials
    assert covered["plain"] < covered["deff"] - 0.03 * trials


# --------------------------------------------------------------------------------------------------
# Bootstrap interval of a mean, against scipy.stats.bootstrap
# --------------------------------------------------------------------------------------------------

B_LARGE = 20_000


@pytest.fixture(scope="module")
def skewed() -> np.ndarray:
    return np.random.default_rng(12345).exponential(1.0, size=200)


@pytest.fixture(scope="module")
def scipy_intervals(skewed: np.ndarray) -> dict[str, tuple[float, float]]:
    from scipy import stats

    out = {}
    for ours, theirs in (("percentile", "percentile"), ("bca", "BCa")):
        ci = stats.bootstrap(
            (skewed,), np.mean, n_resamples=B_LARGE, method=theirs, rng=np.random.default_rng(2)
        ).confidence_interval
        out[ours] = (float(ci.low), float(ci.high))
    return out


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_mean_matches_scipy(skewed: np.ndarray, scipy_intervals: dict, method: str) -> None:
    ours = bootstrap_mean_interval(skewed, n_resamples=B_LARGE, method=method, seed=1)
    ref = scipy_intervals[method]
    # The two random streams differ, so the endpoints differ by Monte Carlo error only. The bootstrap
    # distribution of the mean is close to N(x̄, s²/n); the 2.5% quantile of B draws has standard error
    # sqrt(.025·.975/B) / φ(1.96) · s/√n = 0.0011/0.058 · 0.0707·s ≈ 0.0013·s (B = 20000, n = 200), so
    # the difference of two independent estimates has sd ≈ 0.0019·s (BCa a little more, through ẑ0).
    # A tolerance of 0.02·s is about 10 standard errors: it catches a wrong scale, a swapped or shifted
    # tail, a mean of the wrong thing; the next test tells BCa from percentile.
    tolerance = 0.02 * skewed.std(ddof=1)
    assert ours[0] == pytest.approx(ref[0], abs=tolerance)
    assert ours[1] == pytest.approx(ref[1], abs=tolerance)


@pytest.mark.parametrize("method, other", [("percentile", "bca"), ("bca", "percentile")])
def test_bootstrap_method_is_nearest_scipys_same_method(
    skewed: np.ndarray, scipy_intervals: dict, method: str, other: str
) -> None:
    # BCa's correction moves these endpoints by only ≈ 0.01·s (≈ 5 Monte Carlo sds of a difference),
    # less than the tolerance above; so ask that each interval be nearer scipy's interval of the same
    # method than scipy's other one (summed over both endpoints: gap ≈ 0.02·s vs noise ≈ 0.003·s).
    ours = np.array(bootstrap_mean_interval(skewed, n_resamples=B_LARGE, method=method, seed=1))
    same = np.abs(ours - np.array(scipy_intervals[method])).sum()
    different = np.abs(ours - np.array(scipy_intervals[other])).sum()
    assert same < different / 2


def test_bca_shifts_right_for_right_skewed_data(skewed: np.ndarray) -> None:
    percentile = bootstrap_mean_interval(skewed, n_resamples=B_LARGE, method="percentile", seed=3)
    bca = bootstrap_mean_interval(skewed, n_resamples=B_LARGE, method="bca", seed=3)
    # Right skew: positive acceleration and bias correction move both BCa levels upwards.
    assert bca[0] > percentile[0]
    assert bca[1] > percentile[1]
    for low, high in (percentile, bca):
        assert low < skewed.mean() < high


def test_bootstrap_mean_rejects_unknown_method(skewed: np.ndarray) -> None:
    with pytest.raises(ValueError, match="method"):
        bootstrap_mean_interval(skewed, method="basic")


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_constant_data_gives_a_point(method: str) -> None:
    # (v, v) up to the rounding of Σ values / n (0.7·25 summed is 17.499999999999996).
    low, high = bootstrap_mean_interval([0.7] * 25, method=method)
    assert low == high == pytest.approx(0.7, rel=1e-12)
    clustered = bootstrap_mean_interval([1.0] * 12, clusters=[i // 3 for i in range(12)], method=method)
    assert clustered == (1.0, 1.0)


@pytest.mark.parametrize("values", [[], [0.5]])
def test_fewer_than_two_values_gives_nan(values: list[float]) -> None:
    low, high = bootstrap_mean_interval(values)
    assert math.isnan(low) and math.isnan(high)


def test_one_cluster_gives_nan() -> None:
    low, high = bootstrap_mean_interval([0.1, 0.5, 0.9], clusters=["c", "c", "c"])
    assert math.isnan(low) and math.isnan(high)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_seed_makes_it_reproducible(skewed: np.ndarray, method: str) -> None:
    first = bootstrap_mean_interval(skewed, n_resamples=1000, method=method, seed=7)
    assert bootstrap_mean_interval(skewed, n_resamples=1000, method=method, seed=7) == first
    assert bootstrap_mean_interval(skewed, n_resamples=1000, method=method, seed=8) != first


def test_resampling_in_blocks_does_not_change_the_result(skewed: np.ndarray, monkeypatch: pytest.MonkeyPatch) -> None:
    from ragmeter.stats import intervals

    whole = bootstrap_mean_interval(skewed, n_resamples=1000, seed=5)
    monkeypatch.setattr(intervals, "_BLOCK_ELEMENTS", len(skewed) * 7)  # blocks of 7 resamples
    blocked = bootstrap_mean_interval(skewed, n_resamples=1000, seed=5)
    # Drawing rows block by block consumes the generator exactly as one big draw does.
    assert blocked == pytest.approx(whole, abs=1e-12)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_correlated_clusters_widen_the_interval(method: str) -> None:
    rng = np.random.default_rng(99)
    n_clusters, size = 40, 10
    values = np.repeat(rng.normal(0.5, 0.2, size=n_clusters), size)  # each cluster: 10 identical values
    clusters = [f"conv-{i // size}" for i in range(len(values))]
    items = bootstrap_mean_interval(values, n_resamples=4000, method=method, seed=0)
    grouped = bootstrap_mean_interval(values, clusters=clusters, n_resamples=4000, method=method, seed=0)
    # 400 "independent" items versus 40 independent clusters: widths differ by about sqrt(10) ≈ 3.2.
    assert (grouped[1] - grouped[0]) > 2 * (items[1] - items[0])
    assert grouped[0] < values.mean() < grouped[1]


def test_cluster_statistic_is_the_item_mean_with_unequal_clusters() -> None:
    # Σ values / Σ items over drawn clusters: with clusters of sizes 1 and 3 the centre stays the
    # item mean (not the mean of cluster means).
    values = [0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    clusters = ["a", "b", "b", "b", "c", "d", "d", "e"]
    low, high = bootstrap_mean_interval(values, clusters=clusters, n_resamples=4000, method="percentile")
    assert low < np.mean(values) < high


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_singleton_clusters_equal_the_unclustered_interval(skewed: np.ndarray, method: str) -> None:
    # Labels whose sorted order is their position: resampling units line up one for one with the
    # items, so the same seed draws the same resamples.
    labels = [f"{i:05d}" for i in range(len(skewed))]
    plain = bootstrap_mean_interval(skewed, n_resamples=2000, method=method, seed=4)
    single = bootstrap_mean_interval(skewed, clusters=labels, n_resamples=2000, method=method, seed=4)
    assert single == pytest.approx(plain, abs=1e-12)


def test_singleton_clusters_in_any_order_agree_up_to_monte_carlo_error(skewed: np.ndarray) -> None:
    # Units are ordered by label, so arbitrary labels permute them and the same seed draws other
    # resamples: the interval is the same up to Monte Carlo error (see the scipy comparison above).
    labels = list(np.random.default_rng(0).permutation(len(skewed)))
    plain = bootstrap_mean_interval(skewed, n_resamples=B_LARGE, seed=4)
    single = bootstrap_mean_interval(skewed, clusters=labels, n_resamples=B_LARGE, seed=4)
    assert single == pytest.approx(plain, abs=0.02 * skewed.std(ddof=1))


# --------------------------------------------------------------------------------------------------
# Bootstrap interval of a percentile
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("q", [50, 95])
def test_quantile_interval_contains_the_sample_quantile(skewed: np.ndarray, q: float) -> None:
    low, high = bootstrap_quantile_interval(skewed, q, n_resamples=2000, seed=0)
    assert low < np.percentile(skewed, q) < high
    assert bootstrap_quantile_interval(skewed, q, n_resamples=2000, seed=0) == (low, high)


@pytest.mark.parametrize("values", [[], [120.0]])
def test_quantile_interval_needs_two_values(values: list[float]) -> None:
    low, high = bootstrap_quantile_interval(values, 95)
    assert math.isnan(low) and math.isnan(high)


def test_quantile_interval_matches_scipy_percentile_bootstrap(skewed: np.ndarray) -> None:
    from scipy import stats

    ours = bootstrap_quantile_interval(skewed, 50, n_resamples=B_LARGE, seed=0)
    ref = stats.bootstrap(
        (skewed,),
        lambda x, axis: np.percentile(x, 50, axis=axis),
        n_resamples=B_LARGE,
        method="percentile",
        rng=np.random.default_rng(1),
    ).confidence_interval
    # The bootstrap distribution of a median is lumpy (it sits on order statistics), so Monte Carlo
    # error is larger than for a mean; 0.05·s is still far below the interval width (≈ 0.3·s).
    tolerance = 0.05 * skewed.std(ddof=1)
    assert ours[0] == pytest.approx(ref.low, abs=tolerance)
    assert ours[1] == pytest.approx(ref.high, abs=tolerance)


# --------------------------------------------------------------------------------------------------
# Coverage: the 95% intervals cover the true mean about 95% of the time
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_coverage_of_the_true_mean(method: str) -> None:
    rng = np.random.default_rng(2024)
    true_mean, trials = 3.0, 200
    covered = 0
    for trial in range(trials):
        sample = rng.normal(true_mean, 2.0, size=40)
        low, high = bootstrap_mean_interval(sample, n_resamples=500, method=method, seed=trial)
        covered += low <= true_mean <= high
    # Bootstrap intervals at n = 40 under-cover slightly (≈ 93–94%); the binomial sd over 200 trials is
    # ≈ 1.7 points, so [88%, 99%] rejects a broken interval (e.g. 68% or 100%) but not noise.
    assert 0.88 * trials <= covered <= 0.99 * trials


# --------------------------------------------------------------------------------------------------
# summarize(): which interval each aggregation gets
# --------------------------------------------------------------------------------------------------

SETTINGS = Settings(n_resamples=1000, seed=0)
# Which interval a figure gets is what these tests check: the expected bootstrap intervals come from
# bootstrap_mean_interval itself (tested against hand values and scipy above; no reference library does a
# cluster BCa), the expected Wilson intervals from statsmodels.


def _summarize(
    name: str, values: list[float], undefined: dict[int, str] | None = None, clusters: list[str] | None = None
):
    metric = get_metric(name)
    column = Column(name, metric.aggregation, np.asarray(values, dtype=float), undefined or {}, Signature(name, {}))
    return summarize(column, clusters=clusters, settings=SETTINGS)


def test_rate_without_clusters_uses_wilson() -> None:
    assert get_metric("exact_match").aggregation is Aggregation.RATE
    values = [1.0] * 8 + [0.0] * 2
    (summary,) = _summarize("exact_match", values)
    assert summary.statistic == "rate"
    assert summary.value == pytest.approx(0.8)
    assert (summary.ci_low, summary.ci_high) == pytest.approx((0.4901624715, 0.9433178485), abs=1e-9)
    assert summary.n == 10 and summary.n_undefined == 0
    assert "ci:wilson" in summary.signature.render()
    assert "seed" not in summary.signature.settings


def test_rate_with_clusters_uses_wilson_on_the_effective_sample_size() -> None:
    # 12 conversations of 3 turns with 3, 1, 2, 0 correct (×3): n = 36, p̂ = 0.5, y_i − 1.5 = ±1.5, ±0.5,
    # Σ squares = 3·(2.25 + 0.25 + 0.25 + 2.25) = 15; clustered 12/11 · 15/1296, independent 0.25/35
    # → deff = 12/11 · 15/1296 · 140 = 25200/14256 = 1.7676767677, n_eff = 36/deff = 20.3657142857.
    values = [1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0] * 3
    clusters = [f"c{i // 3}" for i in range(len(values))]
    (summary,) = _summarize("exact_match", values, clusters=clusters)
    n_eff = 36 / (25200 / 14256)
    assert summary.statistic == "rate"
    assert summary.value == pytest.approx(0.5)
    assert (summary.ci_low, summary.ci_high) == pytest.approx(
        proportion_confint(0.5 * n_eff, n_eff, method="wilson"), abs=1e-12
    )
    assert summary.signature.settings == {"ci": "wilson-deff", "confidence": 0.95, "clusters": 12, "deff": "1.77"}
    assert "|ci:wilson-deff|clusters:12|confidence:0.95|deff:1.77|" in summary.signature.render()
    assert summary.warning is None
    # A mean on the same conversations keeps the cluster bootstrap.
    mean = Column("token_f1", Aggregation.MEAN, np.asarray(values), {}, Signature("token_f1", {}))
    rate = Column("exact_match", Aggregation.RATE, np.asarray(values), {}, Signature("exact_match", {}))
    together = summarize_columns([mean, rate], settings=SETTINGS, clusters=clusters)
    assert together[0].signature.settings["resample"] == "clusters"
    assert (together[0].ci_low, together[0].ci_high) == bootstrap_mean_interval(
        np.asarray(values), clusters=clusters, n_resamples=1000, method="bca", seed=0
    )
    assert together[1] == summary


@pytest.mark.parametrize(
    "value, n, size, expected",
    [
        (1.0, 40, 4, (0.7224672001, 1.0)),  # 40 of 40 in 10 conversations: Wilson's 10 of 10
        (0.0, 45, 3, (0.0, 0.2038833010)),  # 0 of 45 in 15 conversations: Wilson's 0 of 15
    ],
)
def test_rates_of_all_or_nothing_in_conversations_are_open(
    value: float, n: int, size: int, expected: tuple[float, float]
) -> None:
    # The cluster bootstrap gave 1.000 [1.000, 1.000] and 0.000 [0.000, 0.000]: certainty from 40 turns.
    clusters = [f"conv-{i // size}" for i in range(n)]
    (summary,) = _summarize("exact_match", [value] * n, clusters=clusters)
    assert summary.value == value
    assert summary.ci_low < summary.ci_high
    assert 0.0 <= summary.ci_low <= summary.value <= summary.ci_high <= 1.0
    assert (summary.ci_low, summary.ci_high) == pytest.approx(expected, abs=1e-9)
    assert summary.signature.settings["ci"] == "wilson-deff"
    assert summary.signature.settings["deff"] == f"{size:.2f}(worst case, all values equal)"
    assert summary.warning is None


def test_rate_whose_defined_items_share_no_conversation_keeps_plain_wilson() -> None:
    values = [1.0, math.nan, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    clusters = ["a", "a"] + [f"c{i}" for i in range(10)]  # the only shared conversation loses a turn
    (summary,) = _summarize("exact_match", values, undefined={1: "x"}, clusters=clusters)
    assert summary.signature.settings == {"ci": "wilson", "confidence": 0.95}
    assert (summary.ci_low, summary.ci_high) == pytest.approx(proportion_confint(8, 11, method="wilson"))


def test_fewer_than_ten_clusters_resample_items_or_take_the_worst_deff_and_say_so() -> None:
    # Two conversations (sample_responses-10.jsonl's case): resampling 2 clusters gave [0.600, 0.600].
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    clusters = ["a"] * 5 + ["b"] * 5
    (mean,) = _summarize("token_f1", values, clusters=clusters)
    assert (mean.ci_low, mean.ci_high) == bootstrap_mean_interval(
        np.asarray(values), n_resamples=1000, method="bca", seed=0
    )
    assert mean.ci_low < mean.value < mean.ci_high
    assert mean.signature.settings["resample"] == f"items(2<{MIN_CLUSTERS} clusters)"
    assert "only 2 conversation(s)" in mean.warning and mean.to_dict()["warning"] == mean.warning
    # A rate cannot estimate its design effect from two conversations: the worst case, Σ n_i²/n = 50/10,
    # counts each conversation once (n_eff = 2).
    (rate,) = _summarize("exact_match", values, clusters=clusters)
    assert (rate.ci_low, rate.ci_high) == pytest.approx(proportion_confint(1.2, 2, method="wilson"))
    assert rate.signature.settings["ci"] == "wilson-deff"
    assert rate.signature.settings["deff"] == f"5.00(worst case, 2<{MIN_CLUSTERS} clusters)"
    assert rate.warning is not None and "only 2 conversation(s)" in rate.warning


def test_cluster_labels_keep_models_apart_and_skip_unshared_items() -> None:
    # MT-RAG files hold each conversation once per answering model: the models must not merge.
    labels = cluster_labels(["c1", "c1", "c1", "c1", None], ["m1", "m1", "m2", "m2", "m1"])
    assert labels is not None
    assert labels[0] == labels[1] and labels[2] == labels[3] and labels[0] != labels[2]
    assert labels[4] not in labels[:4]
    assert cluster_labels(["c1", "c2", None], [None, None, None]) is None


def test_latency_gives_p50_and_p95_with_linear_interpolation() -> None:
    latencies = [120.0, 80.0, 300.0, 95.0, 1500.0, 110.0, 240.0, 60.0, 130.0, 410.0]
    summaries = _summarize("latency_ms", latencies)
    assert [s.statistic for s in summaries] == ["p50", "p95"]
    p50, p95 = summaries
    # Sorted: 60 80 95 110 120 130 240 300 410 1500. Linear interpolation at (n−1)·q:
    # P50 at 4.5 → (120 + 130)/2 = 125; P95 at 8.55 → 410 + 0.55·(1500 − 410) = 1009.5.
    assert p50.value == pytest.approx(125.0)
    assert p95.value == pytest.approx(1009.5)
    assert p50.value == pytest.approx(float(np.percentile(latencies, 50)))
    assert p95.value == pytest.approx(float(np.percentile(latencies, 95)))
    for summary in summaries:
        assert summary.ci_low is not None and summary.ci_high is not None
        assert summary.ci_low <= summary.value <= summary.ci_high
        assert summary.signature.settings["ci"] == "percentile-items"


def test_idk_citation_count_is_a_sum_without_interval() -> None:
    (summary,) = _summarize("idk_citation_count", [0.0, 2.0, 0.0, 1.0])
    assert summary.statistic == "sum"
    assert summary.value == 3.0
    assert summary.ci_low is None and summary.ci_high is None
    assert summary.to_dict()["ci_low"] is None


def test_nan_values_are_undefined_and_excluded() -> None:
    values = [1.0, math.nan, 0.0, 1.0, math.nan, 1.0]
    reasons = {1: "record has no reference answer", 4: "record has no reference answer"}
    (summary,) = _summarize("exact_match", values, undefined=reasons)
    assert summary.value == pytest.approx(0.75)
    assert summary.n == 4 and summary.n_undefined == 2
    assert dict(summary.undefined_reasons) == {"record has no reference answer": 2}
    assert (summary.ci_low, summary.ci_high) == pytest.approx(proportion_confint(3, 4, method="wilson"))

    (total,) = _summarize("idk_citation_count", [1.0, math.nan, 2.0], undefined={1: "x"})
    assert total.value == 3.0 and total.n == 2 and total.n_undefined == 1

    p50, p95 = _summarize("latency_ms", [100.0, math.nan, 300.0, 200.0], undefined={1: "record has no latency_ms"})
    assert p50.value == pytest.approx(200.0) and p50.n == 3 and p50.n_undefined == 1
    assert p95.value == pytest.approx(float(np.percentile([100.0, 300.0, 200.0], 95)))


def test_nan_values_are_dropped_with_their_clusters() -> None:
    values = [1.0, math.nan, 0.0, 1.0, 0.0, 1.0] * 5
    clusters = [f"{c}{i // 6}" for i, c in enumerate(["a", "a", "a", "b", "b", "b"] * 5)]
    undefined = {i: "x" for i, v in enumerate(values) if math.isnan(v)}
    (summary,) = _summarize("token_f1", values, undefined=undefined, clusters=clusters)
    kept = [v for v in values if not math.isnan(v)]
    kept_clusters = [c for c, v in zip(clusters, values, strict=True) if not math.isnan(v)]
    expected = bootstrap_mean_interval(np.asarray(kept), clusters=kept_clusters, n_resamples=1000, method="bca", seed=0)
    assert summary.statistic == "mean"
    assert summary.value == pytest.approx(0.6)
    assert (summary.ci_low, summary.ci_high) == expected
    assert summary.signature.settings["resample"] == "clusters"


def test_all_undefined_gives_nan_figures() -> None:
    (summary,) = _summarize("token_f1", [math.nan, math.nan], undefined={0: "x", 1: "x"})
    assert math.isnan(summary.value) and summary.n == 0 and summary.n_undefined == 2
    assert math.isnan(summary.ci_low) and math.isnan(summary.ci_high)
    assert summary.to_dict()["value"] is None
    p50, _ = _summarize("latency_ms", [math.nan], undefined={0: "x"})
    assert math.isnan(p50.value) and math.isnan(p50.ci_low)


@pytest.mark.parametrize("method", ["bca", "percentile"])
@pytest.mark.parametrize("clustered", [False, True])
def test_columns_share_draws_and_get_the_interval_each_gets_alone(method: str, clustered: bool) -> None:
    rng = np.random.default_rng(7)
    columns = [rng.random(60), rng.integers(0, 2, 60).astype(float), np.full(60, 0.25), rng.normal(size=60)]
    clusters = [f"c{i // 4}" for i in range(60)] if clustered else None
    together = bootstrap_mean_intervals(columns, clusters=clusters, n_resamples=500, method=method, seed=3)
    alone = [bootstrap_mean_interval(c, clusters=clusters, n_resamples=500, method=method, seed=3) for c in columns]
    assert together == alone
    assert together[2] == (0.25, 0.25)


def test_evaluate_gives_each_metric_the_interval_it_gets_alone() -> None:
    records = [
        {
            "id": str(i),
            "question": "q",
            "answer": f"a {i % 3} b {i % 5}",
            "references": [f"a {i % 4} b"],
            "latency_ms": 10.0 * i,
        }
        for i in range(50)
    ]
    together = ragmeter.evaluate(
        records, metrics=["token_f1", "rouge_l", "exact_match", "latency_ms"], settings=Settings(n_resamples=300)
    )
    for name in ("token_f1", "rouge_l", "exact_match"):
        alone = ragmeter.evaluate(records, metrics=[name], settings=Settings(n_resamples=300))
        assert together.summary(name) == alone.summary(name)
