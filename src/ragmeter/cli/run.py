"""``ragmeter run``: score a file of records into a run folder and print the report."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from ragmeter._version import __version__
from ragmeter.app.run import RunFailed, RunOutcome, RunPlan, RunRequest, plan_run, run_to_folder
from ragmeter.cli import judge_options
from ragmeter.cli.common import (
    Command,
    GateReports,
    format_options,
    gate_options,
    input_options,
    overwrite_option,
    path_arg,
    refuse_unused,
    report_check,
    report_stream,
    setting_option,
    settings_from,
    shown,
    statistics_options,
    write_gate_reports,
)
from ragmeter.core.errors import ConfigError
from ragmeter.core.files import atomic_write_text
from ragmeter.core.settings import (
    Settings,
    parse_tau_sim,
)
from ragmeter.io.demo import DEMOS, demo_path
from ragmeter.io.readers import FileCheck, parse_column_map
from ragmeter.io.run_folder import CACHE_FILE, RunFolder
from ragmeter.judges.accounting import JudgingReport
from ragmeter.metrics import get_metric
from ragmeter.models import EMBEDDER_BACKENDS
from ragmeter.models.multilingual_e5 import TAU_SIM as MULTILINGUAL_TAU_SIM
from ragmeter.report import render_report
from ragmeter.report.gate import render_requirements, requirements_suite
from ragmeter.report.html import render_html
from ragmeter.report.markdown import render_report_markdown
from ragmeter.results.paired import Threshold
from ragmeter.results.requirements import check_requirements, parse_requirement
from ragmeter.text.languages import LANGUAGE_CHOICES

#: Records from which a run without a judge shows a progress bar (smaller runs finish before it helps).
PROGRESS_FROM = 200


def _threshold(text: str) -> Threshold:
    try:
        return Threshold.parse(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _tau_sim(text: str) -> float | dict[str, float]:
    try:
        return parse_tau_sim(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(run: argparse.ArgumentParser) -> None:
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("file", nargs="?", type=path_arg, help="records: JSONL (native, MT-RAG, RAGAS), CSV or Parquet")
    source.add_argument(
        "--demo",
        nargs="?",
        const="v1",
        choices=DEMOS,
        help="use the bundled demo dataset: v1 (default), gate: the same questions with the "
        "assistant's uncertainty gate on (compare the two with 'ragmeter compare'), or id: an "
        "Indonesian help desk",
    )
    input_options(run)
    run.add_argument(
        "--metrics",
        help="comma-separated metric or family names (default: citation,lexical,"
        "efficiency, and judged with --judge; see 'ragmeter metrics')",
    )
    run.add_argument(
        "--out",
        type=path_arg,
        default=Path("ragmeter-out"),
        help="folder for items.jsonl and summary.json (default: ragmeter-out)",
    )
    run.add_argument(
        "--parquet", action="store_true", help="also write items.parquet (pip install 'ragmeter[parquet]')"
    )
    run.add_argument(
        "--resume",
        action="store_true",
        help="finish an interrupted run in --out: its finished items are kept, only the rest is "
        "scored (finished judge calls come from the judge's cache)",
    )
    overwrite_option(run, "a finished run in --out and an existing --html file")
    run.add_argument(
        "--format",
        choices=("table", "markdown", "json"),
        default="table",
        help="report format on stdout: table (terminal), markdown (the same tables) or json",
    )
    run.add_argument(
        "--html",
        type=path_arg,
        metavar="FILE",
        help="also write the report as one self-contained HTML page (pip install 'ragmeter[html]')",
    )
    run.add_argument(
        "--write-back",
        nargs=2,
        metavar=("otel", "FILE"),
        help="put each trace's scores on its trace: an OTLP JSON file of one evaluation span per "
        "trace, for an OTel collector or Phoenix (input: OpenTelemetry traces; pip install "
        "'ragmeter[otel]')",
    )
    run.add_argument(
        "--grounded",
        type=_threshold,
        metavar="METRIC:VALUE",
        help="the paired analysis's grounded items: METRIC at least VALUE (default: the first the run "
        "has of judge_faithfulness_idk:0.5, judge_faithfulness:0.5, faithfulness_offline:0.5, "
        "faithfulness_fallback:0.8, "
        "overlap:0.5; the fallback's 0.8 is Overlap ≥ 0.5, since every answer's fallback is at "
        "least 0.6; a METRIC alone takes its default)",
    )
    run.add_argument(
        "--correct",
        type=_threshold,
        metavar="METRIC:VALUE",
        help="the paired analysis's correct items (default: token_f1:0.5, else exact_match:1)",
    )
    run.add_argument("--limit", type=int, help="score only the first N valid records")
    engine = run.add_argument_group("engine")
    engine.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local (this process, default) or ray: Ray Data on a cluster, for files too large for "
        "one machine; FILE may then be a folder or a glob of shards (pip install "
        "'ragmeter[ray]')",
    )
    engine.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="the Ray cluster to join (auto: the one 'ray start --head' began here; "
        "ray://HOST:10001 for a remote one); default: a Ray instance started for this run",
    )
    engine.add_argument(
        "--workers", type=int, help="scoring actors (default: the cluster's CPUs), each holding the embedding model"
    )
    run.add_argument(
        "--language",
        choices=LANGUAGE_CHOICES,
        default=Settings.language,
        help="the language of records without a 'language' field: auto (detected from each record's "
        "question and answer; default), en or id (Indonesian). A record's own 'language' field "
        "always wins, over en and id too; the report says how many records it overrode",
    )
    run.add_argument(
        "--tau-sim",
        type=_tau_sim,
        default=Settings.tau_sim,
        metavar="TAU | CODE=TAU,...",
        help="Overlap cosine threshold: one number for every language's embedder (the report notes "
        "each language whose embedder's own it replaces), or CODE=NUMBER pairs that set those "
        "languages' only (en=0.7 leaves Indonesian at its own); default: each embedder's own: "
        f"0.65 for MiniLM, {MULTILINGUAL_TAU_SIM:g} for the multilingual one",
    )
    run.add_argument(
        "--embedder",
        choices=EMBEDDER_BACKENDS,
        default=Settings.embedder,
        help="embedding backend: auto (default: the language's own: onnx for English, multilingual "
        "for Indonesian), onnx (packaged MiniLM), multilingual (packaged multilingual-e5-small), "
        "torch (extra), hashing (tests only)",
    )
    setting_option(
        run,
        "--normalize",
        "normalization",
        "EM and token F1's normalisation: squad (the SQuAD v1.1 script's, default) or extended "
        "(also anak-anak = anak anak, Rp25.000 = Rp 25.000)",
    )
    run.add_argument("--idk-patterns", type=path_arg, help="file of IDK regular expressions, one per line")
    setting_option(
        run,
        "--idk-eval-source",
        "idk_eval_source",
        "IDK verdict for RB_agg_idk: detector (default) or record (labels.idk_eval, "
        "MT-RAG's metrics.idk_eval; the detector where absent)",
    )
    setting_option(
        run,
        "--ndcg-ideal",
        "ndcg_ideal",
        "NDCG's ideal ranking: retrieved (the retrieved chunks re-sorted, default) or pool "
        "(the query's judged pool: the record's qrels or --qrels, as trec_eval)",
    )
    setting_option(
        run,
        "--ndcg-gain",
        "ndcg_gain",
        "NDCG gain: exponential (2^w-1, seed 003, default) or linear (w, trec_eval's)",
    )
    run.add_argument(
        "--qrels",
        type=path_arg,
        help="TREC qrels file (query_id iter doc_id grade): the judged pool of recall@K and "
        "--ndcg-ideal pool, and the labels of chunks that have none",
    )
    setting_option(
        run,
        "--source-labels",
        "source_labels",
        "source_cited/fabricated_source: human labels, derived from [CIT:] markers, or auto "
        "(human where given, else derived; default)",
    )
    setting_option(
        run,
        "--nugget-source",
        "nugget_source",
        "the claim-level nuggets of a record without its own: sentences (each sentence or list item of the "
        "reference answers, vital, no judge call; default), claims (the reference answers' claims, split by the "
        "judge as an answer's are, vital) or judge (the judge writes them, vital or okay)",
    )
    statistics_options(run)
    run.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    run.add_argument(
        "--rb-llm-unparsed",
        type=float,
        help="what a failed RADBench verdict counts as in RB_llm (default: undefined, counted; "
        "0.5 as MT-RAG's released scripts)",
    )
    judge_options.add_judge_options(run, title="LLM judge (seed 002's 'judged' metrics, MT-RAG's 'mtrag_judged')")
    gate = run.add_argument_group("CI gate")
    gate.add_argument(
        "--require",
        action="append",
        default=[],
        type=parse_requirement,
        metavar="FIGURE>=VALUE",
        help="exit 1 unless the run meets it: token_f1>=0.6, p95_latency_ms<=2000 (>=, <=, >, <); "
        "met when the figure's whole interval lies on the required side; repeatable",
    )
    gate.add_argument(
        "--require-point", action="store_true", help="judge --require on the point estimates instead of the intervals"
    )
    gate_options(gate)


def _metric_names(given: str | None) -> list[str] | None:
    """``--metrics``' names (``None``: not given, the defaults); given with no name in it is an error."""
    if given is None:
        return None
    names = [name.strip() for name in given.split(",") if name.strip()]
    if not names:
        raise ConfigError(
            f"--metrics {given!r} names no metric: give metric or family names (see 'ragmeter "
            "metrics'), or leave --metrics out for the default ones"
        )
    return names


