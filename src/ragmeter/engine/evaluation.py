"""The run loop: stream records in batches, score every item, write as you go, then aggregate.

Per batch, expensive metrics first *prefetch*: the texts they will embed are encoded in one
length-sorted pass (each distinct text once per run, via :class:`~ragmeter.models.CachedEmbedder`), and the
judge calls of the batch are made concurrently; then the batch is scored metric by metric, items sharing
one :class:`~ragmeter.engine.context.ItemContext`. Finished items go to ``on_items`` before the next batch starts,
so a crash loses at most one batch, and a run given the rows it had finished (``finished``) scores only the
rest. Records are not kept: memory grows with the number of scores, not with the size of the records.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter
from typing import Any

import numpy as np

from ragmeter.core.errors import ConfigError, InputError
from ragmeter.core.iteration import batched
from ragmeter.core.records import WHY_MISSING, Record
from ragmeter.core.settings import Settings
from ragmeter.core.signature import Signature
from ragmeter.engine.context import ItemContext, RunContext
from ragmeter.io.formats.native import record_from_dict
from ragmeter.io.run_folder import item_row
from ragmeter.judges import Judge, JudgeCall
from ragmeter.judges.accounting import ItemJudging, JudgingLog, JudgingReport
from ragmeter.metrics import Metric, resolve_metrics
from ragmeter.metrics._registry import FIELD_CHECKS, Noted, Undefined
from ragmeter.models import Embedder, TokenEncoder
from ragmeter.results.aggregate import Aggregation, Column, cluster_labels, summarize_columns
from ragmeter.results.run_result import EvalResult

__all__ = ["JudgePlan", "evaluate", "plan_judging"]

ItemSink = Callable[[list[dict[str, Any]]], None]
_ID, _MODEL_ID, _CONVERSATION_ID = attrgetter("id"), attrgetter("model_id"), attrgetter("conversation_id")
TOKEN_BATCH = 32
#: Items per batch with a judge: small, so that items are written (and progress shown) every few calls.
JUDGE_BATCH_PER_SLOT = 4
#: The most rounds of judge calls a batch takes: a metric's calls may wait for verdicts of one round before
#: (a question's nuggets, then an answer's grades on them); more rounds than this is a metric that never stops.
JUDGE_ROUNDS = 4


def evaluate(
    records: Iterable[Record | Mapping[str, Any]] | Any,
    *,
    metrics: Sequence[str] | None = None,
    settings: Settings | None = None,
    embedder: Embedder | dict[str, Embedder] | None = None,
    token_encoder: TokenEncoder | None = None,
    judge: Judge | None = None,
    on_items: ItemSink | None = None,
    finished: Sequence[Mapping[str, Any]] = (),
    batch_size: int = 256,
    progress: bool = False,
    total: int | None = None,
    column_map: Mapping[str, str] | None = None,
) -> EvalResult:
    """Score ``records`` with ``metrics``: metric or family names; ``None`` gives the citation, lexical
    and efficiency families (the seeds 000/001 report).

    ``records`` are :class:`Record` objects or dicts in ragmeter's native format (validated; a bad
    one raises :class:`~ragmeter.core.errors.InputError` naming its position and field), or a framework's
    objects (:mod:`ragmeter.io.objects`: a pandas DataFrame or Hugging Face dataset, whose columns
    ``column_map`` maps to record fields as ``--map`` does; RAGAS samples; DeepEval test cases). ``embedder``
    (one for every record, or a dict by backend name that the run fills with those it loads: see
    :class:`~ragmeter.engine.context.RunContext`) and ``token_encoder`` (BERTScore) replace the ones ``settings``
    names. ``judge`` serves the judged
    metrics (:func:`ragmeter.judges.open_judge`); its usage counters restart here, and the result reports
    them with each item's judge tokens and every failed call. ``on_items`` receives each finished batch of
    per-item rows (the shape of ``items.jsonl``). ``finished`` holds the rows an interrupted run of the same
    records wrote: the first ``len(finished)`` records are checked against them (same ids, in order) and
    not scored again; their values come from the rows. ``progress`` shows a bar on stderr (with a judge:
    also the judge calls done in the current batch).

    >>> result = evaluate([{"question": "Capital of France?", "answer": "Paris.",
    ...                     "references": ["Paris"]}], metrics=["exact_match", "token_f1"])
    >>> result.summary("exact_match").value
    1.0
    """
    settings = settings or Settings()
    chosen = resolve_metrics(metrics)
    run = RunContext(settings, embedder=embedder, token_encoder=token_encoder, judge=judge)
    judged = any("judge" in m.resources for m in chosen)
    if judged:
        run.judge.usage.clear()  # fails here, before any record is read, when no judge was given
        batch_size = min(batch_size, JUDGE_BATCH_PER_SLOT * run.judge.concurrency)
    if any("token_encoder" in m.resources for m in chosen):
        batch_size = min(batch_size, TOKEN_BATCH)  # token embeddings are large: keep a batch's in memory
    signatures = {m.name: Signature(m.name, m.signature(run)) for m in chosen}
    table = ItemTable(chosen)
    judging = JudgingLog()
    remaining = table.take_finished(_as_records(records, column_map), finished, judging if judged else None)
    bar = _Progress(progress, total, judge=run.judge if judged else None, done=len(finished))
    try:
        for batch in batched(remaining, batch_size):
            items = [ItemContext() for _ in batch]
            with run.batch_scope():  # one scope for the batch: the languages its prefetch reads count too
                costs = _prefetch(batch, items, chosen, run, bar)
                if costs is not None:
                    judging.add([record.id for record in batch], costs)
                rows = table.score(batch, items, chosen, run, costs, rows=on_items is not None)
            if on_items is not None:
                on_items(rows)
            bar.items_done(len(batch))
    finally:
        bar.close()

    return table.result(
        chosen,
        signatures,
        settings,
        judging.report(judge.identity, judge.usage) if judged and judge is not None else None,
    )


def _prefetch(
    batch: list[Record], items: list[ItemContext], chosen: list[Metric], run: RunContext, bar: _Progress
) -> list[ItemJudging] | None:
    """Encode the batch's texts and make its judge calls; return what judging each item cost (``None``
    without judged metrics)."""
    costs = None
    for resource in sorted({r for m in chosen for r in m.resources}):
        if resource == "judge":
            costs = _judge_rounds(batch, items, [m for m in chosen if "judge" in m.resources], run, bar)
            continue
        wanted = _wanted(resource, batch, items, chosen, run)
        if any(wanted):
            run.prefetch(resource, [text for texts in wanted for text in texts])
    return costs


def _wanted(
    resource: str, batch: list[Record], items: list[ItemContext], chosen: list[Metric], run: RunContext
) -> list[list[Any]]:
    """What each record's metrics ask of ``resource`` now."""
    return [
        [
            need
            for m in chosen
            if m.prefetch is not None and resource in m.resources and m.missing_field(record) is None
            for need in m.prefetch(record, item, run)
        ]
        for record, item in zip(batch, items, strict=True)
    ]


