"""Comparing runs on the same items: is B better than A, by how much, where, and is it more than chance?

:func:`compare` takes two or more runs (run folders, their ``items.jsonl``, or
:class:`~ragmeter.results.run_result.EvalResult` objects) and compares each with the first. Items are paired by id, and
by id and model id where a run holds several answers to one id (MT-RAG files); items of one run only are listed and left
out, counted. Per metric that both runs scored (a quantile metric such as ``latency_ms`` by its per-item mean; its
P50/P95 are in the gate's figures):

- both means over the pairs where the metric is defined on both sides (a pair undefined on one side is left out of
  that metric, counted), their difference B − A with a paired bootstrap interval that resamples conversations, as
  a run's own intervals do;
- the paired permutation test's p-value (signs flipped by conversation, seeded) and Holm's correction across the
  metrics compared; rates also McNemar's test (exact below 25 discordant pairs);
- win / tie / loss counts per item: B better than, equal to, worse than A by the metric's direction
  (``higher_is_better``, from the metric registry; lower is better for latency, tokens and counts of faults), and
  B above / equal to / below A for a metric this version does not know. The difference B − A keeps its sign
  whatever the direction: a latency that drops is a negative difference and a win.

The same per group of answerability and of any metadata field named in ``by``. With ``abstained`` in both runs, the
gate's figures of seeds 000/001 on the paired items of each run: abstain rate, tokens per item and per answered item,
P50/P95 latency of the answered items (:func:`~ragmeter.results.paired.gate_row`). A metric's figures stand only if both
runs computed it with the same settings: when their signatures differ, :func:`compare` refuses and names the metrics and
settings, unless ``allow_different_settings`` (then every difference is listed in the result). A run without signatures
(an items file that is not a run folder's ``items.jsonl``, an unfinished run, a run folder that lost its
``summary.json``) cannot be checked: :func:`compare` refuses once, saying what is missing and how to get it, unless
``allow_different_settings`` (then the result says, once, whose settings went unchecked). Where the claim-level metrics
that read nuggets are compared and an item has neither reference answers nor nuggets of its own, its nuggets are written
from the chunks of each run's record judged relevant: where those differ between the runs (other chunks, or the same in
another order) the two sides are scored on different nuggets, and the result says for how many pairs (known where the
runs' input records are: run folders whose input, and the qrels file the run attached, are still there, or
:class:`ScoredRun` objects made with records). Runs are labelled by their folder (an items file by its stem, or its
folder's name for ``items.jsonl``), made unique by more of their paths where two agree, or by ``names``. The statistics
(:mod:`ragmeter.stats.paired`) use the ``settings``' resamples, seed, interval method and confidence, which go into the
comparison's own signature. Without ``settings`` the interval is the percentile one: where most pairs tie (a change that
touched 3 of 45 answers), BCa's bias correction moves the interval off 0 while the permutation test rightly finds
nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.core.errors import ConfigError, InputError
from ragmeter.core.files import file_sha256
from ragmeter.core.records import Record
from ragmeter.core.settings import Settings
from ragmeter.core.signature import Signature, diff
from ragmeter.io.qrels import attach_qrels, read_qrels
from ragmeter.io.readers import object_rows, parse_column_map, read_records
from ragmeter.io.run_folder import ITEMS, MANIFEST, SUMMARY, input_candidates, read_json_object
from ragmeter.metrics import get_metric
from ragmeter.metrics.claim_level import READS_NUGGETS, chunk_sources
from ragmeter.results.aggregate import Aggregation
from ragmeter.results.paired import GateRow, gate_row
from ragmeter.results.run_result import EvalResult
from ragmeter.stats.paired import (
    MCNEMAR_EXACT_BELOW,
    holm,
    mcnemar,
    paired_difference_intervals,
    sign_flip_tests,
)

__all__ = ["NO_SIGNATURE", "Comparison", "MetricComparison", "ScoredRun", "compare", "load_run", "pair_items"]

Key = tuple[str, str | None]
_NOT_A_RUN = "is this a ragmeter run folder?"
_COMPARE_FOLDERS = "compare the run folders that `ragmeter run --out` wrote"
#: The group every item is in (the whole comparison), as (field, value).
OVERALL = ("all", "all")
#: How the JSON and the reports write a signature that a run does not have (``None`` in the objects).
NO_SIGNATURE = "unknown"


@dataclass(frozen=True)
class ScoredRun:
    """A run as :func:`compare` reads it: per-item scores by (id, model id), the metrics' signatures, and each
    item's conversation and metadata (answerability and the record's metadata, where the run's input could be
    read). ``unsigned``: for a run without signatures (an items file alone, an unfinished run), why it has none
    and what to do to get them; ``None`` for a run that has them. ``written_from``: per item, where its nuggets
    depend on the run (:func:`_written_from`); empty where the input records could not be read."""

    name: str
    keys: tuple[Key, ...]
    scores: Mapping[str, np.ndarray]
    signatures: Mapping[str, str]
    conversation_ids: tuple[str | None, ...]
    metadata: tuple[Mapping[str, str], ...]
    metadata_note: str | None = None
    unsigned: tuple[str, str] | None = None
    written_from: tuple[str | None, ...] = ()

    @classmethod
    def from_result(cls, result: EvalResult, *, name: str, records: Iterable[Record] | None = None) -> ScoredRun:
        keys = tuple(zip(result.item_ids, result.model_ids, strict=True))
        conversations = result.conversation_ids or (None,) * len(keys)
        records = None if records is None else list(records)
        metadata, note = _metadata(keys, records, "no records were given")
        return cls(
            name,
            keys,
            dict(result.scores),
            {m: s.render() for m, s in result.signatures.items()},
            tuple(conversations),
            metadata,
            note,
            written_from=_written_from(keys, records),
        )


def load_run(path: str | Path, *, name: str | None = None) -> ScoredRun:
    """A run folder (``ragmeter run --out``) or an items file: the signatures come from the folder's
    ``summary.json`` and the items' answerability and metadata from the input named in its ``run.json`` (when
    that file is still there, unchanged), for a finished run's own ``items.jsonl`` only; any other items file,
    and an unfinished run, has none (``unsigned`` says so). ``name`` defaults to the folder's name (an items file:
    its stem, or its folder's name for ``items.jsonl``)."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such run folder or items file")
    folder, items = (path, path / ITEMS) if path.is_dir() else (path.parent, path)
    if not items.is_file():
        raise ConfigError(
            f"{path} is neither a ragmeter run folder nor an items file"
            + (f" (no {items.name} in it)" if path.is_dir() else " (not a regular file)")
            + ": give a folder that 'ragmeter run --out' wrote, or its items.jsonl"
        )
    rows = list(_item_rows(items))
    if not rows:
        raise ConfigError(f"{items} holds no ragmeter item rows (each line an object with 'id' and 'scores')")
    own = items.name == ITEMS
    manifest = read_json_object(folder / MANIFEST, _NOT_A_RUN) if own else None
    summary = read_json_object(folder / SUMMARY, _NOT_A_RUN) if own else None
    unsigned = (
        _unsigned(path, folder, len(rows), manifest, summary)
        if own
        else (f"{items} is not a run folder's {ITEMS}, so it has no {SUMMARY}", _COMPARE_FOLDERS)
    )
    signatures = dict(summary["signatures"]) if summary and not unsigned else {}
    keys = tuple((str(row["id"]), row.get("model_id")) for row in rows)
    metrics = list(dict.fromkeys(m for row in rows for m in row["scores"]))
    scores = {
        m: np.array([math.nan if row["scores"].get(m) is None else row["scores"][m] for row in rows], dtype=float)
        for m in metrics
    }
    records, why_not = _input_records(folder, manifest) if own else (None, f"{items} is not a run folder's {ITEMS}")
    records = None if records is None else list(records)
    metadata, note = _metadata(keys, records, why_not)
    with_qrels = _with_qrels(records, manifest)
    return ScoredRun(
        name or _label_parts(path)[-1],
        keys,
        scores,
        signatures,
        tuple(row.get("conversation_id") for row in rows),
        metadata,
        note,
        unsigned,
        _written_from(keys, with_qrels),
    )


