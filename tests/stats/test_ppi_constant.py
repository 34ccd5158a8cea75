"""Labels that are all equal (``ragmeter.stats.ppi.constant_mean``): the interval their range allows, checked
against scipy's exact binomial interval (Clopper–Pearson) and the Beta quantile it is made of."""

from __future__ import annotations

import json
import math

import pytest
from scipy import stats

from ragmeter.stats.ppi import constant_mean, labelled_mean


def _exact(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    ci = stats.binomtest(successes, n).proportion_ci(confidence_level=confidence, method="exact")
    return ci.low, ci.high


def test_the_plain_interval_of_constant_labels_has_zero_width():
    # the failure the function exists for: the labels' own spread says the mean is known exactly
    plain = labelled_mean([1.0] * 20)
    assert (plain.low, plain.high, plain.se) == (1.0, 1.0, 0.0)


@pytest.mark.parametrize(("value", "confidence"), [(1.0, 0.95), (0.0, 0.95), (1.0, 0.9), (0.0, 0.99)])
def test_zero_one_labels_get_clopper_pearsons_interval(value, confidence):
    e = constant_mean([value] * 20, bounds=(0.0, 1.0), confidence=confidence)
    low, high = _exact(int(value) * 20, 20, confidence)
    assert (e.low, e.high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    assert e.value == value and e.lam == 0.0 and math.isnan(e.se) and e.n_labelled == 20


def test_twenty_ones_at_95_percent_is_the_issues_worked_example():
    e = constant_mean([1.0] * 20, bounds=(0.0, 1.0))
    assert round(e.low, 4) == 0.8316 and e.high == 1.0  # 0.025 ** (1 / 20), by hand
    assert e.low == pytest.approx(0.025 ** (1 / 20), abs=1e-12)


def test_differences_of_zero_one_labels_are_bounded_by_the_share_that_differs():
    # every difference 0 among 10: the share of items whose difference is not 0 is at most u, the exact upper
    # bound of 0 in 10, and such an item moves the mean by at most 1 either way
    u = _exact(0, 10)[1]
    zero = constant_mean([0.0] * 10, bounds=(-1.0, 1.0))
    assert (zero.low, zero.high) == (pytest.approx(-u, abs=1e-12), pytest.approx(u, abs=1e-12))
    # every difference +1: an item that is not +1 is at most 2 below it
    up = constant_mean([1.0] * 10, bounds=(-1.0, 1.0))
    assert (up.low, up.high) == (pytest.approx(1 - 2 * u, abs=1e-12), 1.0)


def test_an_annotators_mean_inside_the_range_is_bounded_on_both_sides():
    u = _exact(0, 12)[1]
    e = constant_mean([0.5] * 12, bounds=(0.0, 1.0))
    assert (e.low, e.high) == (pytest.approx(0.5 - u / 2, abs=1e-12), pytest.approx(0.5 + u / 2, abs=1e-12))


def test_equal_clusters_count_as_one_item_each():
    e = constant_mean([1.0] * 20, bounds=(0.0, 1.0), clusters=[i // 2 for i in range(20)])
    assert e.low == pytest.approx(_exact(10, 10)[0], abs=1e-12) and e.n_clusters == 10


def test_unequal_clusters_count_as_kishs_worst_case_effective_size():
    clusters = ["a"] * 6 + ["b"] * 2 + ["c", "d"]  # n = 10, Σ n_g² = 36 + 4 + 1 + 1 = 42: n_eff = 100 / 42
    e = constant_mean([1.0] * 10, bounds=(0.0, 1.0), clusters=clusters)
    # Clopper–Pearson's lower bound for n of n is the α/2 quantile of Beta(n, 1), here at n = 100/42
    assert e.low == pytest.approx(stats.beta.ppf(0.025, 100 / 42, 1), abs=1e-12) and e.n_clusters == 4


def test_a_rating_of_unknown_range_gets_no_interval_and_json_says_null():
    e = constant_mean([4.0] * 10, bounds=None)
    assert e.value == 4.0 and math.isnan(e.low) and math.isnan(e.high) and e.lam == 0.0
    saved = json.loads(json.dumps(e.to_dict()))
    assert (saved["value"], saved["low"], saved["high"], saved["se"]) == (4.0, None, None, None)


def test_labels_that_vary_or_lie_outside_the_bounds_are_refused():
    with pytest.raises(ValueError, match="all equal"):
        constant_mean([1.0, 0.0], bounds=(0.0, 1.0))
    with pytest.raises(ValueError, match="outside"):
        constant_mean([7.0, 7.0], bounds=(0.0, 1.0))
    with pytest.raises(ValueError, match="confidence"):
        constant_mean([1.0, 1.0], bounds=(0.0, 1.0), confidence=1.0)