def _judge_rounds(
    batch: list[Record], items: list[ItemContext], chosen: list[Metric], run: RunContext, bar: _Progress
) -> list[ItemJudging]:
    """Make the batch's judge calls in rounds: every call the metrics ask for, then the calls a metric could
    only name once verdicts of the round before were known (an answer graded on the nuggets a first call
    wrote), until none is new; what each item cost over all its calls."""
    asked: list[list[JudgeCall]] = [[] for _ in batch]
    made: set[str] = set()
    for round_number in range(JUDGE_ROUNDS):
        wanted = [
            [call for call in calls if run.judge.key(call) not in made]
            for calls in _wanted("judge", batch, items, chosen, run)
        ]
        if not any(wanted):
            return run.judge_costs(asked)
        bar.judge_calls(sum(len(calls) for calls in wanted))
        run.prefetch_judge(wanted, more=round_number > 0)
        made.update(run.judge.key(call) for calls in wanted for call in calls)
        for item_calls, new in zip(asked, wanted, strict=True):
            item_calls.extend(new)
    raise RuntimeError(f"the judged metrics still asked for new calls after {JUDGE_ROUNDS} rounds")


class ItemTable:
    """The run's per-item table, column by column: values (NaN where undefined), undefined reasons and
    notes by item index, ids, models and conversations; the Ray engine's driver fills one from the rows its
    actors send (:meth:`add_row`)."""

    def __init__(self, chosen: list[Metric]) -> None:
        self._values: dict[str, array[float]] = {m.name: array("d") for m in chosen}
        self.undefined: dict[str, dict[int, str]] = {m.name: {} for m in chosen}
        self.notes: dict[str, dict[int, str]] = {m.name: {} for m in chosen}
        self._rates = {m.name for m in chosen if m.aggregation is Aggregation.RATE}
        self.item_ids: list[str] = []
        self.model_ids: list[str | None] = []
        self.conversations: list[str | None] = []
        self.languages: list[str | None] = []

    def columns(self) -> dict[str, np.ndarray]:
        return {
            name: np.frombuffer(column, dtype=float) if len(column) else np.zeros(0)
            for name, column in self._values.items()
        }

    def take_finished(
        self, records: Iterable[Record], finished: Sequence[Mapping[str, Any]], judging: JudgingLog | None
    ) -> Iterable[Record]:
        """Enter the rows of an interrupted run, checking them against the first records; the rest."""
        iterator = iter(records)
        for position, row in enumerate(finished):
            record = next(iterator, None)
            if record is None or row.get("id") != record.id or row.get("model_id") != record.model_id:
                raise ConfigError(
                    f"the finished item {position + 1} ({row.get('id')!r}) is not record "
                    f"{position + 1} of the input: the interrupted run scored other records"
                )
            self.add_row(row, judging)
        return iterator

    def add_row(self, row: Mapping[str, Any], judging: JudgingLog | None) -> None:
        """Enter an item's row as ``items.jsonl`` holds it (``judging``: and what judging it cost)."""
        index = len(self.item_ids)
        scores, undefined, notes = row.get("scores") or {}, row.get("undefined") or {}, row.get("notes") or {}
        for name, column in self._values.items():
            if name not in scores:
                raise ConfigError(
                    f"the finished item {row.get('id')!r} has no value for {name}: the interrupted "
                    "run scored other metrics"
                )
            value = scores[name]
            column.append(float("nan") if value is None else float(value))
            if name in undefined:
                self.undefined[name][index] = undefined[name]
            if name in notes:
                self.notes[name][index] = notes[name]
        if judging is not None:
            spent = row.get("judge") or {}
            judging.add(
                [row["id"]],
                [
                    ItemJudging(
                        int(spent.get("prompt_tokens", 0)),
                        int(spent.get("completion_tokens", 0)),
                        tuple((f["prompt"], f["reason"], None) for f in spent.get("failures", ())),
                    )
                ],
            )
        self.item_ids.append(row["id"])
        self.model_ids.append(row.get("model_id"))
        self.conversations.append(row.get("conversation_id"))
        self.languages.append(row.get("language"))

    def _add_items(self, records: list[Record], languages: list[str | None]) -> None:
        self.item_ids.extend(map(_ID, records))
        self.model_ids.extend(map(_MODEL_ID, records))
        self.conversations.extend(map(_CONVERSATION_ID, records))
        self.languages.extend(languages)

    def result(
        self,
        chosen: list[Metric],
        signatures: Mapping[str, Signature],
        settings: Settings,
        judging: JudgingReport | None,
    ) -> EvalResult:
        """The run's result: every item's scores, and the summaries computed from them."""
        scores = self.columns()
        clusters = cluster_labels(self.conversations, self.model_ids)
        summaries = tuple(
            summarize_columns(
                [
                    Column(
                        m.name,
                        m.aggregation,
                        scores[m.name],
                        self.undefined[m.name],
                        signatures[m.name],
                        self.notes[m.name],
                        m.family,
                        m.five_point,
                    )
                    for m in chosen
                ],
                settings=settings,
                clusters=clusters,
            )
        )
        return EvalResult(
            tuple(self.item_ids),
            tuple(self.model_ids),
            scores,
            self.undefined,
            summaries,
            dict(signatures),
            settings,
            notes=self.notes,
            conversation_ids=tuple(self.conversations),
            judging=judging,
            languages=tuple(self.languages) if any(self.languages) else (),
        )

    def score(
        self,
        batch: list[Record],
        items: list[ItemContext],
        chosen: list[Metric],
        run: RunContext,
        costs: list[ItemJudging] | None,
        *,
        rows: bool,
    ) -> list[dict[str, Any]]:
        """Score a batch metric by metric (a metric with a batch kernel in one call, on the records that
        have its fields), and return the items' rows when ``rows`` is asked for."""
        start = len(self.item_ids)
        values: dict[str, np.ndarray] = {}
        with run.batch_scope():
            for metric in chosen:
                values[metric.name] = self._score_metric(metric, batch, items, run, start)
            languages = run.languages_read(batch)
        self._add_items(batch, languages)
        if not rows:
            return []
        listed = {m: v.tolist() for m, v in values.items()}
        return [
            item_row(
                record.id,
                record.model_id,
                {m: v[offset] for m, v in listed.items()},
                {m: r[start + offset] for m, r in self.undefined.items() if start + offset in r},
                {m: n[start + offset] for m, n in self.notes.items() if start + offset in n},
                conversation_id=record.conversation_id,
                judge=None if costs is None else costs[offset].to_dict(),
                language=languages[offset],
            )
            for offset, record in enumerate(batch)
        ]

    def _score_metric(
        self, metric: Metric, batch: list[Record], items: list[ItemContext], run: RunContext, start: int
    ) -> np.ndarray:
        values = np.full(len(batch), np.nan)
        undefined: dict[int, str] = {}
        complete: Sequence[int] = range(len(batch))
        if metric.checks_fields:
            missing = [metric.missing_field(record) for record in batch]
            undefined = {
                start + i: _missing_reason(reason, batch[i], metric)
                for i, reason in enumerate(missing)
                if reason is not None
            }
            complete = [i for i, reason in enumerate(missing) if reason is None]
        notes: dict[int, str] = {}
        if metric.compute_batch is not None:
            whole = len(complete) == len(batch)
            scored = metric.compute_batch(
                batch if whole else [batch[i] for i in complete], items if whole else [items[i] for i in complete], run
            )
            if whole:  # a slice: numpy turns a range index into an array first (20 µs a call)
                values[:] = scored.values
            else:
                values[complete] = scored.values
            undefined.update((start + complete[i], reason) for i, reason in scored.undefined.items())
            notes.update((start + complete[i], note) for i, note in scored.notes.items())
        else:
            for i in complete:
                outcome = metric.compute(batch[i], items[i], run)
                if isinstance(outcome, Undefined):
                    undefined[start + i] = outcome.reason
                    continue
                if isinstance(outcome, Noted):
                    notes[start + i] = outcome.note
                    outcome = outcome.value
                values[i] = float(outcome)
        if metric.name in self._rates:
            wrong = np.flatnonzero(~np.isnan(values) & (values != 0.0) & (values != 1.0))
            if len(wrong):
                raise ConfigError(
                    f"metric {metric.name!r} is a rate but gave {float(values[wrong[0]])!r} for item "
                    f"{batch[wrong[0]].id!r}: a rate's values are 0 or 1"
                )
        self.undefined[metric.name].update(undefined)
        self.notes[metric.name].update(notes)
        self._values[metric.name].frombytes(values.tobytes())
        return values