def _with_qrels(records: list[Record] | None, manifest: Mapping[str, Any] | None) -> list[Record] | None:
    """``records`` with the qrels file the run attached (``run.json``'s ``qrels``), as the run scored them; ``None``
    where that file is no longer there or no longer reads (which chunks were relevant is then not known; the
    comparison goes on without it)."""
    qrels = manifest.get("qrels") if manifest else None
    if records is None or not isinstance(qrels, str):
        return records
    try:
        return list(attach_qrels(records, read_qrels(qrels)))
    except (InputError, OSError):
        return None


def _unsigned(
    path: Path, folder: Path, n_rows: int, manifest: Mapping[str, Any] | None, summary: Mapping[str, Any] | None
) -> tuple[str, str] | None:
    """Why a run folder's scores have no signatures to check, and what to do; ``None`` when they have."""
    if manifest is not None and manifest.get("status") == "running":
        # a summary.json there is an earlier run's: it does not sign these items
        return (
            f"{path} is an unfinished run (run.json status 'running', {n_rows} items scored so far)",
            f"finish the run with `ragmeter run … --out {folder} --resume`",
        )
    if manifest is None and summary is None:
        return f"{path} has neither {SUMMARY} nor {MANIFEST}", _COMPARE_FOLDERS
    if summary is None or not isinstance(summary.get("signatures"), dict) or not summary["signatures"]:
        return (
            f"{path} has no {SUMMARY}" if summary is None else f"{folder / SUMMARY} holds no signatures",
            f"rerun `ragmeter run … --out {folder} --overwrite` to write its {SUMMARY} again",
        )
    return None