def _write_back(given: list[str] | None) -> Path | None:
    if given is None:
        return None
    kind, file = given
    if kind != "otel":
        raise ConfigError(f"--write-back takes otel FILE (the one format scores are written back as); got {kind!r}")
    if not file.strip():
        raise ConfigError("--write-back otel was given an empty file name (an unset variable?): give a file name")
    return Path(file)


def _run(args: argparse.Namespace) -> int:
    path = demo_path(args.demo) if args.demo else args.file
    if args.engine != "ray":
        refuse_unused(args, "without --engine ray", ("ray_address", "workers"))
    config = judge_options.judge_config(args)
    request = RunRequest(
        source=path,
        out=args.out,
        metrics=_metric_names(args.metrics),
        settings=settings_from(args),
        judge=config,
        input_format=args.input_format,
        column_map=parse_column_map(args.map),
        map_spec=args.map,
        format_options=format_options(args),
        limit=args.limit,
        qrels=args.qrels,
        parquet=args.parquet,
        html=args.html,
        write_back=_write_back(args.write_back),
        junit=args.junit,
        summary_file=args.summary_file,
        resume=args.resume,
        overwrite=args.overwrite,
        max_errors=args.max_errors,
        skip_invalid=args.skip_invalid,
        extra_inputs=(args.idk_patterns, args.judge_model_file),
        grounded=args.grounded,
        correct=args.correct,
        engine=args.engine,
        ray_address=args.ray_address,
        workers=args.workers,
    )
    plan = RunPlan.of(request)  # unknown metric names fail before the file is read
    chosen = {m.name for m in plan.metrics}
    for option, threshold in (("--grounded", args.grounded), ("--correct", args.correct)):
        if threshold is not None and threshold.metric not in chosen:
            raise ConfigError(
                f"{option} reads {threshold.metric}, which this run does not compute: add it to "
                "--metrics, or name one of the run's metrics"
            )
        if threshold is not None:
            low, high = get_metric(threshold.metric).value_range
            if not low <= threshold.at_least <= (math.inf if high is None else high):
                raise ConfigError(
                    f"{option} {threshold.metric}:{threshold.at_least:g}: {threshold.metric} lies in "
                    f"[{low:g}, {'∞' if high is None else format(high, 'g')}], so no item would be "
                    "on one side of it: give a value in that range"
                )
    if config is None and any("judge" in get_metric(name).resources for name in chosen):
        raise ConfigError(
            "the judged metrics need a judge: --judge local (the packaged model, pip install "
            "'ragmeter[local]') or --judge openai --judge-model NAME [--judge-base-url URL]"
        )
    for requirement in args.require:
        if requirement.metric not in chosen:
            raise ConfigError(
                f"--require {requirement} reads {requirement.metric}, which this run does not "
                "compute: add it to --metrics"
            )
    if (args.junit or args.summary_file or args.require_point) and not args.require:
        raise ConfigError("--junit, --summary-file and --require-point report or set the gate: add --require")
    if args.limit is not None and args.limit < 1:
        raise ConfigError("--limit must be at least 1")
    if args.resume and args.overwrite:
        raise ConfigError("--resume goes on with the run in --out, --overwrite replaces it: give one of them")
    if args.engine == "ray":
        for option, given in (
            ("--limit", args.limit),
            ("--qrels", args.qrels),
            ("--html", args.html),
            ("--write-back", args.write_back),
        ):
            if given:
                raise ConfigError(f"{option} is for local runs: leave it out with --engine ray")
        if args.workers is not None and args.workers < 1:
            raise ConfigError("--workers must be at least 1")
    listener = _Listener(args)
    if args.dry_run:
        if config is None:
            raise ConfigError("--dry-run estimates the judge's calls: give --judge")
        planned = plan_run(plan, listener)
        if planned is None:
            return 2
        print(judge_options.render_plan(planned[0], planned[1], judge_options.prices(args)))
        return 0
    if args.engine == "ray":
        judge_options.check_ray_judge(config)
    try:
        outcome = run_to_folder(plan, listener)
    except RunFailed as failed:  # a judge that failed for good, say: what was finished stays
        return _kept_after(failed)
    if outcome.result is None:
        return 2
    code = _print_run(args, path, outcome)
    if not args.require:
        return code
    verdicts = check_requirements(outcome.result.summaries, args.require, point=args.require_point)
    table = render_requirements(verdicts, point=args.require_point, markdown=args.format == "markdown")
    print("\n" + table, file=sys.stderr if args.format == "json" else report_stream(outcome.html))
    write_gate_reports(
        GateReports(outcome.reports["junit"], outcome.reports["summary_file"]),
        [requirements_suite(verdicts, f"ragmeter run {path.name}")],
        render_requirements(verdicts, point=args.require_point, markdown=True),
    )
    return max(code, 0 if all(v.passed for v in verdicts) else 1)


