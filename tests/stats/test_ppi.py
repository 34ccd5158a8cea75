"""Prediction-powered means (``ragmeter.stats.ppi``): against the authors' package ``ppi-python`` where it covers
the case (independent items), against a jackknife written out by hand for clusters, worked examples, edge
cases, and a small coverage simulation (the 2,000-repetition one is ``benchmarks/statistics/bench_ppi_coverage.py``)."""

from __future__ import annotations

import math

import numpy as np
import ppi_py
import pytest
from scipy import stats

from ragmeter.stats.ppi import effective_labels, labelled_mean, power_tuning, ppi_mean


def _data(seed: int, n: int, big_n: int, rho: float, binary: bool = False) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n + big_n)
    score = rho * z + math.sqrt(1 - rho * rho) * rng.normal(size=n + big_n)
    human = (z > 0).astype(float) if binary else np.clip(np.round(3 + z), 1, 5)
    return human[:n], score[:n], score[n:]


CASES = [(0, 40, 400, 0.8, False), (1, 150, 3000, 0.5, False), (2, 60, 900, 0.3, True), (3, 25, 10_000, 0.9, True)]


@pytest.mark.parametrize("case", CASES)
def test_the_tuned_estimate_and_interval_are_ppi_pythons(case):
    y, f, f_u = _data(*case)
    lam = ppi_py.ppi._calc_lam_glm(y - 0, f - 0, f_u - 0, np.eye(1), clip=False)  # its λ, unclipped
    assert 0 < lam < 1  # where ppi-python does not clip it, the two must agree exactly
    low, high = ppi_py.ppi_mean_ci(y, f, f_u, alpha=0.05)
    ours = ppi_mean(y, f, f_u)
    assert ours.lam == pytest.approx(lam, abs=1e-12)
    assert ours.value == pytest.approx(float(ppi_py.ppi_mean_pointestimate(y, f, f_u)[0]), abs=1e-9)
    assert (ours.low, ours.high) == (pytest.approx(float(low[0]), abs=1e-9), pytest.approx(float(high[0]), abs=1e-9))


@pytest.mark.parametrize("lam", [0.0, 1.0, 2.5, -0.7])
def test_a_fixed_lambda_gives_ppi_pythons_interval_outside_its_clipping_too(lam):
    y, f, f_u = _data(4, 50, 700, 0.6)
    low, high = ppi_py.ppi_mean_ci(y, f, f_u, alpha=0.1, lam=lam)
    ours = ppi_mean(y, f, f_u, lam=lam, confidence=0.9)
    assert (ours.low, ours.high) == (pytest.approx(float(low[0]), abs=1e-9), pytest.approx(float(high[0]), abs=1e-9))


def test_the_labels_alone_give_ppi_pythons_classical_interval():
    y, _, _ = _data(5, 80, 0, 0.5)
    low, high = ppi_py.classical_mean_ci(y, alpha=0.05)
    ours = labelled_mean(y)
    assert (ours.low, ours.high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))


def test_a_worked_example():
    # λ fixed at 1: θ = mean(f_U) + mean(Y − f over L) = 0.5 + mean(0.2, −0.2, 0.1, 0.3) = 0.5 + 0.1 = 0.6.
    # se² = s²(0.2, −0.2, 0.1, 0.3)/4 + s²(0.3, 0.5, 0.7)/3, with divisor n: (0.0350/4) + (0.02667/3) = 0.017639.
    y, f, f_u = [1.0, 0.0, 1.0, 1.0], [0.8, 0.2, 0.9, 0.7], [0.3, 0.5, 0.7]
    estimate = ppi_mean(y, f, f_u, lam=1.0)
    assert estimate.value == pytest.approx(0.6, abs=1e-12)
    assert estimate.se**2 == pytest.approx(0.035 / 4 + (0.08 / 3) / 3, abs=1e-12)
    assert estimate.high - estimate.value == pytest.approx(1.959963985 * estimate.se, abs=1e-8)


def _jackknife_by_hand(y, f, f_u, c_l, c_u, tuned: bool, lam: float) -> float:
    """θ̂ again without each cluster in turn, written as a loop over clusters."""
    clusters = sorted(set(c_l) | set(c_u))
    thetas = []
    for gone in clusters:
        keep_l = np.array([c != gone for c in c_l])
        keep_u = np.array([c != gone for c in c_u])
        yl, fl, fu = y[keep_l], f[keep_l], f_u[keep_u]
        k = power_tuning(yl, fl, fu) if tuned else lam
        thetas.append(k * fu.mean() + (yl - k * fl).mean())
    thetas = np.array(thetas)
    g = len(clusters)
    return (g - 1) / g * float(((thetas - thetas.mean()) ** 2).sum())


