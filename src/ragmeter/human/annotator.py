"""An LLM annotator of seed 003's labels (``ragmeter labels annotate``), for when no person has labelled the data.

It fills the annotation template of :mod:`ragmeter.human.annotation_files` (one row per answer, one per chunk) as one
annotator, named after the judge and the prompts (``llm:<judge identity>:<prompt hashes>``), so that
``ragmeter labels merge`` reads its file beside human ones and its agreement table shows the LLM against each
person, label by label. Per record:

- *chunk labels* (``topically_relevant``, ``evidence_sufficient``, ``misleading``): one call labelling every
  chunk (``chunk_labels``);
- *grounding labels* of the answer from the claims verdict the judged metrics make (``claims``, evidence-checked
  as ``Settings.check_evidence`` says): ``support_present`` when a claim is supported, ``unsupported_claim_present``
  and ``contradicted_claim_present`` when one is; an answer that abstains has none of them; an answer given with
  no chunk has unsupported claims and no supported one, with no call. The annotator asks for verdicts whatever
  the judge's claims mode (a judge that only splits cannot call a claim contradicted);
- ``source_cited`` and ``fabricated_source`` from the answer's ``[CIT:…]`` markers against the retrieved doc ids,
  with no call;
- *generation labels* (``proper_action``, ``response_on_topic``, ``helpful``, ``incomplete``,
  ``unsafe_content``): one call (``generation_labels``).

Calls go through the judge layer (structured replies, one repair, retries, cache, usage). A row whose call
failed is not written (a guessed label would pass for the model's), and the failure is returned with its
reason; ``labels merge`` then counts the row as missing for this annotator.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.core.records import ALL_LABELS, ANSWER_LABELS, CHUNK_LABELS, Record
from ragmeter.core.settings import Settings
from ragmeter.human.annotation_files import template_rows
from ragmeter.judges.engine import Judge, JudgeCall, JudgeOutcome
from ragmeter.judges.prompts import (
    CHUNK_LABELLING,
    CLAIMS,
    GENERATION_LABEL_NAMES,
    GENERATION_LABELLING,
    chunk_labels_request,
    claims_request,
    generation_labels_request,
)
from ragmeter.metrics.citation import abstained
from ragmeter.metrics.judged import verdict_claims
from ragmeter.metrics.labels import derived_source_labels
from ragmeter.text.languages import record_language

__all__ = ["Annotation", "annotate", "annotator_name", "planned_calls"]

GROUNDING = ("support_present", "unsupported_claim_present", "contradicted_claim_present")


def annotator_name(judge: Judge) -> str:
    """The annotator's name in the files: the judge's identity and a hash of the three prompts it uses."""
    prompts = hashlib.sha256(
        "".join(p.hash for p in (CHUNK_LABELLING, CLAIMS, GENERATION_LABELLING)).encode()
    ).hexdigest()
    return f"llm:{judge.identity}:{prompts[:8]}"


@dataclass
class Annotation:
    """The filled rows (the template's, with 0/1 in every label cell that applies) and the failed calls."""

    annotator: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)


def _calls(record: Record, labels: Sequence[str], settings: Settings) -> dict[str, JudgeCall]:
    calls = {}
    if record.contexts and any(name in CHUNK_LABELS for name in labels):
        calls["chunk_labels"] = JudgeCall(CHUNK_LABELLING, chunk_labels_request(record), len(record.contexts))
    language = record_language(record, settings.language)
    answers = not abstained(record.answer, idk=settings.idk, action=record.action, language=language)
    if record.contexts and answers and any(name in GROUNDING for name in labels):
        calls["claims"] = JudgeCall(CLAIMS, claims_request(record, record.answer, language), len(record.contexts))
    if any(name in GENERATION_LABEL_NAMES for name in labels):
        calls["generation_labels"] = JudgeCall(GENERATION_LABELLING, generation_labels_request(record))
    return calls


def _grounding(record: Record, outcome: JudgeOutcome | None, settings: Settings) -> dict[str, int]:
    """The three grounding labels from the (checked) claims verdict; without a call, from the answer alone."""
    language = record_language(record, settings.language)
    if abstained(record.answer, idk=settings.idk, action=record.action, language=language):
        return dict.fromkeys(GROUNDING, 0)
    if not record.contexts:
        return {"support_present": 0, "unsupported_claim_present": 1, "contradicted_claim_present": 0}
    assert outcome is not None and outcome.verdict is not None
    verdicts = {
        c.verdict
        for c in verdict_claims(
            outcome.verdict, record, record.answer, check_evidence=settings.check_evidence, language=language
        )
    }
    return {
        "support_present": int("supported" in verdicts),
        "unsupported_claim_present": int("unsupported" in verdicts),
        "contradicted_claim_present": int("contradicted" in verdicts),
    }


def planned_calls(
    records: Iterable[Record], labels: Sequence[str] = ALL_LABELS, settings: Settings | None = None
) -> Iterator[JudgeCall]:
    """The judge calls :func:`annotate` would make for ``records`` (``--dry-run`` counts them)."""
    settings = settings or Settings()
    for record in records:
        yield from _calls(record, labels, settings).values()


def annotate(
    records: Iterable[Record],
    judge: Judge,
    *,
    labels: Sequence[str] = ALL_LABELS,
    settings: Settings | None = None,
    batch_size: int = 16,
) -> Annotation:
    """Label ``records`` with ``judge`` (see the module docstring); the calls of ``batch_size`` records go to the
    judge together, so a remote endpoint serves them concurrently."""
    settings = settings or Settings()
    result = Annotation(annotator_name(judge))
    batch: list[Record] = []
    for record in records:
        batch.append(record)
        if len(batch) == batch_size:
            _annotate_batch(batch, judge, labels, settings, result)
            batch = []
    if batch:
        _annotate_batch(batch, judge, labels, settings, result)
    return result


def _annotate_batch(
    records: list[Record], judge: Judge, labels: Sequence[str], settings: Settings, result: Annotation
) -> None:
    planned = [_calls(record, labels, settings) for record in records]
    flat = [call for calls in planned for call in calls.values()]
    outcomes = iter(judge.run(flat))
    for record, calls in zip(records, planned, strict=True):
        got = {name: next(outcomes) for name in calls}
        failed = {name for name, outcome in got.items() if outcome.verdict is None}
        for name in sorted(failed):
            result.failures.append(
                {"record_id": record.id, "model_id": record.model_id or "", "prompt": name, "reason": got[name].failure}
            )
        for row in template_rows([record], labels, annotator=result.annotator):
            if row["unit"] == "answer":
                if failed & {"claims", "generation_labels"}:
                    continue
                values = _answer_labels(record, got, labels, settings)
            else:
                if "chunk_labels" in failed:
                    continue
                values = got["chunk_labels"].verdict["chunks"][int(row["rank"]) - 1]  # type: ignore[index]
            result.rows.append({**row, **{name: values[name] for name in labels if row.get(name) == ""}})


def _answer_labels(
    record: Record, got: dict[str, JudgeOutcome], labels: Sequence[str], settings: Settings
) -> dict[str, int]:
    cited, fabricated = derived_source_labels(record.answer, [chunk.doc_id for chunk in record.contexts])
    values = {"source_cited": cited, "fabricated_source": fabricated}
    if any(name in GROUNDING for name in labels):
        values.update(_grounding(record, got.get("claims"), settings))
    if "generation_labels" in got:
        verdict = got["generation_labels"].verdict or {}
        values.update({name: verdict[name] for name in GENERATION_LABEL_NAMES})
    return {name: values[name] for name in ANSWER_LABELS if name in values}