def _missing_reason(reason: str, record: Record, metric: Metric) -> str:
    """``reason``, with why the record lacks the field where its reader said (:data:`WHY_MISSING`: a trace's root
    span that ends before it starts gives no ``latency_ms``)."""
    why = record.metadata.get(WHY_MISSING)
    if not isinstance(why, Mapping):
        return reason
    field = next(need for need in metric.needs if (check := FIELD_CHECKS[need]) is not None and not check[0](record))
    told = why.get(field)
    return f"{reason}: {told}" if isinstance(told, str) else reason


class _Progress:
    """A bar on stderr over items; with a judge, its line also counts the judge calls of the current batch
    as they finish, so a slow judge shows progress from its first call."""

    def __init__(self, enabled: bool, total: int | None, *, judge: Judge | None, done: int) -> None:
        self._bar = None
        self._judge = judge
        self._calls = self._calls_done = 0
        if enabled:
            from tqdm import tqdm

            self._bar = tqdm(total=total, initial=done, unit="item", desc="scoring", leave=False)
            if judge is not None:
                judge.on_call_done = self._call_done

    def judge_calls(self, n: int) -> None:
        self._calls, self._calls_done = n, 0
        self._show_calls()

    def _call_done(self) -> None:
        self._calls_done += 1
        self._show_calls()

    def _show_calls(self) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(f"judge calls {self._calls_done}/{self._calls} in this batch")

    def items_done(self, n: int) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            if self._judge is not None:
                self._judge.on_call_done = None  # the caller's judge is theirs again