@pytest.mark.parametrize("tuned", [True, False])
def test_the_clustered_interval_is_the_delete_one_cluster_jackknife(tuned):
    rng = np.random.default_rng(6)
    y, f, f_u = _data(6, 45, 300, 0.7)
    c_l = [f"c{i}" for i in rng.integers(0, 18, 45)]
    c_u = [f"c{i}" for i in rng.integers(5, 60, 300)]  # clusters with labelled items, unlabelled ones, and both
    lam = None if tuned else 0.8
    ours = ppi_mean(y, f, f_u, clusters=c_l, unlabelled_clusters=c_u, lam=lam)
    variance = _jackknife_by_hand(y, f, f_u, c_l, c_u, tuned, 0.8)
    assert ours.se**2 == pytest.approx(variance, rel=1e-9)
    groups = len(set(c_l))
    assert ours.n_clusters == groups
    assert ours.high - ours.value == pytest.approx(stats.t.ppf(0.975, groups - 1) * ours.se, rel=1e-12)
    assert ours.value == pytest.approx(ppi_mean(y, f, f_u, lam=lam).value, abs=1e-12)  # the clusters move only se


def test_the_clustered_labelled_mean_with_equal_clusters_is_the_cluster_robust_formula():
    y = np.array([3.0, 4.0, 2.0, 5.0, 4.0, 4.0, 1.0, 2.0])
    clusters = ["a", "a", "b", "b", "c", "c", "d", "d"]
    # cluster totals of Y − Ȳ (Ȳ = 3.125): 0.75, 0.75, 1.75, −3.25; se² = G/(G−1)·Σ(total/n)²
    by_hand = 4 / 3 * sum((t / 8) ** 2 for t in (0.75, 0.75, 1.75, -3.25))
    estimate = labelled_mean(y, clusters=clusters)
    assert estimate.value == pytest.approx(3.125)
    assert estimate.se**2 == pytest.approx(by_hand, rel=1e-12)


def test_effective_labels_is_the_ratio_of_variances():
    y, f, f_u = _data(7, 60, 2000, 0.9)
    tuned, alone = ppi_mean(y, f, f_u), labelled_mean(y)
    assert effective_labels(tuned, alone) == pytest.approx(60 * alone.se**2 / tuned.se**2)
    assert effective_labels(tuned, alone) > 60  # a good score is worth more labels than were given


def test_edge_cases():
    with pytest.raises(ValueError, match="two labels"):
        ppi_mean([1.0], [0.5], [0.2, 0.3])
    with pytest.raises(ValueError, match="one cluster"):
        ppi_mean([1.0, 0.0], [0.5, 0.4], [0.2], clusters=["a", "a"], unlabelled_clusters=["b"])
    with pytest.raises(ValueError, match="not finite"):
        ppi_mean([1.0, math.nan], [0.5, 0.4], [0.2])
    with pytest.raises(ValueError, match="3 scores for 2 labels"):
        ppi_mean([1.0, 0.0], [0.5, 0.4, 0.1], [0.2])
    with pytest.raises(ValueError, match="every labelled item and every unlabelled one"):
        ppi_mean([1.0, 0.0], [0.5, 0.4], [0.2], clusters=["a", "b"])
    every = ppi_mean([1.0, 0.0, 1.0], [0.9, 0.1, 0.8], [])  # all labelled: the labels' mean
    assert (every.value, every.lam, every.se) == (pytest.approx(2 / 3), 0.0, labelled_mean([1.0, 0.0, 1.0]).se)
    flat = ppi_mean([1.0, 0.0, 1.0], [0.5, 0.5, 0.5], [0.5, 0.5])  # scores that do not vary say nothing
    assert flat.lam == 0.0 and flat.value == pytest.approx(2 / 3)


@pytest.mark.parametrize(("rho", "offset", "clustered"), [(0.8, 0.0, False), (0.0, 0.0, True), (0.8, 2.0, True)])
def test_intervals_cover_the_human_mean_in_a_small_simulation(rho, offset, clustered):
    """200 datasets of 2,000 items, 60 labelled (in clusters of five when clustered): the 95 % interval covers
    the items' mean human rating in at least 90 % of them (sampling error of 200 repetitions: ±1.5 %)."""
    rng = np.random.default_rng(8)
    covered = 0
    for _ in range(200):
        groups = np.repeat(np.arange(400), 5)
        shared = rng.normal(size=400)[groups] if clustered else 0.0
        z = (0.6 * shared + 0.8 * rng.normal(size=2000)) if clustered else rng.normal(size=2000)
        human = np.clip(np.round(3 + z), 1, 5)
        score = 1 / (1 + np.exp(-(rho * z + math.sqrt(1 - rho * rho) * rng.normal(size=2000)))) + offset
        if clustered:
            labelled = np.isin(groups, rng.choice(400, 12, replace=False))
            kw = {"clusters": groups[labelled], "unlabelled_clusters": groups[~labelled]}
        else:
            labelled = np.zeros(2000, bool)
            labelled[rng.choice(2000, 60, replace=False)] = True
            kw = {}
        e = ppi_mean(human[labelled], score[labelled], score[~labelled], **kw)
        covered += e.low <= human.mean() <= e.high
    assert covered / 200 >= 0.90
