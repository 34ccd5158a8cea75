"""Two independent samples: the permutation test against SciPy's exact one, the bootstrap interval against SciPy's
percentile bootstrap, and clusters worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ragmeter.stats.unpaired import difference_interval, permutation_test


def _scipy_exact(a: np.ndarray, b: np.ndarray) -> float:
    """SciPy's exact permutation test of |mean(b) − mean(a)| (every reassignment, the observed one included)."""
    result = stats.permutation_test(
        (a, b),
        lambda x, y: abs(np.mean(y) - np.mean(x)),
        permutation_type="independent",
        alternative="greater",
        n_resamples=np.inf,
    )
    return float(result.pvalue)


@pytest.mark.parametrize("seed", range(5))
def test_the_exact_permutation_test_equals_scipys(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = rng.normal(0.5, 0.2, size=6), rng.normal(0.7, 0.2, size=5)
    assert permutation_test(a, b) == pytest.approx(_scipy_exact(a, b), abs=1e-12)


def test_the_random_permutation_test_is_near_the_exact_one() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(0.5, 0.2, size=9), rng.normal(0.65, 0.2, size=9)  # 48,620 reassignments
    exact = _scipy_exact(a, b)
    sampled = permutation_test(a, b, n_resamples=20_000, seed=1)
    assert abs(sampled - exact) < 4 * math.sqrt(exact * (1 - exact) / 20_000)


def test_clusters_of_one_item_are_the_items() -> None:
    a, b = [0.1, 0.4, 0.3, 0.9], [0.8, 0.7, 1.0]
    assert permutation_test(a, b, clusters_a=list("abcd"), clusters_b=list("efg")) == permutation_test(a, b)


def test_a_cluster_moves_whole() -> None:
    # A: one conversation of two turns (1, 1); B: two conversations of one turn (0), (0). Three units, B takes two
    # of them, 3 ways: the observed one, |0 − 1| = 1; and twice {A's pair, a 0} in B, leaving A a 0: |(1+1+0)/3 −
    # 0| = 2/3. Only the observed one reaches 1: p = 1/3. (Turns moved alone, 2 of the 6 ways would: also 1/3, but
    # from 6 assignments, so a wrong unit shows in the next case.)
    assert permutation_test([1.0, 1.0], [0.0, 0.0], clusters_a=["x", "x"], clusters_b=["y", "z"]) == pytest.approx(
        1 / 3
    )
    # A: (1, 1) in one conversation X and (0.5) alone (Y); B: (0) Z and (0.5) W. Four units, B takes two (6 ways),
    # |mean(b) − mean(a)|: {Z, W} observed |0.25 − 2.5/3| = 7/12; {Y, Z} the same; {X, Y} |2.5/3 − 0.25| = 7/12;
    # {X, W} the same; {Y, W} |0.5 − 2/3| = 1/6; {X, Z} |2/3 − 0.5| = 1/6. Four of six reach 7/12: p = 2/3.
    # Turns moved alone (10 ways) give 3/10.
    a, b = [1.0, 1.0, 0.5], [0.0, 0.5]
    assert permutation_test(a, b, clusters_a=["x", "x", "y"], clusters_b=["z", "w"]) == pytest.approx(2 / 3)
    assert permutation_test(a, b) == pytest.approx(3 / 10)


def test_the_interval_follows_scipys_percentile_bootstrap() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.beta(2, 3, size=80), rng.beta(3, 3, size=60)
    ours = difference_interval(a, b, n_resamples=20_000, seed=0)
    theirs = stats.bootstrap(
        (a, b),
        lambda x, y, axis: np.mean(y, axis=axis) - np.mean(x, axis=axis),
        method="percentile",
        n_resamples=20_000,
        rng=np.random.default_rng(1),
    ).confidence_interval
    assert ours == pytest.approx((theirs.low, theirs.high), abs=0.006)


def test_edge_cases() -> None:
    assert difference_interval([0.5, 0.5, 0.5], [0.75, 0.75]) == (0.25, 0.25)  # nothing varies
    assert all(math.isnan(x) for x in difference_interval([0.5], [0.1, 0.2]))  # one unit: no interval
    assert math.isnan(permutation_test([], [0.1]))
    assert permutation_test([0.2, 0.2], [0.2, 0.2]) == 1.0
    with pytest.raises(ValueError, match="2 cluster labels for 3 values"):
        permutation_test([0.1, 0.2, 0.3], [0.4], clusters_a=["a", "b"])
