"""``ragmeter agree``: how far a score agrees with people."""

from __future__ import annotations

import argparse
import json
import sys

from ragmeter.cli.common import (
    Command,
    overwrite_option,
    path_arg,
    report_stream,
    settings_from,
    statistics_options,
)
from ragmeter.core.files import Outputs, atomic_write_text
from ragmeter.human.with_people import agreement
from ragmeter.io.run_folder import files_read
from ragmeter.report.html import html_target, render_agreement_html
from ragmeter.report.people import render_agreement_figures
from ragmeter.stats.inter_annotator import TIE_RULES


def add_arguments(agree: argparse.ArgumentParser) -> None:
    agree.add_argument(
        "scored",
        type=path_arg,
        help="per-item scores: items.jsonl, an MT-RAG output, a 'labels annotate' file, or JSONL/CSV with an id column",
    )
    agree.add_argument(
        "human",
        type=path_arg,
        nargs="+",
        help="human labels or ratings, one file or several: JSONL/CSV with an id column, one row per "
        "item and annotator, an object of annotator → value per item, or filled annotation "
        "templates ('ragmeter labels template')",
    )
    agree.add_argument("--metric", required=True, help="the score to check (a metric name or column)")
    agree.add_argument("--label", required=True, help="the human label or rating (a column or field)")
    agree.add_argument(
        "--threshold", type=float, help="binary labels: the score at or above which an item counts as positive (0.5)"
    )
    agree.add_argument("--per-annotator", action="store_true", help="also the figures against each annotator")
    agree.add_argument(
        "--ties",
        choices=TIE_RULES,
        default="undefined",
        help="binary labels: a tied vote leaves the item out (undefined), or counts as 1 or 0",
    )
    agree.add_argument("--format", choices=("table", "json"), default="table", help="report format on stdout")
    agree.add_argument(
        "--html",
        type=path_arg,
        metavar="FILE",
        help="also write the figures and a scatter of the items as one HTML page (pip install 'ragmeter[html]')",
    )
    overwrite_option(agree, "an existing --html file")
    statistics_options(agree, ci=None)  # percentile intervals: BCa has no closed form for these statistics


def _agree(args: argparse.Namespace) -> int:
    settings = settings_from(args, ci_method="percentile")
    html = html_target(Outputs([*files_read(args.scored), *args.human], overwrite=args.overwrite), args.html)
    result = agreement(
        args.scored,
        args.human,
        metric=args.metric,
        label=args.label,
        threshold=args.threshold,
        per_annotator=args.per_annotator,
        ties=args.ties,
        settings=settings,
    )
    if html is not None:
        atomic_write_text(
            html, render_agreement_html(result, title=f"ragmeter — {args.metric} against human {args.label}")
        )
        print(f"HTML report: {args.html}", file=sys.stderr)
    out = report_stream(html)
    if args.format == "json":
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False), file=out)
    else:
        print(render_agreement_figures(result), file=out)
    return 0


COMMAND = Command("agree", "how far a score agrees with human labels or ratings", add_arguments, _agree)
