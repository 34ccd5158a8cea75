"""``ragmeter compare``: runs compared item by item."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ragmeter.analysis.compare import compare
from ragmeter.cli.common import Command, overwrite_option, settings_from, statistics_options
from ragmeter.core.errors import ConfigError
from ragmeter.core.files import Outputs, atomic_write_text
from ragmeter.io.run_folder import FOLDER_FILES
from ragmeter.report.comparison import render_comparison
from ragmeter.report.html import html_target, render_comparison_html


def add_arguments(compare: argparse.ArgumentParser) -> None:
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
    overwrite_option(compare, "an existing --html file")
    # percentile by default: where most pairs tie, BCa's correction moves the interval off 0 while the
    # permutation test finds nothing (seen on the demo: 3 of 45 pairs differ)
    statistics_options(compare, ci="percentile")


def _run_files(runs: Sequence[Path]) -> list[Path]:
    """The files ``compare`` reads of each run: a folder's own files, or the items file given."""
    return [path for run in runs for path in ([run / name for name in FOLDER_FILES] if run.is_dir() else [run])]


def _compare(args: argparse.Namespace) -> int:
    if len(args.runs) < 2:
        raise ConfigError("compare needs at least two runs: ragmeter compare RUN_A RUN_B [RUN_C …]")
    settings = settings_from(args)
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


COMMAND = Command("compare", "compare runs item by item: differences with intervals, paired tests, Holm's "
                  "correction", add_arguments, _compare)
