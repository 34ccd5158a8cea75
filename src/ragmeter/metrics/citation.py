"""Citation-grounded answer metrics of seeds 000/001 (SPEC §2): Overlap, fallback Faithfulness,
Abstain, the IDK+citation contract count, and the count of malformed citation markers.

An answer is split into sentences; each sentence's ``[CIT:doc_id]`` markers are read and removed;
IDK sentences (see :class:`~ragmeter.text.idk.IdkDetector`) are set aside and the rest are *claim
sentences*. A claim sentence is *supported* iff it carries exactly one citation, the cited doc_id is
among the retrieved chunks, and cos(embed(sentence), embed(chunk text)) ≥ τ_sim; when several
retrieved chunks share the doc_id, the best-matching one counts.

The sentences, the IDK patterns, the embedder (under ``embedder="auto"``) and τ_sim (when not set) are the
record's language's (:meth:`~ragmeter.engine.context.RunContext.language`): an Indonesian answer is split with
Indonesian abbreviations, its refusals found by Indonesian patterns, and its sentences embedded by the multilingual
embedder at its calibrated τ_sim.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmeter.core.records import Answerability, Chunk, Record
from ragmeter.core.settings import Settings
from ragmeter.metrics._registry import Aggregation, Metric, register
from ragmeter.models import Embedder, default_tau_sim, embedder_backend
from ragmeter.text.citations import find_citations, malformed_citations, strip_citations
from ragmeter.text.idk import IdkDetector
from ragmeter.text.languages import AUTO, LANGUAGES, Language, language_signature
from ragmeter.text.sentences import SPLITTER_ID, split_sentences

if TYPE_CHECKING:
    from ragmeter.engine.context import ItemContext, RunContext

__all__ = [
    "AnswerAnalysis",
    "SentenceVerdict",
    "abstained",
    "analyze_answer",
    "faithfulness_fallback",
    "idk_citation_count",
    "malformed_citation_count",
    "overlap",
    "tau_sim_notes",
]

_DEFAULTS = Settings()
_TAU_SIM = default_tau_sim("onnx")


@dataclass(frozen=True)
class ParsedSentence:
    text: str
    claim: str
    citations: tuple[str, ...]
    is_idk: bool


@dataclass(frozen=True)
class SentenceVerdict:
    """One sentence of an answer and why it is or is not supported.

    ``reason`` is one of ``supported``, ``idk``, ``no citation``, ``several citations``,
    ``cited doc not retrieved``, ``below tau_sim``. ``cosine`` is set when it was computed.
    """

    text: str
    citations: tuple[str, ...]
    is_idk: bool
    supported: bool
    reason: str
    cosine: float | None = None


@dataclass(frozen=True)
class AnswerAnalysis:
    """The sentence verdicts of one answer and the figures derived from them."""

    sentences: tuple[SentenceVerdict, ...]
    explicit_abstain: bool = False

    @property
    def claim_sentences(self) -> int:
        return sum(not s.is_idk for s in self.sentences)

    @property
    def overlap(self) -> float:
        """supported / claim sentences; 0.0 when there are no claim sentences."""
        claims = self.claim_sentences
        return sum(s.supported for s in self.sentences) / claims if claims else 0.0

    @property
    def abstained(self) -> bool:
        """An explicit abstain action, or no claim sentence at all (every sentence IDK, or empty)."""
        return self.explicit_abstain or self.claim_sentences == 0


def parse_answer(prediction: str, idk: IdkDetector, language: Language | None = None) -> tuple[ParsedSentence, ...]:
    """Split an answer in ``language`` (English sentences, any language's IDK patterns when ``None``) into
    sentences with their citations and IDK flags."""
    return tuple(
        ParsedSentence(
            text=sentence,
            claim=strip_citations(sentence),
            citations=tuple(find_citations(sentence)),
            is_idk=idk.is_idk(sentence, language),
        )
        for sentence in split_sentences(prediction, language)
    )


def _cited_texts(sentence: ParsedSentence, contexts: Sequence[Chunk]) -> list[str]:
    """Texts of the retrieved chunks a claim sentence with exactly one citation cites; [] otherwise."""
    if sentence.is_idk or len(sentence.citations) != 1:
        return []
    return [chunk.text for chunk in contexts if chunk.doc_id == sentence.citations[0]]


def _verdict(
    sentence: ParsedSentence, contexts: Sequence[Chunk], embedder: Embedder, tau_sim: float
) -> SentenceVerdict:
    def verdict(supported: bool, reason: str, cosine: float | None = None) -> SentenceVerdict:
        return SentenceVerdict(sentence.text, sentence.citations, sentence.is_idk, supported, reason, cosine)

    if sentence.is_idk:
        return verdict(False, "idk")
    if not sentence.citations:
        return verdict(False, "no citation")
    if len(sentence.citations) > 1:
        return verdict(False, "several citations")
    cited = _cited_texts(sentence, contexts)
    if not cited:
        return verdict(False, "cited doc not retrieved")
    vectors = embedder.encode([sentence.claim, *cited])
    cosine = float(np.max(vectors[1:] @ vectors[0]))
    return verdict(cosine >= tau_sim, "supported" if cosine >= tau_sim else "below tau_sim", cosine)


def analyze_answer(
    prediction: str,
    contexts: Sequence[Chunk],
    *,
    embedder: Embedder,
    tau_sim: float = _TAU_SIM,
    idk: IdkDetector | None = None,
    action: str | None = None,
    language: Language | None = None,
) -> AnswerAnalysis:
    """Every sentence of ``prediction`` (written in ``language``) with its verdict (see the module docstring for
    the rule)."""
    parsed = parse_answer(prediction, idk or _DEFAULTS.idk, language)
    return AnswerAnalysis(
        tuple(_verdict(s, contexts, embedder, tau_sim) for s in parsed), explicit_abstain=_is_abstain_action(action)
    )


def _is_abstain_action(action: str | None) -> bool:
    return action is not None and action.strip().upper() == "ABSTAIN"


def overlap(
    prediction: str,
    contexts: Sequence[Chunk],
    *,
    embedder: Embedder,
    tau_sim: float = _TAU_SIM,
    idk: IdkDetector | None = None,
    language: Language | None = None,
) -> float:
    """Share of claim sentences supported by the chunk they cite, in [0, 1].

    Overlap = supported claim sentences / claim sentences (seed 001); claim sentences are the non-IDK
    sentences. A sentence with no citation, two or more citations, or a citation to a doc_id that was
    not retrieved is unsupported; otherwise it is supported iff its cosine with the cited chunk
    (citations removed from the sentence) is ≥ ``tau_sim``. An answer without claim sentences (all IDK,
    or empty) scores 0.0 and counts as abstained. ``language``: see :func:`parse_answer`.
    """
    return analyze_answer(prediction, contexts, embedder=embedder, tau_sim=tau_sim, idk=idk, language=language).overlap


def faithfulness_from_overlap(
    overlap_value: float,
    *,
    abstained: bool,
    answerability: Answerability | None,
    abstain_correct_for: frozenset[Answerability],
) -> float:
    """The fallback rule on an already computed Overlap (see :func:`faithfulness_fallback`)."""
    if abstained:
        return 1.0 if answerability in abstain_correct_for else 0.0
    return min(1.0, 0.6 + 0.4 * overlap_value)


def faithfulness_fallback(
    prediction: str,
    contexts: Sequence[Chunk],
    *,
    answerability: Answerability | None,
    embedder: Embedder,
    tau_sim: float = _TAU_SIM,
    idk: IdkDetector | None = None,
    action: str | None = None,
    abstain_correct_for: frozenset[Answerability] = _DEFAULTS.abstain_correct_for,
    language: Language | None = None,
) -> float:
    """The embedding-based proxy for Faithfulness of seed 000, in [0, 1].

    - abstained on a question whose answerability is in ``abstain_correct_for`` (default
      UNANSWERABLE, CONVERSATIONAL) → 1.0;
    - abstained on any other question, answerable or of unknown answerability → 0.0;
    - otherwise min(1, 0.6 + 0.4 · Overlap): 0.6 for a plausible but unsupported answer.
    """
    analysis = analyze_answer(
        prediction, contexts, embedder=embedder, tau_sim=tau_sim, idk=idk, action=action, language=language
    )
    return faithfulness_from_overlap(
        analysis.overlap,
        abstained=analysis.abstained,
        answerability=answerability,
        abstain_correct_for=abstain_correct_for,
    )


def _abstains(parsed: Iterable[ParsedSentence], action: str | None) -> float:
    return float(_is_abstain_action(action) or all(s.is_idk for s in parsed))


def _idk_with_citation(parsed: Iterable[ParsedSentence]) -> float:
    return float(sum(s.is_idk and bool(s.citations) for s in parsed))


def abstained(
    prediction: str, *, idk: IdkDetector | None = None, action: str | None = None, language: Language | None = None
) -> float:
    """1.0 if the answer abstains: an explicit ``ABSTAIN`` action, or no sentence that is not IDK
    (an empty answer abstains); else 0.0. ``language``: see :func:`parse_answer`."""
    return _abstains(parse_answer(prediction, idk or _DEFAULTS.idk, language), action)


def idk_citation_count(prediction: str, *, idk: IdkDetector | None = None, language: Language | None = None) -> float:
    """Number of IDK sentences that carry a citation (the contract says 0)."""
    return _idk_with_citation(parse_answer(prediction, idk or _DEFAULTS.idk, language))


def malformed_citation_count(prediction: str) -> float:
    """Number of citation markers the generator got wrong (``[cit:d1]``, ``[CIT d1]``, ``[CIT:]``,
    ``[CIT:[CIT:d1]]``, an unclosed ``[CIT:d1``; see :func:`~ragmeter.text.citations.malformed_citations`).
    Such a marker cites nothing, so its sentence counts as uncited; the run total should be 0.

    >>> malformed_citation_count("Paris [CIT:d1]. Lyon [cit:d2]. Nice [CIT:d3.")
    2.0
    """
    return float(len(malformed_citations(prediction)))


# --- run-loop adapters: one parse and one analysis per record, shared by the four metrics ---


def _parsed(record: Record, item: ItemContext, run: RunContext) -> tuple[ParsedSentence, ...]:
    return item.memo("citation.parsed", lambda: parse_answer(record.answer, run.settings.idk, run.language(record)))


def _analysis(record: Record, item: ItemContext, run: RunContext) -> AnswerAnalysis:
    def make() -> AnswerAnalysis:
        language = run.language(record)
        embedder, tau_sim = run.embedder_for(language), run.tau_sim_for(language)
        verdicts = tuple(_verdict(s, record.contexts, embedder, tau_sim) for s in _parsed(record, item, run))
        return AnswerAnalysis(verdicts, explicit_abstain=_is_abstain_action(record.action))

    return item.memo("citation.analysis", make)


def _texts_to_embed(record: Record, item: ItemContext, run: RunContext) -> Iterator[tuple[str, str]]:
    code = run.language(record).code
    for sentence in _parsed(record, item, run):
        cited = _cited_texts(sentence, record.contexts)
        if cited:
            yield code, sentence.claim
            yield from ((code, text) for text in cited)


def _faithfulness(record: Record, item: ItemContext, run: RunContext) -> float:
    analysis = _analysis(record, item, run)
    return faithfulness_from_overlap(
        analysis.overlap,
        abstained=analysis.abstained,
        answerability=record.answerability,
        abstain_correct_for=run.settings.abstain_correct_for,
    )


def _sentence_settings(run: RunContext) -> Mapping[str, Any]:
    return {
        "splitter": SPLITTER_ID,
        "idk": run.settings.idk.version,
        "language": language_signature(run.settings.language),
    }


def _grounding_settings(run: RunContext) -> Mapping[str, Any]:
    return {**_sentence_settings(run), **run.embedding_signature()}


def tau_sim_notes(settings: Settings, embedding: Mapping[str, Any], counts: Mapping[str, int]) -> list[str]:
    """What a report says when one τ_sim was given for every language: a note for each language of the scored
    items (``counts``) whose embedder is not the setting's language's (``embedder.<code>`` in ``embedding``, an
    embedding signature: :meth:`~ragmeter.engine.context.RunContext.embedding_signature`) and whose embedder's own
    τ_sim the given one replaced. A per-language τ_sim, or none, needs no note: each language's is in the
    signature and in the report's language lines.

    >>> embedding = {"embedder": "minilm", "tau_sim": 0.7, "embedder.id": "e5", "tau_sim.id": 0.7}
    >>> print(*tau_sim_notes(Settings(tau_sim=0.7), embedding, {"en": 5, "id": 3}))
    tau_sim 0.7 given applies to Indonesian items too (their embedder's own: 0.91; --tau-sim en=0.7 sets English
    only)
    """
    given = settings.tau_sim
    if given is None or isinstance(given, Mapping):
        return []
    first = LANGUAGES[settings.language] if settings.language != AUTO else next(iter(LANGUAGES.values()))
    notes = []
    for code in counts:
        if code not in LANGUAGES or f"embedder.{code}" not in embedding:
            continue
        own = default_tau_sim(embedder_backend(settings.embedder, code))
        if own != given:
            notes.append(
                f"tau_sim {given:g} given applies to {LANGUAGES[code].name} items too (their embedder's "
                f"own: {own:g}; --tau-sim {first.code}={given:g} sets {first.name} only)"
            )
    return notes


def _fallback_settings(run: RunContext) -> Mapping[str, Any]:
    correct = frozenset(a.value for a in run.settings.abstain_correct_for)
    return {**_grounding_settings(run), "abstain_correct_for": correct}


register(
    Metric(
        name="overlap",
        family="citation",
        description="Share of claim sentences supported by exactly one retrieved, cited chunk (cosine ≥ τ_sim).",
        needs=("answer",),
        aggregation=Aggregation.MEAN,
        value_range=(0.0, 1.0),
        higher_is_better=True,
        signature=_grounding_settings,
        resources=frozenset({"embedder"}),
        prefetch=_texts_to_embed,
        compute=lambda record, item, run: _analysis(record, item, run).overlap,
    )
)

register(
    Metric(
        name="faithfulness_fallback",
        family="citation",
        description="min(1, 0.6 + 0.4·Overlap); 0 for a wrong abstention, 1 for a right one.",
        needs=("answer", "answerability"),
        aggregation=Aggregation.MEAN,
        value_range=(0.0, 1.0),
        higher_is_better=True,
        signature=_fallback_settings,
        resources=frozenset({"embedder"}),
        prefetch=_texts_to_embed,
        compute=_faithfulness,
    )
)

register(
    Metric(
        name="abstained",
        family="citation",
        description="The answer abstains: every sentence IDK, or an explicit ABSTAIN action.",
        needs=("answer",),
        aggregation=Aggregation.RATE,
        value_range=(0.0, 1.0),
        higher_is_better=None,
        signature=_sentence_settings,
        compute=lambda record, item, run: _abstains(_parsed(record, item, run), record.action),
    )
)

register(
    Metric(
        name="idk_citation_count",
        family="citation",
        description="IDK sentences that carry a citation; the run total must be 0.",
        needs=("answer",),
        aggregation=Aggregation.SUM,
        value_range=(0.0, None),
        higher_is_better=False,
        signature=_sentence_settings,
        compute=lambda record, item, run: _idk_with_citation(_parsed(record, item, run)),
    )
)

register(
    Metric(
        name="malformed_citation_count",
        family="citation",
        description="Citation markers the generator got wrong ([cit:x], [CIT x], [CIT:], nested, unclosed); "
        "the run total should be 0.",
        needs=("answer",),
        aggregation=Aggregation.SUM,
        value_range=(0.0, None),
        higher_is_better=False,
        compute=lambda record, item, run: malformed_citation_count(record.answer),
    )
)
