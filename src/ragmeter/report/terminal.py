r"""The run report as text: the seeds' primary table and appendix, then the other metrics grouped by
family, every figure with its interval; then what the judge did and cost, undefined reasons, notes and
signatures.

Reports print text that comes from files (ids, file names, reasons that quote a judge's reply), and a terminal
obeys the control characters in it: ``\x1b[2J`` clears the screen, ``\r`` writes over the line. Every text
report therefore passes its lines through :func:`visible`, which shows them as escapes.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Iterable

from ragmeter.core.errors import ConfigError
from ragmeter.judges.accounting import JudgingReport
from ragmeter.metrics import get_metric
from ragmeter.metrics.citation import tau_sim_notes
from ragmeter.results.aggregate import Summary
from ragmeter.results.diagnostics import Diagnostics, pipeline_diagnostics
from ragmeter.results.paired import CELL_READINGS, Quadrant, Threshold
from ragmeter.results.run_result import EvalResult
from ragmeter.stats.inter_annotator import LabelAgreement
from ragmeter.text.languages import LANGUAGES, overridden_note

__all__ = [
    "APPENDIX",
    "PRIMARY",
    "agreement_lines",
    "agreement_of",
    "format_number",
    "render_annotator_agreement",
    "render_diagnostics",
    "render_judging",
    "render_quadrant",
    "render_report",
    "visible",
]

# (label, metric, statistic) in the order seeds 000/001 report them; the faithfulness that agrees with people
# best leads (issue 27), each shown with its measured agreement (:func:`agreement_lines`).
PRIMARY = (
    ("Faithfulness (judge, IDK)", "judge_faithfulness_idk", "mean"),
    ("Faithfulness (offline, IDK)", "faithfulness_offline", "mean"),
    ("Faithfulness (judge, seed 002)", "judge_faithfulness", "mean"),
    ("Faithfulness (fallback)", "faithfulness_fallback", "mean"),
    ("Overlap", "overlap", "mean"),
    ("F1", "token_f1", "mean"),
    ("Tokens (mean)", "total_tokens", "mean"),
    ("P50 latency (ms)", "latency_ms", "p50"),
    ("Abstain rate", "abstained", "rate"),
)
APPENDIX = (
    ("EM", "exact_match", "rate"),
    ("P95 latency (ms)", "latency_ms", "p95"),
    ("Prompt tokens (mean)", "prompt_tokens", "mean"),
    ("Completion tokens (mean)", "completion_tokens", "mean"),
    ("IDK+Cit count (must be 0)", "idk_citation_count", "sum"),
    ("Malformed [CIT] (should be 0)", "malformed_citation_count", "sum"),
)
_WIDTHS = (34, 10, 20, 7)
#: The width agreement lines are wrapped to (the tables' own, about).
_REPORT_WIDTH = 110
FAMILY_TITLES = {
    "citation": "Citation",
    "lexical": "Lexical",
    "efficiency": "Efficiency",
    "mtrag": "MT-RAG",
    "retrieval": "Retrieval",
    "grounding": "Grounding",
    "generation": "Generation",
    "judged": "Judged (seed 002)",
    "claim_level": "Claim level (nuggets, RAGChecker)",
}
#: Which metrics read each judge prompt's verdicts.
PROMPT_USERS = {
    "claims": "faithfulness, precision, recall",
    "claim_split": "faithfulness, precision, recall",
    "nuggets": "the question's nuggets",
    "nugget_grades": "nugget recall, claim recall",
    "correctness": "correctness",
    "relevance": "relevance",
}


#: C0 controls, DEL, C1 controls (0x80–0x9f: 0x9b alone starts an escape sequence in some terminals) and the
#: bidirectional controls (which reorder what a terminal shows after them)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SHORT_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def visible(text: str) -> str:
    r"""``text`` with every C0 or C1 control character (and DEL) written as its escape, and each bidirectional
    control (U+202E, say) as its ``\u`` escape, so that an id shows as the characters it holds; other text as is.

    >>> print(visible("q1\x1b[2J\r\x07 jawaban 答案 \u202egnp.exe"))
    q1\x1b[2J\r\x07 jawaban 答案 \u202egnp.exe
    """
    return _CONTROL.sub(lambda m: _SHORT_ESCAPES.get(m.group(), _escape(m.group())), text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def agreement_of(metric: str) -> str | None:
    """The registered metric's measured agreement with people (:attr:`Metric.agreement`), or ``None``."""
    try:
        return get_metric(metric).agreement
    except ConfigError:
        return None


def agreement_lines(metrics: Iterable[str]) -> list[str]:
    """What follows the primary table: how far each of its ``metrics`` agrees with people, where measured, each
    wrapped to the report's width."""
    return [
        line
        for metric in metrics
        if (agreement := agreement_of(metric))
        for line in textwrap.wrap(
            f"{metric} {agreement}", width=_REPORT_WIDTH, initial_indent="  ", subsequent_indent="    "
        )
    ]


def format_number(value: float | None) -> str:
    """Three decimals for scores, one for hundreds, thousands separators up to a billion, then
    scientific notation (a token count of 1e30 is a logging bug, not a 31-digit figure)."""
    if value is None or math.isnan(value):
        return "–"
    magnitude = abs(value)
    if magnitude >= 1e9:
        return f"{value:.3g}"
    if magnitude >= 10_000:
        return f"{value:,.0f}"
    return f"{value:.1f}" if magnitude >= 100 else f"{value:.3f}"


def _row(label: str, s: Summary) -> str:
    interval = "" if s.ci_low is None else f"[{format_number(s.ci_low)}, {format_number(s.ci_high)}]"
    undefined = f"{s.n_undefined}/{s.n + s.n_undefined}" if s.n_undefined else "0"
    value = _count(s.value) if s.statistic == "sum" else format_number(s.value)
    line = f"{label:<{_WIDTHS[0]}}{value:>{_WIDTHS[1]}}  {interval:<{_WIDTHS[2]}}{s.n:>{_WIDTHS[3]}}  {undefined}"
    if s.statistic == "sum" and s.value > 0:
        line += "   ← contract violated"
    if s.five_point and not math.isnan(s.value):
        line += f"   (1–5: {1 + 4 * s.value:.2f})"
    if s.warning is not None:
        line += "   *"
    return line


def _count(value: float) -> str:
    return f"{value:,.0f}" if abs(value) < 1e9 else f"{value:.3g}"


def _section(title: str, rows: list[str], confidence: float) -> list[str]:
    if not rows:
        return []
    label = f"{confidence * 100:g}% CI"
    header = f"{title:<{_WIDTHS[0]}}{'value':>{_WIDTHS[1]}}  {label:<{_WIDTHS[2]}}{'n':>{_WIDTHS[3]}}  undefined"
    return ["", header, "─" * len(header), *rows]


def render_report(
    result: EvalResult,
    *,
    title: str,
    prices: tuple[float, float] | None = None,
    paired: tuple[Threshold, Threshold] | None = None,
) -> str:
    """The primary table, the appendix, the paired analysis, any other selected metric, the judge's work,
    undefined reasons, signatures. ``prices`` (per million prompt and completion tokens) add the judge's cost;
    ``paired``: the grounded and correct thresholds of the paired analysis (default: the first grounding and
    correctness metrics the run has, see :mod:`ragmeter.results.paired`)."""
    by_key = {(s.metric, s.statistic): s for s in result.summaries}
    shown: set[tuple[str, str]] = set()

    def rows(layout: tuple[tuple[str, str, str], ...]) -> list[str]:
        out = []
        for label, metric, statistic in layout:
            if (metric, statistic) in by_key:
                out.append(_row(label, by_key[(metric, statistic)]))
                shown.add((metric, statistic))
        return out

    confidence = result.settings.confidence
    lines = [title, f"N = {len(result)}"]
    lines += _section("Primary", rows(PRIMARY), confidence)
    lines += agreement_lines(metric for _, metric, statistic in PRIMARY if (metric, statistic) in shown)
    lines += _section("Appendix", rows(APPENDIX), confidence)
    quadrant = result.paired_analysis(*(paired or ()))
    if quadrant is not None:
        lines += render_quadrant(quadrant)
    diagnostics = pipeline_diagnostics(result.summaries)
    if diagnostics is not None:
        lines += render_diagnostics(diagnostics, confidence)
        shown.update((s.metric, s.statistic) for _, rows in diagnostics.stages for _, s in rows)
    by_family: dict[str, list[str]] = {}
    for s in result.summaries:
        if (s.metric, s.statistic) not in shown:
            by_family.setdefault(s.family or "other", []).append(_row(f"{s.metric} ({s.statistic})", s))
    for family, family_rows in by_family.items():
        lines += _section(FAMILY_TITLES.get(family, family.capitalize()), family_rows, confidence)
        lines += agreement_lines(
            dict.fromkeys(
                s.metric
                for s in result.summaries
                if (s.family or "other") == family and (s.metric, s.statistic) not in shown
            )
        )
    warnings = dict.fromkeys(s.warning for s in result.summaries if s.warning is not None)
    lines += [f"* {warning}" for warning in warnings]
    if result.judging is not None:
        lines += render_judging(result.judging, prices)
    for heading, attribute in (("Undefined items", "undefined_reasons"), ("Notes (values kept)", "notes")):
        counted = sorted(
            dict.fromkeys(
                (s.metric, reason, count) for s in result.summaries for reason, count in getattr(s, attribute).items()
            )
        )
        if counted:
            lines += ["", heading] + [f"  {m}: {count} × {reason}" for m, reason, count in counted]
    lines += language_lines(result)
    lines += ["", f"Intervals: {confidence * 100:g}%; signatures:"]
    lines += [f"  {text}" for text in dict.fromkeys(s.signature.render() for s in result.summaries)]
    if quadrant is not None:
        lines.append(f"  {quadrant.signature}")
    return "\n".join(map(visible, lines))


def language_lines(result: EvalResult) -> list[str]:
    """Which language's text tools scored how many items (and how many records' own field overrode a
    ``--language`` code), and, for a run that embeds, each language's embedder and τ_sim as the signatures name them
    (``embedder.id``: Indonesian items'), noting a τ_sim given that replaced another embedder's own."""
    counts = result.language_counts
    if not counts:
        return []
    names = {code: LANGUAGES[code].name for code in counts if code in LANGUAGES}
    lines = [
        "",
        f"Languages (--language {result.settings.language}): "
        + ", ".join(f"{count} {names.get(code, code)}" for code, count in counts.items()),
    ]
    overridden = overridden_note(result.settings.language, counts)
    lines += [f"  {overridden}"] if overridden else []
    embedding = next((s.settings for s in result.signatures.values() if "embedder" in s.settings), None)
    if embedding is not None:
        for code in counts:
            model = embedding.get(f"embedder.{code}", embedding["embedder"])
            tau = embedding.get(f"tau_sim.{code}", embedding.get("tau_sim"))
            lines.append(f"  {names.get(code, code)} items embedded by {model} at tau_sim {tau}")
        lines += [f"  {note}" for note in tau_sim_notes(result.settings, embedding, counts)]
    return lines


def render_quadrant(quadrant: Quadrant) -> list[str]:
    """The grounded × correct table with counts, shares and an example item per cell (its id through
    :func:`visible`), and what each cell suggests."""
    left_out = [f"{quadrant.n_abstained} abstaining"] if quadrant.n_abstained else []
    left_out += [f"{quadrant.n_left_out} with either undefined"] if quadrant.n_left_out else []
    header = f"Paired analysis: grounded = {quadrant.grounded}, correct = {quadrant.correct} ({quadrant.n} items" + (
        f"; left out: {', '.join(left_out)})" if left_out else ")"
    )

    def cell(grounded: bool, correct: bool) -> str:
        c = quadrant.cells[(grounded, correct)]
        share = "–" if math.isnan(c.share) else f"{100 * c.share:.0f}%"
        return f"{c.count:>5} {share:>5}  {'e.g. ' + visible(c.example) if c.example else '':<14}"

    lines = ["", header, f"{'':<16}{'correct':<28}{'not correct':<28}"]
    for grounded, label in ((True, "grounded"), (False, "not grounded")):
        lines.append(f"{label:<16}{cell(grounded, True):<28}{cell(grounded, False):<28}".rstrip())
    for (grounded, correct), reading in CELL_READINGS.items():
        if (grounded, correct) != (True, True) and quadrant.cells[(grounded, correct)].count:
            name = {
                (True, False): "grounded, not correct",
                (False, True): "not grounded, correct",
                (False, False): "neither",
            }[(grounded, correct)]
            lines.append(f"  {name}: {reading}")
    return lines


def render_diagnostics(diagnostics: Diagnostics, confidence: float) -> list[str]:
    """Where the pipeline fails (:mod:`ragmeter.results.diagnostics`): the retriever's figures, the generator's,
    the answers that lost a vital nugget at each stage, each with its interval, then the reading."""
    lines = []
    for title, rows in diagnostics.stages:
        lines += _section(
            f"Where it fails: {title.lower()}", [_row(s.metric, s) + f"   {what}" for what, s in rows], confidence
        )
    return [*lines, diagnostics.reading]


def render_judging(judging: JudgingReport, prices: tuple[float, float] | None = None) -> list[str]:
    """Per prompt: calls, cache hits, requests, retries, repairs, failures and tokens spent; totals; cost."""
    header = (
        f"{'Judge calls':<44}{'calls':>7}{'cached':>8}{'sent':>7}{'retry':>7}{'repair':>8}{'failed':>8}"
        f"{'prompt tok':>12}{'compl. tok':>12}"
    )
    lines = ["", f"Judge: {visible(judging.judge)}", header, "─" * len(header)]
    for name, u in judging.usage.items():
        label = f"{name} ({PROMPT_USERS.get(name, name)})"
        lines.append(
            f"{label:<44}{u.calls:>7}{u.cached:>8}{u.requests:>7}{u.retries:>7}{u.repairs:>8}"
            f"{u.failures:>8}{u.prompt_tokens:>12}{u.completion_tokens:>12}"
        )
    t = judging.totals()
    lines.append(
        f"{'total':<44}{t['calls']:>7}{t['cached']:>8}{t['requests']:>7}{t['retries']:>7}"
        f"{t['repairs']:>8}{t['failures']:>8}{t['prompt_tokens']:>12}{t['completion_tokens']:>12}"
    )
    n = len(judging.prompt_tokens)
    if n:
        per_item = (t["prompt_tokens"] + t["completion_tokens"]) / n
        lines.append(
            f"Tokens spent this run: {t['prompt_tokens'] + t['completion_tokens']} "
            f"({per_item:.0f} per item); from cache: {t['cached']} calls that had cost "
            f"{t['cached_prompt_tokens'] + t['cached_completion_tokens']} tokens"
        )
    if prices is not None:
        lines.append(
            f"Cost this run: {judging.cost(*prices):.4f} at {prices[0]:g} / {prices[1]:g} per million "
            "prompt / completion tokens"
        )
    if judging.failures:
        lines.append(
            f"{len(judging.failures)} judge call(s) failed; their items are undefined for the metrics "
            "that read them (reasons below, raw replies in judge_failures.jsonl)"
        )
    return lines


def render_annotator_agreement(agreement: list[LabelAgreement]) -> str:
    """Agreement per label: units, raw agreement, prevalence of 1s, Cohen's or Fleiss' κ, Krippendorff's α."""
    header = (
        f"{'label':<28}{'annot.':>7}{'units':>7}{'shared':>8}{'agree':>8}{'prev.':>8}{'kappa':>16}"
        f"{'alpha':>8}{'ties':>6}"
    )
    lines = ["", header, "─" * len(header)]
    for a in agreement:
        kappa = (
            f"{format_number(a.cohen_kappa)} Cohen"
            if a.cohen_kappa is not None
            else f"{format_number(a.fleiss_kappa)} Fleiss"
            if a.fleiss_kappa is not None
            else "–"
        )
        lines.append(
            f"{a.label:<28}{len(a.annotators):>7}{a.n_units:>7}{a.n_shared:>8}{format_number(a.raw_agreement):>8}"
            f"{format_number(a.prevalence):>8}{kappa:>16}{format_number(a.krippendorff_alpha):>8}{a.n_ties:>6}"
        )
    lines.append("kappa and alpha are '–' when chance agreement is already perfect (one class only).")
    return "\n".join(map(visible, lines))
