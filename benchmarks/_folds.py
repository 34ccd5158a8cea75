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
the current setting first).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
from scipy.stats import spearmanr

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


def _choose(candidates: Sequence[Candidate], values: Callable[[Candidate], np.ndarray], target: np.ndarray,
            seen: np.ndarray, statistic: Statistic) -> Candidate:
    scored = [(statistic(values(c)[seen], target[seen]), -i) for i, c in enumerate(candidates)]
    best = max(range(len(candidates)), key=lambda i: (np.nan_to_num(scored[i][0], nan=-np.inf), scored[i][1]))
    return candidates[best]


def validate(candidates: Sequence[Candidate], values: Callable[[Candidate], np.ndarray], target: np.ndarray, *,
             collections: Sequence[str], conversations: Sequence[str],
             statistic: Statistic = spearman) -> dict[str, Any]:
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
        folds[collection] = {"chosen": pick, "value": statistic(values(pick)[held], target[held]),
                             "n": int(held.sum())}
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
