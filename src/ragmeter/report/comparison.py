"""A comparison of runs as text for the terminal, or as Markdown tables (for pull requests and papers)."""

from __future__ import annotations

import math

from ragmeter.analysis.compare import NO_SIGNATURE, Comparison, MetricComparison
from ragmeter.report.terminal import visible
from ragmeter.results.diagnostics import FAILURES, GENERATOR, RETRIEVER

__all__ = ["GATE_HEADER", "HEADER", "comparison_rows", "gate_rows", "header", "render_comparison", "stage_lines"]

#: Unicode's bidirectional controls (embeddings, overrides, isolates and marks): in an item id or a run's name they
#: would reorder the text a terminal shows after them (U+202E prints the rest of a line backwards).

HEADER = (
    "metric",
    "A",
    "B",
    "B − A",
    "interval",
    "p",
    "p (Holm)",
    "McNemar p",
    "B better / tie / worse",
    "n (left out)",
)


def header(comparison: Comparison) -> tuple[str, ...]:
    """``HEADER`` with the interval's level named (``95 % interval``)."""
    return tuple(f"{comparison.confidence * 100:g} % interval" if name == "interval" else name for name in HEADER)


def _number(value: float | None, digits: int = 4) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:,.{digits}f}"


def _p(value: float) -> str:
    if value is None or math.isnan(value):
        return "–"
    return "< 0.0001" if value < 1e-4 else f"{value:.4f}"


def _cells(m: MetricComparison) -> tuple[str, ...]:
    direction = "" if m.higher_is_better is not None else " (B above / tie / below)"
    test = _p(m.mcnemar["p_value"]) + (" exact" if m.mcnemar["exact"] else " χ²") if m.mcnemar else "–"
    # four decimals for scores, one for counts of tokens or milliseconds: one scale per row
    digits = 1 if max(abs(m.mean_a), abs(m.mean_b)) >= 100 else 4
    return (
        m.metric,
        _number(m.mean_a, digits),
        _number(m.mean_b, digits),
        _number(m.difference, digits),
        f"[{_number(m.ci_low, digits)}, {_number(m.ci_high, digits)}]",
        _p(m.p_value),
        _p(m.p_holm),
        test,
        f"{m.wins} / {m.ties} / {m.losses}{direction}",
        f"{m.n} ({m.n_left_out})",
    )


def _table(rows: list[tuple[str, ...]], markdown: bool, columns: tuple[str, ...]) -> list[str]:
    if markdown:
        return [
            "| " + " | ".join(columns) + " |",
            "|" + "---|" * len(columns),
            *("| " + " | ".join(row) + " |" for row in rows),
        ]
    widths = [max(len(row[i]) for row in (columns, *rows)) for i in range(len(columns))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in (columns, *rows)
    ]


def render_comparison(comparison: Comparison, *, markdown: bool = False) -> str:
    """Every group's table (all items first), what was left out and why, and the comparison's signature."""
    heading = "## " if markdown else ""
    lines = [
        (f"{heading}{comparison.candidate} (B) against {comparison.baseline} (A): {comparison.n_pairs} paired items"),
        "",
    ]
    for (field, value), metrics in comparison.groups.items():
        if (field, value) != ("all", "all"):
            n = max((m.n + m.n_left_out for m in metrics), default=0)
            lines += [f"{'### ' if markdown else ''}{field} = {value} ({n} items)", ""]
        lines += [*_table(comparison_rows(metrics), markdown, header(comparison)), ""]
    lines += stage_lines(comparison.overall)
    if comparison.gate:
        lines += _gate_table(comparison, markdown)
    if comparison.only_baseline or comparison.only_candidate:
        lines.append(
            f"Unpaired items, left out: {len(comparison.only_baseline)} only in {comparison.baseline}"
            f"{_examples(comparison.only_baseline)}, {len(comparison.only_candidate)} only in "
            f"{comparison.candidate}{_examples(comparison.only_candidate)}."
        )
    for metric, why in comparison.not_compared.items():
        lines.append(f"Not compared: {metric} ({why}).")
    for metric, pair in comparison.different_settings.items():
        left, right = (NO_SIGNATURE if signature is None else signature for signature in pair)
        lines.append(f"Settings differ for {metric} (compared anyway): {left} against {right}.")
    lines += [
        *comparison.notes,
        (
            "B − A: mean of the per-item differences over the items both runs scored; interval: paired "
            "bootstrap over conversations; p: paired permutation test (signs flipped by conversation), Holm "
            "across the metrics of the table. 'n (left out)': pairs compared (pairs undefined on a side)."
        ),
        f"Signature: {comparison.signature}",
    ]
    signatures = [s for s in dict.fromkeys(m.signature for m in comparison.overall) if s is not None]
    lines += [
        "Metric signatures:" if signatures else f"Metric signatures: {NO_SIGNATURE} (settings not checked)",
        *(f"  {signature}" for signature in signatures),
    ]
    return "\n".join(map(visible, lines))


