"""Prediction-powered estimates of a mean: what people would say of every item, from a few labelled ones.

A run has automatic scores f for all its items and human labels Y for a random sample of n of them (the
labelled set L; the other N items are the unlabelled set U). PPI++ (Angelopoulos, Duchi & Zrnic 2023,
"PPI++: Efficient prediction-powered inference") estimates the mean human label as

    θ̂(λ) = λ·f̄_U + (Ȳ_L − λ·f̄_L)

the scores' mean corrected by the labelled items' residuals. For any fixed λ it is unbiased whatever the
scores' quality or scale; λ = 0 is the labelled items' mean alone, λ = 1 is the original PPI, and the power
tuning picks the λ that makes the variance smallest, so a useless score costs (asymptotically) nothing and an
informative one narrows the interval.

Independent items (``clusters`` not given), as the authors' package ``ppi-python`` computes them (the plug-in
variance and the normal interval θ̂ ± z·se):

    se² = s²(Y − λf over L)/n + λ²·s²(f over U)/N                      (s²: variance with divisor n, N)
    λ̂  = ĉov_L(Y, f) / ((1 + n/N)·s²(f over L ∪ U))                   (divisor n for ĉov, n + N − 1 for s²)

λ̂ is not clipped to [0, 1] as ``ppi-python`` clips it: a score on another scale than the label (a 0–1 score
against 1–4 ratings) needs λ near the ratio of scales, and one that runs against the label a negative λ.

Clustered items (conversations: the turns of one are not independent) take the delete-one-cluster jackknife
of the same estimator: with θ̂₍c₎ the estimate without cluster c (its labelled and unlabelled items; λ tuned
again), over the G clusters of L ∪ U,

    se² = (G − 1)/G · Σ_c (θ̂₍c₎ − θ̄₍·₎)²

and the interval takes Student's t with G_L − 1 degrees of freedom, G_L the clusters holding a label. Tuning λ
again in each replicate counts λ's own noise, which the plug-in formula above leaves out: with labels from ten
conversations that noise is what took the sandwich variance's coverage below 94 % (benchmarks/README,
"Prediction-powered estimates"). For the labels' mean alone, with clusters of equal size, this is the usual
cluster-robust variance with its G/(G − 1) correction. Clusters of one item each give the jackknife over
items, which ``ragmeter estimate`` takes for independent answers: with 50 labels and a weak score the plug-in
interval above covered 93.9 % of simulated runs, the jackknife's 95.7 %.

The estimand is the mean label of the population the run's items are drawn from; it covers the mean label of
the run's own items too, conservatively when a large share of them is labelled (the run's mean varies less).
A paired comparison of two runs on the same items is the same estimate of the mean of the differences
Y_A − Y_B from the score differences f_A − f_B.

Labels that are all equal (every labelled item 1, say) defeat both variances above: s²(Y) = 0 and ĉov(Y, f) = 0,
so λ̂ = 0 and the interval has zero width, which no sample of labels warrants. :func:`constant_mean` gives such
labels the interval their range allows instead (Clopper–Pearson's for 0/1 labels), or none.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["MeanEstimate", "constant_mean", "effective_labels", "labelled_mean", "power_tuning", "ppi_mean"]


@dataclass(frozen=True)
class MeanEstimate:
    """A mean with its interval: ``value``, [``low``, ``high``] at ``confidence``, its standard error ``se``;
    ``n_labelled`` labels (and ``n_unlabelled`` items with a score only) behind it, the power-tuning ``lam``
    (0 for the labelled items alone), and ``n_clusters`` (the clusters holding a label; ``None``: independent
    items). ``se`` is NaN when the interval is not value ± quantile·se (:func:`constant_mean`), and ``low`` and
    ``high`` are NaN when no interval can be given."""

    value: float
    low: float
    high: float
    se: float
    n_labelled: int
    n_unlabelled: int
    lam: float
    n_clusters: int | None
    confidence: float

    @property
    def width(self) -> float:
        return self.high - self.low

    def to_dict(self) -> dict[str, float | int | None]:
        """The fields, NaN as ``None`` (JSON has no NaN)."""

        def number(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {
            "value": number(self.value),
            "low": number(self.low),
            "high": number(self.high),
            "se": number(self.se),
            "n_labelled": self.n_labelled,
            "n_unlabelled": self.n_unlabelled,
            "lambda": self.lam,
            "n_clusters": self.n_clusters,
            "confidence": self.confidence,
        }


def _column(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float).ravel()
    if not np.isfinite(array).all():
        raise ValueError(f"{name} holds {int((~np.isfinite(array)).sum())} values that are not finite numbers")
    return array


def _cluster_codes(
    labelled: Sequence[object] | None, unlabelled: Sequence[object] | None, n: int, n_unlabelled: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """Integer codes of the clusters of L and of U (one numbering for both), or ``None`` for independent items."""
    if labelled is None and unlabelled is None:
        return None
    if labelled is None or unlabelled is None or len(labelled) != n or len(unlabelled) != n_unlabelled:
        raise ValueError("give a cluster for every labelled item and every unlabelled one, or none")
    codes: dict[object, int] = {}
    numbered = [codes.setdefault(c, len(codes)) for c in (*labelled, *unlabelled)]
    return np.array(numbered[:n], dtype=np.int64), np.array(numbered[n:], dtype=np.int64)


def _quantile(confidence: float, df: int | None) -> float:
    """The two-sided quantile: normal (``df`` None), else Student's t."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), not {confidence}")
    if df is None:
        return float(stats.norm.ppf(0.5 + confidence / 2))
    return float(stats.t.ppf(0.5 + confidence / 2, df))


