"""MT-RAG's evaluation pipeline, step by step, on MT-RAG generation-task JSONL (seed 004, SPEC §5).

Each step reads every record of the input, adds its values to the record's ``metrics`` object (lists,
as MT-RAG writes them) and writes the record to ``OUT.partial``, flushed and fsynced batch by batch;
when all records are done the file is renamed to ``OUT`` in one atomic step. A crash leaves
``OUT.partial``; the next run with the same ``OUT`` keeps its complete records and goes on from there.
A value already present in a record's ``metrics`` is never recomputed or changed, so a step re-run on
its own output is a no-op. The input is never written to.

A partial output records the step and the settings that made it (``OUT.partial.json``); a run with another
step or other settings refuses to go on from it, so one output never mixes values made two ways.

Steps: ``algorithmic`` (ROUGE-L, BERTScore, Recall, Length, RB_agg …), ``idk_condition`` (``*_idk``
for every base metric present: RB_agg, RB_llm, RL_F) and ``all`` (both). The judged steps ``idk``,
``ragas`` and ``radbench`` are not wired to ragmeter's judge yet: the command says so.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from ragmeter._files import atomic_write_text, complete_jsonl_rows
from ragmeter._iter import batched
from ragmeter.context import RunContext
from ragmeter.errors import ConfigError, InputError
from ragmeter.io.mtrag import record_from_mtrag
from ragmeter.io.readers import jsonl_objects
from ragmeter.metrics.mtrag import (
    bertscore_baseline,
    bertscore_settings,
    idk_condition,
    idk_eval_from_detector,
    mtrag_algorithmic,
    rb_agg,
)
from ragmeter.models.base import TokenEncoder
from ragmeter.records import Record
from ragmeter.settings import Settings

__all__ = ["ALGORITHMIC_METRICS", "CONDITIONED", "JUDGED_STEPS", "STEPS", "StepReport", "check_step", "partial_paths",
           "run_step", "step_made_by"]

STEPS = ("algorithmic", "idk", "ragas", "radbench", "idk_condition", "all")
JUDGED_STEPS = ("idk", "ragas", "radbench")
ALGORITHMIC_METRICS = ("Recall", "RougeL_stemFalse", "BertscoreP", "BertscoreR", "Length", "LengthChars",
                       "BertKPrec", "Extractiveness_RougeL", "RB_agg", "RB_agg_zero_denominator")
#: base metric → its IDK-conditioned version
CONDITIONED = {"RB_agg": "RB_agg_idk", "RB_llm": "RB_llm_idk", "RL_F": "RL_F_idk"}


@dataclass
class StepReport:
    """What a step did: records written, taken over from an earlier partial run, computed, skipped
    (invalid input, with their errors), and where each ``idk_eval`` came from."""

    output: Path
    written: int = 0
    resumed: int = 0
    computed: int = 0
    skipped: list[InputError] = field(default_factory=list)
    idk_sources: Counter[str] = field(default_factory=Counter)
    signatures: dict[str, str] = field(default_factory=dict)

    @property
    def summary_path(self) -> Path:
        """Where the step's summary goes: ``OUT.summary.json``."""
        return self.output.with_name(self.output.name + ".summary.json")


def _key(row: dict[str, Any]) -> tuple[Any, Any]:
    return (row.get("task_id"), row.get("model_id"))


def partial_paths(output: str | Path) -> tuple[Path, Path]:
    """Where a step writes ``output`` as it goes (``OUT.partial``), and what made it (``OUT.partial.json``)."""
    partial = Path(output).with_name(Path(output).name + ".partial")
    return partial, partial.with_name(partial.name + ".json")


def step_made_by(step: str, source: str | Path, settings: Settings) -> dict[str, Any]:
    """What a partial output records about the run that made it: the step, the input and the settings its
    values depend on."""
    made: dict[str, Any] = {"step": step, "input": str(source)}
    if step in ("algorithmic", "all"):
        made.update(bertscore_model=settings.bertscore_model, bertscore_layer=settings.bertscore_layer,
                    bertscore_baseline=settings.bertscore_baseline)
    if step in ("idk_condition", "all"):
        made["idk"] = settings.idk.version
    return made


