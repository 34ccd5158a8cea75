"""How a choice made on data is checked on data it was not made on: the validation protocol of
``benchmarks/README.md``, used for every weight, threshold, coverage or prompt variant chosen on MT-RAG's dev
split.

- **cross-collection**: the dev answers come from four document collections (ClapNQ, IBM Cloud, FiQA, Govt);
  the choice is made on three and measured on the fourth, all four ways; the figure is the mean of the four
  held-out figures, each fold's beside it;
- **leave one conversation out**: each conversation's answers get the values of the choice made without it;
  the figure is the statistic over all these held-out values together;
- **in sample** (chosen and measured on everything): reported beside the two, never alone.

A choice that does not win on the held-out folds is not made. :func:`validate` runs all three for a list of
candidates (``values(candidate)`` gives every record's value under that candidate), choosing the candidate
with the highest ``statistic`` against the target on the folds it may see (ties: the first candidate, so list
the current setting first). :func:`held_out` adds n and a 95 % bootstrap interval to each figure, and each
candidate's own figures.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
from scipy.stats import spearmanr

from benchmarks._common import N_BOOT

Candidate = TypeVar("Candidate")
Statistic = Callable[[np.ndarray, np.ndarray], float]


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's ρ, NaN where either side is constant (no order to agree with) or values are missing."""
    keep = ~(np.isnan(x) | np.isnan(y))
    if keep.sum() < 3 or np.ptp(x[keep]) == 0 or np.ptp(y[keep]) == 0:
        return float("nan")
    return float(spearmanr(x[keep], y[keep]).statistic)


def collection_of(record: Any) -> str:
    """A short name of an MT-RAG record's document collection (``mt-rag-clapnq-elser-…`` → ``clapnq``)."""
    name = str(record.metadata.get("collection", "unknown"))
    return name.removeprefix("mt-rag-").split("-")[0]


def _choose(
    candidates: Sequence[Candidate],
    values: Callable[[Candidate], np.ndarray],
    target: np.ndarray,
    seen: np.ndarray,
    statistic: Statistic,
) -> Candidate:
    scored = [(statistic(values(c)[seen], target[seen]), -i) for i, c in enumerate(candidates)]
    best = max(range(len(candidates)), key=lambda i: (np.nan_to_num(scored[i][0], nan=-np.inf), scored[i][1]))
    return candidates[best]


def validate(
    candidates: Sequence[Candidate],
    values: Callable[[Candidate], np.ndarray],
    target: np.ndarray,
    *,
    collections: Sequence[str],
    conversations: Sequence[str],
    statistic: Statistic = spearman,
) -> dict[str, Any]:
    """The choice among ``candidates`` made in sample, per collection held out, and per conversation held out,
    with the statistic each gives where it was not chosen. Returns::

        {"in_sample": {"chosen", "value"},
         "cross_collection": {"mean", "folds": {collection: {"chosen", "value", "n"}}},
         "leave_one_conversation_out": {"value", "chosen": {candidate: folds that chose it}}}
    """
    target = np.asarray(target, dtype=float)
    everything = np.ones(len(target), dtype=bool)
    chosen = _choose(candidates, values, target, everything, statistic)
    report: dict[str, Any] = {"in_sample": {"chosen": chosen, "value": statistic(values(chosen), target)}}
    folds = {}
    labels = np.asarray(collections)
    for collection in sorted(set(collections)):
        held = labels == collection
        pick = _choose(candidates, values, target, ~held, statistic)
        folds[collection] = {"chosen": pick, "value": statistic(values(pick)[held], target[held]), "n": int(held.sum())}
    report["cross_collection"] = {"mean": float(np.nanmean([f["value"] for f in folds.values()])), "folds": folds}
    pooled = np.full(len(target), np.nan)
    picks: dict[str, int] = {}
    groups = np.asarray(conversations)
    for conversation in sorted(set(conversations)):
        held = groups == conversation
        pick = _choose(candidates, values, target, ~held, statistic)
        picks[str(pick)] = picks.get(str(pick), 0) + 1
        pooled[held] = values(pick)[held]
    report["leave_one_conversation_out"] = {"value": statistic(pooled, target), "chosen": picks}
    return report


