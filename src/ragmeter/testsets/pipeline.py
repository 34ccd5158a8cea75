"""Writing a test set: the items planned over a corpus, asked of the judge, checked, and kept as records.

:func:`generate` takes a corpus's chunks (:func:`~ragmeter.testsets.corpus.read_chunks`) and a judge, and keeps up
to ``n`` items:

1. **Plan** (:func:`plan`, seeded): the documents in a random order, each with its chunks in a random order;
   the kinds take turns, each item the next chunk(s) of the next document in turn, so the items spread over the
   documents before any document gives a second. A ``two_chunks`` item takes two chunks of one
   document, shown in the document's order. Each kind gets an even share of ``n`` (:func:`quotas`) and at most
   :data:`ASKS_PER_ITEM` asks per item of its share: a corpus whose chunks fail the checks ends with fewer items,
   and says why.
2. **Write**: one call per item (:mod:`ragmeter.judges.testset_prompts`), in the chunks' language.
3. **Check**, each item by calls independent of the one that wrote it, in this order, the first failure being the
   reason it is dropped: the writer's call failed; its quotes are not words of its chunks; its question states its
   answer (:mod:`ragmeter.testsets.checks`); the judge's claims call failed, or the answer's claims, asked as a
   faithfulness check asks them, are not all supported by its chunks (the evidence check where the judge only
   splits claims); for a follow-up, the judge finds it understood without its conversation; for an unanswerable
   question, the judge finds its answer, or part of it, in the corpus's
   :data:`~ragmeter.testsets.nearest.NEAREST` chunks nearest to it (by the embedder of its language: what a
   retriever would show the system); the question repeats a kept one after the same conversation (the same words,
   case and spacing aside, or nearly the same question by the embedder of its language:
   :mod:`ragmeter.testsets.duplicates`).
4. **Keep** each item as a record of ragmeter's input format: the question, the reference answer, ``qrels`` (every
   chunk of the corpus that holds the answer's quotes, :func:`~ragmeter.testsets.checks.answer_grades`: 2 for one
   that holds them all, 1 for one that holds some, as each chunk of a ``two_chunks`` item does),
   ``answerability`` ``answerable`` (an unanswerable one: ``unanswerable``, with no reference and no qrels), the
   language, an empty ``answer`` for the team's system to fill, and in its metadata the kind, the source documents
   and the generator's signature.

Every call goes through the judge's verdict cache: a rerun with the same corpus, settings and seed (after a crash or
a kill, say) asks again only the calls that had not been answered or had failed.

A ``follow_up`` item is planned with two chunks of one document: a factoid question and answer are written from the
first (checked as a factoid's writing is) and become the conversation so far; the follow-up is written from the
second after it, checked as any answerable item, and also kept only when the judge finds that it cannot be understood
without that conversation. Its record carries the conversation as ``history``, a ``conversation_id`` and its
``turn``.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ragmeter._version import __version__
from ragmeter.core.errors import ConfigError
from ragmeter.core.records import Answerability, Chunk, Record, Turn
from ragmeter.judges.engine import Judge, JudgeCall, JudgeOutcome
from ragmeter.judges.prompts import CLAIMS
from ragmeter.judges.testset_prompts import (
    ANSWERED,
    CHUNKS_NEEDED,
    QUESTION_PROMPTS,
    STANDALONE,
    answered_request,
    question_request,
    standalone_request,
)
from ragmeter.metrics.judged import claims_text_call, verdict_claims
from ragmeter.models import Embedder
from ragmeter.testsets.checks import (
    QUOTE_NOT_IN_CHUNKS,
    STATES_ITS_ANSWER,
    answer_grades,
    quotes_found,
    states_its_answer,
)
from ragmeter.testsets.chunking import Chunk as CorpusChunk
from ragmeter.testsets.corpus import CorpusChunks
from ragmeter.testsets.duplicates import KeptQuestions
from ragmeter.testsets.nearest import NearestChunks
from ragmeter.text.languages import LANGUAGES

__all__ = [
    "ASKS_PER_ITEM",
    "GENERATED_KINDS",
    "GenerateReport",
    "Planned",
    "generate",
    "plan",
    "quotas",
    "writing_calls",
]

#: The kinds :func:`generate` writes.
GENERATED_KINDS = ("factoid", "explanation", "two_chunks", "unanswerable", "follow_up")
#: Chunks an item of each kind is planned with: a follow-up's first turn is written from one chunk, the follow-up
#: from another of the same document.
PLANNED_CHUNKS = {**CHUNKS_NEEDED, "follow_up": 2}
#: Items planned per item wanted, at most.
ASKS_PER_ITEM = 2
#: Items asked of the judge at a time.
BATCH = 8
NOT_SUPPORTED = "the answer's claims are not all supported by its chunks"
ANSWERED_BY_CORPUS = "a chunk of the corpus the question is nearest to answers it"
STANDS_ALONE = "the follow-up can be understood without its conversation"
FIRST_TURN = "its first turn was dropped"
DUPLICATE = "the question repeats a kept one"
#: A call that checks a written item, and how its outcome is read: why the item is dropped, or ``None``.
Check = tuple[JudgeCall, Callable[[JudgeOutcome], "str | None"]]


@dataclass(frozen=True)
class Planned:
    """An item to ask for: its kind, the chunks it is written from, and their language's code."""

    kind: str
    chunks: tuple[CorpusChunk, ...]
    language: str


