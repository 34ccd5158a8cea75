"""Grounding and generation metrics of seed 003: rates of answer labels.

Notation (seed 003): answer i carries 0/1 labels g_i ``support_present``, v_i
``unsupported_claim_present``, x_i ``contradicted_claim_present``, z_i ``source_cited``, f_i
``fabricated_source``, d_i ``proper_action``, o_i ``response_on_topic``, h_i ``helpful``, n_i
``incomplete`` and r_i ``unsafe_content``. Each rate is (1/I) · Σ_i label_i over the answers that carry
the label; an answer without it (or whose annotators tied on it) is undefined for that metric, with
the reason, and stays out of the mean. ConditionalFabricationRate is a ratio of sums over the answers
that cite: Σ z_i f_i / Σ z_i, i.e. the mean of f_i over the items with z_i = 1.

``source_cited`` and ``fabricated_source`` can also be read off the answer (setting ``source_labels``):
z_i = 1 when the answer holds a ``[CIT:doc_id]`` marker, f_i = 1 when one of its cited doc_ids is not
among the retrieved chunks' (:func:`derived_source_labels`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragmeter.core.records import Record
from ragmeter.metrics._registry import Aggregation, Metric, Noted, Outcome, Undefined, no_settings, register
from ragmeter.text.citations import find_citations

if TYPE_CHECKING:
    from ragmeter.engine.context import ItemContext, RunContext

__all__ = ["conditional_fabrication_rate", "derived_source_labels", "label_rate"]


def label_rate(labels: Sequence[int]) -> float:
    """(1/I) · Σ_i y_i for one 0/1 answer label y: GroundingPresenceRate (y = g), UnsupportedClaimRate
    (v), ContradictionRate (x), CitationPresenceRate (z), ProperActionRate (d), OnTopicRate (o),
    HelpfulnessRate (h), IncompletenessRate (n), UnsafeContentRate (r). NaN for no answers.

    >>> label_rate([1, 0, 1, 1])
    0.75
    """
    return sum(labels) / len(labels) if labels else float("nan")


def conditional_fabrication_rate(source_cited: Sequence[int], fabricated_source: Sequence[int]) -> float:
    """ConditionalFabricationRate = Σ_i z_i f_i / Σ_i z_i: among answers that cite, the share with a
    fabricated citation. NaN when no answer cites.

    >>> conditional_fabrication_rate([1, 1, 0, 1], [1, 0, 1, 0])
    0.3333333333333333
    """
    cited = sum(source_cited)
    if not cited:
        return float("nan")
    return sum(z * f for z, f in zip(source_cited, fabricated_source, strict=True)) / cited


def derived_source_labels(answer: str, retrieved_ids: Sequence[str]) -> tuple[int, int]:
    """(z, f) read off the answer: z = 1 when it holds a ``[CIT:doc_id]`` marker; f = 1 when a cited
    doc_id is not among ``retrieved_ids``.

    >>> derived_source_labels("Paris [CIT:d1]. Big [CIT:d9].", ["d1", "d2"])
    (1, 1)
    >>> derived_source_labels("Paris.", ["d1"])
    (0, 0)
    """
    cited = find_citations(answer)
    retrieved = set(retrieved_ids)
    return int(bool(cited)), int(any(doc_id not in retrieved for doc_id in cited))


def _human(record: Record, name: str) -> float | Undefined:
    if name not in record.labels:
        return Undefined(f"no {name} label")
    value = record.labels[name]
    if value is None:
        return Undefined(f"annotators tied on {name}")
    return float(value)


_DERIVED_NOTE = "derived from the answer's [CIT:…] markers"


def _source_label(record: Record, name: str, run: RunContext) -> Outcome:
    mode = run.settings.source_labels
    if mode == "human" or (mode == "auto" and name in record.labels):
        return _human(record, name)
    cited, fabricated = derived_source_labels(record.answer, [c.doc_id for c in record.contexts])
    value = float(cited if name == "source_cited" else fabricated)
    return Noted(value, _DERIVED_NOTE) if mode == "auto" else value


def _value(outcome: Outcome) -> float | None:
    if isinstance(outcome, Undefined):
        return None
    return outcome.value if isinstance(outcome, Noted) else outcome


def _conditional_fabrication(record: Record, item: ItemContext, run: RunContext) -> Outcome:
    cited = _source_label(record, "source_cited", run)
    if isinstance(cited, Undefined):
        return cited
    if not _value(cited):
        return Undefined("answer cites no source (outside the cited subset)")
    return _source_label(record, "fabricated_source", run)


def _source_settings(run: RunContext) -> Mapping[str, Any]:
    return {"source_labels": run.settings.source_labels}


def _rate(name: str, family: str, label: str, description: str, *, higher_is_better: bool) -> None:
    def compute(record: Record, item: ItemContext, run: RunContext) -> Outcome:
        if label in ("source_cited", "fabricated_source"):
            return _source_label(record, label, run)
        return _human(record, label)

    register(
        Metric(
            name=name,
            family=family,
            description=description,
            needs=("labels",),
            aggregation=Aggregation.RATE,
            value_range=(0.0, 1.0),
            higher_is_better=higher_is_better,
            compute=compute,
            signature=_source_settings if label == "source_cited" else no_settings,
        )
    )


_rate(
    "grounding_presence_rate",
    "grounding",
    "support_present",
    "Answers with at least one substantive claim supported by the context (support_present).",
    higher_is_better=True,
)
_rate(
    "unsupported_claim_rate",
    "grounding",
    "unsupported_claim_present",
    "Answers with at least one unsupported (hallucinated) claim (unsupported_claim_present); lower is better.",
    higher_is_better=False,
)
_rate(
    "contradiction_rate",
    "grounding",
    "contradicted_claim_present",
    "Answers with a claim the context contradicts (contradicted_claim_present); lower is better.",
    higher_is_better=False,
)
_rate(
    "citation_presence_rate",
    "grounding",
    "source_cited",
    "Answers that cite a source (source_cited; or derived from [CIT:…] markers).",
    higher_is_better=True,
)
register(
    Metric(
        name="conditional_fabrication_rate",
        family="grounding",
        description="Among answers that cite, those with a fabricated citation: Σ z·f / Σ z; lower is better.",
        needs=("labels",),
        aggregation=Aggregation.RATE,
        value_range=(0.0, 1.0),
        higher_is_better=False,
        compute=_conditional_fabrication,
        signature=_source_settings,
    )
)
_rate(
    "proper_action_rate",
    "generation",
    "proper_action",
    "Answers that took the right action: answer, clarify or refuse (proper_action).",
    higher_is_better=True,
)
_rate(
    "on_topic_rate",
    "generation",
    "response_on_topic",
    "Answers that substantively address the request (response_on_topic).",
    higher_is_better=True,
)
_rate(
    "helpfulness_rate",
    "generation",
    "helpful",
    "Answers that let a typical user make progress (helpful).",
    higher_is_better=True,
)
_rate(
    "incompleteness_rate",
    "generation",
    "incomplete",
    "Answers that miss a required part of the request (incomplete); lower is better.",
    higher_is_better=False,
)
_rate(
    "unsafe_content_rate",
    "generation",
    "unsafe_content",
    "Answers with content that violates safety or policy (unsafe_content); lower is better.",
    higher_is_better=False,
)
