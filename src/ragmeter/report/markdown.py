"""The run report as Markdown (``ragmeter run --format markdown``), for pull requests and papers: the same tables as the
terminal report (primary, appendix, other metrics, the paired analysis, where the pipeline fails), then the undefined
counts, the languages the items were read in (where a metric read one) and the signatures; ``|`` in a cell is escaped,
and control characters anywhere are shown as escapes (:func:`~ragmeter.report.terminal.visible`)."""

from __future__ import annotations

import math

from ragmeter.report.tables import diagnostics_tables, summary_tables
from ragmeter.report.terminal import language_lines, visible
from ragmeter.results.paired import CELL_READINGS, Quadrant, Threshold
from ragmeter.results.run_result import EvalResult

__all__ = ["render_report_markdown"]


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|")


def _table(header: tuple[str, ...], rows: list[tuple[object, ...]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows),
        "",
    ]


def _quadrant(quadrant: Quadrant) -> list[str]:
    lines = [
        f"## Paired analysis: grounded ({quadrant.grounded}) × correct ({quadrant.correct})",
        "",
        (
            f"{quadrant.n} answers; left out: {quadrant.n_abstained} abstaining, {quadrant.n_left_out} with a value "
            "undefined."
        ),
        "",
    ]
    rows = []
    for grounded in (True, False):
        cells: list[object] = ["grounded" if grounded else "not grounded"]
        for correct in (True, False):
            c = quadrant.cells[(grounded, correct)]
            share = "–" if math.isnan(c.share) else f"{100 * c.share:.0f}%"
            example = f", e.g. `{c.example}`" if c.example else ""
            cells.append(f"{c.count} ({share}{example}): {CELL_READINGS[(grounded, correct)]}")
        rows.append(tuple(cells))
    return lines + _table(("", "correct", "not correct"), rows)


def render_report_markdown(result: EvalResult, *, title: str, paired: tuple[Threshold, Threshold] | None = None) -> str:
    """The report's tables in Markdown (see the module docstring)."""
    confidence = f"{result.settings.confidence * 100:g}% interval"
    header = ("metric", "value", confidence, "n", "undefined")
    lines = [f"# {title}", "", f"N = {len(result):,}", ""]
    for name, rows in zip(("Primary", "Appendix", "Other metrics"), summary_tables(result), strict=True):
        if rows:
            lines += [
                f"## {name}",
                "",
                *_table(header, [(r["label"], r["value"], r["interval"], r["n"], r["undefined"]) for r in rows]),
            ]
            agreements = [
                f"- `{metric}` {agreement}"
                for metric, agreement in dict.fromkeys((r["metric"], r["agreement"]) for r in rows if r["agreement"])
            ]
            lines += [*agreements, ""] if agreements else []
    quadrant = result.paired_analysis(*(paired or ()))
    if quadrant is not None:
        lines += _quadrant(quadrant)
    diagnostics = diagnostics_tables(result)
    if diagnostics is not None:
        stages, reading = diagnostics
        lines += ["## Where the pipeline fails", ""]
        for stage, rows in stages:
            lines += [
                f"### {stage}",
                "",
                *_table(
                    (*header, "what it says"),
                    [(f"`{r['metric']}`", r["value"], r["interval"], r["n"], r["undefined"], r["what"]) for r in rows],
                ),
            ]
        lines += [reading, ""]
    undefined = sorted(
        {(s.metric, reason, count) for s in result.summaries for reason, count in s.undefined_reasons.items()}
    )
    if undefined:
        lines += ["## Undefined items", "", *_table(("metric", "reason", "items"), list(undefined))]
    languages = [line.strip() for line in language_lines(result) if line.strip()]
    if languages:
        lines += ["## Languages", "", *(f"- {line}" for line in languages), ""]
    signatures = [
        *dict.fromkeys(s.signature.render() for s in result.summaries),
        *([quadrant.signature] if quadrant else []),
    ]
    lines += ["## Signatures", "", *(f"- `{signature}`" for signature in signatures)]
    return "\n".join(map(visible, lines))