def _estimate(
    value: float, variance: float, n: int, n_unlabelled: int, lam: float, n_clusters: int | None, confidence: float
) -> MeanEstimate:
    se = math.sqrt(max(variance, 0.0))
    half = _quantile(confidence, None if n_clusters is None else n_clusters - 1) * se
    return MeanEstimate(value, value - half, value + half, se, n, n_unlabelled, lam, n_clusters, confidence)


def _tuned_lambda(
    n: np.ndarray, n_unlabelled: np.ndarray, cross: np.ndarray, scores: np.ndarray, squares: np.ndarray
) -> np.ndarray:
    """PPI++'s λ from sums: ``cross`` = Σ_L (Y − Ȳ)(f − f̄) (already centred), ``scores`` and ``squares`` the
    sums of f and f² over L ∪ U; 0 where it is undefined (no unlabelled item, scores that do not vary)."""
    total = n + n_unlabelled
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = (squares - scores * scores / total) / (total - 1)
        lam = (cross / n) / ((1 + n / n_unlabelled) * spread)
    return np.where((n_unlabelled > 0) & (spread > 0) & np.isfinite(lam), lam, 0.0)


def _jackknife_variance(
    y: np.ndarray, f: np.ndarray, f_u: np.ndarray, codes: tuple[np.ndarray, np.ndarray], lam: float | None
) -> float:
    """The delete-one-cluster jackknife variance of θ̂ (λ tuned again without each cluster when ``lam`` is
    None), from per-cluster sums: one pass, whatever the number of clusters."""
    centre = np.concatenate([f, f_u]).mean()  # one shift of every score leaves each θ̂ as it was
    y, f, f_u = y - y.mean(), f - centre, f_u - centre
    on_l, on_u = codes
    size = int(max(on_l.max(), on_u.max() if len(on_u) else 0)) + 1

    def left(codes: np.ndarray, values: np.ndarray) -> np.ndarray:  # a total without each cluster
        return values.sum() - np.bincount(codes, weights=values, minlength=size)

    n, n_u = left(on_l, np.ones_like(y)), left(on_u, np.ones_like(f_u))
    sum_y, sum_f, sum_u = left(on_l, y), left(on_l, f), left(on_u, f_u)
    if lam is None:
        cross = left(on_l, y * f) - sum_y * sum_f / n
        lams = _tuned_lambda(n, n_u, cross, sum_f + sum_u, left(on_l, f * f) + left(on_u, f_u * f_u))
    else:
        lams = np.full(size, lam)
    with np.errstate(divide="ignore", invalid="ignore"):
        unlabelled_mean = np.where(n_u > 0, sum_u / n_u, 0.0)
    thetas = lams * unlabelled_mean + (sum_y - lams * sum_f) / n
    return (size - 1) / size * float(((thetas - thetas.mean()) ** 2).sum())