@dataclass
class GenerateReport:
    """What a run asked, kept and dropped, per kind (dropped: per kind and reason), and its signature."""

    wanted: int
    asked: Counter[str] = field(default_factory=Counter)
    kept: Counter[str] = field(default_factory=Counter)
    dropped: Counter[tuple[str, str]] = field(default_factory=Counter)
    planned: int = 0
    signature: str = ""

    @property
    def why_short(self) -> str | None:
        """Why fewer items than wanted were kept, or ``None``."""
        kept = sum(self.kept.values())
        if kept >= self.wanted:
            return None
        if not self.planned:
            return (
                "the corpus has no chunk to write the asked kinds from (two_chunks and follow_up need a document of "
                "two chunks)"
            )
        reasons: Counter[str] = Counter()
        for (_, reason), count in self.dropped.items():
            reasons[reason] += count
        common = ", ".join(f"{count} × {reason}" for reason, count in reasons.most_common(3))
        return (
            f"{kept} of {self.wanted} items kept after {sum(self.asked.values())} asked "
            f"({ASKS_PER_ITEM} per item at most): dropped {common or 'none'}"
        )


def plan(corpus: CorpusChunks, n: int, kinds: Sequence[str], *, seed: int = 0) -> list[Planned]:
    """At most ``ASKS_PER_ITEM × n`` items over ``corpus`` (see the module docstring), the same for the same seed."""
    unknown = [kind for kind in kinds if kind not in GENERATED_KINDS]
    if unknown or not kinds:
        raise ConfigError(
            f"ragmeter generate writes {', '.join(GENERATED_KINDS)} questions, not {', '.join(unknown) or 'none'}"
        )
    if n < 1:
        raise ConfigError(f"ask for at least one item, not {n}")
    rng = random.Random(seed)
    by_document: dict[str, list[CorpusChunk]] = {}
    for chunk in corpus.chunks:
        by_document.setdefault(chunk.doc_id, []).append(chunk)
    documents = sorted(by_document)
    rng.shuffle(documents)
    queues = {doc: rng.sample(chunks, len(chunks)) for doc, chunks in by_document.items()}
    quota = quotas(n, kinds)
    asked: Counter[str] = Counter()
    planned: list[Planned] = []
    exhausted: set[tuple[str, str]] = set()  # (kind, document) pairs with too few chunks left
    kind_turn = document_turn = 0
    while True:
        live = [
            kind
            for kind in kinds
            if asked[kind] < ASKS_PER_ITEM * quota[kind] and any((kind, doc) not in exhausted for doc in documents)
        ]
        if not live:
            break
        kind = kinds[kind_turn % len(kinds)]
        if kind not in live:
            kind_turn += 1
            continue
        doc = documents[document_turn % len(documents)]
        document_turn += 1
        needed = PLANNED_CHUNKS[kind]
        if len(queues[doc]) < needed:
            exhausted.add((kind, doc))
            continue
        taken = tuple(sorted(queues[doc][:needed], key=lambda chunk: chunk.position))  # in the document's order
        del queues[doc][:needed]
        planned.append(Planned(kind, taken, corpus.languages[taken[0].chunk_id]))
        asked[kind] += 1
        kind_turn += 1
    return planned


