"""What people would say of a whole run, from a few labelled items (``ragmeter estimate``), and of the
difference between two runs (``ragmeter compare --human``): prediction-powered estimates
(:mod:`ragmeter.stats.ppi`).

A run's items give the metric's score for every item; the human file(s) give a label or rating for some of
them, read as :func:`ragmeter.human.with_people.read_human` reads them (an item's value is its annotators'
mean: for a 0/1 label, the share of annotators who said 1). Three estimates come out, each with its interval:

- the PPI++ estimate of the mean human value over the items the run is a sample of, from every item's score
  and the labelled items' residuals;
- the labelled items' mean alone (what the labels say without the metric);
- the metric's own mean over every item (on the metric's scale, which need not be the label's);

and the *effective labels*: how many labels the labelled-only estimate would need to be as precise as the
PPI++ one. Every interval is the delete-one-cluster jackknife's with Student's t (:mod:`ragmeter.stats.ppi`):
the clusters are the conversations (``conversation_id``, else the part of an MT-RAG task id before ``<::>``)
when any conversation has two items or more, else the items themselves.

The estimates assume the labelled items are a random sample of the run's. What can be checked is checked, and a
failed check is a warning in the result (the estimate is still given): labelled items that are not in the run
are left out and counted; the labelled share is compared across the quartiles of the metric's score (χ² test;
a warning at p < 0.01), since labels picked among the best- or worst-scored items bias the correction.

Labelled values that are all equal (20 labels of 1) have no spread to estimate an interval from, nor to tune the
metric's weight λ: the result says so (``constant``, also the first warning) and both human intervals are the ones
the label's range allows (:func:`ragmeter.stats.ppi.constant_mean`: Clopper–Pearson's for 0/1 labels, the
signature's ``interval:clopper-pearson``), or, for a rating whose range is not known, none (NaN,
``interval:none``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from ragmeter.analysis.compare import ScoredRun, load_run
from ragmeter.core.errors import ConfigError
from ragmeter.core.settings import Settings
from ragmeter.core.signature import Signature
from ragmeter.human.with_people import Key, align, read_human, read_scores
from ragmeter.stats.ppi import MeanEstimate, constant_mean, effective_labels, labelled_mean, ppi_mean

__all__ = ["HumanEstimate", "Stratum", "estimate", "paired_estimate"]

#: The p-value of the χ² test below which the labelled items look chosen rather than drawn.
SAMPLE_CHECK_P = 0.01
_SAMPLE_ADVICE = (
    "the estimate assumes the labelled items are a random sample of the run's (ragmeter labels "
    "template --sample N draws one)"
)


@dataclass(frozen=True)
class Stratum:
    """A quartile of the metric's score: its range, the run's items in it and how many are labelled."""

    low: float
    high: float
    items: int
    labelled: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class HumanEstimate:
    """The estimates of the mean human ``label`` (or, for two runs, of its difference ``of``) from ``metric``
    (see the module docstring). ``n_items``: the items with a defined score (labelled or not); ``counts``: what
    was left out and why; ``warnings``: checks of the random-sample assumption that failed, and ``constant``.
    ``interval``: how the human intervals were made (``jackknife-t``; ``clopper-pearson`` or ``none`` when every
    labelled value is the same, which ``constant`` then says in words)."""

    metric: str
    label: str
    of: str
    ppi: MeanEstimate
    labelled: MeanEstimate
    scores: MeanEstimate
    effective_labels: float
    n_items: int
    clustered: bool
    counts: Mapping[str, int]
    strata: tuple[Stratum, ...]
    warnings: tuple[str, ...]
    signature: str
    interval: str = "jackknife-t"
    constant: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "label": self.label,
            "of": self.of,
            "n_items": self.n_items,
            "interval": self.interval,
            "constant_labels": self.constant,
            "ppi": self.ppi.to_dict(),
            "labelled_only": self.labelled.to_dict(),
            "metric_mean": self.scores.to_dict(),
            "effective_labels": None if math.isinf(self.effective_labels) else self.effective_labels,
            "clustered": self.clustered,
            "counts": dict(self.counts),
            "strata": [s.to_dict() for s in self.strata],
            "warnings": list(self.warnings),
            "signature": self.signature,
        }


def _strata(labelled: np.ndarray, unlabelled: np.ndarray) -> tuple[tuple[Stratum, ...], str | None]:
    """The labelled share per quartile of the scores, and a warning when it differs more than chance allows."""
    every = np.concatenate([labelled, unlabelled])
    edges = np.unique(np.quantile(every, [0.25, 0.5, 0.75]))
    bins_l, bins_u = np.searchsorted(edges, labelled, side="right"), np.searchsorted(edges, unlabelled, side="right")
    strata, table = [], []
    for b in range(len(edges) + 1):
        members = every[np.concatenate([bins_l, bins_u]) == b]
        if len(members):
            in_l = int((bins_l == b).sum())
            strata.append(Stratum(float(members.min()), float(members.max()), len(members), in_l))
            table.append([in_l, len(members) - in_l])
    if len(table) < 2 or not len(unlabelled):
        return tuple(strata), None
    p = float(stats.chi2_contingency(np.array(table)).pvalue)
    if p >= SAMPLE_CHECK_P:
        return tuple(strata), None
    shares = ", ".join(f"{s.labelled / s.items:.0%} of [{s.low:.3g}, {s.high:.3g}]" for s in strata)
    return tuple(strata), (
        f"the labelled items are not spread over the scores as the run's items are (labelled: "
        f"{shares}; χ² p = {p:.2g}): {_SAMPLE_ADVICE}"
    )


def _signature(metric: str, label: str, of: str, clustered: bool, interval: str, settings: Settings) -> str:
    return Signature(
        "estimate",
        {
            "metric": metric,
            "label": label,
            "of": of,
            "estimator": "ppi++",
            "lambda": "tuned",
            "human": "annotators-mean",
            "interval": interval,
            "resample": "conversations" if clustered else "items",
            "confidence": settings.confidence,
        },
        sort_keys=False,
    ).render()


def _estimates(
    metric: str,
    label: str,
    of: str,
    rows: Sequence[tuple[float, str, float | None]],
    counts: dict[str, int],
    warnings: list[str],
    binary: bool,
    settings: Settings,
) -> HumanEstimate:
    """The three estimates from (score, conversation, human value or None) of every item; ``binary``: every
    human value is 0 or 1, so the mean is a share."""
    scored = [row for row in rows if not math.isnan(row[0])]
    counts["score undefined"] = len(rows) - len(scored)
    lost = sum(1 for score, _, value in rows if math.isnan(score) and value is not None)
    if lost:
        counts["labelled, score undefined"] = lost
    labelled = [row for row in scored if row[2] is not None]
    unlabelled = [row for row in scored if row[2] is None]
    if len(labelled) < 2:
        raise ConfigError(
            f"only {len(labelled)} item(s) have both a score of {metric} and a human {label}: an "
            "estimate needs two or more (a few dozen for a useful interval)"
        )
    y = np.array([row[2] for row in labelled], dtype=float)
    f = np.array([row[0] for row in labelled])
    f_u = np.array([row[0] for row in unlabelled])
    conversations = [row[1] for row in scored]
    clustered = len(set(conversations)) < len(conversations)
    # the jackknife over conversations, or over answers when no conversation has two: the plug-in interval of
    # independent answers covered 93.9 % at 50 labels (benchmarks/README, "Prediction-powered estimates")
    c_l = [row[1] for row in labelled] if clustered else list(range(len(labelled)))
    c_u = [row[1] for row in unlabelled] if clustered else list(range(len(labelled), len(scored)))
    if len(set(c_l)) < 2:
        raise ConfigError(
            f"the {len(labelled)} labelled items all come from one conversation: the interval "
            "resamples conversations and needs labels from two or more"
        )
    confidence = settings.confidence
    # a share lies in [0, 1] (a difference of shares in [−1, 1]): an interval is cut there
    bounds = (0.0 if of == "mean" else -1.0, 1.0) if binary else None
    constant = None
    if np.ptp(y) == 0:
        alone = constant_mean(y, bounds=bounds, clusters=c_l, confidence=confidence)
        ppi = dataclasses.replace(alone, n_unlabelled=len(unlabelled))
        worth, interval = float(len(labelled)), "none" if bounds is None else "clopper-pearson"
        constant = _constant(label, of, alone, clustered)
        warnings.insert(0, constant)
    else:
        ppi = ppi_mean(y, f, f_u, clusters=c_l, unlabelled_clusters=c_u, confidence=confidence)
        alone = labelled_mean(y, clusters=c_l, confidence=confidence)
        if bounds is not None:
            ppi, alone = (
                dataclasses.replace(e, low=max(e.low, bounds[0]), high=min(e.high, bounds[1])) for e in (ppi, alone)
            )
        worth, interval = effective_labels(ppi, alone), "jackknife-t"
    own = labelled_mean(np.concatenate([f, f_u]), clusters=c_l + c_u, confidence=confidence)
    strata, warning = _strata(f, f_u)
    if warning:
        warnings.append(warning)
    return HumanEstimate(
        metric,
        label,
        of,
        ppi,
        alone,
        own,
        worth,
        len(scored),
        clustered,
        {k: v for k, v in counts.items() if v},
        strata,
        tuple(warnings),
        _signature(metric, label, of, clustered, interval, settings),
        interval,
        constant,
    )


def _constant(label: str, of: str, alone: MeanEstimate, clustered: bool) -> str:
    """What labelled values that are all equal mean for the estimate, in words."""
    n, c = alone.n_labelled, alone.value
    level = f"{alone.confidence * 100:g}%"
    if of == "mean":
        head = f"every one of the {n} labelled items has {label} = {c:g}"
    else:
        head = f"every one of the {n} items labelled in both runs has the same {of} in {label}, {c:g}"
    head += (
        ", so the labels do not vary: their spread would give an interval of zero width, and the metric's "
        "weight cannot be tuned on them (λ = 0: the PPI++ row is the labels' own mean)"
    )
    if math.isnan(alone.low):
        return (
            f"{head}. No interval can be estimated (shown as undefined): the range of {label} is not known, "
            "so no bound such as Clopper–Pearson's applies; label more items, or use a label whose "
            "values vary"
        )
    per = ", the items of one conversation counted as one since they may be alike" if clustered else ""
    what = "items" if of == "mean" else "differences"
    return (
        f"{head}. Both {level} intervals are instead the exact (Clopper–Pearson) interval that {n} of {n} "
        f"labelled {what} at {c:g} allow{per}: [{alone.low:.3f}, {alone.high:.3f}]; label more items"
        f"{' from more conversations' if clustered else ''} for a narrower one"
    )


def _human_values(human: Mapping[Key, dict[str, float]]) -> tuple[dict[Key, float], bool]:
    """Each item's annotators' mean, and whether every vote is 0 or 1."""
    binary = all(v in (0.0, 1.0) for votes in human.values() for v in votes.values())
    return {key: float(np.mean(list(votes.values()))) for key, votes in human.items()}, binary


def _names(values: set[str | None], shown: int = 5) -> str:
    """Model ids as a list to read: quoted, the first ``shown``, "none" for an answer without one."""
    names = sorted(repr(v) if v else "none" for v in values)
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _no_match(keys: set[Key], runs: Sequence[tuple[str, set[Key]]]) -> str:
    """Why labelled answers (id, model id) ``keys`` match no answer of the ``runs`` (name, their answers)."""
    ids = {key[0] for key in keys}
    if not any(ids & {key[0] for key in answers} for _, answers in runs):
        return (
            f"none of the human file(s)' {len(ids)} item ids is an item id of {' or '.join(n for n, _ in runs)} "
            "(joined on id): are the labels of these answers?"
        )
    theirs = " and ".join(f"{name}'s {_names({key[1] for key in answers})}" for name, answers in runs)
    return (
        f"the item ids match, but the human file(s) name the model ids {_names({key[1] for key in keys})} and "
        f"the answers have {theirs}: each human row's model_id must be the model id of the answer it rates "
        "(correct the human file's model_id column, or the runs' model_id)"
    )


def _unpaired(a: ScoredRun, b: ScoredRun, people: Mapping[Key, float], pairs: int, label: str) -> str:
    """Why fewer than two items have a human value on both their answers."""
    runs = [(a.name, set(a.keys)), (b.name, set(b.keys))]
    found = [sum(1 for key in people if key in answers) for _, answers in runs]
    head = (
        f"{pairs} item(s) have a human {label} of both their answers ({a.name} and {b.name}): the paired "
        f"estimate needs two or more. Of the {len(people)} labelled answers (id, model_id) in the human "
        f"file(s), {found[0]} match an answer of {a.name} and {found[1]} one of {b.name}"
    )
    unmatched = [run for run, count in zip(runs, found, strict=True) if not count]
    if not unmatched:
        return f"{head}: label both answers (the one of each run) of the same items"
    return f"{head}; for {' and '.join(name for name, _ in unmatched)}, {_no_match(set(people), unmatched)}"


def _not_in_run(missing: Sequence[Key], where: str) -> str:
    shown = ", ".join(k[0] + (f" ({k[1]})" if k[1] else "") for k in list(missing)[:5])
    return (
        f"{len(missing)} labelled item(s) are not in {where} and are left out ({shown}"
        f"{', …' if len(missing) > 5 else ''}): are the labels of this run?"
    )


def estimate(
    run: str | Path,
    human: str | Path | Sequence[str | Path],
    *,
    metric: str,
    label: str,
    settings: Settings | None = None,
) -> HumanEstimate:
    """The mean human ``label`` over the items of ``run`` (a run folder, its ``items.jsonl``, or any file
    :func:`~ragmeter.human.with_people.read_scores` reads), estimated from ``metric`` and the labelled items in
    ``human`` (see the module docstring)."""
    settings = settings or Settings()
    path = Path(run) / "items.jsonl" if Path(run).is_dir() else Path(run)
    scores, people = align(read_scores(path, metric), read_human(human, label))
    values, binary = _human_values(people)
    missing = [key for key in values if key not in scores]
    if len(missing) == len(values):
        raise ConfigError(
            f"no labelled item of the human file(s) is in {path} (joined on id, and model id when "
            f"both have one): {_no_match(set(values), [(str(path), set(scores))])}"
        )
    warnings = [_not_in_run(missing, str(path))] if missing else []
    rows = [(score, conversation, values.get(key)) for key, (score, conversation) in scores.items()]
    return _estimates(
        metric, label, "mean", rows, {"labelled, not in the run": len(missing)}, warnings, binary, settings
    )


def paired_estimate(
    baseline: ScoredRun | str | Path,
    candidate: ScoredRun | str | Path,
    human: str | Path | Sequence[str | Path],
    *,
    metric: str,
    label: str,
    settings: Settings | None = None,
) -> HumanEstimate:
    """The difference candidate − baseline in mean human ``label`` on the items both runs answered, estimated
    from the differences of ``metric`` and the items whose two answers are both labelled. The human rows name
    the answer they rate by id and model id, so the two runs need model ids of their own."""
    settings = settings or Settings()
    a = baseline if isinstance(baseline, ScoredRun) else load_run(baseline)
    b = candidate if isinstance(candidate, ScoredRun) else load_run(candidate)
    for run in (a, b):
        if metric not in run.scores:
            raise ConfigError(f"{run.name} has no scores of {metric!r}")
    models_a, models_b = {k[1] for k in a.keys}, {k[1] for k in b.keys}
    if None in models_a | models_b or models_a & models_b:
        raise ConfigError(
            f"{a.name} and {b.name} must answer under model ids of their own (each item's "
            "model_id) for their human labels to be told apart; they share "
            f"{sorted(map(str, models_a & models_b)) or 'none, but an item has no model id'}"
        )
    people, binary = _human_values(read_human(human, label))
    if not any(key[1] for key in people):
        raise ConfigError(
            f"the human file(s) of {label!r} have no model_id column: each rating must say which "
            f"run's answer it is of ({', '.join(sorted(map(str, models_a | models_b)))})"
        )
    for run in (a, b):
        if len({key[0] for key in run.keys}) < len(run.keys):
            raise ConfigError(
                f"{run.name} answers some item ids more than once: a paired estimate needs one "
                "answer per item in each run"
            )
    index_b = {key[0]: j for j, key in enumerate(b.keys)}
    rows, one_side = [], 0
    for i, key in enumerate(a.keys):
        j = index_b.get(key[0])
        if j is None:
            continue
        value_a, value_b = people.get(key), people.get(b.keys[j])
        one_side += (value_a is None) != (value_b is None)
        conversation = (
            a.conversation_ids[i] or b.conversation_ids[j] or (key[0].split("<::>")[0] if "<::>" in key[0] else key[0])
        )
        rows.append(
            (
                float(b.scores[metric][j] - a.scores[metric][i]),
                conversation,
                None if value_a is None or value_b is None else value_b - value_a,
            )
        )
    if not rows:
        raise ConfigError(f"{a.name} and {b.name} share no item id: nothing to compare")
    pairs = sum(1 for row in rows if row[2] is not None)
    if pairs < 2:
        raise ConfigError(_unpaired(a, b, people, pairs, label))
    known = set(a.keys) | set(b.keys)
    counts = {
        "labelled, not in either run": sum(1 for key in people if key not in known),
        "labelled on one side only": one_side,
    }
    return _estimates(metric, label, f"difference {b.name} − {a.name}", rows, counts, [], binary, settings)
