"""``ragmeter compare``: runs compared item by item."""

from __future__ import annotations

import argparse
import itertools
import json
import sys

from ragmeter.analysis.compare import compare, load_run
from ragmeter.analysis.estimate import paired_estimate
from ragmeter.analysis.gate import apply_gate, check_gateable, parse_rule, unique_rules
from ragmeter.cli.common import (
    Command,
    gate_options,
    gate_outputs,
    overwrite_option,
    path_arg,
    refuse_unused,
    report_stream,
    settings_from,
    statistics_options,
    write_gate_reports,
)
from ragmeter.core.errors import ConfigError
from ragmeter.core.files import Outputs, atomic_write_text
from ragmeter.io.run_folder import files_read
from ragmeter.report.comparison import render_comparison
from ragmeter.report.estimate import render_estimate
from ragmeter.report.gate import gate_suite, render_gate
from ragmeter.report.html import html_target, render_comparison_html


def add_arguments(compare: argparse.ArgumentParser) -> None:
    compare.add_argument(
        "runs",
        type=path_arg,
        nargs="+",
        metavar="RUN",
        help="run folders (ragmeter run --out) or their items.jsonl; each is compared with the first",
    )
    compare.add_argument(
        "--by",
        action="append",
        default=[],
        metavar="FIELD",
        help="also break the comparison down by this metadata field (repeatable); answerability always",
    )
    compare.add_argument(
        "--allow-different-settings",
        action="store_true",
        help="compare metrics whose settings differ between the runs, or cannot be checked (a run "
        "without summary.json); listed in the output",
    )
    compare.add_argument(
        "--name",
        action="append",
        dest="names",
        metavar="NAME",
        help="label the runs in the output, one --name per run in their order (default: a run "
        "folder's name, an items file's stem; made unique)",
    )
    compare.add_argument(
        "--format",
        choices=("table", "markdown", "json"),
        default="table",
        help="table (terminal), markdown or json on stdout",
    )
    compare.add_argument(
        "--html",
        type=path_arg,
        metavar="FILE",
        help="also write the comparison as one self-contained HTML page (pip install 'ragmeter[html]')",
    )
    overwrite_option(compare, "an existing --html file")
    gate_options(compare)
    compare.add_argument(
        "--fail-on",
        action="append",
        default=[],
        type=parse_rule,
        metavar="METRIC[:MARGIN]",
        help="the CI gate: exit 1 when the candidate is significantly worse on METRIC (Holm over "
        "the gated metrics, p < --alpha), or, with a MARGIN, unless its interval shows it at "
        "most MARGIN worse (non-inferiority); repeatable. Direction: each metric's (latency, "
        "tokens: lower is better)",
    )
    compare.add_argument("--alpha", type=float, default=0.05, help="the gate's significance level (0.05)")
    compare.add_argument(
        "--max-undefined",
        type=float,
        default=0.2,
        metavar="SHARE",
        help="a gated metric undefined on more than this share of the pairs fails (0.2)",
    )
    compare.add_argument(
        "--human",
        type=path_arg,
        nargs="+",
        metavar="FILE",
        help="human labels or ratings of some items' answers in both runs (rows with id and "
        "model_id, as 'ragmeter agree' reads them): adds the prediction-powered estimate of "
        "the difference in mean human --label, from the differences of --estimate METRIC",
    )
    compare.add_argument("--label", help="with --human: the human label or rating compared")
    compare.add_argument("--estimate", metavar="METRIC", help="with --human: the score that predicts the label")
    # percentile by default: where most pairs tie, BCa's correction moves the interval off 0 while the
    # permutation test finds nothing (seen on the demo: 3 of 45 pairs differ)
    statistics_options(compare, ci="percentile")


def _compare(args: argparse.Namespace) -> int:
    if len(args.runs) < 2:
        raise ConfigError("compare needs at least two runs: ragmeter compare RUN_A RUN_B [RUN_C …]")
    settings = settings_from(args)
    args.fail_on = unique_rules(args.fail_on)  # a rule given twice counts once; two margins for one metric: an error
    for rule in args.fail_on:
        check_gateable(rule)
    if not args.fail_on:
        refuse_unused(args, "without --fail-on", ("alpha", "max_undefined"))
    if (args.junit or args.summary_file) and not args.fail_on:
        raise ConfigError("--junit and --summary-file report the gate: add --fail-on METRIC[:MARGIN]")
    outputs = Outputs(
        [*(path for run in args.runs for path in files_read(run)), *(args.human or [])], overwrite=args.overwrite
    )
    html = html_target(outputs, args.html)
    reports = gate_outputs(outputs, args)
    given = [name for name in ("human", "label", "estimate") if getattr(args, name)]
    if given and len(given) < 3:
        raise ConfigError(
            "the estimate of people's difference needs --human FILE, --label L and --estimate METRIC "
            f"together; {', '.join('--' + name for name in given)} given alone"
        )
    comparisons = compare(
        *args.runs,
        by=args.by,
        settings=settings,
        allow_different_settings=args.allow_different_settings,
        names=args.names,
    )
    estimates = (
        [
            paired_estimate(
                load_run(args.runs[0], name=c.baseline),
                load_run(run, name=c.candidate),
                args.human,
                metric=args.estimate,
                label=args.label,
                settings=settings,
            )
            for c, run in zip(comparisons, args.runs[1:], strict=True)
        ]
        if given
        else []
    )
    gates = (
        [apply_gate(c, args.fail_on, alpha=args.alpha, max_undefined=args.max_undefined) for c in comparisons]
        if args.fail_on
        else []
    )
    if html is not None:
        title = f"ragmeter — {comparisons[0].candidate} against {comparisons[0].baseline}" + (
            f" and {len(args.runs) - 2} more" if len(args.runs) > 2 else ""
        )
        atomic_write_text(html, render_comparison_html(comparisons, title=title))
        print(f"HTML report: {args.html}", file=sys.stderr)
    out = report_stream(html)
    if args.format == "json":
        print(
            json.dumps(
                [
                    {
                        **c.to_dict(),
                        **({"decision": g.to_dict()} if gates else {}),
                        **({"human_estimate": e.to_dict()} if estimates else {}),
                    }
                    for c, g, e in itertools.zip_longest(comparisons, gates, estimates)
                ],
                indent=2,
                ensure_ascii=False,
            ),
            file=out,
        )
    else:
        markdown = args.format == "markdown"
        print("\n\n".join(render_comparison(c, markdown=markdown) for c in comparisons), file=out)
        for estimate in estimates:
            print("\n" + render_estimate(estimate, markdown=markdown), file=out)
        for gate in gates:
            print("\n" + render_gate(gate, markdown=markdown), file=out)
    if not gates:
        return 0
    write_gate_reports(
        reports,
        [gate_suite(g) for g in gates],
        "\n\n".join(render_gate(g, markdown=True) for g in gates)
        + "\n\n"
        + "\n\n".join(render_comparison(c, markdown=True) for c in comparisons),
    )
    return 0 if all(g.passed for g in gates) else 1


COMMAND = Command(
    "compare",
    "compare runs item by item: differences with intervals, paired tests, Holm's correction",
    add_arguments,
    _compare,
)