class _Listener:
    """A run's messages on stderr, and its progress bar where stderr is a terminal."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args

    def checked(self, check: FileCheck) -> bool:
        return report_check(self.args, check) >= 0

    def note(self, text: str) -> None:
        print(f"warning: {shown(text)}", file=sys.stderr)

    def resuming(self, kept: int, total: int, where: str) -> None:
        say_resuming(kept, total, where)

    def show_progress(self, total: int, judged: bool) -> bool:
        return not self.args.no_progress and sys.stderr.isatty() and (judged or total >= PROGRESS_FROM)


def say_resuming(kept: int, total: int, where: str = "") -> None:
    """Tell a resumed run how many items it keeps (``where``: whence some came) and how many are left."""
    if kept:
        print(f"resuming: {kept} finished item(s) kept{where}, {max(0, total - kept)} to score", file=sys.stderr)


def _kept_after(failed: RunFailed) -> int:
    folder = failed.folder
    print(f"error: {shown(failed)}", file=sys.stderr)
    if not folder.started:
        print(
            f"No item was finished: {folder.path} is left as it was."
            if folder.path.exists()
            else "No item was finished: nothing was written.",
            file=sys.stderr,
        )
    elif folder.items_path.exists() and folder.items_path.stat().st_size > 0:
        print(
            f"The items finished so far are kept in {folder.items_path}: fix the problem, then rerun the "
            "same command with --resume to score only the rest.",
            file=sys.stderr,
        )
    return 2


def _print_run(args: argparse.Namespace, path: Path, outcome: RunOutcome) -> int:
    """Print the report and write the HTML page; a run whose every judge call failed exits 1."""
    result, quadrant, folder = outcome.result, outcome.quadrant, outcome.folder
    assert result is not None
    out = report_stream(outcome.html)
    if args.format == "json":
        print(
            json.dumps({**result.to_dict(), **outcome.extra, "out": str(args.out)}, indent=2, ensure_ascii=False),
            file=out,
        )
    paired = (quadrant.grounded, quadrant.correct) if quadrant is not None else None
    if args.format == "markdown":
        print(render_report_markdown(result, title=f"ragmeter {__version__} — {path.name}", paired=paired), file=out)
    if args.format == "table":
        print(
            render_report(
                result, title=f"ragmeter {__version__} — {path.name}", prices=judge_options.prices(args), paired=paired
            ),
            file=out,
        )
    if args.format != "json":
        print(f"\nPer-item scores: {folder.items_path}", file=sys.stderr)
    if outcome.html is not None and outcome.records is not None:
        page = render_html(
            result,
            title=f"ragmeter — {path.name}",
            records=outcome.records(),
            paired=paired,
            prices=judge_options.prices(args),
        )
        atomic_write_text(outcome.html, page)
        print(f"HTML report: {args.html}", file=sys.stderr)
    if outcome.written_back is not None:
        print(f"Scores of {outcome.written_back} traces written back to {args.write_back[1]}", file=sys.stderr)
    return _judge_outcome(result.judging, folder.path / "judge_failures.jsonl")


def _judge_outcome(judging: JudgingReport | None, failures: Path) -> int:
    """1 when the judge was called and every call failed (the judged metrics are all undefined), else 0."""
    if judging is None:
        return 0
    totals = judging.totals()
    if totals["calls"] == 0 or totals["failures"] < totals["calls"]:
        return 0
    reasons = sorted({str(f.get("reason", ""))[:200] for f in judging.failures})[:3]
    print(
        f"error: every one of the {totals['calls']} judge calls failed, so every judged metric is undefined; "
        f"reasons in {failures}" + "".join(f"\n  {reason}" for reason in reasons),
        file=sys.stderr,
    )
    return 1


def _after_interrupt(args: argparse.Namespace) -> str:
    """What an interrupted run kept, as it is on disk: finished items (go on with --resume), else the judge's
    cached verdicts (a plain rerun reuses them), else nothing."""
    folder = RunFolder(args.out)
    if folder.unfinished_rows():
        return (
            f"the items finished so far are kept in {folder.items_path}; rerun the same command with --resume "
            "to score only the rest"
        )
    cache = None if args.no_judge_cache or not args.judge else args.judge_cache or args.out / CACHE_FILE
    if cache is not None and cache.is_file() and cache.stat().st_size > 0:
        return (
            f"no item was finished, so there is nothing to --resume; the judge's verdicts so far are kept in "
            f"{cache}: rerun the same command (without --resume) and they are reused, not asked again"
        )
    return "no item was finished: nothing was kept, and the same command starts afresh"


COMMAND = Command(
    "run", "score a file of RAG records and print the run report", add_arguments, _run, after_interrupt=_after_interrupt
)