def stage_lines(metrics: tuple[MetricComparison, ...]) -> list[str]:
    """Which stage of the pipeline a change moved (:mod:`ragmeter.results.diagnostics`): per stage, each claim-level
    figure whose interval leaves out 0, better or worse by its direction; a stage whose figures all stay within
    their intervals did not move. Nothing when the runs have no claim-level diagnostics."""
    by_metric = {m.metric: m for m in metrics}
    lines = []
    for title, layout in (("retriever", RETRIEVER), ("generator", GENERATOR), ("lost vital nuggets", FAILURES)):
        present = [by_metric[name] for name, _ in layout if name in by_metric]
        if not present:
            continue
        moved = [m for m in present if not math.isnan(m.ci_low) and (m.ci_low > 0 or m.ci_high < 0)]
        changes = ", ".join(
            f"{m.metric} {_moved(m)} ({m.difference:+.3f} [{m.ci_low:+.3f}, {m.ci_high:+.3f}])" for m in moved
        )
        lines.append(f"  {title}: {changes or 'no figure moved beyond its interval'}")
    return ["Which stage moved (claim level):", *lines, ""] if lines else []


def _moved(m: MetricComparison) -> str:
    if m.higher_is_better is None:
        return "up" if m.difference > 0 else "down"
    return "better" if (m.difference > 0) == m.higher_is_better else "worse"


GATE_HEADER = (
    "run",
    "abstain rate",
    "tokens / item",
    "tokens / answered item",
    "P50 latency answered (ms)",
    "P95 latency answered (ms)",
)


def gate_rows(comparison: Comparison) -> list[tuple[str, ...]]:
    """The cells of the gate's table (``GATE_HEADER``), one row per run."""
    return [
        (
            row.run,
            _number(row.abstain_rate, 3),
            _number(row.tokens_per_item, 0),
            _number(row.tokens_per_answered, 0),
            _number(row.p50_latency_answered, 0),
            _number(row.p95_latency_answered, 0),
        )
        for row in comparison.gate
    ]


def comparison_rows(metrics: tuple[MetricComparison, ...]) -> list[tuple[str, ...]]:
    """The cells of a comparison table (``HEADER``), one row per metric."""
    return [_cells(m) for m in metrics]


def _gate_table(comparison: Comparison, markdown: bool) -> list[str]:
    """Seeds 000/001's gate reading: what abstaining saves in tokens and time, and what it costs in answers."""
    rows = gate_rows(comparison)
    title = f"{'### ' if markdown else ''}The gate: abstain rate against tokens and latency (paired items)"
    return [title, "", *_table(rows, markdown, GATE_HEADER), ""]


def _examples(keys: tuple[tuple[str, str | None], ...]) -> str:
    if not keys:
        return ""
    shown = ", ".join(key[0] if key[1] is None else f"{key[0]} ({key[1]})" for key in keys[:3])
    return f" ({shown}{', …' if len(keys) > 3 else ''})"
