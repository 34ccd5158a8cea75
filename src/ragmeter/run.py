"""The run loop: stream records in batches, score every item, write as you go, then aggregate.

Per batch, expensive metrics first *prefetch*: the texts they will embed are encoded in one
length-sorted pass (each distinct text once per run, via :class:`~ragmeter.models.CachedEmbedder`);
then each item is scored by every metric, sharing one :class:`~ragmeter.scoring.ItemContext`. Finished
items go to ``on_items`` before the next batch starts, so a crash loses at most one batch. Records
are not kept: memory grows with the number of scores, not with the size of the records.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ragmeter._iter import batched
from ragmeter.io.native import record_from_dict
from ragmeter.metrics import Metric, resolve_metrics
from ragmeter.metrics._registry import Noted, Undefined
from ragmeter.models import Embedder, TokenEncoder
from ragmeter.records import Record
from ragmeter.judges import Judge, JudgeCall
from ragmeter.result import EvalResult, JudgingLog, item_row, summarize
from ragmeter.scoring import ItemContext, ItemJudging, RunContext, Settings
from ragmeter.signature import Signature

__all__ = ["JudgePlan", "evaluate", "plan_judging"]

ItemSink = Callable[[list[dict[str, Any]]], None]
TOKEN_BATCH = 32


def evaluate(records: Iterable[Record | Mapping[str, Any]], *, metrics: Sequence[str] | None = None,
             settings: Settings | None = None, embedder: Embedder | None = None,
             token_encoder: TokenEncoder | None = None, judge: Judge | None = None,
             on_items: ItemSink | None = None, batch_size: int = 256, progress: bool = False,
             total: int | None = None) -> EvalResult:
    """Score ``records`` with ``metrics``: metric or family names; ``None`` gives the citation, lexical
    and efficiency families (the seeds 000/001 report).

    ``records`` are :class:`Record` objects or dicts in ragmeter's native format (validated; a bad
    one raises :class:`~ragmeter.errors.InputError` naming its position and field). ``embedder``
    and ``token_encoder`` (BERTScore) replace the ones ``settings`` names. ``judge`` serves the judged
    metrics (:func:`ragmeter.judges.open_judge`); its usage counters restart here, and the result reports
    them with each item's judge tokens and every failed call. ``on_items`` receives each finished batch of
    per-item rows (the shape of ``items.jsonl``). ``progress`` shows a bar on stderr.

    >>> result = evaluate([{"question": "Capital of France?", "answer": "Paris.",
    ...                     "references": ["Paris"]}], metrics=["exact_match", "token_f1"])
    >>> result.summary("exact_match").value
    1.0
    """
    settings = settings or Settings()
    chosen = resolve_metrics(metrics)
    run = RunContext(settings, embedder=embedder, token_encoder=token_encoder, judge=judge)
    if any("judge" in m.resources for m in chosen):
        run.judge.usage.clear()  # fails here, before any record is read, when no judge was given
    signatures = {m.name: Signature(m.name, {s: run.setting(s) for s in m.settings}) for m in chosen}
    columns: dict[str, array[float]] = {m.name: array("d") for m in chosen}
    undefined: dict[str, dict[int, str]] = {m.name: {} for m in chosen}
    notes: dict[str, dict[int, str]] = {m.name: {} for m in chosen}
    item_ids: list[str] = []
    model_ids: list[str | None] = []
    conversations: list[str | None] = []
    judging = JudgingLog()

    if any("token_encoder" in m.resources for m in chosen):
        batch_size = min(batch_size, TOKEN_BATCH)  # token embeddings are large: keep a batch's in memory
    bar = _progress_bar(progress, total)
    for batch in batched(_as_records(records), batch_size):
        rows = _score_batch(batch, chosen, run, start=len(item_ids), columns=columns, undefined=undefined,
                            notes=notes, judging=judging, rows=on_items is not None)
        item_ids.extend(record.id for record in batch)
        model_ids.extend(record.model_id for record in batch)
        conversations.extend(record.conversation_id for record in batch)
        if on_items is not None:
            on_items(rows)
        if bar is not None:
            bar.update(len(batch))
    if bar is not None:
        bar.close()

    scores = {name: np.frombuffer(column, dtype=float) if len(column) else np.zeros(0)
              for name, column in columns.items()}
    clusters = _clusters(item_ids, conversations)
    summaries = tuple(summary for m in chosen
                      for summary in summarize(m, scores[m.name], undefined[m.name], clusters=clusters,
                                               settings=settings, signature=signatures[m.name],
                                               notes=notes[m.name]))
    return EvalResult(tuple(item_ids), tuple(model_ids), scores, undefined, summaries, signatures, settings,
                      notes=notes, judging=judging.report(judge) if judge is not None else None)


def _score_batch(batch: list[Record], chosen: list[Metric], run: RunContext, *, start: int,
                 columns: dict[str, array[float]], undefined: dict[str, dict[int, str]],
                 notes: dict[str, dict[int, str]], judging: JudgingLog, rows: bool) -> list[dict[str, Any]]:
    """Score a batch metric by metric (a metric with a batch kernel in one call), record undefined
    reasons and notes by item index, and return the items' rows when ``rows`` is asked for."""
    items = [ItemContext() for _ in batch]
    costs: list[ItemJudging] | None = None
    for resource in sorted({r for m in chosen for r in m.resources}):
        wanted = [[need for m in chosen if m.prefetch is not None and resource in m.resources
                   and m.missing_field(record) is None for need in m.prefetch(record, item, run)]
                  for record, item in zip(batch, items, strict=True)]
        if resource == "judge":
            costs = run.prefetch_judge(wanted)
            judging.add(batch, costs)
        elif any(wanted):
            run.prefetch(resource, [text for texts in wanted for text in texts])
    values: dict[str, list[float]] = {}
    with run.batch_scope():
        for metric in chosen:
            missing = [metric.missing_field(record) for record in batch]
            if metric.compute_batch is not None:
                outcomes = metric.compute_batch(batch, items, run)
            else:
                outcomes = [metric.compute(record, item, run) if reason is None else Undefined(reason)
                            for record, item, reason in zip(batch, items, missing, strict=True)]
            column = values[metric.name] = []
            for offset, (outcome, reason) in enumerate(zip(outcomes, missing, strict=True)):
                if reason is not None:
                    outcome = Undefined(reason)
                if isinstance(outcome, Undefined):
                    column.append(float("nan"))
                    undefined[metric.name][start + offset] = outcome.reason
                elif isinstance(outcome, Noted):
                    column.append(outcome.value)
                    notes[metric.name][start + offset] = outcome.note
                else:
                    column.append(float(outcome))
            columns[metric.name].extend(column)
    if not rows:
        return []
    return [item_row(record.id, record.model_id, {m: v[offset] for m, v in values.items()},
                     {m: r[start + offset] for m, r in undefined.items() if start + offset in r},
                     {m: n[start + offset] for m, n in notes.items() if start + offset in n},
                     judge=None if costs is None else costs[offset])
            for offset, record in enumerate(batch)]