def _label_parts(run: EvalResult | ScoredRun | str | Path, default: str = "") -> tuple[str, ...]:
    """What a run's label is drawn from: its last part, more of them where two labels agree. A folder's path,
    an items file's folder and stem (its folder alone for ``items.jsonl``); a run in memory has its name only."""
    if isinstance(run, ScoredRun):
        return (run.name,)
    if isinstance(run, EvalResult):
        return (default,)
    path = Path(run).resolve()
    if path.is_file():
        path = path.parent if path.stem == Path(ITEMS).stem else path.parent / path.stem
    return path.parts[1:] or (str(path),)


def _labels(runs: Sequence[EvalResult | ScoredRun | str | Path], names: Sequence[str] | None) -> list[str]:
    """``names``, checked (one per run, none empty, none twice); else each run's label, lengthened by the
    parts of its path before it where two differ only there (``x/v1``, ``y/v1``), and numbered where two are the
    same run (``v1``, ``v1 (2)``)."""
    if names is not None:
        names = list(names)
        if len(names) != len(runs):
            raise ConfigError(
                f"{len(runs)} runs but {len(names)} name{'s' * (len(names) != 1)}: give one name per "
                "run, in the order of the runs"
            )
        if any(not n.strip() for n in names):
            raise ConfigError("a run's name cannot be empty")
        twice = [n for n, count in Counter(names).items() if count > 1]
        if twice:
            raise ConfigError(f"each run needs a name of its own: {twice[0]!r} is given twice or more")
        return names
    parts = [_label_parts(run, chr(ord("A") + i)) for i, run in enumerate(runs)]
    depth = [1] * len(runs)
    while True:
        labels = ["/".join(p[-d:]) for p, d in zip(parts, depth, strict=True)]
        longer = [
            i
            for i, label in enumerate(labels)
            if depth[i] < len(parts[i])
            and any(other == label and parts[j] != parts[i] for j, other in enumerate(labels))
        ]
        if not longer:
            break
        for i in longer:
            depth[i] += 1
    seen: Counter[str] = Counter()
    out = []
    for label in labels:
        seen[label] += 1
        out.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return out


