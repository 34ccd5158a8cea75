"""The run report and the comparison as one self-contained HTML file (``--html FILE``, extra ``ragmeter[html]``).

No script, no stylesheet or font from elsewhere: the page is its own HTML, CSS and inline SVG figures
(:mod:`ragmeter.report.figures`), readable offline and safe to attach to a ticket. Jinja2 renders it with
autoescaping on, so every text that comes from a record (question, answer, chunk, id, undefined reason, judge
failure) shows as text; only the figures, which ragmeter draws itself, are inserted as markup.

The run report: the seeds' primary table and appendix with their intervals drawn as error bars, the other
metrics, the paired analysis (table and scatter), where the pipeline fails (retriever against generator, tables and
error bars), each metric's distribution, the worst items of each metric
whose direction is known (question, answer, the chunks it cites, undefined reasons), undefined and noted counts,
the judge's calls, failures and cost, and the signatures. The comparison: per group the table of
:func:`ragmeter.analysis.compare`, a forest plot of the differences of scores, the gate's figures, unpaired items and
settings that differ. The estimate of people's mean (``ragmeter estimate``): the three estimates as a table and a
figure, the labelled share per score quartile, the checks that failed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter._version import __version__
from ragmeter.analysis.compare import NO_SIGNATURE, Comparison
from ragmeter.analysis.estimate import HumanEstimate
from ragmeter.core.errors import ConfigError, MissingDependencyError
from ragmeter.core.files import Outputs, Target
from ragmeter.core.records import Record
from ragmeter.human.with_people import Agreement
from ragmeter.metrics import get_metric
from ragmeter.report import figures
from ragmeter.report.comparison import GATE_HEADER, comparison_rows, gate_rows, header
from ragmeter.report.tables import diagnostics_tables, summary_tables
from ragmeter.report.terminal import format_number
from ragmeter.results.paired import CELL_READINGS, Threshold
from ragmeter.results.run_result import EvalResult
from ragmeter.text.citations import find_citations

__all__ = [
    "WORST_ITEMS",
    "render_agreement_html",
    "render_comparison_html",
    "render_estimate_html",
    "render_html",
    "render_serve_html",
    "require_html",
]

#: Items shown per metric among the worst.
WORST_ITEMS = 5
#: Panels of the distributions figure at most (the metrics of the tables first).
MAX_DISTRIBUTIONS = 16
_CHUNK_CHARS = 600


def _environment() -> Any:
    try:
        import jinja2
    except ImportError as exc:
        raise MissingDependencyError("jinja2", "html", "the HTML report (--html)") from exc
    return jinja2.Environment(
        loader=jinja2.PackageLoader("ragmeter.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def require_html() -> None:
    """Fail now, before any scoring, when the HTML report cannot be written."""
    _environment()
    figures._figure(1, 1)


def html_target(outputs: Outputs, path: Path | None) -> Target | None:
    """The HTML page's target (``None`` for none), checked before any work: a device such as /dev/stdout is
    streamed to, and the page's libraries must be installed."""
    if path is None:
        return None
    require_html()
    return outputs.file(path, flag="--html", stream=True)


def _markup(svg: str) -> Any:
    from markupsafe import Markup

    return Markup(svg)


def _unit_interval(metric: str) -> bool:
    try:
        low, high = get_metric(metric).value_range
    except ConfigError:
        return False
    return low >= 0.0 and high is not None and high <= 1.0


def _score_figure(result: EvalResult) -> str | None:
    rows = [
        (
            f"{s.metric} ({s.statistic})",
            s.value,
            math.nan if s.ci_low is None else s.ci_low,
            math.nan if s.ci_high is None else s.ci_high,
        )
        for s in result.summaries
        if s.statistic in ("mean", "rate") and _unit_interval(s.metric) and not math.isnan(s.value)
    ]
    return figures.error_bars(rows, confidence=result.settings.confidence) if rows else None


def _diagnostics(result: EvalResult) -> dict[str, Any] | None:
    """Where the pipeline fails: the stages' tables, the reading, and the figures as error bars by stage."""
    tables = diagnostics_tables(result)
    if tables is None:
        return None
    stages, reading = tables
    by_metric = {s.metric: s for s in result.summaries if s.statistic in ("mean", "rate")}
    points = [(f"{title.lower()}: {row['metric']}", by_metric[row["metric"]]) for title, rows in stages for row in rows]
    drawn = [
        (label, s.value, math.nan if s.ci_low is None else s.ci_low, math.nan if s.ci_high is None else s.ci_high)
        for label, s in points
        if not math.isnan(s.value)
    ]
    figure = figures.error_bars(drawn, confidence=result.settings.confidence) if drawn else None
    return {"stages": stages, "reading": reading, "figure": _markup(figure) if figure else None}