def _resume(output: Path, made_by: dict[str, Any]) -> list[tuple[Any, Any]]:
    """Keys of the complete records of a partial output, in order (a torn last line is cut off); a partial
    output made by another step or with other settings (``made_by``) is refused."""
    partial, sidecar = partial_paths(output)
    if partial.exists():
        try:
            previous = json.loads(sidecar.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            previous = None
        if previous != made_by:
            differs = ("an unknown step and settings" if not isinstance(previous, dict) else ", ".join(
                f"{key} {previous.get(key)!r} (now {value!r})" for key, value in made_by.items()
                if previous.get(key) != value))
            raise ConfigError(f"{partial} was made with {differs}: rerun with the same step and options to go "
                              "on from it, or delete it to start afresh")
    atomic_write_text(sidecar, json.dumps(made_by, indent=2))
    return [_key(row) for row in complete_jsonl_rows(partial)]


def _needs_algorithmic(row: dict[str, Any], record: Record) -> bool:
    present = row.get("metrics") or {}
    return not all(name in present for name in _expected_algorithmic(record))


def _algorithmic(row: dict[str, Any], record: Record, run: RunContext) -> bool:
    if not _needs_algorithmic(row, record):
        return False
    metrics = row.setdefault("metrics", {})
    texts = [record.answer, *record.references, *(c.text for c in record.contexts)]
    values = mtrag_algorithmic(record.answer, record.references, [c.text for c in record.contexts],
                               tokens=run.token_embeddings(texts), baseline=bertscore_baseline(run))
    aggregates = ("RB_agg", "RB_agg_zero_denominator")
    for name, value in values.items():
        if name not in aggregates:
            metrics.setdefault(name, value)
    if "RB_agg" not in metrics:
        # RB_agg reads the record's own values, including any that were there before this step.
        aggregate = rb_agg(bertscore_recall=_first(metrics, "BertscoreR"),
                           rouge_l_value=_first(metrics, "RougeL_stemFalse"),
                           max_bert_k_prec=max(metrics["BertKPrec"]) if metrics.get("BertKPrec") else None)
        metrics["RB_agg"] = [aggregate.value]
        metrics.setdefault("RB_agg_zero_denominator", [aggregate.zero_denominator])
    return True


def _first(metrics: dict[str, Any], name: str) -> float | None:
    values = metrics.get(name)
    return float(values[0]) if values else None


def _expected_algorithmic(record: Record) -> list[str]:
    names = ["RB_agg", "RB_agg_zero_denominator"]
    if record.references:
        names += ["Recall", "RougeL_stemFalse", "BertscoreP", "BertscoreR", "Length", "LengthChars"]
    if record.contexts:
        names += ["BertKPrec", "Extractiveness_RougeL"]
    return names


def _condition(row: dict[str, Any], record: Record, settings: Settings, report: StepReport) -> bool:
    metrics = row.setdefault("metrics", {})
    pending = [base for base, conditioned in CONDITIONED.items() if base in metrics and conditioned not in metrics]
    if not pending:
        return False
    if "idk_eval" not in metrics:
        metrics["idk_eval"] = [idk_eval_from_detector(record.answer, settings.idk)]
        metrics["idk_eval_source"] = [f"detector:{settings.idk.version}"]
    source = (metrics.get("idk_eval_source") or ["record"])[0]
    report.idk_sources[source] += 1
    for base in pending:
        metrics[CONDITIONED[base]] = [idk_condition(float(metrics[base][0]), answerability=record.answerability,
                                                    idk_eval=float(metrics["idk_eval"][0]))]
    return True


def _rows(path: Path, report: StepReport, done: list[tuple[Any, Any]],
          partial: Path) -> Iterator[tuple[dict[str, Any], Record]]:
    """Valid input rows in order, after the ones a partial output already holds (matched by position;
    a partial output whose records are not the input's first ones is refused)."""
    for line, obj in jsonl_objects(path):
        if isinstance(obj, InputError):
            report.skipped.append(obj)
            continue
        try:
            record = record_from_mtrag(obj, path=str(path), line=line)
        except InputError as error:
            report.skipped.append(error)
            continue
        if report.resumed < len(done):
            if _key(obj) != done[report.resumed]:
                raise ConfigError(f"{partial} holds records of another input (line {line} of {path} is not its "
                                  f"record {report.resumed + 1}): delete it to start afresh")
            report.resumed += 1
            continue
        yield obj, record


def check_step(step: str, input_path: str | Path, output_path: str | Path) -> None:
    """Raise :class:`ConfigError` for a step that cannot run, before anything is read."""
    if step in JUDGED_STEPS:
        raise ConfigError(f"step '{step}' (one of MT-RAG's judged steps: idk, ragas, radbench) is not wired to "
                          "ragmeter's judge yet; run --step algorithmic, idk_condition or all (seed 002's judged "
                          "metrics are in 'ragmeter run --judge')")
    if step not in STEPS:
        raise ConfigError(f"unknown step {step!r}: choose one of {', '.join(STEPS)}")
    if Path(input_path).resolve() == Path(output_path).resolve():
        raise ConfigError("the output must be a new file: a step never rewrites its input in place")
    output = Path(output_path)
    if output.is_dir():
        raise ConfigError(f"the output {output} is a folder: give a file name, e.g. {output / 'scored.jsonl'}")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the output's folder {output.parent}: {exc.strerror or exc}") from None
    if not os.access(output.parent, os.W_OK):
        raise ConfigError(f"cannot write in {output.parent}: choose an output in a folder you can write to")


def run_step(step: str, input_path: str | Path, output_path: str | Path, *, settings: Settings | None = None,
             token_encoder: TokenEncoder | None = None, batch_size: int = 32) -> StepReport:
    """Run one pipeline step from ``input_path`` to ``output_path`` (see the module docstring).

    Invalid records are left out and listed in the report; validate the file first (``ragmeter
    validate --input-format mtrag``) to stop on them instead.
    """
    check_step(step, input_path, output_path)
    source, target = Path(input_path), Path(output_path)
    settings = settings or Settings()
    run = RunContext(settings, token_encoder=token_encoder)
    partial, sidecar = partial_paths(target)
    report = StepReport(output=target)
    done = _resume(target, step_made_by(step, source, settings))
    with partial.open("a", encoding="utf-8") as handle:
        for batch in batched(_rows(source, report, done, partial), batch_size):
            if step in ("algorithmic", "all"):
                texts = [text for row, record in batch if _needs_algorithmic(row, record)
                         for text in (record.answer, *record.references, *(c.text for c in record.contexts))]
                if texts:
                    run.prefetch("token_encoder", texts)
            for row, record in batch:
                changed = step in ("algorithmic", "all") and _algorithmic(row, record, run)
                changed = (step in ("idk_condition", "all") and _condition(row, record, settings, report)) or changed
                report.computed += changed
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
            report.written += len(batch)
    os.replace(partial, target)
    sidecar.unlink(missing_ok=True)
    report.written += report.resumed
    if step in ("algorithmic", "all"):
        bert = bertscore_settings(run)
        report.signatures["bertscore"] = f"{bert['bertscore_model']}|baseline:{bert['bertscore_baseline']}"
    return report