def quotas(n: int, kinds: Sequence[str]) -> dict[str, int]:
    """How many items of each kind make ``n``: as even as can be, the first kinds taking the remainder.

    >>> quotas(5, ["factoid", "explanation"])
    {'factoid': 3, 'explanation': 2}
    """
    return {kind: n // len(kinds) + (i < n % len(kinds)) for i, kind in enumerate(kinds)}


def _record(
    item: Planned, verdict: dict[str, str], history: tuple[Turn, ...], qrels: dict[str, int], signature: str
) -> Record:
    key = "\0".join([item.kind, *(c.chunk_id for c in item.chunks), verdict["question"]])
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
    metadata: dict[str, object] = {
        "language": item.language,
        "question_type": item.kind,
        "source_documents": sorted({c.doc_id for c in item.chunks}),
        "generator": signature,
    }
    if item.kind == "unanswerable":  # no chunk holds its answer: no reference, no qrels
        return Record(
            id=f"gen-{digest}",
            question=verdict["question"],
            answer="",
            answerability=Answerability.UNANSWERABLE,
            metadata=metadata,
        )
    if history:
        metadata.update(conversation_id=f"gen-{digest}", turn=len(history) // 2 + 1)
    return Record(
        id=f"gen-{digest}",
        question=verdict["question"],
        answer="",
        references=(verdict["answer"],),
        history=history,
        answerability=Answerability.ANSWERABLE,
        qrels=qrels,
        metadata=metadata,
    )


def _failure(outcome: JudgeOutcome, prompt: str) -> str:
    return f"judge failed ({prompt}): {outcome.failure}"


def generate(
    corpus: CorpusChunks,
    judge: Judge,
    *,
    n: int,
    kinds: Sequence[str] = ("factoid", "explanation"),
    seed: int = 0,
    embedder_for: Callable[[str], Embedder] | None = None,
    duplicate_cosine_for: Callable[[str], float] | None = None,
    on_batch: Callable[[GenerateReport], None] | None = None,
) -> tuple[list[Record], GenerateReport]:
    """Up to ``n`` records written from ``corpus`` by ``judge`` (see the module docstring), and the report;
    ``embedder_for`` (a language code's embedder) finds the chunks an unanswerable question is checked against and,
    with ``duplicate_cosine_for`` (a language code's near-duplicate cosine), the questions that nearly repeat a kept
    one (without it, only the same words repeat); ``on_batch`` is given the report so far after each batch of items
    (a progress bar's)."""
    if "unanswerable" in kinds and embedder_for is None:
        raise ConfigError("unanswerable questions are checked against the corpus's nearest chunks: give an embedder")
    planned = plan(corpus, n, kinds, seed=seed)
    quota = quotas(n, kinds)
    nearest = NearestChunks(corpus.chunks, embedder_for) if embedder_for is not None else None
    prompts = [
        QUESTION_PROMPTS[kind] for kind in dict.fromkeys([*kinds, *(["factoid"] if "follow_up" in kinds else [])])
    ]
    near = (
        [f"near_duplicate.{code}:{duplicate_cosine_for(code)}" for code in sorted(set(corpus.languages.values()))]
        if duplicate_cosine_for is not None
        else []
    )
    signature = "|".join(
        [judge.description, *(judge.signature(p) for p in prompts), *near, f"seed:{seed}", f"ragmeter:{__version__}"]
    )
    report = GenerateReport(wanted=n, planned=len(planned), signature=signature)
    kept: list[Record] = []
    seen = KeptQuestions(embedder_for if duplicate_cosine_for is not None else None, duplicate_cosine_for)
    pending = list(planned)
    texts = [chunk.text for chunk in corpus.chunks]
    position = {chunk.chunk_id: i for i, chunk in enumerate(corpus.chunks)}
    while batch := _next_batch(pending, {kind: quota[kind] - report.kept[kind] for kind in quota}):
        first_turns = _first_turns(batch, judge)
        histories = {item: turns for item, turns in first_turns.items() if isinstance(turns, tuple)}
        asked = [item for item in batch if item.kind != "follow_up" or item in histories]
        written = judge.run(
            [
                JudgeCall(
                    QUESTION_PROMPTS[item.kind],
                    question_request(
                        item.kind,
                        [c.text for c in _shown(item)],
                        history=[(t.role, t.text) for t in histories.get(item, ())],
                        language=LANGUAGES[item.language],
                    ),
                    len(_shown(item)),
                )
                for item in asked
            ]
        )
        checked: list[tuple[Planned, dict[str, str], list[Check]]] = []
        for item in batch:
            report.asked[item.kind] += 1
            if isinstance(why := first_turns.get(item), str):
                report.dropped[(item.kind, f"{FIRST_TURN}: {why}")] += 1
        for item, outcome in zip(asked, written, strict=True):
            reason = _written_reason(item, outcome)
            if reason is not None:
                report.dropped[(item.kind, reason)] += 1
                continue
            assert outcome.verdict is not None
            checked.append(
                (item, outcome.verdict, _checks(item, outcome.verdict, histories.get(item, ()), judge, nearest))
            )
        outcomes = iter(judge.run([call for _, _, checks in checked for call, _ in checks]))
        for item, verdict, checks in checked:
            reasons = [read(next(outcomes)) for _, read in checks]
            reason = next((r for r in reasons if r is not None), None)
            after = [turn.text for turn in histories.get(item, ())]
            if reason is None and seen.repeats(verdict["question"], after, item.language):
                reason = DUPLICATE
            if reason is not None:
                report.dropped[(item.kind, reason)] += 1
                continue
            seen.add(verdict["question"], after, item.language)
            grades = answer_grades(
                verdict["quotes"],
                texts,
                language=LANGUAGES[item.language],
                written_from={position[chunk.chunk_id] for chunk in item.chunks},
            )
            kept.append(
                _record(
                    item,
                    verdict,
                    histories.get(item, ()),
                    {corpus.chunks[i].chunk_id: grade for i, grade in grades.items()},
                    signature,
                )
            )
            report.kept[item.kind] += 1
        if on_batch is not None:
            on_batch(report)
    return kept, report


def _next_batch(pending: list[Planned], wanted: dict[str, int]) -> list[Planned]:
    """Up to :data:`BATCH` items taken from ``pending`` in order, no more of a kind than it still ``wanted``: an
    item of a kind whose share is kept is never asked."""
    batch: list[Planned] = []
    for item in list(pending):
        if len(batch) == BATCH:
            break
        if sum(other.kind == item.kind for other in batch) < wanted[item.kind]:
            batch.append(item)
            pending.remove(item)
    return batch


def writing_calls(planned: Sequence[Planned]) -> list[JudgeCall]:
    """The calls that write ``planned`` items and are known before any is answered (a dry run's): each item's, and
    a follow-up's first turn (its own call follows that turn's answer)."""
    return [
        JudgeCall(
            QUESTION_PROMPTS[kind],
            question_request(kind, [c.text for c in chunks], language=LANGUAGES[item.language]),
            len(chunks),
        )
        for item in planned
        for kind, chunks in [("factoid", item.chunks[:1]) if item.kind == "follow_up" else (item.kind, item.chunks)]
    ]


def _shown(item: Planned) -> tuple[CorpusChunk, ...]:
    """The chunks an item's question is written from: a follow-up's own, after its first turn's."""
    return item.chunks[1:] if item.kind == "follow_up" else item.chunks


def _first_turns(batch: Sequence[Planned], judge: Judge) -> dict[Planned, tuple[Turn, ...] | str]:
    """Each follow-up's conversation so far: a factoid question on its first chunk and its answer, written and checked
    as a factoid's writing is; where that failed, why."""
    firsts = [item for item in batch if item.kind == "follow_up"]
    outcomes = judge.run(
        [
            JudgeCall(
                QUESTION_PROMPTS["factoid"],
                question_request("factoid", [item.chunks[0].text], language=LANGUAGES[item.language]),
                1,
            )
            for item in firsts
        ]
    )
    turns: dict[Planned, tuple[Turn, ...] | str] = {}
    for item, outcome in zip(firsts, outcomes, strict=True):
        why = _written_reason(Planned("factoid", item.chunks[:1], item.language), outcome)
        turns[item] = (
            why
            if why is not None or outcome.verdict is None
            else (Turn("user", outcome.verdict["question"]), Turn("assistant", outcome.verdict["answer"]))
        )
    return turns


def _checks(
    item: Planned, verdict: dict[str, str], history: tuple[Turn, ...], judge: Judge, nearest: NearestChunks | None
) -> list[Check]:
    """The calls that check a written item, each with how its outcome is read (a reason to drop it, or ``None``)."""
    if item.kind == "unanswerable":
        assert nearest is not None
        shown = nearest.top(verdict["question"], item.language)
        return [
            (
                JudgeCall(ANSWERED, answered_request(verdict["question"], [c.text for c in shown]), len(shown)),
                _answered_reason,
            )
        ]
    checks = [_claims_check(item, verdict, judge)]
    if item.kind == "follow_up":
        call = JudgeCall(STANDALONE, standalone_request(verdict["question"], [(t.role, t.text) for t in history]))
        checks.append((call, _standalone_reason))
    return checks


def _claims_check(item: Planned, verdict: dict[str, str], judge: Judge) -> Check:
    """The claims call of an answerable item's reference against its chunks, and how its outcome is read."""
    language = LANGUAGES[item.language]
    gold = Record(
        id="check",
        question=verdict["question"],
        answer=verdict["answer"],
        contexts=tuple(Chunk(doc_id=c.chunk_id, text=c.text) for c in _shown(item)),
    )
    call = claims_text_call(gold, gold.answer, judge, check_evidence=True, language=language)

    def read(outcome: JudgeOutcome) -> str | None:
        if outcome.verdict is None:
            return _failure(outcome, call.prompt.name)
        claims = verdict_claims(
            outcome.verdict,
            gold,
            gold.answer,
            check_evidence=True,
            split=call.prompt.name != CLAIMS.name,
            language=language,
        )
        return None if claims and all(claim.verdict == "supported" for claim in claims) else NOT_SUPPORTED

    return call, read


def _standalone_reason(outcome: JudgeOutcome) -> str | None:
    if outcome.verdict is None:
        return _failure(outcome, STANDALONE.name)
    return STANDS_ALONE if outcome.verdict["verdict"] == "standalone" else None


def _answered_reason(outcome: JudgeOutcome) -> str | None:
    """Why an unanswerable item is dropped by its nearest chunks' verdict, or ``None``: kept only on ``no``."""
    if outcome.verdict is None:
        return _failure(outcome, ANSWERED.name)
    return None if outcome.verdict["verdict"] == "no" else f"{ANSWERED_BY_CORPUS} (judge: {outcome.verdict['verdict']})"


def _written_reason(item: Planned, outcome: JudgeOutcome) -> str | None:
    """Why a written item is dropped before its claims are asked, or ``None``."""
    if outcome.verdict is None:
        return _failure(outcome, QUESTION_PROMPTS[item.kind].name)
    language = LANGUAGES[item.language]
    if item.kind != "unanswerable" and not quotes_found(
        outcome.verdict["quotes"], [c.text for c in _shown(item)], language=language
    ):
        return QUOTE_NOT_IN_CHUNKS
    if states_its_answer(outcome.verdict["question"], outcome.verdict["answer"], language=language):
        return STATES_ITS_ANSWER
    return None