def _cited_chunks(record: Record) -> list[dict[str, Any]]:
    """The chunks whose doc_id the answer cites (all chunks' first three when it cites none), cut short."""
    cited = set(find_citations(record.answer))
    chunks = [c for c in record.contexts if c.doc_id in cited] or list(record.contexts[:3])
    return [
        {
            "doc_id": c.doc_id,
            "text": c.text if len(c.text) <= _CHUNK_CHARS else c.text[:_CHUNK_CHARS] + " …",
            "cited": c.doc_id in cited,
        }
        for c in chunks
    ]


def _worst(result: EvalResult) -> dict[str, tuple[bool, np.ndarray]]:
    """Per metric whose direction is known: (higher is better, the positions of its ``WORST_ITEMS`` worst items)."""
    out = {}
    for metric, values in result.scores.items():
        try:
            better = get_metric(metric).higher_is_better
        except ConfigError:
            continue
        defined = np.flatnonzero(~np.isnan(values))
        if better is None or len(defined) == 0:
            continue
        order = defined[np.argsort(values[defined], kind="stable")]
        out[metric] = (better, order[:WORST_ITEMS] if better else order[::-1][:WORST_ITEMS])
    return out


def _worst_items(
    result: EvalResult, worst: Mapping[str, tuple[bool, np.ndarray]], records: Mapping[str, Record]
) -> list[dict[str, Any]]:
    sections = []
    for metric, (better, positions) in worst.items():
        values = result.scores[metric]
        items = []
        for i in positions:
            record = records.get(result.item_ids[i])
            items.append(
                {
                    "id": result.item_ids[i],
                    "value": format_number(float(values[i])),
                    "note": result.notes.get(metric, {}).get(int(i)),
                    "question": record.question if record else None,
                    "answer": record.answer if record else None,
                    "chunks": _cited_chunks(record) if record else [],
                    "undefined": {m: r[int(i)] for m, r in result.undefined.items() if int(i) in r},
                }
            )
        sections.append({"metric": metric, "direction": "lowest" if better else "highest", "entries": items})
    return sections


def render_html(
    result: EvalResult,
    *,
    title: str,
    records: Iterable[Record] | None = None,
    paired: tuple[Threshold, Threshold] | None = None,
    prices: tuple[float, float] | None = None,
) -> str:
    """The run report as one HTML page. ``records`` (the scored records, streamed: only the worst items' are
    kept) give the worst items their question, answer and chunks; ``paired`` the paired analysis's thresholds;
    ``prices`` the judge's cost."""
    environment = _environment()
    worst = _worst(result)
    wanted = {result.item_ids[i] for _, positions in worst.values() for i in positions}
    kept = {record.id: record for record in records or () if record.id in wanted}
    primary, appendix, other = summary_tables(result)
    quadrant = result.paired_analysis(*(paired or ()))
    scatter = None
    if quadrant is not None:
        g = np.asarray(result.scores[quadrant.grounded.metric], dtype=float)
        c = np.asarray(result.scores[quadrant.correct.metric], dtype=float)
        keep = ~np.isnan(g) & ~np.isnan(c)
        if "abstained" in result.scores:
            keep &= np.asarray(result.scores["abstained"]) != 1
        scatter = _markup(
            figures.quadrant_scatter(
                g[keep],
                c[keep],
                grounded_label=str(quadrant.grounded),
                correct_label=str(quadrant.correct),
                grounded_at=quadrant.grounded.at_least,
                correct_at=quadrant.correct.at_least,
            )
        )
    columns = [(m, np.asarray(v, dtype=float)) for m, v in result.scores.items() if not np.all(np.isnan(v))]
    score_figure = _score_figure(result)
    judging = result.judging
    context = {
        "title": title,
        "version": __version__,
        "n": len(result),
        "primary": primary,
        "appendix": appendix,
        "other": other,
        "other_agreements": list(dict.fromkeys((r["metric"], r["agreement"]) for r in other if r["agreement"])),
        "confidence": f"{result.settings.confidence * 100:g}%",
        "score_figure": _markup(score_figure) if score_figure else None,
        "distributions": _markup(figures.distributions(columns[:MAX_DISTRIBUTIONS])) if columns else None,
        "quadrant": quadrant,
        "readings": CELL_READINGS,
        "scatter": scatter,
        "diagnostics": _diagnostics(result),
        "worst": _worst_items(result, worst, kept),
        "undefined": sorted(
            {(s.metric, reason, count) for s in result.summaries for reason, count in s.undefined_reasons.items()}
        ),
        "notes": sorted({(s.metric, note, count) for s in result.summaries for note, count in s.notes.items()}),
        "judging": judging,
        "judge_totals": judging.totals() if judging else None,
        "cost": judging.cost(*prices) if judging and prices else None,
        "prices": prices,
        "signatures": list(dict.fromkeys(s.signature.render() for s in result.summaries))
        + ([quadrant.signature] if quadrant else []),
    }
    return environment.get_template("run.html.j2").render(**context)


