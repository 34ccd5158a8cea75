"""Where the pipeline failed: RAGChecker's diagnostics of a run read together, retriever against generator.

The claim-level metrics (:mod:`ragmeter.metrics.claim_level`) come from one matrix of the reference's nuggets and
the answer's claims against the retrieved chunks. Read by stage:

- **retriever**: ``context_claim_recall`` (the nuggets the chunks state) and ``claim_context_precision`` (the
  chunks that state a nugget);
- **generator**: ``context_utilization`` (of the nuggets the chunks state, those the answer states), the two
  noise sensitivities (wrong claims taken from chunks that hold a nugget, or from chunks that hold none),
  ``hallucination`` (wrong claims no chunk states), ``self_knowledge`` (right claims no chunk states) and
  ``claim_faithfulness`` (claims a chunk states);
- **lost vital nuggets**: the share of answers that miss a vital nugget no chunk states (``retrieval_failure``:
  the retriever lost it) and of those that miss one a chunk states (``generation_failure``: the generator lost
  it). An answer can do both. The reading compares the two by their intervals only: where they overlap the run
  does not tell which stage loses more, and it says so.

Each row is the run's :class:`~ragmeter.results.aggregate.Summary` of the metric, its interval included; a metric
the run did not compute is left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ragmeter.results.aggregate import Summary

__all__ = ["FAILURES", "GENERATOR", "RETRIEVER", "Diagnostics", "pipeline_diagnostics"]

#: (metric, what it says), per stage, in the order a report shows them.
RETRIEVER = (
    ("context_claim_recall", "nuggets the retrieved chunks state"),
    ("claim_context_precision", "retrieved chunks that state a nugget"),
)
GENERATOR = (
    ("context_utilization", "retrieved nuggets the answer states"),
    ("noise_sensitivity_relevant", "wrong claims taken from chunks holding a nugget (lower is better)"),
    ("noise_sensitivity_irrelevant", "wrong claims taken from chunks holding none (lower is better)"),
    ("hallucination", "wrong claims no chunk states (lower is better)"),
    ("self_knowledge", "right claims no chunk states"),
    ("claim_faithfulness", "answer claims a chunk states"),
)
FAILURES = (
    ("retrieval_failure", "answers missing a vital nugget no chunk states (lost by the retriever)"),
    ("generation_failure", "answers missing a vital nugget a chunk states (lost by the generator)"),
)


@dataclass(frozen=True)
class Diagnostics:
    """A run's diagnostics: per stage, (what it says, the metric's summary), and the reading of the failures."""

    retriever: tuple[tuple[str, Summary], ...]
    generator: tuple[tuple[str, Summary], ...]
    failures: tuple[tuple[str, Summary], ...]
    reading: str

    @property
    def stages(self) -> tuple[tuple[str, tuple[tuple[str, Summary], ...]], ...]:
        """(title, rows) of each stage that has a row, in the order a report shows them."""
        return tuple(
            (title, rows)
            for title, rows in (
                ("Retriever", self.retriever),
                ("Generator", self.generator),
                ("Lost vital nuggets", self.failures),
            )
            if rows
        )

    @property
    def metrics(self) -> tuple[str, ...]:
        return tuple(s.metric for _, rows in self.stages for _, s in rows)


def _rows(layout: Sequence[tuple[str, str]], by_metric: dict[str, Summary]) -> tuple[tuple[str, Summary], ...]:
    return tuple((what, by_metric[metric]) for metric, what in layout if metric in by_metric)


def _reading(failures: tuple[tuple[str, Summary], ...]) -> str:
    by_metric = {s.metric: s for _, s in failures}
    retrieval, generation = by_metric.get("retrieval_failure"), by_metric.get("generation_failure")
    if retrieval is None or generation is None:
        return "Which stage loses vital nuggets needs both retrieval_failure and generation_failure."
    if retrieval.n == 0:
        return (
            "No answer has a failure share (no vital nugget, or nuggets written from the retrieved chunks): the "
            "failure shares are undefined."
        )
    if retrieval.value == generation.value == 0:
        return "No answer lost a vital nugget, in retrieval or in generation."
    low_r, high_r, low_g, high_g = (
        math.nan if v is None else v
        for v in (retrieval.ci_low, retrieval.ci_high, generation.ci_low, generation.ci_high)
    )
    if any(math.isnan(v) for v in (low_r, high_r, low_g, high_g)):
        return "The failure shares have no interval (too few answers): this run does not tell which stage loses more."
    if low_r > high_g:
        return (
            "More answers lose a vital nugget in retrieval than in generation (the intervals do not overlap): "
            "the retriever first."
        )
    if low_g > high_r:
        return (
            "More answers lose a vital nugget in generation than in retrieval (the intervals do not overlap): "
            "the generator first."
        )
    return "The two intervals overlap: this run does not tell which stage loses more vital nuggets."


def pipeline_diagnostics(summaries: Sequence[Summary]) -> Diagnostics | None:
    """The diagnostics of a run's ``summaries`` (its ``mean`` and ``rate`` figures); ``None`` when it has none of
    the stage metrics."""
    by_metric = {s.metric: s for s in summaries if s.statistic in ("mean", "rate")}
    retriever, generator, failures = (_rows(layout, by_metric) for layout in (RETRIEVER, GENERATOR, FAILURES))
    if not (retriever or generator or failures):
        return None
    return Diagnostics(retriever, generator, failures, _reading(failures))
