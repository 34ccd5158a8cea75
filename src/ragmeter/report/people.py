"""Checks of ragmeter against people, as text for the terminal: a score's agreement with human judgements
(:func:`ragmeter.human.with_people`) and the calibration of τ_sim (:func:`ragmeter.analysis.calibration.calibrate_tau`).
Their lines pass through :func:`~ragmeter.report.terminal.visible`: metric, label and annotator names come from
files."""

from __future__ import annotations

import math

from ragmeter.analysis.calibration import Calibration, RocPoint
from ragmeter.human.with_people import Agreement, Figure
from ragmeter.report.terminal import visible

__all__ = ["render_agreement_figures", "render_calibration"]


def _figure(figure: Figure) -> str:
    """Name, value and interval; in place of an undefined value or interval, the reason."""
    value = "–" if math.isnan(figure.value) else f"{figure.value:.3f}"
    if figure.undefined is not None:
        return f"  {figure.name:<40}{value:>8}  {figure.undefined}"
    dropped = f"  ({figure.n_dropped} resamples undefined)" if figure.n_dropped else ""
    return f"  {figure.name:<40}{value:>8}  [{figure.low:.3f}, {figure.high:.3f}]{dropped}"


def render_agreement_figures(result: Agreement) -> str:
    """The figures with their intervals, the annotators' ceiling, per-annotator figures and what was left out."""
    kind = (
        f"binary label, score ≥ {result.threshold:g} counts as positive"
        if result.kind == "binary"
        else "rating scale, the annotators' mean"
    )
    lines = [
        f"{result.metric} against human {result.label} ({kind}): {result.n} items",
        "",
        *(_figure(f) for f in result.figures),
    ]
    if result.ceiling is not None:
        lines += ["", "Ceiling: the annotators' own agreement on these items", _figure(result.ceiling)]
    for annotator, (n, figures) in result.per_annotator.items():
        lines += ["", f"Against annotator {annotator} alone ({n} items)", *(_figure(f) for f in figures)]
    left_out = {name: count for name, count in result.counts.items() if count}
    if left_out:
        lines += ["", "Left out: " + ", ".join(f"{count} {name}" for name, count in left_out.items())]
    lines += ["", "Intervals: percentile bootstrap over conversations.", f"Signature: {result.signature}"]
    return "\n".join(map(visible, lines))


def _cell(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.3f}"


def _roc_row(label: str, point: RocPoint) -> str:
    return (
        f"{label:<10}{point.tau:>8.3f}{_cell(point.true_positive_rate):>8}{_cell(point.false_positive_rate):>8}"
        f"{_cell(point.precision):>11}{_cell(point.balanced_accuracy):>11}"
    )


def render_calibration(result: Calibration) -> str:
    """The cosine's AUROC, the chosen τ values, the ROC over the grid and the Overlap a run would have; '–' for
    a precision where no pair reaches τ, the reason for an AUROC interval that cannot be computed."""
    interval = result.auroc_interval_undefined or f"[{result.auroc_low:.3f}, {result.auroc_high:.3f}]"
    lines = [
        (
            f"τ_sim calibration on {result.n} labelled sentences ({result.n_supported} supported), "
            f"embedder {result.embedder}"
        ),
        f"AUROC of the cosine: {_cell(result.auroc)} {interval}",
        "",
        f"{'':<10}{'τ':>8}{'TPR':>8}{'FPR':>8}{'precision':>11}{'bal. acc.':>11}",
        _roc_row("best", result.best),
    ]
    if result.precision_target is not None:
        lines.append(
            _roc_row(f"P≥{result.precision_target:g}", result.for_precision)
            if result.for_precision
            else f"no τ reaches precision {result.precision_target:g}"
        )
    lines.append("")
    lines += [_roc_row("grid", point) for point in result.roc]
    if any(math.isnan(point.precision) for point in result.roc):
        lines.append("precision –: no pair has a cosine at or above that τ, so none is called supported")
    if result.overlap_at:
        lines += [
            "",
            "Overlap of the run at each τ:",
            *(f"  τ = {tau:.2f}: {_cell(value)}" for tau, value in result.overlap_at.items()),
        ]
    lines += ["", f"Best: the τ with the highest balanced accuracy (ties: the higher τ). Signature: {result.signature}"]
    return "\n".join(map(visible, lines))