def _item_rows(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of a run's ``items.jsonl``, read only (a comparison never changes a run); a line that is not an
    item row (broken JSON, no id, scores that are not numbers) is an error naming its line and field."""
    for line, row in object_rows(path):
        if "id" not in row:
            raise InputError("not a ragmeter item row: no id", path=str(path), line=line, field="id")
        scores = row.get("scores")
        if not isinstance(scores, dict):
            raise InputError("not a ragmeter item row: no scores object", path=str(path), line=line, field="scores")
        for name, value in scores.items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise InputError(
                    f"a score must be a number or null, got {value!r}",
                    path=str(path),
                    line=line,
                    field=f"scores.{name}",
                )
        yield row


def _input_records(folder: Path, data: Mapping[str, Any] | None) -> tuple[Iterable[Record] | None, str]:
    """The run's input records, found from the run folder or from the working directory (the first candidate
    whose sha256 is the run's), or ``None`` and why not."""
    if data is None:
        return None, f"{folder} has no run.json naming its input"
    candidates = input_candidates(folder, data)
    if not candidates:
        return None, (
            f"the run's input {data.get('input')} is not there (looked beside the run folder and in the "
            "working directory)"
        )
    expected = data.get("input_sha256")
    source = next((path for path in candidates if not expected or file_sha256(path) == expected), None)
    if source is None:
        return None, f"the run's input {candidates[0]} has changed since the run"
    return read_records(
        source,
        format=data.get("input_format", "auto"),
        column_map=parse_column_map(data.get("map", [])),
        skip_invalid=True,
        options=data.get("format_options", {}),
    ), ""


def _metadata(
    keys: Sequence[Key], records: Iterable[Record] | None, why_not: str
) -> tuple[tuple[Mapping[str, str], ...], str | None]:
    """Each item's answerability and metadata fields (as text), matched to ``records`` by (id, model id)."""
    if records is None:
        return tuple({} for _ in keys), f"no breakdown by answerability or metadata: {why_not}"
    found: dict[Key, Mapping[str, str]] = {}
    for record in records:
        fields = {
            name: str(value) for name, value in record.metadata.items() if isinstance(value, (str, int, float, bool))
        }
        if record.answerability is not None:
            fields["answerability"] = record.answerability.value
        found[(record.id, record.model_id)] = fields
    return tuple(found.get(key, {}) for key in keys), None


#: :func:`_written_from`'s value for an item whose record is not known.
_UNKNOWN = "?"


def _written_from(keys: Sequence[Key], records: Sequence[Record] | None) -> tuple[str | None, ...]:
    """Per item, where its record has neither reference answers nor nuggets of its own, a digest of the relevant
    chunks the judge writes its nuggets from, in their order (:func:`~ragmeter.metrics.claim_level.chunk_sources`),
    which another run's retrieval may change; ``None`` where its nuggets are the same in every run (its references',
    its own) or it has none; ``_UNKNOWN`` where its record is not among ``records``. Empty without records."""
    if records is None:
        return ()
    found: dict[Key, str | None] = {}
    for record in records:
        sources = chunk_sources(record)
        digest = hashlib.sha256("\x1e".join(sources).encode()).hexdigest() if sources else None
        found[(record.id, record.model_id)] = digest
    return tuple(found.get(key, _UNKNOWN) for key in keys)


def _nuggets_differ(a: ScoredRun, b: ScoredRun, pairs: Sequence[tuple[int, int]]) -> int:
    """The pairs whose nuggets the two runs wrote from different relevant chunks (or the same in another order); a
    pair whose record either run does not know is not counted (none where either run's records are not known)."""
    if not a.written_from or not b.written_from:
        return 0
    return sum(
        _UNKNOWN not in (left, right) and (left is not None or right is not None) and left != right
        for left, right in ((a.written_from[i], b.written_from[j]) for i, j in pairs)
    )


def _tokens_of_both(
    scores: Mapping[str, np.ndarray], side: np.ndarray, *runs: tuple[ScoredRun, np.ndarray]
) -> dict[str, np.ndarray]:
    """A run's scores of the paired items (``side``: their positions), with ``total_tokens`` kept only where
    every run has it, so that the gate table's tokens per item is a mean over the same pairs as the comparison's
    (an item one run has no usage for would count in the other's mean alone)."""
    values = {metric: v[side] for metric, v in scores.items()}
    if "total_tokens" in values and all("total_tokens" in run.scores for run, _ in runs):
        both = np.logical_and.reduce([~np.isnan(run.scores["total_tokens"][at]) for run, at in runs])
        values["total_tokens"] = np.where(both, values["total_tokens"], math.nan)
    return values


@dataclass(frozen=True)
class MetricComparison:
    """One metric, B against A, over the pairs where both are defined; ``signature`` is the metric's (A's; B's
    is the same unless the comparison allowed different settings, which then lists both; ``None`` where A has
    none, written ``NO_SIGNATURE`` in :meth:`to_dict`). ``difference`` is the
    mean of B − A, signed as the scores are; ``wins`` / ``ties`` / ``losses`` count the pairs where B is better
    than / equal to / worse than A by ``higher_is_better`` (B above / equal / below where it is ``None``)."""

    metric: str
    kind: str
    higher_is_better: bool | None
    n: int
    n_left_out: int
    mean_a: float
    mean_b: float
    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    wins: int
    ties: int
    losses: int
    p_holm: float = math.nan
    mcnemar: Mapping[str, Any] | None = None
    signature: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["signature"] = _text(self.signature)
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}