def _draws(
    x: np.ndarray, y: np.ndarray, strata: Sequence[str], clusters: Sequence[str], statistic: Statistic, seed: int = 0
) -> tuple[float, float]:
    """95 % percentile interval of the mean over strata of ``statistic``, clusters resampled within each stratum
    (one stratum: the ordinary cluster bootstrap)."""
    members: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for i, (stratum, cluster) in enumerate(zip(strata, clusters, strict=True)):
        members[stratum][cluster].append(i)
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(N_BOOT):
        per_stratum = []
        for groups in members.values():
            lists = list(groups.values())
            picked = [i for g in rng.integers(0, len(lists), len(lists)) for i in lists[g]]
            per_stratum.append(statistic(x[picked], y[picked]))
        if not np.all(np.isnan(per_stratum)):
            values.append(np.nanmean(per_stratum))
    low, high = np.percentile(values, [2.5, 97.5]) if values else (np.nan, np.nan)
    return round(float(low), 3), round(float(high), 3)


def _round(value: float) -> float | None:
    return None if np.isnan(value) else round(float(value), 3)


def held_out(
    candidates: Sequence[Any],
    values: Callable[[Any], np.ndarray],
    target: np.ndarray,
    collections: list[str],
    conversations: list[str],
    statistic: Statistic,
) -> dict[str, Any]:
    """:func:`validate`'s report with n and the interval of each figure (NaN: ``None``), and each candidate's
    own figure in sample and per collection, nothing chosen (the first, the current setting, is the baseline a
    choice must beat on the held-out folds)."""
    report = validate(
        candidates, values, target, collections=collections, conversations=conversations, statistic=statistic
    )
    labels, groups = np.asarray(collections), np.asarray(conversations)
    everyone = ["all"] * len(target)
    inside = report["in_sample"]
    inside.update(
        value=_round(inside["value"]),
        n=len(target),
        interval=_draws(values(inside["chosen"]), target, everyone, conversations, statistic),
    )
    by_collection = np.empty(len(target))
    for collection, fold in report["cross_collection"]["folds"].items():
        by_collection[labels == collection] = values(fold["chosen"])[labels == collection]
        fold["value"] = _round(fold["value"])
    cross = report["cross_collection"]
    cross.update(
        mean=_round(cross["mean"]),
        n=len(target),
        interval=_draws(by_collection, target, collections, conversations, statistic),
    )
    pooled = np.empty(len(target))
    for conversation in sorted(set(conversations)):
        held = groups == conversation
        pooled[held] = values(_choose(candidates, values, target, ~held, statistic))[held]
    loco = report["leave_one_conversation_out"]
    loco.update(
        value=_round(loco["value"]), n=len(target), interval=_draws(pooled, target, everyone, conversations, statistic)
    )
    if len(candidates) > 1:
        each = {}
        for candidate in candidates:
            x = values(candidate)
            folds = {c: _round(statistic(x[labels == c], target[labels == c])) for c in sorted(set(collections))}
            each[str(candidate)] = {
                "in_sample": _round(statistic(x, target)),
                "folds": folds,
                "cross_collection_mean": _round(np.nanmean([np.nan if v is None else v for v in folds.values()])),
            }
        report["each_candidate"] = each
    return report


def paired_difference(
    statistic: Statistic, x: np.ndarray, z: np.ndarray, y: np.ndarray, clusters: Sequence[str], seed: int = 0
) -> dict[str, float | None]:
    """``statistic(x, y) − statistic(z, y)`` (two signals against one target, on the same records) with a 95 %
    percentile interval from resampling clusters with replacement, the same draws for both (``N_BOOT``; clusters
    in order of first appearance; resamples where it is NaN left out)."""
    members: dict[str, list[int]] = {}
    for i, cluster in enumerate(clusters):
        members.setdefault(cluster, []).append(i)
    groups = list(members.values())
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(N_BOOT):
        picked = [i for g in rng.integers(0, len(groups), len(groups)) for i in groups[g]]
        difference = statistic(x[picked], y[picked]) - statistic(z[picked], y[picked])
        if not np.isnan(difference):
            draws.append(difference)
    low, high = np.percentile(draws, [2.5, 97.5]) if draws else (np.nan, np.nan)
    return {"difference": _round(statistic(x, y) - statistic(z, y)), "low": _round(low), "high": _round(high)}
