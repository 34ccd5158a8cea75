"""``ragmeter estimate``: the mean human label over a whole run, from its scores and a few labelled items."""

from __future__ import annotations

import argparse
import json
import sys

from ragmeter.analysis.estimate import estimate
from ragmeter.cli.common import Command, overwrite_option, path_arg, report_stream
from ragmeter.core.files import Outputs, atomic_write_text
from ragmeter.core.settings import Settings
from ragmeter.io.run_folder import files_read
from ragmeter.report.estimate import render_estimate
from ragmeter.report.html import html_target, render_estimate_html


def add_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "run",
        type=path_arg,
        help="the scored run: a run folder (ragmeter run --out), its items.jsonl, "
        "an MT-RAG output, or JSONL/CSV with an id column",
    )
    command.add_argument(
        "human",
        type=path_arg,
        nargs="+",
        help="the labelled items' human labels or ratings, one file or several, as 'ragmeter agree' "
        "reads them (filled 'labels template' files among them); they should be a random "
        "sample of the run's items ('labels template --sample N')",
    )
    command.add_argument("--metric", required=True, help="the score that predicts the label (a metric or column)")
    command.add_argument("--label", required=True, help="the human label or rating whose mean is estimated")
    command.add_argument("--confidence", type=float, default=Settings.confidence, help="interval level (0.95)")
    command.add_argument(
        "--format",
        choices=("table", "markdown", "json"),
        default="table",
        help="table (terminal), markdown or json on stdout",
    )
    command.add_argument(
        "--html",
        type=path_arg,
        metavar="FILE",
        help="also write the estimates and their intervals as one HTML page (pip install 'ragmeter[html]')",
    )
    overwrite_option(command, "an existing --html file")


def _estimate(args: argparse.Namespace) -> int:
    html = html_target(Outputs([*files_read(args.run), *args.human], overwrite=args.overwrite), args.html)
    result = estimate(
        args.run, args.human, metric=args.metric, label=args.label, settings=Settings(confidence=args.confidence)
    )
    if html is not None:
        atomic_write_text(
            html, render_estimate_html(result, title=f"ragmeter — mean human {args.label} estimated from {args.metric}")
        )
        print(f"HTML report: {args.html}", file=sys.stderr)
    out = report_stream(html)
    if args.format == "json":
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False), file=out)
    else:
        print(render_estimate(result, markdown=args.format == "markdown"), file=out)
    return 0


COMMAND = Command(
    "estimate",
    "the mean human label over a whole run, from its scores and a few labelled items "
    "(prediction-powered inference, PPI++)",
    add_arguments,
    _estimate,
)