@dataclass(frozen=True)
class JudgePlan:
    """What a run's judged metrics would ask, by prompt: ``calls`` (distinct), ``cached`` (already in the
    cache), and for the calls still to make, ``prompt_tokens`` (estimated: characters / 4 plus 4 per
    message) and ``completion_tokens`` (at most: each call's token limit)."""

    n_items: int
    by_prompt: Mapping[str, Mapping[str, int]]

    def totals(self) -> dict[str, int]:
        keys = ("calls", "cached", "prompt_tokens", "completion_tokens")
        return {k: sum(p[k] for p in self.by_prompt.values()) for k in keys}


def plan_judging(records: Iterable[Record | Mapping[str, Any]], *, metrics: Sequence[str] | None,
                 settings: Settings | None = None, judge: Judge) -> JudgePlan:
    """The judge calls :func:`evaluate` would make, counted and estimated without making any (``--dry-run``)."""
    run = RunContext(settings or Settings(), judge=judge)
    chosen = [m for m in resolve_metrics(metrics) if "judge" in m.resources and m.prefetch is not None]
    calls: dict[str, JudgeCall] = {}
    n_items = 0
    for record in _as_records(records):
        n_items += 1
        item = ItemContext()
        for metric in chosen:
            if metric.missing_field(record) is None:
                calls.update((judge.key(call), call) for call in metric.prefetch(record, item, run))
    cached = judge.cache.present(calls) if judge.cache is not None else set()
    by_prompt: dict[str, dict[str, int]] = {}
    for key, call in calls.items():
        counts = by_prompt.setdefault(call.prompt.name, dict.fromkeys(
            ("calls", "cached", "prompt_tokens", "completion_tokens"), 0))
        counts["calls"] += 1
        if key in cached:
            counts["cached"] += 1
            continue
        counts["prompt_tokens"] += sum(len(content) // 4 + 4 for _, content in call.request.messages)
        counts["completion_tokens"] += call.request.max_tokens
    return JudgePlan(n_items, by_prompt)


def _as_records(records: Iterable[Record | Mapping[str, Any]]) -> Iterable[Record]:
    for position, record in enumerate(records, start=1):
        yield record if isinstance(record, Record) else record_from_dict(record, line=position)


def _clusters(item_ids: list[str], conversations: list[str | None]) -> list[str] | None:
    """Conversation ids for resampling, or ``None`` when no two items share a conversation."""
    known = [c for c in conversations if c is not None]
    if len(set(known)) == len(known):
        return None
    return [c if c is not None else f"item:{i}" for i, c in zip(item_ids, conversations, strict=True)]


def _progress_bar(enabled: bool, total: int | None) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="item", desc="scoring", leave=False)
