"""How far a ragmeter score agrees with human labels or ratings (``ragmeter agree``), with the annotators' own
agreement on the same items as the ceiling.

Scores come from ``items.jsonl`` of a run (``scores.<metric>``), an MT-RAG output (``metrics.<metric>``, its first
value), an LLM annotator's file (``labels annotate``: its answer rows), or any JSONL or CSV with an id column
(``id``, ``task_id`` or ``record_id``) and a column named after the metric. Human judgements come from JSONL or CSV
with an id column and a column named after the label: one row per item and annotator (an ``annotator`` column
tells them apart), an object of annotator → value in the label's field as in MT-RAG's released ratings, or filled
annotation templates of seed 003's labels (``ragmeter labels template``; their answer rows). Several human files
are read as one. Values may be numbers or numeric strings. Items join on id and model id when both files have
model ids (MT-RAG's files answer each task with several systems), else on id alone; items of one file only are
counted. Conversations (``conversation_id``, else the part of an MT-RAG task id before ``<::>``) are the
resampling units of every interval.

A label whose every value is 0 or 1 is *binary*: the item's label is the annotators' majority (a tie leaves the
item out, counted), and the figures are AUROC, balanced accuracy and Cohen's κ of "score ≥ threshold". Any other
label is a *scale*: the item's rating is the annotators' mean, and the figures are Spearman, Kendall τ-b and
Pearson. The ceiling: for a scale, each annotator's Spearman with the mean of the others on the items they share,
averaged over annotators (weighted by items; its interval from ``CEILING_RESAMPLES`` resamples at most); for a
binary label, Krippendorff's α (nominal) over every item with a score, tied ones included. ``per_annotator`` adds
the figures against each annotator alone.

A figure that cannot be computed is NaN with its reason in ``Figure.undefined`` (``null`` and the reason in JSON):
the value, when the data cannot define it (every rating equal, one class of labels only), else its interval, when
the items come from fewer than two conversations or no resample defines the statistic.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.core.errors import ConfigError, InputError
from ragmeter.core.records import ALL_LABELS, ANSWER_LABELS, CHUNK_LABELS
from ragmeter.core.settings import Settings
from ragmeter.core.signature import Signature
from ragmeter.human.annotation_files import not_a_vote
from ragmeter.io.readers import object_rows
from ragmeter.metrics import get_metric
from ragmeter.stats.correlation import BINARY, SCALE, cluster_bootstrap, spearman
from ragmeter.stats.inter_annotator import krippendorff_alpha, majority

__all__ = ["Agreement", "Figure", "Key", "agreement", "align", "interval_undefined", "read_human", "read_scores"]

Key = tuple[str, str | None]
#: Resamples of the scale ceiling's interval at most (each recomputes every annotator's correlation).
CEILING_RESAMPLES = 500
_ID_FIELDS = ("id", "task_id", "record_id")


@dataclass(frozen=True)
class Figure:
    """One statistic with its interval (``n_dropped``: resamples where it was undefined; ``undefined``: why the
    value, or else its interval, is NaN, ``None`` when both are defined)."""

    name: str
    value: float
    low: float
    high: float
    n_dropped: int = 0
    undefined: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class Agreement:
    """The agreement of ``metric`` with ``label`` on ``n`` joined items (see the module docstring)."""

    metric: str
    label: str
    kind: str
    n: int
    figures: tuple[Figure, ...]
    ceiling: Figure | None
    counts: Mapping[str, int]
    threshold: float | None
    signature: str
    per_annotator: Mapping[str, tuple[int, tuple[Figure, ...]]] = field(default_factory=dict)
    #: The joined items' scores and human values (the annotators' mean, or the majority label), in one order.
    scores: tuple[float, ...] = ()
    human: tuple[float, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "label": self.label,
            "kind": self.kind,
            "n": self.n,
            "figures": [f.to_dict() for f in self.figures],
            "ceiling": self.ceiling.to_dict() if self.ceiling else None,
            "counts": dict(self.counts),
            "threshold": self.threshold,
            "signature": self.signature,
            "per_annotator": {
                a: {"n": n, "figures": [f.to_dict() for f in fs]} for a, (n, fs) in self.per_annotator.items()
            },
        }


def _key(row: Mapping[str, Any], path: Path, line: int) -> tuple[str, str | None, str]:
    """(id, model id, conversation) of a row."""
    item_id = next((row[name] for name in _ID_FIELDS if row.get(name) not in (None, "")), None)
    if item_id is None:
        raise InputError("no item id", path=str(path), line=line, field="id")
    item_id = str(item_id)
    model = row.get("model_id")
    conversation = row.get("conversation_id") or (item_id.split("<::>")[0] if "<::>" in item_id else item_id)
    return item_id, str(model) if model not in (None, "") else None, str(conversation)


def _number(value: Any, path: Path, line: int, name: str) -> float:
    """A number from a number, a numeric string or a list (its first value, as MT-RAG writes metrics); NaN for
    an empty one (an undefined value)."""
    if isinstance(value, list):
        value = value[0] if value else None
    if value is None or value == "":
        return math.nan
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"not a number: {value!r}", path=str(path), line=line, field=name) from None
    return number


def read_scores(path: str | Path, metric: str) -> dict[Key, tuple[float, str]]:
    """(id, model id) → (the metric's value, NaN when undefined; the conversation)."""
    path = Path(path)
    out: dict[Key, tuple[float, str]] = {}
    seen_metric = False
    names: dict[str, None] = {}  # the names the file has, to list when the metric is not among them
    for line, row in object_rows(path):
        if _template_row(row) and row["unit"] != "answer":
            continue
        item_id, model, conversation = _key(row, path, line)
        if not seen_metric and len(names) < 200:
            for container in (row.get("scores"), row.get("metrics"), row):
                if isinstance(container, dict):
                    names.update(dict.fromkeys(str(name) for name in container))
        for container, name in (
            (row.get("scores"), f"scores.{metric}"),
            (row.get("metrics"), f"metrics.{metric}"),
            (row, metric),
        ):
            if isinstance(container, dict) and metric in container:
                out[(item_id, model)] = (_number(container[metric], path, line, name), conversation)
                seen_metric = True
                break
    if not seen_metric:
        shown = [
            n
            for n in names
            if n
            not in ("scores", "metrics", "id", "model_id", "conversation_id", "undefined", "notes", "judge", "language")
        ]
        raise ConfigError(
            f"{path} has no value of {metric!r} (looked in 'scores', 'metrics' and the columns): "
            f"give --metric one of {', '.join(shown[:30]) or 'the names it has'}" + (", …" if len(shown) > 30 else "")
        )
    return out


#: The columns of a human file that are not labels.
_NOT_LABELS = (
    "id",
    "record_id",
    "model_id",
    "conversation_id",
    "annotator",
    "unit",
    "rank",
    "doc_id",
    "question",
    "text",
    "answer",
    "references",
    "contexts",
)


def _template_row(row: Mapping[str, Any]) -> bool:
    """A row of a filled annotation template (``ragmeter labels template``, ``labels annotate``)."""
    return "unit" in row and "record_id" in row


def read_human(paths: str | Path | Sequence[str | Path], label: str) -> dict[Key, dict[str, float]]:
    """(id, model id) → annotator → value, from one file or several; rows without the label are skipped.

    A filled annotation template (``ragmeter labels template``: ``record_id`` and ``unit`` columns) gives its
    answer rows; its annotator is the ``annotator`` cell, else the file's name, as ``labels merge`` reads it.
    A value of one of seed 003's labels (:data:`~ragmeter.core.records.ALL_LABELS`) other than 0 or 1 (7, say)
    is an :class:`InputError` naming the file, line and field, as ``labels merge`` says of it."""

    def checked(raw: Any, path: Path, line: int, name: str) -> float:
        number = _number(raw, path, line, name)
        if label in ALL_LABELS and number not in (0.0, 1.0) and not math.isnan(number):
            raise InputError(
                f"{not_a_vote(raw)}: {label} is one of seed 003's labels, each 0 or 1 (as 'ragmeter "
                "labels merge' reads them); correct the value",
                path=str(path),
                line=line,
                field=name,
            )
        return number

    out: dict[Key, dict[str, float]] = defaultdict(dict)
    columns: dict[str, None] = {}  # the names the files have, to list when the label is not among them
    for path in map(Path, [paths] if isinstance(paths, (str, Path)) else paths):
        for line, row in object_rows(path):
            if len(columns) < 200:
                columns.update(dict.fromkeys(map(str, row)))
            template = _template_row(row)
            if template and label in CHUNK_LABELS:
                raise ConfigError(
                    f"{label!r} is a chunk label ({path} has one per retrieved chunk); agree compares "
                    f"one score per answer: choose an answer label ({', '.join(ANSWER_LABELS)})"
                )
            if label not in row or (template and row["unit"] != "answer"):
                continue
            item_id, model, _ = _key(row, path, line)
            value = row[label]
            if isinstance(value, dict):
                for annotator, rating in value.items():
                    number = checked(rating, path, line, f"{label}.{annotator}")
                    if not math.isnan(number):
                        out[(item_id, model)][str(annotator)] = number
                continue
            number = checked(value, path, line, label)
            if not math.isnan(number):
                annotator = str(row.get("annotator") or (path.stem if template else f"{path.stem}:row{line}"))
                out[(item_id, model)][annotator] = number
    if not out:
        shown = [name for name in columns if name not in _NOT_LABELS]
        raise ConfigError(
            f"{', '.join(map(str, [paths] if isinstance(paths, (str, Path)) else paths))} has no "
            f"value of the label {label!r}" + (f": give --label one of {', '.join(shown[:30])}" if shown else "")
        )
    return dict(out)


def align(
    scores: Mapping[Key, tuple[float, str]], human: Mapping[Key, dict[str, float]]
) -> tuple[dict[Key, tuple[float, str]], dict[Key, dict[str, float]]]:
    """The two, keyed alike: keys keep their model id only when both files have model ids."""
    if not (any(k[1] for k in scores) and any(k[1] for k in human)):
        return {(k[0], None): v for k, v in scores.items()}, {(k[0], None): v for k, v in human.items()}
    return dict(scores), dict(human)


def _join(
    scores: Mapping[Key, tuple[float, str]], human: Mapping[Key, dict[str, float]]
) -> tuple[list[tuple[float, str, dict[str, float]]], dict[str, int]]:
    """(score, conversation, annotator → value) of each item in both, and how many are in one only."""
    scores, human = align(scores, human)
    joined = [(*scores[k], human[k]) for k in scores if k in human]
    return joined, {"scored only": len(set(scores) - set(human)), "labelled only": len(set(human) - set(scores))}


def interval_undefined(clusters: Sequence[object], n_resamples: int, what: str = "items") -> str:
    """Why a :func:`~ragmeter.stats.correlation.cluster_bootstrap` interval of a defined statistic is NaN."""
    n = len(set(map(str, clusters)))
    if n < 2:
        return (
            f"interval undefined: the {len(clusters)} {what} come from {n} conversation"
            f"{'' if n == 1 else 's'}; resampling needs 2 or more"
        )
    return f"interval undefined: the statistic is undefined in each of the {n_resamples} resamples"


def _value_undefined(x: np.ndarray, y: np.ndarray, kind: str, threshold: float) -> str:
    """Why a statistic of these columns is NaN."""
    if kind == "scale":
        if np.ptp(x) == 0:
            return f"undefined: every score is {x[0]:g}"
        if np.ptp(y) == 0:
            return f"undefined: every rating is {y[0]:g}"
    else:
        if np.ptp(y) == 0:
            return f"undefined: every label is {y[0]:g}; both classes are needed"
        decided = x >= threshold
        if decided.all() or not decided.any():
            return f"undefined: every score is {x[0]:g}, on one side of the threshold"
    return "undefined on these items"


def _figure(name: str, value: float, interval: tuple[float, float, int], why: str | None) -> Figure:
    low, high, dropped = interval
    return Figure(name, value, low, high, dropped, why if math.isnan(value) or math.isnan(low) else None)


def _check_threshold(x: np.ndarray, threshold: float, metric: str, default: bool) -> None:
    """Refuse a threshold that decides every item the same way while the scores differ: balanced accuracy and κ
    would then compare one constant decision with the labels."""
    decided = x >= threshold
    if np.ptp(x) == 0 or (decided.any() and not decided.all()):
        return
    side = "at or above it (decided positive)" if decided.all() else "below it (decided negative)"
    try:
        low, high = get_metric(metric).value_range
        known = f", and {metric} ranges over [{low:g}, {'∞' if high is None else f'{high:g}'}]"
    except ConfigError:
        known = ""
    raise ConfigError(
        f"--threshold {threshold:g}{' (the default)' if default else ''} puts all {len(x)} items {side}: "
        f"the scores range from {x.min():g} to {x.max():g}{known}; choose a threshold above the lowest "
        "score and at most the highest"
    )


def _figures(
    x: np.ndarray, y: np.ndarray, clusters: list[str], kind: str, threshold: float, settings: Settings
) -> tuple[Figure, ...]:
    statistics = SCALE if kind == "scale" else {name: make(threshold) for name, make in BINARY.items()}
    out = []
    for offset, (name, statistic) in enumerate(statistics.items()):
        interval = cluster_bootstrap(
            statistic,
            x,
            y,
            clusters=clusters,
            n_resamples=settings.n_resamples,
            confidence=settings.confidence,
            seed=settings.seed + offset,
        )
        value = statistic(x, y)
        why = (
            _value_undefined(x, y, kind, threshold)
            if math.isnan(value)
            else interval_undefined(clusters, settings.n_resamples)
        )
        out.append(_figure(name, value, interval, why))
    return tuple(out)


def _scale_ceiling(votes: list[dict[str, float]], clusters: list[str], settings: Settings) -> Figure | None:
    """Each annotator's Spearman with the others' mean, averaged (weighted by shared items)."""
    annotators = sorted({a for unit in votes for a in unit})

    def ceiling(positions: np.ndarray) -> float:
        total, weight = 0.0, 0
        for annotator in annotators:
            own, others = [], []
            for i in positions:
                unit = votes[i]
                rest = [v for a, v in unit.items() if a != annotator]
                if annotator in unit and rest:
                    own.append(unit[annotator])
                    others.append(float(np.mean(rest)))
            if len(own) >= 3:
                rho = spearman(np.array(own), np.array(others))
                if not math.isnan(rho):
                    total, weight = total + rho * len(own), weight + len(own)
        return total / weight if weight else math.nan

    index = np.arange(len(votes))
    value = ceiling(index)
    if math.isnan(value):
        return None
    positions = index.astype(float)
    n_resamples = min(settings.n_resamples, CEILING_RESAMPLES)
    interval = cluster_bootstrap(
        lambda x, _: ceiling(x.astype(int)),
        positions,
        positions,
        clusters=clusters,
        n_resamples=n_resamples,
        confidence=settings.confidence,
        seed=settings.seed,
    )
    return _figure("annotators (leave-one-out Spearman)", value, interval, interval_undefined(clusters, n_resamples))


def agreement(
    scored: str | Path,
    human: str | Path | Sequence[str | Path],
    *,
    metric: str,
    label: str,
    threshold: float | None = None,
    per_annotator: bool = False,
    ties: str = "undefined",
    settings: Settings | None = None,
) -> Agreement:
    """The agreement of ``metric`` in ``scored`` with ``label`` in ``human``, one file or several (see the module
    docstring). ``threshold`` (binary labels; default 0.5) turns scores into decisions for balanced accuracy
    and κ; a :class:`ConfigError` refuses one that decides every item the same way while the scores differ, and one
    given for a rating scale, which never reads it."""
    settings = settings or Settings()
    given = threshold
    joined, counts = _join(read_scores(scored, metric), read_human(human, label))
    if not joined:
        raise ConfigError(
            f"no item of {scored} matches one of the human file(s) (joined on id, and model id when both have one)"
        )
    kind = "binary" if all(v in (0.0, 1.0) for *_, unit in joined for v in unit.values()) else "scale"
    if kind == "scale" and given is not None:
        raise ConfigError(
            f"--threshold applies to 0/1 labels; {label!r} is a rating scale (it has values other "
            "than 0 and 1), read with Spearman, Kendall and Pearson: leave --threshold out"
        )
    threshold = 0.5 if threshold is None and kind == "binary" else threshold
    rows = []
    rated: list[dict[str, float]] = []  # every item with a score, tied ones too: the ceiling's units
    for score, conversation, unit in joined:
        if math.isnan(score):
            counts["score undefined"] = counts.get("score undefined", 0) + 1
            continue
        rated.append(unit)
        if kind == "binary":
            label_value = majority([int(v) for v in unit.values()], ties=ties)
            if label_value is None:
                counts["annotators tied"] = counts.get("annotators tied", 0) + 1
                continue
            rows.append((score, float(label_value), conversation, unit))
        else:
            rows.append((score, float(np.mean(list(unit.values()))), conversation, unit))
    if len(rows) < 3:
        raise ConfigError(f"only {len(rows)} items have both a score and a label: too few to measure agreement")
    x = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows])
    clusters = [r[2] for r in rows]
    units = [r[3] for r in rows]
    if kind == "binary":
        _check_threshold(x, threshold or 0.5, metric, given is None)
    figures = _figures(x, y, clusters, kind, threshold or 0.5, settings)
    if kind == "binary":
        alpha = krippendorff_alpha([[int(v) for v in unit.values()] for unit in rated])
        ceiling = (
            None
            if math.isnan(alpha)
            else Figure(
                "annotators (Krippendorff's alpha)",
                alpha,
                math.nan,
                math.nan,
                undefined="no interval: computed once, on every vote",
            )
        )
    else:
        ceiling = _scale_ceiling(units, clusters, settings)
    each: dict[str, tuple[int, tuple[Figure, ...]]] = {}
    if per_annotator:
        for annotator in sorted({a for unit in units for a in unit}):
            mine = [i for i, unit in enumerate(units) if annotator in unit]
            if len(mine) >= 3:
                own = np.array([units[i][annotator] for i in mine])
                each[annotator] = (
                    len(mine),
                    _figures(x[mine], own, [clusters[i] for i in mine], kind, threshold or 0.5, settings),
                )
    signature = Signature(
        "agree",
        {
            "metric": metric,
            "label": label,
            "kind": kind,
            **({"threshold": f"{threshold:g}"} if kind == "binary" else {}),
            "ci": "percentile",
            "confidence": settings.confidence,
            "n_resamples": settings.n_resamples,
            "resample": "clusters",
            "seed": settings.seed,
        },
        sort_keys=False,
    ).render()
    return Agreement(
        metric,
        label,
        kind,
        len(rows),
        figures,
        ceiling,
        counts,
        threshold if kind == "binary" else None,
        signature,
        each,
        tuple(x.tolist()),
        tuple(y.tolist()),
    )
