"""An agreement of a score with human judgements (:func:`ragmeter.agreement`) as text for the terminal."""

from __future__ import annotations

import math

from ragmeter.agreement import Agreement, Figure

__all__ = ["render_agreement_figures"]


def _figure(figure: Figure) -> str:
    value = "–" if math.isnan(figure.value) else f"{figure.value:.3f}"
    interval = "" if math.isnan(figure.low) else f"[{figure.low:.3f}, {figure.high:.3f}]"
    dropped = f"  ({figure.n_dropped} resamples undefined)" if figure.n_dropped else ""
    return f"  {figure.name:<40}{value:>8}  {interval}{dropped}"


def render_agreement_figures(result: Agreement) -> str:
    """The figures with their intervals, the annotators' ceiling, per-annotator figures and what was left out."""
    kind = (f"binary label, score ≥ {result.threshold:g} counts as positive" if result.kind == "binary"
            else "rating scale, the annotators' mean")
    lines = [f"{result.metric} against human {result.label} ({kind}): {result.n} items", "",
             *(_figure(f) for f in result.figures)]
    if result.ceiling is not None:
        lines += ["", "Ceiling: the annotators' own agreement on these items", _figure(result.ceiling)]
    for annotator, (n, figures) in result.per_annotator.items():
        lines += ["", f"Against annotator {annotator} alone ({n} items)", *(_figure(f) for f in figures)]
    left_out = {name: count for name, count in result.counts.items() if count}
    if left_out:
        lines += ["", "Left out: " + ", ".join(f"{count} {name}" for name, count in left_out.items())]
    lines += ["", "Intervals: percentile bootstrap over conversations.", f"Signature: {result.signature}"]
    return "\n".join(lines)
