"""The evaluation record: one query example and everything logged about it.

Records are frozen dataclasses, validated where they enter ragmeter (see :mod:`ragmeter.io`), so metric
code can trust their types; nothing in ragmeter changes a record after it is read (their label mappings are
plain dicts: treat them as read-only too).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = [
    "ALL_LABELS",
    "ANSWER_LABELS",
    "CHUNK_LABELS",
    "NUGGET_IMPORTANCE",
    "WHY_MISSING",
    "Answerability",
    "Chunk",
    "Nugget",
    "Record",
    "Turn",
    "Usage",
]

#: The metadata key under which a reader says why a record lacks a field ({"latency_ms": "the root span's end
#: time precedes its start time …"}); a metric undefined for want of that field gives the reason with it.
WHY_MISSING = "why_missing"

#: Seed 003's labels of one retrieved chunk (per rank), each 0 or 1.
CHUNK_LABELS = ("topically_relevant", "evidence_sufficient", "misleading")
#: Seed 003's labels of one answer, each 0 or 1.
ANSWER_LABELS = (
    "support_present",
    "unsupported_claim_present",
    "contradicted_claim_present",
    "source_cited",
    "fabricated_source",
    "proper_action",
    "response_on_topic",
    "helpful",
    "incomplete",
    "unsafe_content",
)
ALL_LABELS = CHUNK_LABELS + ANSWER_LABELS
#: A nugget's importance, as TREC's assessors mark it: a good answer must state a vital one; an okay one is
#: worth stating.
NUGGET_IMPORTANCE = ("vital", "okay")


class Answerability(str, Enum):
    """Whether the retrieved material (or the corpus) can answer the question."""

    ANSWERABLE = "ANSWERABLE"
    PARTIAL = "PARTIAL"
    UNANSWERABLE = "UNANSWERABLE"
    CONVERSATIONAL = "CONVERSATIONAL"
    UNDERSPECIFIED = "UNDERSPECIFIED"


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrieved chunk, in rank order within its record. ``labels`` holds the chunk labels
    (:data:`CHUNK_LABELS`: 0, 1, or ``None`` where annotators tied) and any others the source gives."""

    doc_id: str
    text: str
    title: str | None = None
    labels: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Turn:
    """One earlier turn of the conversation (``role`` is ``user`` or ``assistant``)."""

    role: str
    text: str


@dataclass(frozen=True, slots=True)
class Nugget:
    """One atomic fact a good answer to the question states (TREC's nuggets), ``vital`` or not (okay)."""

    text: str
    vital: bool


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one LLM call made by the system under test."""

    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True, slots=True)
class Record:
    """One evaluated query example.

    ``answerability`` is ``None`` when unknown; readers set it to ``ANSWERABLE`` when the source omits
    it and a non-empty reference exists (SPEC §1). ``usage`` is ``None`` when not logged, which is
    different from an empty tuple (no LLM call made). ``action`` carries an explicit gate decision such
    as ``"ABSTAIN"``. ``labels`` holds the answer labels (:data:`ANSWER_LABELS`: 0, 1, or ``None`` where
    annotators tied) and any others. ``qrels`` grades the query's judged pool by doc_id (0, 1 or 2 as
    seed 003's w), for NDCG with ``ideal=pool``; ``None`` when not given. ``nuggets`` are the facts a good
    answer states, written by people (used as given instead of the judge's from the reference); ``None``
    when not given.
    """

    id: str
    question: str
    answer: str
    contexts: tuple[Chunk, ...] = ()
    references: tuple[str, ...] = ()
    history: tuple[Turn, ...] = ()
    answerability: Answerability | None = None
    labels: Mapping[str, Any] = field(default_factory=dict)
    usage: tuple[Usage, ...] | None = None
    latency_ms: float | None = None
    action: str | None = None
    qrels: Mapping[str, int] | None = None
    nuggets: tuple[Nugget, ...] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def model_id(self) -> str | None:
        """The system that produced the answer, when the file mixes several."""
        value = self.metadata.get("model_id")
        return None if value is None else str(value)

    @property
    def conversation_id(self) -> str | None:
        """The conversation this record belongs to, used to resample clusters."""
        value = self.metadata.get("conversation_id")
        return None if value is None else str(value)