@dataclass(frozen=True)
class Comparison:
    """Run ``candidate`` (B) against ``baseline`` (A): per group (``("all", "all")`` first, then answerability
    and the ``by`` fields' values), the metrics compared. ``different_settings``: the metrics whose signatures
    differ (compared with ``allow_different_settings``), A's and B's (``None`` for a run that has none for it).
    ``unchecked_settings``: the runs, by label, whose settings could not be checked (no signatures; compared with
    ``allow_different_settings``), and why."""

    baseline: str
    candidate: str
    n_pairs: int
    only_baseline: tuple[Key, ...]
    only_candidate: tuple[Key, ...]
    groups: Mapping[tuple[str, str], tuple[MetricComparison, ...]]
    not_compared: Mapping[str, str]
    different_settings: Mapping[str, tuple[str | None, str | None]]
    signature: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    gate: tuple[GateRow, ...] = ()
    confidence: float = 0.95
    unchecked_settings: Mapping[str, str] = field(default_factory=dict)

    @property
    def overall(self) -> tuple[MetricComparison, ...]:
        return self.groups[OVERALL]

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "n_pairs": self.n_pairs,
            "only_baseline": [list(k) for k in self.only_baseline],
            "only_candidate": [list(k) for k in self.only_candidate],
            "groups": [
                {"field": f, "value": v, "metrics": [m.to_dict() for m in ms]} for (f, v), ms in self.groups.items()
            ],
            "not_compared": dict(self.not_compared),
            "different_settings": {m: [_text(s) for s in pair] for m, pair in self.different_settings.items()},
            "unchecked_settings": dict(self.unchecked_settings),
            "gate": [row.to_dict() for row in self.gate],
            "confidence": self.confidence,
            "signature": self.signature,
            "notes": list(self.notes),
            "legend": dict(_LEGEND),
        }


def _text(signature: str | None) -> str:
    return NO_SIGNATURE if signature is None else signature


#: What the figures of a metric in :meth:`Comparison.to_dict` mean (B is the candidate, A the baseline).
_LEGEND = {
    "difference": "mean over the pairs of B − A, signed as the scores are (negative: B lower), whatever the "
    "metric's direction; ci_low, ci_high: its interval",
    "higher_is_better": "the metric's direction: true, false (latency, tokens, counts of faults), or null where "
    "ragmeter does not know the metric",
    "wins": "pairs where B is better than A by the metric's direction (B above A where higher_is_better is null)",
    "ties": "pairs where B equals A",
    "losses": "pairs where B is worse than A by the metric's direction (B below A where higher_is_better is null)",
    "n": "pairs compared (defined on both sides); n_left_out: pairs undefined on a side",
}


