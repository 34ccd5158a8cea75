"""``ragmeter mtrag``: a step of MT-RAG's evaluation pipeline."""

from __future__ import annotations

import argparse
import json
import sys

from ragmeter.app.mtrag import plan_step, prepare_step, unfinished_part
from ragmeter.cli import judge_options
from ragmeter.cli.common import (
    Command,
    check_input,
    overwrite_option,
    path_arg,
    settings_from,
    shown,
    statistics_options,
)
from ragmeter.core.errors import ConfigError, RagmeterError
from ragmeter.core.settings import Settings
from ragmeter.judges import JudgeConfig
from ragmeter.pipelines.mtrag.steps import STEPS, check_step
from ragmeter.report.mtrag import render_step, render_summary


def add_arguments(mtrag: argparse.ArgumentParser) -> None:
    mtrag.add_argument(
        "--step",
        choices=STEPS,
        required=True,
        help="pipeline step; idk, ragas and radbench need --judge; all runs the five in MT-RAG's "
        "order (without --judge: algorithmic and idk_condition, with the IDK detector). An "
        "interrupted step goes on from OUTPUT.partial when run again with the same options",
    )
    mtrag.add_argument("-i", "--input", type=path_arg, required=True, help="MT-RAG JSONL with predictions")
    mtrag.add_argument("-o", "--output", type=path_arg, required=True, help="new JSONL file to write")
    mtrag.add_argument(
        "--bert-model",
        dest="bertscore_model",
        default="minilm",
        help="'minilm' (packaged, default) or a local Hugging Face model directory",
    )
    mtrag.add_argument(
        "--bert-layer",
        dest="bertscore_layer",
        type=int,
        help="layer of --bert-model (MT-RAG: 40 for deberta-xlarge-mnli)",
    )
    mtrag.add_argument(
        "--bert-baseline", dest="bertscore_baseline", help="'mtrag-deberta' or a bert-score baseline CSV (LAYER,P,R,F)"
    )
    mtrag.add_argument("--skip-invalid", action="store_true", help="leave invalid records out, listing them")
    mtrag.add_argument("--max-errors", type=int, default=50, help="bad records listed at most (50)")
    mtrag.add_argument("--format", choices=("table", "json"), default="table", help="summary format on stdout")
    overwrite_option(mtrag, "an existing OUTPUT and its summary")
    mtrag.add_argument(
        "--rb-llm-unparsed",
        type=float,
        help="what a failed RADBench verdict counts as (default: undefined, counted; 0.5 as MT-RAG's released scripts)",
    )
    statistics_options(mtrag)
    judge_options.add_judge_options(mtrag, title="LLM judge (MT-RAG's steps idk, ragas, radbench)", several=True)


#: The options that name the outputs of ``ragmeter mtrag`` in its errors.
_MTRAG_LABELS = {
    "output": "-o",
    "partial": "-o (its unfinished part)",
    "summary": "-o (its summary)",
    "judge_cache": "--judge-cache",
}


def _mtrag(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    configs = judge_options.judge_configs(args, args.output.with_name(args.output.name + ".judge-cache.sqlite"))
    check_step(args.step, args.input, args.output, judged=bool(configs))
    args.input_format, args.map = "mtrag", []
    if check_input(args, args.input) < 0:
        return 2
    if args.dry_run:
        return _mtrag_dry_run(args, settings, configs)
    job = prepare_step(
        args.step,
        args.input,
        args.output,
        settings=settings,
        judges=configs,
        overwrite=args.overwrite,
        labels=_MTRAG_LABELS,
    )
    if args.step == "all" and not configs:
        print(
            "no --judge: step all runs algorithmic and idk_condition (idk_eval from the IDK detector); give "
            "--judge to run the judged steps idk, ragas and radbench too",
            file=sys.stderr,
        )
    try:
        outcome = job.run()
    except RagmeterError as exc:
        print(f"error: {shown(exc)}", file=sys.stderr)
        kept = unfinished_part(args.output)
        if kept is not None:
            print(
                f"The records finished so far are kept in {kept}: fix the problem, then rerun the same "
                "command to go on from them.",
                file=sys.stderr,
            )
        return 2
    report = outcome.report
    if args.format == "json":
        print(json.dumps(outcome.summary, indent=2, ensure_ascii=False))
        return 0
    print(render_step(report, args.step, args.output))
    for identity, usage in report.judge_usage.items():
        print(judge_options.render_usage(identity, usage, judge_options.prices(args)))
    print(render_summary(outcome.means))
    print(f"\nIntervals: {outcome.summary['intervals']}; summary: {report.summary_path}", file=sys.stderr)
    return 0


def _mtrag_dry_run(args: argparse.Namespace, settings: Settings, configs: list[JudgeConfig]) -> int:
    if not configs:
        raise ConfigError("--dry-run estimates the judge's calls: give --judge")
    for identity, plan in plan_step(args.step, args.input, configs, settings=settings):
        print(judge_options.render_plan(plan, identity, judge_options.prices(args)))
    print("Records whose values the output already holds are counted too.")
    return 0


def _after_interrupt(args: argparse.Namespace) -> str:
    """What an interrupted step kept, as it is on disk: finished records to go on from, else nothing."""
    kept = unfinished_part(args.output)
    if kept is None:
        return "no record was finished: nothing was kept, and the same command starts afresh"
    return f"the records finished so far are kept in {kept}; the same command goes on from them"


COMMAND = Command(
    "mtrag",
    "MT-RAG's evaluation pipeline on its generation-task JSONL",
    add_arguments,
    _mtrag,
    after_interrupt=_after_interrupt,
)
