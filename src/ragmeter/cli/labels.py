"""``ragmeter labels``: annotation templates, the LLM annotator, merging people's labels."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from ragmeter.app.labels import (
    RecordSource,
    annotate_file,
    merge_labels,
    plan_annotation,
    write_label_template,
)
from ragmeter.cli import judge_options
from ragmeter.cli.common import (
    Command,
    format_options,
    input_options,
    overwrite_option,
    path_arg,
    refuse_unused,
    report_check,
)
from ragmeter.core.errors import ConfigError
from ragmeter.core.records import ALL_LABELS, ANSWER_LABELS, CHUNK_LABELS
from ragmeter.human.annotation_files import check_template_path
from ragmeter.io.readers import FileCheck, parse_column_map
from ragmeter.report import render_annotator_agreement
from ragmeter.stats.inter_annotator import TIE_RULES


def add_arguments(labels: argparse.ArgumentParser) -> None:
    label_commands = labels.add_subparsers(dest="labels_command", required=True)
    template = label_commands.add_parser("template", help="write a CSV or JSONL for an annotator to fill in")
    template.add_argument("file", type=path_arg, help="records to annotate")
    template.add_argument("-o", "--output", type=path_arg, required=True, help="template file: .csv, .tsv or .jsonl")
    template.add_argument(
        "--labels", default="all", help="'all' (default), 'chunk', 'answer', or comma-separated label names"
    )
    template.add_argument("--annotator", default="", help="fill the annotator column with this name")
    template.add_argument(
        "--sample",
        type=int,
        metavar="N",
        help="only N records drawn at random (kept in the file's order): the random sample that "
        "'ragmeter estimate' assumes the labelled items are",
    )
    template.add_argument("--seed", type=int, default=0, help="with --sample: the draw's seed (0)")
    overwrite_option(template, "an existing OUTPUT")
    input_options(template)
    annotate = label_commands.add_parser("annotate", help="label the records with an LLM, as one more annotator")
    annotate.add_argument("file", type=path_arg, help="records to annotate")
    annotate.add_argument(
        "-o",
        "--output",
        type=path_arg,
        required=True,
        help="the filled annotation file (.csv, .tsv or .jsonl), as 'labels merge' reads it",
    )
    annotate.add_argument(
        "--labels", default="all", help="'all' (default), 'chunk', 'answer', or comma-separated label names"
    )
    overwrite_option(annotate, "an existing OUTPUT (a person's filled labels, say)")
    input_options(annotate)
    judge_options.add_judge_options(annotate, title="LLM judge (the annotator)", cache_beside_output=True)
    merge = label_commands.add_parser("merge", help="join filled annotation files onto the records")
    merge.add_argument("file", type=path_arg, help="the records the templates were made from")
    merge.add_argument("filled", type=path_arg, nargs="+", help="filled annotation files (one or more annotators)")
    merge.add_argument("-o", "--output", type=path_arg, required=True, help="native JSONL with the merged labels")
    merge.add_argument(
        "--ties",
        choices=TIE_RULES,
        default="undefined",
        help="a tied vote gives no label (undefined, default), 1 (positive) or 0 (negative)",
    )
    merge.add_argument("--format", choices=("table", "json"), default="table", help="agreement report format")
    overwrite_option(merge, "an existing OUTPUT and its agreement report")
    input_options(merge)


def _label_names(spec: str) -> tuple[str, ...]:
    named = {"all": ALL_LABELS, "chunk": CHUNK_LABELS, "answer": ANSWER_LABELS}
    if spec in named:
        return named[spec]
    names = tuple(dict.fromkeys(name.strip() for name in spec.split(",") if name.strip()))
    unknown = [name for name in names if name not in ALL_LABELS]
    if unknown or not names:
        raise ConfigError(
            f"--labels takes all, chunk, answer or label names ({', '.join(ALL_LABELS)}); "
            f"unknown: {', '.join(unknown) or 'none given'}"
        )
    return names


def _source(args: argparse.Namespace) -> RecordSource:
    return RecordSource(args.file, args.input_format, parse_column_map(args.map), args.max_errors, format_options(args))


def _checked(args: argparse.Namespace) -> Callable[[FileCheck], bool]:
    return lambda check: report_check(args, check) >= 0


def _annotate(args: argparse.Namespace) -> int:
    """``labels annotate``: the LLM annotator's file, its failed calls beside it, and what the judge did."""
    names = _label_names(args.labels)
    check_template_path(args.output)
    if args.judge is None:
        raise ConfigError(
            "labels annotate needs a judge: --judge local (pip install 'ragmeter[local]') or "
            "--judge openai --judge-model NAME [--judge-base-url URL]"
        )
    config = judge_options.judge_config(args, args.output.with_name(args.output.name + ".judge-cache.sqlite"))
    assert config is not None
    if args.dry_run:
        planned = plan_annotation(
            _source(args),
            args.output,
            names,
            config,
            inputs=[args.judge_model_file],
            overwrite=args.overwrite,
            checked=_checked(args),
        )
        if planned is None:
            return 2
        print(judge_options.render_plan(planned[0], planned[1], judge_options.prices(args)))
        return 0
    done = annotate_file(
        _source(args),
        args.output,
        names,
        config,
        inputs=[args.judge_model_file],
        overwrite=args.overwrite,
        checked=_checked(args),
    )
    if done is None:
        return 2
    usage = judge_options.render_usage(done.judge, done.usage, judge_options.prices(args))
    if not done.rows:
        print(usage)
        print(
            f"error: no row was labelled: all {len(done.annotation.failures)} judge call(s) failed, so "
            f"{args.output} was not written (reasons in {done.failures})",
            file=sys.stderr,
        )
        return 1
    print(f"{args.output}: {done.rows} rows labelled by {done.annotation.annotator}")
    print(usage)
    if done.annotation.failures:
        print(
            f"{len(done.annotation.failures)} judge call(s) failed; their rows are left out (reasons in "
            f"{done.failures})",
            file=sys.stderr,
        )
    return 0