def compare(
    *runs: EvalResult | ScoredRun | str | Path,
    by: Sequence[str] = (),
    settings: Settings | None = None,
    allow_different_settings: bool = False,
    names: Sequence[str] | None = None,
) -> list[Comparison]:
    """Each run after the first against the first (see the module docstring). ``names``: one label per run, in
    order (default: run folders by their name, items files by their stem, :class:`EvalResult` runs A, B, C…,
    made unique)."""
    if len(runs) < 2:
        raise ConfigError("compare needs at least two runs")
    settings = settings or Settings(ci_method="percentile")
    labels = _labels(runs, names)
    loaded = [
        dataclasses.replace(run, name=label)
        if isinstance(run, ScoredRun)
        else ScoredRun.from_result(run, name=label)
        if isinstance(run, EvalResult)
        else load_run(run, name=label)
        for run, label in zip(runs, labels, strict=True)
    ]
    unsigned = {run.name: _unsigned_run(run) for run in loaded if _unsigned_run(run)}
    if unsigned and not allow_different_settings:
        whys = "; ".join(why for why, _ in unsigned.values())
        todo = "; ".join(dict.fromkeys(what for _, what in unsigned.values()))
        who = ", ".join(list(unsigned)[:-1]) + " and " * (len(unsigned) > 1) + list(unsigned)[-1]
        raise ConfigError(
            f"cannot check the settings of {who} (a finished run's {SUMMARY} "
            f"records them): {whys}. {todo[0].upper()}{todo[1:]}, or pass --allow-different-settings "
            "to compare without checking the settings"
        )
    return [_compare_two(loaded[0], other, by, settings, allow_different_settings) for other in loaded[1:]]


def _unsigned_run(run: ScoredRun) -> tuple[str, str] | None:
    """Why ``run``'s settings cannot be checked, and what to do (a run built in memory may lack signatures too)."""
    if run.unsigned or run.signatures:
        return run.unsigned
    return f"{run.name} has no metric signatures", "give its signatures"


def _permutations(settings: Settings) -> int:
    """Random sign assignments of the permutation test: at least 9,999, so that p-values near 0.05 are
    resolved (the exact test is used whenever there are fewer assignments than this)."""
    return max(settings.n_resamples, 9999)


def _signature(settings: Settings) -> str:
    return Signature(
        "compare",
        {
            "ci": settings.ci_method,
            "confidence": settings.confidence,
            "n_resamples": settings.n_resamples,
            "permutations": _permutations(settings),
            "resample": "clusters",
            "correction": "holm",
            "mcnemar_exact_below": MCNEMAR_EXACT_BELOW,
            "seed": settings.seed,
        },
        sort_keys=False,
    ).render()