def _labelled_clusters(codes: np.ndarray) -> int:
    groups = len(np.unique(codes))
    if groups < 2:
        raise ValueError("the labelled items come from one cluster: a clustered interval needs labels from two or more")
    return groups


def labelled_mean(
    labels: Sequence[float] | np.ndarray, *, clusters: Sequence[object] | None = None, confidence: float = 0.95
) -> MeanEstimate:
    """The classical estimate: the labels' mean Ȳ with its normal interval (se² = s²(Y)/n, divisor n, as
    ``ppi-python``'s ``classical_mean_ci``), or, with ``clusters``, the delete-one-cluster jackknife's, with
    Student's t (see the module docstring). Needs two labels (two clusters)."""
    y = _column(labels, "labels")
    n = len(y)
    if n < 2:
        raise ValueError(f"a mean's interval needs two labels or more, not {n}")
    mean = float(y.mean())
    if clusters is None:
        return _estimate(mean, float(y.var()) / n, n, 0, 0.0, None, confidence)
    if len(clusters) != n:
        raise ValueError(f"{len(clusters)} clusters for {n} labels")
    codes = _cluster_codes(clusters, [], n, 0)
    groups = _labelled_clusters(codes[0])
    return _estimate(mean, _jackknife_variance(y, y, y[:0], codes, 0.0), n, 0, 0.0, groups, confidence)


def power_tuning(
    labels: Sequence[float] | np.ndarray,
    scores: Sequence[float] | np.ndarray,
    unlabelled_scores: Sequence[float] | np.ndarray,
) -> float:
    """PPI++'s λ (see the module docstring); 0 when every item is labelled or the scores do not vary."""
    y, f, f_u = _column(labels, "labels"), _column(scores, "scores"), _column(unlabelled_scores, "unlabelled scores")
    if len(f) != len(y):
        raise ValueError(f"{len(f)} scores for {len(y)} labels")
    both = np.concatenate([f, f_u])
    centre = both.mean()
    lam = _tuned_lambda(
        np.array(len(y)),
        np.array(len(f_u)),
        np.array((y - y.mean()) @ (f - f.mean())),
        np.array(0.0),
        np.array(((both - centre) ** 2).sum()),
    )
    return float(lam)


def ppi_mean(
    labels: Sequence[float] | np.ndarray,
    scores: Sequence[float] | np.ndarray,
    unlabelled_scores: Sequence[float] | np.ndarray,
    *,
    clusters: Sequence[object] | None = None,
    unlabelled_clusters: Sequence[object] | None = None,
    lam: float | None = None,
    confidence: float = 0.95,
) -> MeanEstimate:
    """The PPI++ estimate of the mean label, θ̂(λ) = λ·f̄_U + (Ȳ_L − λ·f̄_L), with its interval (the formulas
    are in the module docstring).

    ``labels`` and ``scores`` are the labelled items' human labels and automatic scores, in one order;
    ``unlabelled_scores`` the scores of the items without a label. ``clusters`` and ``unlabelled_clusters``
    (both or neither) name each item's cluster for the clustered interval. ``lam`` fixes λ (``None``: the
    power tuning). With no unlabelled item it is :func:`labelled_mean`. Raises ``ValueError`` on fewer than two
    labels (or labelled clusters), on lengths that differ and on values that are not finite."""
    y, f, f_u = _column(labels, "labels"), _column(scores, "scores"), _column(unlabelled_scores, "unlabelled scores")
    n, big_n = len(y), len(f_u)
    if len(f) != n:
        raise ValueError(f"{len(f)} scores for {n} labels")
    if n < 2:
        raise ValueError(f"a mean's interval needs two labels or more, not {n}")
    codes = _cluster_codes(clusters, unlabelled_clusters, n, big_n)
    if big_n == 0:
        return labelled_mean(y, clusters=clusters, confidence=confidence)
    fixed = lam
    lam = power_tuning(y, f, f_u) if lam is None else float(lam)
    residuals = y - lam * f
    value = float(lam * f_u.mean() + residuals.mean())
    if codes is None:
        variance = float(residuals.var()) / n + lam * lam * float(f_u.var()) / big_n
        return _estimate(value, variance, n, big_n, lam, None, confidence)
    groups = _labelled_clusters(codes[0])
    return _estimate(value, _jackknife_variance(y, f, f_u, codes, fixed), n, big_n, lam, groups, confidence)


