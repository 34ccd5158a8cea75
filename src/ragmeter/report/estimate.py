"""A prediction-powered estimate (:mod:`ragmeter.analysis.estimate`) as text for the terminal or Markdown: the
three estimates with their intervals, the labels the metric was worth, and the intervals drawn side by side.
Lines pass through :func:`~ragmeter.report.terminal.visible`: metric, label and run names come from files."""

from __future__ import annotations

import math

from ragmeter.analysis.estimate import HumanEstimate
from ragmeter.report.terminal import visible
from ragmeter.stats.ppi import MeanEstimate

__all__ = ["interval_strip", "render_estimate"]

#: Characters of the text figure's axis.
STRIP_WIDTH = 48


def interval_strip(rows: list[tuple[str, MeanEstimate]], width: int = STRIP_WIDTH) -> list[str]:
    """The intervals on one axis, one line each (``├──●──┤``), with the axis's ends below; rows without an
    interval (NaN) are left out, and no row with one gives no line."""
    rows = [(name, e) for name, e in rows if not math.isnan(e.low)]
    if not rows:
        return []
    low = min(e.low for _, e in rows)
    high = max(e.high for _, e in rows)
    span = high - low or 1.0

    def at(x: float) -> int:
        return round((x - low) / span * (width - 1))

    name_width = max(len(name) for name, _ in rows) + 2
    lines = []
    for name, e in rows:
        cells = [" "] * width
        left, right = at(e.low), at(e.high)
        for i in range(left, right + 1):
            cells[i] = "─"
        cells[left], cells[right] = "├", "┤"
        cells[at(e.value)] = "●"
        lines.append(f"{name:<{name_width}}{''.join(cells).rstrip()}")
    ends = f"{low:.3g}"
    lines.append(" " * name_width + ends + f"{high:.3g}".rjust(width - len(ends)))
    return lines


def _interval(e: MeanEstimate) -> str:
    return "undefined" if math.isnan(e.low) else f"[{e.low:.3f}, {e.high:.3f}]"


def _width(e: MeanEstimate) -> str:
    return "—" if math.isnan(e.low) else f"{e.width:.3f}"


def _row(name: str, width: int, e: MeanEstimate, note: str = "") -> str:
    return f"{name:<{width}}{e.value:>9.3f}  {_interval(e)}  {note or _width(e)}"


def _worth(result: HumanEstimate) -> str:
    n = result.labelled.n_labelled
    if result.constant:
        return result.constant[0].upper() + result.constant[1:] + "."
    if result.ppi.n_unlabelled == 0:
        return "Every item is labelled: the labels' mean is the answer, and the metric adds nothing."
    if math.isinf(result.effective_labels):
        return f"The metric predicts the labels exactly on the {n} labelled items (λ = {result.ppi.lam:.3g})."
    worth = result.effective_labels
    verdict = "narrower than" if worth > n * 1.05 else "as wide as" if worth >= n * 0.95 else "wider than"
    return (
        f"Labels the metric was worth: {worth:.0f} — the PPI++ interval is {verdict} the {n} labels' own "
        f"(as narrow as {worth:.0f} labels alone would give; λ = {result.ppi.lam:.3g})."
    )


def render_estimate(result: HumanEstimate, *, markdown: bool = False) -> str:
    """The estimates, the labels the metric was worth, the text figure, the checks and the signature."""
    n = result.labelled.n_labelled
    level = f"{result.ppi.confidence * 100:g}%"
    subject = f"mean human {result.label}" if result.of == "mean" else f"{result.of} in mean human {result.label}"
    clusters = (
        f"intervals by conversation: labels from {result.ppi.n_clusters} conversations"
        if result.clustered
        else "intervals by item: no conversation has two"
    )
    head = (
        f"Estimated {subject} over {result.n_items} items, from {result.metric} and {n} labels "
        f"({clusters}; {level} intervals)"
    )
    rows = [(f"PPI++ ({result.metric} + {n} labels)", result.ppi), (f"labelled items alone ({n})", result.labelled)]
    own = (f"{result.metric}'s own mean{'' if result.of == 'mean' else ' difference'}", result.scores)
    if markdown:
        table = [
            "| estimate | value | interval | width |",
            "|---|---:|---|---:|",
            *(f"| {name} | {e.value:.3f} | {_interval(e)} | {_width(e)} |" for name, e in rows),
            f"| {own[0]} | {own[1].value:.3f} | {_interval(own[1])} | the metric's scale |",
        ]
        strip = interval_strip(rows)
        figure = ["```text", *strip, "```"] if strip else []
    else:
        width = max(len(name) for name, _ in [*rows, own]) + 2
        table = [
            f"  {'estimate':<{width}}{'value':>9}  {f'{level} interval':<16}  width",
            *("  " + _row(name, width, e) for name, e in rows),
            "  " + _row(own[0], width, own[1], "(the metric's own scale)"),
        ]
        figure = ["  " + line for line in interval_strip(rows)]
    shares = ", ".join(f"{s.labelled}/{s.items} in [{s.low:.3g}, {s.high:.3g}]" for s in result.strata)
    lines = [
        head,
        "",
        *table,
        "",
        _worth(result),
        "",
        *([*figure, ""] if figure else []),
        f"Labelled per quartile of {result.metric}: {shares}.",
    ]
    lines += [f"Warning: {warning}" for warning in result.warnings if warning != result.constant]
    if result.counts:
        lines.append("Left out: " + ", ".join(f"{count} {name}" for name, count in result.counts.items()) + ".")
    lines.append(f"Signature: {result.signature}")
    return "\n".join(map(visible, lines))