def _compare_two(
    a: ScoredRun, b: ScoredRun, by: Sequence[str], settings: Settings, allow_different_settings: bool
) -> Comparison:
    pairs = pair_items(a, b)
    paired_a, paired_b = {i for i, _ in pairs}, {j for _, j in pairs}  # sets: a test in a list is quadratic
    only_a = tuple(key for i, key in enumerate(a.keys) if i not in paired_a)
    only_b = tuple(key for j, key in enumerate(b.keys) if j not in paired_b)
    if not pairs:
        raise ConfigError(f"{a.name} and {b.name} share no item id: nothing to compare")
    ia, ib = (np.array(side) for side in zip(*pairs, strict=True))

    not_compared: dict[str, str] = {}
    metrics = []
    for name in a.scores:
        if name not in b.scores:
            not_compared[name] = f"only in {a.name}"
            continue
        metrics.append((name, _kind(name)))
    not_compared.update({name: f"only in {b.name}" for name in b.scores if name not in a.scores})
    unchecked = {run.name: unsigned[0] for run in (a, b) if (unsigned := _unsigned_run(run))}
    different = (
        {}
        if unchecked
        else {
            name: (a.signatures.get(name), b.signatures.get(name))
            for name, _ in metrics
            if a.signatures.get(name) != b.signatures.get(name) or name not in a.signatures
        }
    )
    if different and not allow_different_settings:
        lines = "; ".join(f"{name}: {_difference(*pair)}" for name, pair in different.items())
        raise ConfigError(
            f"{a.name} and {b.name} computed these metrics with other settings, so their figures "
            f"cannot be compared: {lines}. Rerun one of them with the other's settings, or pass "
            "--allow-different-settings to compare anyway (the differences are then listed)"
        )

    conversations = [a.conversation_ids[i] or b.conversation_ids[j] or f"item:{a.keys[i][0]}" for i, j in pairs]
    groups: dict[tuple[str, str], list[int]] = {OVERALL: list(range(len(pairs)))}
    notes = [f"Settings not checked (compared anyway): {'; '.join(unchecked.values())}."] if unchecked else []
    if any(name in READS_NUGGETS for name, _ in metrics) and (differ := _nuggets_differ(a, b, pairs)):
        notes.append(
            f"{differ} pair(s) have no reference answer or nuggets of their own, and the relevant chunks their "
            "nuggets are written from differ between the runs (other chunks, or the same in another order): the "
            "claim-level metrics score the two sides on different nuggets there. Give the records references or "
            "nuggets to compare retrievers."
        )
    if a.metadata_note and b.metadata_note:
        if by:
            raise ConfigError(f"--by {', '.join(by)}: {a.metadata_note}")
        notes.append(a.metadata_note)
    for name in ("answerability", *by):
        values = [a.metadata[i].get(name) or b.metadata[j].get(name) for i, j in pairs]
        if name in by and not any(values):
            raise ConfigError(f"--by {name}: no item of {a.name} or {b.name} has a metadata field {name!r}")
        members: dict[str, list[int]] = defaultdict(list)
        for position, value in enumerate(values):
            if value is not None:
                members[value].append(position)
        groups.update({(name, value): positions for value, positions in sorted(members.items())})

    compared = {
        group: _compare_metrics(
            a, b, ia[positions], ib[positions], [conversations[p] for p in positions], metrics, settings
        )
        for group, positions in groups.items()
    }
    gate = [gate_row(run.name, _tokens_of_both(run.scores, side, (a, ia), (b, ib))) for run, side in ((a, ia), (b, ib))]
    return Comparison(
        a.name,
        b.name,
        len(pairs),
        only_a,
        only_b,
        compared,
        not_compared,
        different,
        _signature(settings),
        tuple(notes),
        tuple(row for row in gate if row is not None),
        settings.confidence,
        unchecked,
    )


def pair_items(a: ScoredRun, b: ScoredRun) -> list[tuple[int, int]]:
    """The items of ``a`` and ``b`` that a comparison pairs, as (position in ``a``, position in ``b``), in ``a``'s
    order: by id, or by id and model id where a run holds several answers per id (:func:`_pairing_keys`). The one
    pairing rule: the pytest plugin's worst items are listed by it too."""
    keys_a, keys_b = _pairing_keys(a, b)
    index_b = {key: j for j, key in enumerate(keys_b)}
    return [(i, index_b[key]) for i, key in enumerate(keys_a) if key in index_b]


def _pairing_keys(a: ScoredRun, b: ScoredRun) -> tuple[list[Key], list[Key]]:
    """Items pair by id when ids are unique within each run (two systems answering the same questions, under
    model ids of their own); by id and model id when a run holds several answers to one id (MT-RAG files)."""
    if all(len({key[0] for key in run.keys}) == len(run.keys) for run in (a, b)):
        return [(key[0], None) for key in a.keys], [(key[0], None) for key in b.keys]
    return list(a.keys), list(b.keys)


def _kind(metric: str) -> str:
    """``rate`` for 0/1 metrics (McNemar's test too), else ``mean``: sums and quantile metrics (latency) are
    compared by their per-item mean difference, and a metric this version does not know likewise."""
    try:
        aggregation = get_metric(metric).aggregation
    except ConfigError:
        return "mean"
    return "rate" if aggregation is Aggregation.RATE else "mean"