def render_agreement_html(result: Agreement, *, title: str) -> str:
    """``ragmeter agree`` as one HTML page: the figures with their intervals, the ceiling, each annotator, and
    the items' scores against the human values."""
    scatter = figures.agreement_scatter(
        np.array(result.scores), np.array(result.human), metric=result.metric, label=result.label
    )
    return (
        _environment()
        .get_template("agree.html.j2")
        .render(
            title=title,
            version=__version__,
            result=result,
            scatter=_markup(scatter),
            left_out={name: count for name, count in result.counts.items() if count},
        )
    )


def render_estimate_html(result: HumanEstimate, *, title: str) -> str:
    """``ragmeter estimate`` as one HTML page: the three estimates with their intervals, as a table and a
    figure, the labelled share per score quartile, the warnings and the signature."""
    n = result.labelled.n_labelled
    human = [(f"PPI++ ({result.metric} + {n} labels)", result.ppi), (f"labelled items alone ({n})", result.labelled)]
    own = (f"{result.metric}'s own mean{'' if result.of == 'mean' else ' difference'}", result.scores)
    figure = figures.estimates(
        [(name, e.value, e.low, e.high) for name, e in human],
        (own[0], own[1].value, own[1].low, own[1].high),
        label=result.label,
        confidence=result.ppi.confidence,
    )
    return (
        _environment()
        .get_template("estimate.html.j2")
        .render(
            title=title,
            version=__version__,
            result=result,
            rows=[*human, own],
            figure=_markup(figure),
            worth=None if math.isinf(result.effective_labels) else round(result.effective_labels),
        )
    )


def render_comparison_html(comparisons: Sequence[Comparison], *, title: str) -> str:
    """The comparison of runs as one HTML page: each candidate against the baseline."""
    environment = _environment()
    sections = []
    for comparison in comparisons:
        scores = [
            (m.metric, m.difference, m.ci_low, m.ci_high, m.p_holm < 0.05)
            for m in comparison.overall
            if _unit_interval(m.metric) and not math.isnan(m.difference)
        ]
        groups = [
            {"field": field, "value": value, "rows": comparison_rows(metrics)}
            for (field, value), metrics in comparison.groups.items()
        ]
        sections.append(
            {
                "comparison": comparison,
                "groups": groups,
                "gate": gate_rows(comparison),
                "header": header(comparison),
                "forest": _markup(figures.forest(scores)) if scores else None,
            }
        )
    return environment.get_template("compare.html.j2").render(
        title=title, version=__version__, sections=sections, gate_header=GATE_HEADER, no_signature=NO_SIGNATURE
    )


def render_serve_html(
    *, title: str, panels: Sequence[Mapping[str, Any]], checks: Sequence[Mapping[str, Any]], **page: Any
) -> str:
    """``ragmeter serve``'s page at ``/``: per metric (``panels``: ``metric``, ``series`` of group → points of
    (time, mean, low, high), ``rows`` of the span's figures per group), its figure over time and its table; the
    drop checks' verdicts; ``page``: the header's figures (``hours``, ``until``, ``by``, ``step``, ``backlog``,
    ``lag``, ``judge_tokens``, ``watching``, ``confidence``)."""
    confidence = page["confidence"]
    shown = [
        {
            **panel,
            "figure": _markup(figures.timeline(panel["series"], metric=panel["metric"], confidence=confidence))
            if panel["series"]
            else None,
        }
        for panel in panels
    ]
    return (
        _environment()
        .get_template("serve.html.j2")
        .render(
            title=title,
            version=__version__,
            panels=shown,
            checks=checks,
            confidence_percent=f"{confidence * 100:g}",
            **page,
        )
    )
