"""MkDocs hook: pages written from the project itself at every build, so they cannot drift from it. The home
page is the README and the benchmarks page ``benchmarks/README.md`` (one text for both). The metric registry
page is ``ragmeter.metrics``'s registry: its Markdown source holds a marker that this hook replaces with one
section per family: each metric's name, what it measures (its registered description, the formula where it has
one), range, run figure, direction, what it needs, how far it agrees with people where that was measured, and
the names of the values its signature carries."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

MARKER = "<!-- metric registry -->"
#: ``<!-- include PATH -->``: the file at PATH (from the repository's root) in its place; the README's links to
#: ``docs/…`` made relative to the site.
INCLUDE = re.compile(r"<!-- include (\S+) -->")
ROOT = Path(__file__).resolve().parents[1]


def _range(metric: Any) -> str:
    low, high = metric.value_range
    if metric.aggregation.value == "rate":
        return "0 or 1"
    return f"{low:g}–{high:g}" if high is not None else f"≥ {low:g}"


#: How the per-item values become the run figure, by aggregation.
RUN_FIGURE = {"mean": "mean", "rate": "rate", "sum": "total", "quantiles": "P50, P95"}


def _direction(metric: Any) -> str:
    return {True: "higher", False: "lower", None: "–"}[metric.higher_is_better]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _signature_fields(metric: Any, run: Any) -> str:
    fields = sorted(metric.signature(run))
    return ", ".join(f"`{name}`" for name in fields) if fields else "–"


def registry_markdown() -> str:
    """The registry as Markdown: a table per family, in the order ``ragmeter metrics`` lists them."""
    from ragmeter import Settings
    from ragmeter.engine.context import RunContext
    from ragmeter.judges.engine import Judge
    from ragmeter.judges.protocol import ScriptedBackend
    from ragmeter.metrics import list_metrics
    from ragmeter.models import HashingEmbedder

    # the signature's field names only: a judge that is never called and the hashing embedder stand in
    run = RunContext(Settings(), embedder=HashingEmbedder(), judge=Judge(ScriptedBackend(lambda request: "")))
    families: dict[str, list[Any]] = {}
    for metric in list_metrics():
        families.setdefault(metric.family, []).append(metric)
    out = []
    for family, metrics in families.items():
        out += [
            f"## {family}",
            "",
            (
                "| metric | what it measures | range | run figure | better | needs | "
                "agreement with people | signature fields |"
            ),
            "|---|---|---|---|---|---|---|---|",
        ]
        out += [
            f"| `{m.name}` | {_cell(m.description)} | {_range(m)} | {RUN_FIGURE[m.aggregation.value]} | "
            f"{_direction(m)} | {', '.join(m.requirements) or '–'} | {_cell(m.agreement or '–')} | "
            f"{_signature_fields(m, run)} |"
            for m in metrics
        ]
        out.append("")
    return "\n".join(out)


def included(match: re.Match[str]) -> str:
    """The text of the file an include marker names, its links into ``docs/`` made relative to the site."""
    return (ROOT / match.group(1)).read_text(encoding="utf-8").replace("](docs/", "](")


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    markdown = INCLUDE.sub(included, markdown)
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, registry_markdown())
    return markdown