def _higher_is_better(metric: str) -> bool | None:
    try:
        return get_metric(metric).higher_is_better
    except ConfigError:
        return None


def _difference(left: str | None, right: str | None) -> str:
    """The settings two signatures disagree on: the ``key:value`` parts of one that the other lacks, each side's
    sorted as text (a text that is not a signature: both texts whole)."""
    if left is None or right is None:
        return "no signature in one run's summary.json"
    try:
        changed = diff(Signature.parse(left), Signature.parse(right))
    except ValueError:
        return f"{left} against {right}"
    a, b = ([f"{key}:{pair[side]}" for key, pair in changed.items() if pair[side] is not None] for side in (0, 1))
    return f"{', '.join(sorted(a)) or '–'} against {', '.join(sorted(b)) or '–'}"


def _compare_metrics(
    a: ScoredRun,
    b: ScoredRun,
    ia: np.ndarray,
    ib: np.ndarray,
    conversations: list[str],
    metrics: list[tuple[str, str]],
    settings: Settings,
) -> tuple[MetricComparison, ...]:
    pairs = {name: (a.scores[name][ia], b.scores[name][ib]) for name, _ in metrics}
    both = {name: ~np.isnan(va) & ~np.isnan(vb) for name, (va, vb) in pairs.items()}
    # Metrics defined on the same pairs share the bootstrap draws and the random sign flips (each figure equals
    # the one computed alone with the same seed): the cost of a run of many metrics is then about one metric's.
    shared: dict[bytes, list[str]] = defaultdict(list)
    for name, _ in metrics:
        if both[name].any():
            shared[both[name].tobytes()].append(name)
    tests: dict[str, tuple[tuple[float, float], float]] = {}
    for names in shared.values():
        keep = both[names[0]]
        clusters = [c for c, kept in zip(conversations, keep, strict=True) if kept]
        columns_a = [pairs[name][0][keep] for name in names]
        columns_b = [pairs[name][1][keep] for name in names]
        intervals = paired_difference_intervals(
            columns_a,
            columns_b,
            clusters=clusters,
            n_resamples=settings.n_resamples,
            method=settings.ci_method,
            confidence=settings.confidence,
            seed=settings.seed,
        )
        p_values = sign_flip_tests(
            columns_a, columns_b, clusters=clusters, n_resamples=_permutations(settings), seed=settings.seed
        )
        tests.update(zip(names, zip(intervals, p_values, strict=True), strict=True))
    out = []
    for name, kind in metrics:
        va, vb = pairs[name]
        left_out = int(len(va) - both[name].sum())
        va, vb = va[both[name]], vb[both[name]]
        if len(va) == 0:
            nan = math.nan
            out.append(
                MetricComparison(
                    name, kind, _higher_is_better(name), 0, left_out, nan, nan, nan, nan, nan, nan, 0, 0, 0
                )
            )
            continue
        (low, high), p = tests[name]
        test = None
        if kind == "rate":
            only_a, only_b, p_exact, exact = mcnemar(va, vb)
            test = {"only_a": only_a, "only_b": only_b, "p_value": p_exact, "exact": exact}
        direction = _higher_is_better(name)
        better, worse = (vb < va, vb > va) if direction is False else (vb > va, vb < va)
        out.append(
            MetricComparison(
                name,
                kind,
                direction,
                len(va),
                left_out,
                float(va.mean()),
                float(vb.mean()),
                float((vb - va).mean()),
                low,
                high,
                p,
                int(np.sum(better)),
                int(np.sum(vb == va)),
                int(np.sum(worse)),
                mcnemar=test,
            )
        )
    adjusted = holm([m.p_value for m in out])
    return tuple(
        MetricComparison(**{**m.__dict__, "p_holm": q, "signature": a.signatures.get(m.metric)})
        for m, q in zip(out, adjusted, strict=True)
    )
