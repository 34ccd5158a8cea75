"""The HTML report's figures, drawn with matplotlib as inline SVG (text kept as text, no fonts embedded).

Each function returns one ``<svg>`` element as a string. Figures whose size would grow with the items (the
scatter of the paired analysis) draw their points as one embedded image past ``RASTER_ABOVE`` points, so a
report of 100,000 items stays a few hundred kilobytes; axes, labels and lines stay vector.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from ragmeter.core.errors import MissingDependencyError

__all__ = [
    "RASTER_ABOVE",
    "agreement_scatter",
    "distributions",
    "error_bars",
    "estimates",
    "forest",
    "quadrant_scatter",
    "timeline",
]

#: Points above which a scatter's markers are drawn as one raster image inside the SVG.
RASTER_ABOVE = 2000
_BLUE, _GREY, _RED = "#2f6db5", "#8a8a8a", "#b5472f"


def _figure(width: float, height: float) -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise MissingDependencyError("matplotlib", "html", "the HTML report (--html)") from exc
    return Figure(figsize=(width, height), layout="constrained")


def _svg(figure: Any) -> str:
    """The figure as an ``<svg>`` element: text as text, no XML prologue, DOCTYPE or metadata block."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "ragmeter"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = re.sub(r"^.*?(?=<svg)", "", buffer.getvalue(), flags=re.DOTALL)
    return re.sub(r"\s*<metadata>.*?</metadata>", "", text, count=1, flags=re.DOTALL)  # RDF boilerplate


def error_bars(rows: Sequence[tuple[str, float, float, float]], *, confidence: float) -> str:
    """Each score (label, value, interval low, high) as a point with its interval, on one 0–1 axis."""
    figure = _figure(6.5, 0.35 * len(rows) + 0.8)
    axes = figure.subplots()
    labels = [label for label, *_ in rows][::-1]
    values = np.array([value for _, value, _, _ in rows][::-1])
    low = np.array([v - lo if not math.isnan(lo) else 0 for _, v, lo, _ in rows][::-1])
    high = np.array([hi - v if not math.isnan(hi) else 0 for _, v, _, hi in rows][::-1])
    axes.errorbar(values, range(len(rows)), xerr=[low, high], fmt="o", color=_BLUE, capsize=3)
    axes.set_yticks(range(len(rows)), labels)
    axes.set_xlim(-0.02, 1.02)
    axes.set_xlabel(f"value with its {confidence * 100:g}% interval")
    axes.grid(axis="x", alpha=0.3)
    return _svg(figure)


def distributions(columns: Sequence[tuple[str, np.ndarray]]) -> str:
    """A histogram of each metric's defined per-item values, in a grid of small panels."""
    n = len(columns)
    per_row = min(4, n)
    rows = math.ceil(n / per_row)
    figure = _figure(2.2 * per_row, 1.7 * rows)
    panels = np.atleast_1d(figure.subplots(rows, per_row, squeeze=False).ravel())
    for axes, (name, values) in zip(panels, columns, strict=False):
        defined = values[~np.isnan(values)]
        axes.hist(defined, bins=20, color=_BLUE)
        axes.set_title(f"{name} (n={len(defined)})", fontsize=8)
        axes.tick_params(labelsize=7)
    for axes in panels[n:]:
        axes.set_visible(False)
    return _svg(figure)


def quadrant_scatter(
    grounded: np.ndarray,
    correct: np.ndarray,
    *,
    grounded_label: str,
    correct_label: str,
    grounded_at: float,
    correct_at: float,
) -> str:
    """Each answer as a point (grounding metric, correctness metric), with the two thresholds as lines."""
    figure = _figure(4.8, 4.0)
    axes = figure.subplots()
    axes.scatter(grounded, correct, s=14, alpha=0.6, color=_BLUE, rasterized=len(grounded) > RASTER_ABOVE)
    axes.axvline(grounded_at, color=_GREY, linestyle="--")
    axes.axhline(correct_at, color=_GREY, linestyle="--")
    for values, limits in ((grounded, axes.set_xlim), (correct, axes.set_ylim)):
        if len(values) and float(np.min(values)) >= 0.0 and float(np.max(values)) <= 1.0:
            limits(-0.03, 1.03)
    axes.set_xlabel(grounded_label)
    axes.set_ylabel(correct_label)
    for x, y, text in (
        (0.99, 0.99, "grounded, correct"),
        (0.99, 0.01, "grounded, not correct"),
        (0.01, 0.99, "not grounded, correct"),
        (0.01, 0.01, "neither"),
    ):
        axes.text(
            x,
            y,
            text,
            transform=axes.transAxes,
            fontsize=7,
            color=_GREY,
            ha="right" if x > 0.5 else "left",
            va="top" if y > 0.5 else "bottom",
        )
    return _svg(figure)