def _labels(args: argparse.Namespace) -> int:
    if args.labels_command == "annotate":
        return _annotate(args)
    if args.labels_command == "template":
        if args.sample is None:
            refuse_unused(args, "without --sample", ("seed",))
        names = _label_names(args.labels)
        rows = write_label_template(
            _source(args),
            args.output,
            names,
            annotator=args.annotator,
            overwrite=args.overwrite,
            checked=_checked(args),
            sample=args.sample,
            seed=args.seed,
        )
        if rows is None:
            return 2
        print(f"{args.output}: {rows} rows to label ({', '.join(names)}); fill each label with 0 or 1")
        return 0
    merged = merge_labels(
        _source(args),
        args.filled,
        args.output,
        ties=args.ties,
        skip_invalid=args.skip_invalid,
        overwrite=args.overwrite,
        checked=_checked(args),
    )
    if merged is None:
        return 2
    for error in merged.problems[: args.max_errors]:
        print(f"error: {error}", file=sys.stderr)
    if len(merged.problems) > args.max_errors:
        print(f"… and {len(merged.problems) - args.max_errors} more problems", file=sys.stderr)
    if merged.problems and not args.skip_invalid:
        print(
            f"{len(merged.problems)} problem(s) in the annotation files: nothing merged. Fix them, or pass "
            "--skip-invalid to merge the valid rows",
            file=sys.stderr,
        )
        return 2
    if args.format == "json":
        print(json.dumps(merged.report, indent=2, ensure_ascii=False))
    else:
        print(
            f"{args.output}: {merged.n_records} records, labels from {len(merged.annotators)} annotator(s) "
            f"({', '.join(merged.annotators)}); ties → {args.ties}"
        )
        print(render_annotator_agreement(list(merged.agreement)))
        print(f"\nAgreement report: {merged.report_path}", file=sys.stderr)
    return 0


def _labels_after_interrupt(args: argparse.Namespace) -> str:
    if args.labels_command == "annotate":
        return (
            "the judge's verdicts so far are in its cache; the same command goes on from them without "
            "calling the judge again for them"
        )
    return "nothing was written"


COMMAND = Command(
    "labels",
    "annotation files for seed 003's chunk and answer labels",
    add_arguments,
    _labels,
    after_interrupt=_labels_after_interrupt,
)