@dataclass(frozen=True)
class JudgePlan:
    """What a run's judged metrics would ask, by prompt: ``calls`` (distinct), ``cached`` (already in the
    cache), and for the calls still to make, ``prompt_tokens`` (estimated: characters / 4 plus 4 per
    message) and ``completion_tokens`` (at most: each call's token limit). ``undecided``: the calls still to
    make whose verdicts decide further calls (:attr:`~ragmeter.judges.engine.JudgeCall.decides_more`), which the
    plan does not count."""

    n_items: int
    by_prompt: Mapping[str, Mapping[str, int]]
    undecided: int = 0

    def totals(self) -> dict[str, int]:
        keys = ("calls", "cached", "prompt_tokens", "completion_tokens")
        return {k: sum(p[k] for p in self.by_prompt.values()) for k in keys}


def plan_judging(
    records: Iterable[Record | Mapping[str, Any]],
    *,
    metrics: Sequence[str] | None,
    settings: Settings | None = None,
    judge: Judge,
) -> JudgePlan:
    """The judge calls :func:`evaluate` would make, counted and estimated without making any (``--dry-run``)."""
    run = RunContext(settings or Settings(), judge=judge)
    chosen = [m for m in resolve_metrics(metrics) if "judge" in m.resources]
    calls: list[JudgeCall] = []
    n_items = 0
    for record in _as_records(records):
        n_items += 1
        item = ItemContext()
        for metric in chosen:
            if metric.prefetch is not None and metric.missing_field(record) is None:
                calls.extend(metric.prefetch(record, item, run))
    return plan_calls(calls, judge, n_items)