def forest(rows: Sequence[tuple[str, float, float, float, bool]]) -> str:
    """Differences B − A (label, difference, interval low, high, significant after Holm) with a line at 0."""
    figure = _figure(6.5, 0.35 * len(rows) + 0.9)
    axes = figure.subplots()
    for position, (_, difference, low, high, significant) in enumerate(rows[::-1]):
        color = _RED if significant else _BLUE
        axes.errorbar(
            [difference], [position], xerr=[[difference - low], [high - difference]], fmt="o", color=color, capsize=3
        )
    axes.axvline(0, color=_GREY, linestyle="--")
    axes.set_yticks(range(len(rows)), [label for label, *_ in rows][::-1])
    axes.set_xlabel("B − A with its interval (red: significant after Holm)")
    axes.grid(axis="x", alpha=0.3)
    return _svg(figure)


def agreement_scatter(scores: np.ndarray, human: np.ndarray, *, metric: str, label: str) -> str:
    """Each item's score against its human rating (the annotators' mean) or majority label, jittered a little
    along the human axis so that items with the same rating stay apart."""
    figure = _figure(4.8, 4.0)
    axes = figure.subplots()
    spread = np.random.default_rng(0).uniform(-0.08, 0.08, len(human))
    axes.scatter(human + spread, scores, s=12, alpha=0.5, color=_BLUE, rasterized=len(scores) > RASTER_ABOVE)
    axes.set_xlabel(f"human {label}")
    axes.set_ylabel(metric)
    axes.grid(alpha=0.3)
    return _svg(figure)


def estimates(
    human: Sequence[tuple[str, float, float, float]],
    metric: tuple[str, float, float, float],
    *,
    label: str,
    confidence: float,
) -> str:
    """The estimates of the mean human label (label, value, interval low, high) on one axis, and the metric's own
    mean with its interval on a panel of its own below: its scale need not be the label's."""
    figure = _figure(6.5, 0.4 * len(human) + 1.6)
    top, bottom = figure.subplots(2, 1, height_ratios=[len(human), 1])
    for axes, rows, color, title in (
        (top, human, _BLUE, f"mean human {label}"),
        (bottom, [metric], _GREY, "the metric's own mean, on its scale"),
    ):
        for position, (_, value, low, high) in enumerate(rows[::-1]):
            axes.errorbar([value], [position], xerr=[[value - low], [high - value]], fmt="o", color=color, capsize=3)
        axes.set_yticks(range(len(rows)), [name for name, *_ in rows][::-1])
        axes.set_ylim(-0.6, len(rows) - 0.4)
        axes.set_title(title, fontsize=9, loc="left")
        axes.grid(axis="x", alpha=0.3)
    bottom.set_xlabel(f"value with its {confidence * 100:g}% interval")
    return _svg(figure)


def timeline(
    series: Mapping[str, Sequence[tuple[float, float, float, float]]], *, metric: str, confidence: float
) -> str:
    """One metric over time, a line per group (label → points of (time in seconds since the epoch, mean, interval
    low, high)), each point's interval as a shaded band; times shown in UTC."""
    from matplotlib.dates import DateFormatter

    figure = _figure(6.5, 2.6)
    axes = figure.subplots()
    for group, points in series.items():
        times = [datetime.fromtimestamp(t, tz=UTC) for t, *_ in points]
        means = np.array([mean for _, mean, _, _ in points], dtype=float)
        low = np.array([lo for _, _, lo, _ in points], dtype=float)
        high = np.array([hi for _, _, _, hi in points], dtype=float)
        (line,) = axes.plot(times, means, marker="o", markersize=3, label=group)
        axes.fill_between(times, low, high, alpha=0.2, color=line.get_color(), linewidth=0)
    axes.xaxis.set_major_formatter(DateFormatter("%H:%M", tz=UTC))
    axes.set_ylabel(metric)
    axes.set_xlabel(f"time (UTC); bands: {confidence * 100:g}% intervals")
    axes.grid(alpha=0.3)
    if len(series) > 1:
        axes.legend(fontsize=7, loc="best")
    return _svg(figure)