def constant_mean(
    labels: Sequence[float] | np.ndarray,
    *,
    bounds: tuple[float, float] | None,
    clusters: Sequence[object] | None = None,
    confidence: float = 0.95,
) -> MeanEstimate:
    """The mean c of labels that are all equal, with the interval that labels lying within ``bounds`` (a, b)
    allow: with u = 1 − (α/2)^(1/n), the Clopper–Pearson upper bound on the share of items whose label is not c
    when none of n is (α = 1 − ``confidence``),

        c − u·(c − a)  ≤  mean  ≤  c + u·(b − c)

    since an item whose label is not c moves the mean at most by its distance to a bound. For 0/1 labels this is
    Clopper–Pearson's interval of n ones in n (or no one in n); for differences of 0/1 labels, ``bounds``
    (−1, 1), every difference 0 gives [−u, u]. With ``clusters`` n is Kish's worst-case effective size n²/Σ n_g²
    (every item of a cluster alike, as :func:`ragmeter.stats.intervals.wilson_deff_interval` takes it when the
    share is 0 or 1): m equal clusters count as m items. ``bounds`` ``None`` (a rating whose range is not known)
    gives no interval: ``low`` and ``high`` are NaN. ``se`` is NaN either way and ``lam`` is 0: labels that do
    not vary cannot tune λ. Raises ``ValueError`` on labels that differ or lie outside ``bounds``.

    >>> e = constant_mean([1.0] * 20, bounds=(0.0, 1.0))
    >>> round(e.low, 4), e.high
    (0.8316, 1.0)
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), not {confidence}")
    y = _column(labels, "labels")
    n = len(y)
    if n == 0 or np.ptp(y) != 0:
        raise ValueError("constant_mean takes one or more labels that are all equal")
    value = float(y[0])
    groups = None
    size = float(n)
    if clusters is not None:
        if len(clusters) != n:
            raise ValueError(f"{len(clusters)} clusters for {n} labels")
        sizes = np.unique(_cluster_codes(clusters, [], n, 0)[0], return_counts=True)[1]
        groups, size = len(sizes), n * n / float((sizes**2).sum())
    if bounds is None:
        return MeanEstimate(value, math.nan, math.nan, math.nan, n, 0, 0.0, groups, confidence)
    a, b = bounds
    if not a <= value <= b:
        raise ValueError(f"the labels ({value:g}) lie outside their bounds [{a:g}, {b:g}]")
    u = 1 - ((1 - confidence) / 2) ** (1 / size)
    return MeanEstimate(
        value, value - u * (value - a), value + u * (b - value), math.nan, n, 0, 0.0, groups, confidence
    )


def effective_labels(estimate: MeanEstimate, classical: MeanEstimate) -> float:
    """How many labels the classical estimate would need for the standard error ``estimate`` has:
    n·se²_classical / se²_estimate (n when the score adds nothing; infinite when the estimate's se is 0)."""
    if estimate.se == 0:
        return math.inf
    return classical.n_labelled * (classical.se / estimate.se) ** 2