def plan_calls(planned: Iterable[JudgeCall], judge: Judge, n_items: int) -> JudgePlan:
    """``planned`` calls counted by prompt (each distinct call once), those in ``judge``'s cache apart, and the
    tokens of the others estimated."""
    planned = list(planned)
    calls = {judge.key(call): call for call in planned}
    cached = judge.cache.present(calls) if judge.cache is not None else set()
    undecided = {judge.key(call) for call in planned if call.decides_more} - cached
    by_prompt: dict[str, dict[str, int]] = {}
    for key, call in calls.items():
        counts = by_prompt.setdefault(
            call.prompt.name, dict.fromkeys(("calls", "cached", "prompt_tokens", "completion_tokens"), 0)
        )
        counts["calls"] += 1
        if key in cached:
            counts["cached"] += 1
            continue
        counts["prompt_tokens"] += sum(len(content) // 4 + 4 for _, content in call.request.messages)
        counts["completion_tokens"] += call.request.max_tokens
    return JudgePlan(n_items, by_prompt, len(undecided))


def _as_records(records: Any, column_map: Mapping[str, str] | None = None) -> Iterator[Record]:
    from ragmeter.io.objects import is_framework_object

    if is_framework_object(records):
        return _framework_records(records, column_map)
    if column_map:
        raise ConfigError("column_map applies to a DataFrame or a Hugging Face dataset; these records are neither")
    if isinstance(records, (list, tuple)) and all(map(isinstance, records, repeat(Record))):
        return iter(records)  # nothing to read or validate
    return (
        record if isinstance(record, Record) else record_from_dict(record, line=position)
        for position, record in enumerate(records, start=1)
    )


def _framework_records(records: Any, column_map: Mapping[str, str] | None) -> Iterator[Record]:
    from ragmeter.io.objects import object_records

    for item in object_records(records, column_map=column_map):
        if isinstance(item, InputError):
            raise item
        yield item
