"""Claim-level correctness and where the pipeline failed: TREC's nugget recall and RAGChecker's diagnostics, on the
judge.

Per item, at most three kinds of judge call (issue 47):

- the question's **nuggets**: a record's own ``nuggets`` (people's) are used as given; else, under
  ``Settings.nugget_source`` ``sentences`` (the default), each sentence of its reference answers (a list's items
  apart) is a vital nugget, with no call; under ``claims``, each claim of its reference answers is a vital nugget,
  split by the judge as an answer's claims are (RAGChecker's way: one extractor for both sides; the claim split's
  prompt, a call per reference holding nothing else); under ``judge``, and where a record has no reference answer,
  the judge writes them (:mod:`ragmeter.judges.nugget_prompts`) from the references (or the chunks people judged
  relevant). A call of either is the same for every answer to the question: made once per question. Several
  reference answers are alternatives where the nuggets are their sentences or claims: the answer is graded on all
  of them and scored on the nuggets of the one it states best, as token F1 takes the best reference, while the
  retriever is scored whatever the answer states: its claim recall on the reference the chunks hold best, its
  precision on every reference's nuggets. Nuggets written from the retrieved chunks (no reference) are in them by
  construction: the retriever's claim recall and the failure split are undefined there;
- the answer **graded** on them, ten nuggets a call, each grade resting on a quote of the answer (a support or
  partial grade whose quote is not words of the answer counts as none, noted);
- the answer's **claims**, the call seed 002's faithfulness makes (the same verdict serves both).

The rest of RAGChecker's matrix is the evidence check's (:mod:`ragmeter.judges.checks.evidence`: content words,
numbers and scope, as the packaged judge's faithfulness checks claims), with no call: an answer claim is *correct*
when a reference holds it, *in chunk k* when it is supported by the chunks and k is among the chunks it comes from;
a nugget is *in chunk k* the same way. A nugget is *stated* by the answer when graded ``support`` (RAGChecker's
entailment is yes or no: partial support is not). A claim or nugget the judge writes with no content word and no
number (a bare "No.", a stray code fence) is left out (unless it is all the judge wrote of a reference): the check
would find it in any reference, whatever it says. A nugget that only says the answer is not known (the IDK
detector's reading: the reference of a question the documents do not answer), or one with no content word and no
number (people's, or a reference that is only "No."), is no fact the chunks can be checked for: the retriever's
claim recall leaves it out, and the failure split counts it as retrieved (the retriever cannot be shown to have lost
it; an answer that misses it is the generator's failure).

The formulas are those of :mod:`ragmeter.metrics.nuggets` and :mod:`ragmeter.metrics.claim_matrix`; a value
those leave NaN is undefined here, with the reason, as is a metric that reads what is missing: the grades where a
grades call failed, the chunks where the record has none.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragmeter.core.records import Nugget, Record
from ragmeter.core.settings import NuggetSource
from ragmeter.judges.checks.evidence import VERSION as EVIDENCE_CHECK
from ragmeter.judges.checks.evidence import supporting_chunks, supports, wordless
from ragmeter.judges.engine import JudgeCall
from ragmeter.judges.nugget_prompts import (
    NUGGET_GRADES,
    NUGGETS,
    grades_requests,
    nugget_sources,
    nuggets_request,
    quoted_grades,
)
from ragmeter.judges.prompts import CLAIM_SPLIT, CLAIMS, claim_split_request
from ragmeter.metrics import claim_matrix, nuggets
from ragmeter.metrics._registry import Aggregation, Metric, Noted, Outcome, Undefined, register
from ragmeter.metrics.citation import abstained
from ragmeter.metrics.judged import (
    abstains,
    asked_prompt,
    capped_note,
    claims_outcome,
    claims_text_call,
    judge_failure,
    reached_cap,
    verdict_claims,
)
from ragmeter.text.citations import find_citations, strip_citations
from ragmeter.text.languages import Language, language_signature
from ragmeter.text.sentences import split_sentences

if TYPE_CHECKING:
    from ragmeter.engine.context import ItemContext, RunContext

__all__ = [
    "READS_NUGGETS",
    "NuggetVerdicts",
    "chunk_sources",
    "item_nuggets",
    "nugget_verdicts",
    "reference_sentences",
]

NO_SOURCE = "record has no reference answer, no chunk judged relevant and no nuggets"
NO_SENTENCE = "the reference answers have no sentence"
#: Where a reference's list begins an item: a line break before a bullet or a number's marker, or a blank line
#: (``[^\S\n]``: a space but a line break, so that Windows' ``\r\n`` counts as one).
_ITEM_BREAK = re.compile(r"\n[^\S\n]*\n\s*|\n(?=[^\S\n]*(?:[-*+•]|\d{1,3}[.)])[^\S\n]+)")
#: A list item's marker (a bullet, ``1.``, ``2)``) at the start of a piece of a reference.
_ITEM_MARKER = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])[^\S\n]+")
#: A sentence's final stop (closing quotes and brackets after it allowed).
_FINAL_STOP = re.compile(r"[.!?:;…][\"')\]»”’]*\s*$")


@dataclass(frozen=True)
class NuggetVerdicts:
    """One answer's verdicts: its nuggets and their grades (with how many grades the quote check changed), and
    RAGChecker's four checks (:mod:`ragmeter.metrics.claim_matrix`). ``no_fact``: each nugget states no fact the
    chunks can be checked for: it says that the answer is not known (the IDK detector's reading), or it has no
    content word and no number. Where the record has several reference answers, the nuggets are those of the one
    the answer states best; what the retriever is scored on does not depend on the answer: ``alternatives`` (per
    reference answer, the chunks' rows of its nuggets that state a fact) and ``every_in_chunks`` (every reference's
    nuggets). ``from_chunks``: the judge wrote the nuggets from the record's retrieved chunks (no reference, no
    nuggets of its own), so every nugget was retrieved and what the retriever missed cannot be told."""

    nuggets: tuple[Nugget, ...]
    grades: tuple[str, ...] | None  # None: a grades call failed: why in grades_undefined
    unquoted: int
    answer_in_reference: tuple[bool, ...] | None  # None: no answer claims (below), or the record has no reference
    answer_in_chunks: tuple[tuple[bool, ...], ...] | None  # None: no answer claims: why in answer_undefined
    nuggets_in_chunks: tuple[tuple[bool, ...], ...]
    no_fact: tuple[bool, ...]
    answer_undefined: str | None = None  # the answer abstains, or its claims call failed
    grades_undefined: str | None = None
    answer_capped: int | None = None  # the cap on the answer's claims, when the judge's list reached it
    alternatives: tuple[tuple[tuple[bool, ...], ...], ...] = ()
    every_in_chunks: tuple[tuple[bool, ...], ...] = ()
    from_chunks: bool = False

    @property
    def vital(self) -> tuple[bool, ...]:
        return tuple(nugget.vital for nugget in self.nuggets)

    @property
    def claimless(self) -> bool:
        """The answer has no claim to check: it abstains, states none, or only claims with no content word or
        number (not: its claims call failed)."""
        return self.answer_undefined in (ABSTAINS, NO_WORD_CLAIM) or (
            self.answer_undefined is None and self.answer_in_chunks == ()
        )

    @property
    def stated(self) -> tuple[bool, ...]:
        """RAGChecker's ``response2answer``: each nugget graded ``support``."""
        assert self.grades is not None
        return tuple(grade == "support" for grade in self.grades)

    @property
    def retrieved_in_chunks(self) -> tuple[tuple[bool, ...], ...]:
        """The chunks' rows of the nuggets for what the generator was given: every nugget retrieved where the
        nuggets were written from the retrieved chunks (the evidence check may miss the judge's rewording of its
        source)."""
        if not self.from_chunks:
            return self.nuggets_in_chunks
        return tuple(tuple(True for _ in row) for row in self.nuggets_in_chunks)

    @property
    def failure_in_chunks(self) -> tuple[tuple[bool, ...], ...]:
        """The chunks' rows for the failure split: a nugget that states no fact as if retrieved, since the retriever
        cannot be shown to have lost it (a decline's chunks rightly held no answer): an answer that misses it is the
        generator's failure (and, as for the rest of the generator's figures, every nugget written from the retrieved
        chunks, :attr:`retrieved_in_chunks`)."""
        return tuple(
            tuple(True for _ in row) if no_fact else row
            for row, no_fact in zip(self.retrieved_in_chunks, self.no_fact, strict=True)
        )


# --- the calls, and the verdicts read from them -----------------------------------------------------------


def _nuggets_calls(record: Record, run: RunContext) -> list[JudgeCall]:
    """The calls that write ``record``'s nuggets when it has none of its own and they are not its references'
    sentences: the claim split of each reference under ``Settings.nugget_source`` ``claims``, else the judge's
    nuggets from the references or the relevant chunks (none without either)."""
    if run.settings.nugget_source is NuggetSource.CLAIMS and record.references:
        language = run.language(record)
        return [
            JudgeCall(CLAIM_SPLIT, claim_split_request(text, language), decides_more=True) for text in record.references
        ]
    sources = nugget_sources(record)
    return [JudgeCall(NUGGETS, nuggets_request(record.question, sources), decides_more=True)] if sources else []


def chunk_sources(record: Record) -> tuple[str, ...]:
    """The texts of ``record``'s retrieved chunks that the judge writes its nuggets from, where it has neither
    reference answers nor nuggets of its own: another run's retrieval may change them. Empty where its nuggets do
    not depend on its chunks (or it has none)."""
    return () if record.references or record.nuggets is not None else nugget_sources(record)


def _written_nuggets(verdict: Mapping[str, Any], language: Language) -> list[Nugget]:
    """The nuggets of a nuggets call's verdict, or of a reference's claim split (each claim vital), those with no
    content word and no number left out (:func:`~ragmeter.judges.checks.evidence.wordless`) unless they are all
    there is (a reference that is only "No.": kept, as its sentences would be)."""
    if "claims" in verdict:
        written = [Nugget(text, True) for text in verdict["claims"]]
    else:
        written = [Nugget(n["text"], n["vital"]) for n in verdict["nuggets"]]
    return [nugget for nugget in written if not wordless(nugget.text, language=language)] or written


def _list_items(reference: str) -> list[str]:
    """``reference`` cut where a list item or a paragraph begins, each item's marker left out: a list's items are
    facts apart, though they seldom end with a full stop, and a marker's number is no fact (the evidence check
    would look for it in the chunks). A line that goes on without a marker is the same sentence going on.

    >>> _list_items("Two steps:\\n1. Open the console\\n2. Click Save")
    ['Two steps:', 'Open the console', 'Click Save']
    >>> _list_items("- Apples are red\\n- Bananas are yellow\\n\\nBoth grow in warm places.")
    ['Apples are red', 'Bananas are yellow', 'Both grow in warm places.']
    >>> _list_items("The river flows into\\nthe Atlantic. It is 2.5 km wide.")
    ['The river flows into\\nthe Atlantic. It is 2.5 km wide.']
    """
    return [_ITEM_MARKER.sub("", piece).strip() for piece in _ITEM_BREAK.split(reference)]


def reference_sentences(record: Record, run: RunContext) -> tuple[Nugget, ...] | Undefined | None:
    """The nuggets of ``Settings.nugget_source`` ``sentences``: each sentence of ``record``'s reference answers, a
    list's items apart (:func:`_list_items`; citation markers left out; a sentence that recurs, once; a sentence
    with no content word and no number joined to the next, :func:`_particles_joined`), each vital, as nothing here
    tells which matter. A reference that declines gives its decline as a nugget: what a good answer
    to the question says. ``None`` where the judge writes the nuggets: the source is ``judge``, or there is no
    reference."""
    if run.settings.nugget_source is not NuggetSource.SENTENCES or not record.references:
        return None
    language = run.language(record)
    sentences = [sentence for reference in record.references for sentence in _sentences(reference, language)]
    return tuple(Nugget(text, True) for text in dict.fromkeys(sentences)) or Undefined(NO_SENTENCE)


def _sentences(reference: str, language: Language) -> list[str]:
    """The sentences of one reference answer, a list's items apart, citation markers left out, none empty, one with
    no content word and no number joined to another (:func:`_particles_joined`)."""
    sentences = [
        strip_citations(sentence) if find_citations(sentence) else sentence
        for item in _list_items(reference)
        for sentence in split_sentences(item, language)
    ]
    return _particles_joined([sentence for sentence in sentences if sentence], language)


def _particles_joined(sentences: list[str], language: Language) -> list[str]:
    """``sentences`` with each that has no content word and no number ("No.", "OK.") joined to the one after it,
    the last to the one before: alone it is no fact but the way the fact beside it goes, a nugget the grading judge
    reads without its subject and the chunks' check passes vacuously but can place in no chunk (a retrieval failure
    whatever was retrieved). One without a final stop (a list item "No") gets one, so that it does not run into the
    next ("No Parking…"). A reference of such sentences only is kept whole.

    >>> from ragmeter.text.languages import LANGUAGES
    >>> _particles_joined(["No.", "The pass is not sold online."], LANGUAGES["en"])
    ['No. The pass is not sold online.']
    >>> _particles_joined(["The pass is sold online.", "OK?"], LANGUAGES["en"])
    ['The pass is sold online. OK?']
    >>> _particles_joined(["Short answer:", "No", "Parking costs 3 dollars."], LANGUAGES["en"])
    ['Short answer:', 'No. Parking costs 3 dollars.']
    """
    joined: list[str] = []
    pending: list[str] = []
    for sentence in sentences:
        if wordless(sentence, language=language):
            pending.append(sentence)
            continue
        joined.append(" ".join([*(piece if _FINAL_STOP.search(piece) else f"{piece}." for piece in pending), sentence]))
        pending = []
    if pending and joined:
        joined[-1] = " ".join([joined[-1], *pending])
    elif pending:
        joined.append(" ".join(pending))
    return joined


def _reference_groups(record: Record, found: tuple[Nugget, ...], run: RunContext) -> list[tuple[int, ...]]:
    """Per reference answer, the places in ``found`` of the nuggets it gives, where the nuggets are the references'
    own sentences or claims and there are several references: these are alternatives (as for token F1 and ROUGE-L),
    so the answer is scored on the one it matches best. Else one group of every nugget (people's nuggets and the
    judge's are one list for the question)."""
    every = [tuple(range(len(found)))]
    source = run.settings.nugget_source
    if record.nuggets is not None or len(record.references) < 2 or source is NuggetSource.JUDGE:
        return every
    if source is NuggetSource.SENTENCES:
        per_reference = [_sentences(reference, run.language(record)) for reference in record.references]
    else:
        outcomes = [run.judge_outcome(call) for call in _nuggets_calls(record, run)]
        per_reference = [
            [nugget.text for nugget in _written_nuggets(outcome.verdict, run.language(record))]
            if outcome.verdict
            else []
            for outcome in outcomes
        ]
    place = {nugget.text: number for number, nugget in enumerate(found)}
    groups = [tuple(dict.fromkeys(place[text] for text in texts if text in place)) for texts in per_reference]
    return [group for group in groups if group] or every


def _best_group(groups: list[tuple[int, ...]], grades: list[str]) -> tuple[int, ...]:
    """The group whose nuggets the answer states best (``nugget_recall``; the first of equals)."""
    return max(groups, key=lambda group: nuggets.nugget_recall([grades[i] for i in group], [True] * len(group)))


def _given_nuggets(record: Record, run: RunContext) -> tuple[Nugget, ...] | Undefined | None:
    """The nuggets no judge call writes: the record's own, else its references' sentences (``None``: the judge's)."""
    return record.nuggets if record.nuggets is not None else reference_sentences(record, run)


def item_nuggets(record: Record, run: RunContext, *, wait: bool = True) -> tuple[Nugget, ...] | Undefined | None:
    """``record``'s nuggets: its own, else its references' sentences, claims or the judge's nuggets
    (``Settings.nugget_source``; a claim or nugget written twice, once); undefined with the reason where there are
    none. ``wait=False`` (while calls are planned): ``None`` where the judge's are not known yet."""
    if (given := _given_nuggets(record, run)) is not None:
        return given
    calls = _nuggets_calls(record, run)
    if not calls:
        return Undefined(NO_SOURCE)
    outcomes = [run.judge_outcome(call) if wait else run.known_outcome(call) for call in calls]
    language = run.language(record)
    written: dict[str, Nugget] = {}
    for call, outcome in zip(calls, outcomes, strict=True):
        if outcome is None:
            return None
        if outcome.verdict is None:
            return judge_failure(call.prompt.name, outcome)
        for nugget in _written_nuggets(outcome.verdict, language):
            written.setdefault(nugget.text, nugget)
    return tuple(written.values()) or Undefined("the judge found no nugget in the reference")


def _grades_calls(record: Record, found: tuple[Nugget, ...]) -> list[JudgeCall]:
    return [JudgeCall(NUGGET_GRADES, request, n) for request, n in grades_requests(record, found)]


def _answer_call(record: Record, run: RunContext) -> JudgeCall | None:
    if abstains(record, run):
        return None
    return claims_text_call(
        record, record.answer, run.judge, check_evidence=run.settings.check_evidence, language=run.language(record)
    )


def _calls(record: Record, item: ItemContext, run: RunContext) -> list[JudgeCall]:
    """The calls the item needs now: its nuggets (when the judge writes them) and its answer's claims first,
    the grades once the nuggets are known."""
    calls = [call for call in (_answer_call(record, run),) if call is not None]
    found = _given_nuggets(record, run)
    if found is None:  # the judge writes them
        calls += _nuggets_calls(record, run)
        found = item_nuggets(record, run, wait=False)
    if isinstance(found, tuple):
        calls += _grades_calls(record, found)
    return calls


def _rows(named: list[tuple[int, ...]], n_chunks: int) -> tuple[tuple[bool, ...], ...]:
    """A (texts × chunks) matrix from the 1-based chunk numbers each text comes from (none where unsupported)."""
    return tuple(tuple(k + 1 in numbers for k in range(n_chunks)) for numbers in named)


def nugget_verdicts(record: Record, item: ItemContext, run: RunContext) -> NuggetVerdicts | Undefined:
    """The item's :class:`NuggetVerdicts`, or why there are none (no source of nuggets, a failed call)."""

    def read() -> NuggetVerdicts | Undefined:
        found = item_nuggets(record, run)
        if isinstance(found, Undefined):
            return found
        assert found is not None
        language = run.language(record)
        grades: list[tuple[str, str | None]] | None = []
        grades_failed = None
        for call in _grades_calls(record, found):
            outcome = run.judge_outcome(call)
            if outcome.verdict is None:
                grades, grades_failed = None, judge_failure("nugget_grades", outcome).reason
                break
            grades += quoted_grades(outcome.verdict["grades"], record.answer, language=language)
        chunks = [chunk.text for chunk in record.contexts]
        texts = [nugget.text for nugget in found]
        in_chunks = _rows(
            [
                supporting_chunks(chunks, text, language=language)
                if chunks and supports(chunks, text, language=language)
                else ()
                for text in texts
            ],
            len(chunks),
        )
        groups = _reference_groups(record, found, run)
        # without grades no reference can be chosen: the metrics that remain read every reference's nuggets
        kept = tuple(range(len(found))) if grades is None else _best_group(groups, [grade for grade, _ in grades])
        no_fact = [
            wordless(text, language=language) or bool(abstained(text, idk=run.settings.idk, language=language))
            for text in texts
        ]
        answer = _answer_claims(record, item, run)
        failed = answer.reason if isinstance(answer, Undefined) else None
        correct, claims_in_chunks, capped = answer if isinstance(answer, tuple) else (None, None, None)
        return NuggetVerdicts(
            tuple(found[i] for i in kept),
            None if grades is None else tuple(grades[i][0] for i in kept),
            0 if grades is None else sum(grades[i][1] is not None for i in kept),
            correct,
            claims_in_chunks,
            tuple(in_chunks[i] for i in kept),
            tuple(no_fact[i] for i in kept),
            answer_undefined=failed or (ABSTAINS if answer is None else None),
            grades_undefined=grades_failed,
            answer_capped=capped,
            alternatives=tuple(tuple(in_chunks[i] for i in group if not no_fact[i]) for group in groups),
            every_in_chunks=in_chunks,
            from_chunks=bool(chunk_sources(record)),
        )

    return item.memo("judge:nugget_verdicts", read)


def _answer_claims(
    record: Record, item: ItemContext, run: RunContext
) -> tuple[tuple[bool, ...] | None, tuple[tuple[bool, ...], ...], int | None] | Undefined | None:
    """The answer's claims: whether a reference holds each (``None`` without a reference), the chunks each comes
    from, and the cap on their number where the judge's list reached it; ``None`` where the answer abstains. With
    chunks they are seed 002's claims of the item, read once for every metric that reads them
    (:func:`~ragmeter.metrics.judged.claims_outcome`); a claim with no content word and no number (a bare "No.", a
    stray code fence) is left out, as the check would find it in any reference."""
    call = _answer_call(record, run)
    if call is None:
        return None
    language = run.language(record)
    if record.contexts:
        check = claims_outcome(record, item, run)
        if check.undefined is not None:
            return Undefined(check.undefined)
        claims, capped = check.claims, check.capped
    else:
        outcome = run.judge_outcome(call)
        if outcome.verdict is None:
            return judge_failure("claims", outcome)
        capped = reached_cap(outcome.verdict, record.answer, language)
        claims = verdict_claims(
            outcome.verdict,
            record,
            record.answer,
            check_evidence=run.settings.check_evidence,
            split=call.prompt.name != CLAIMS.name,
            language=language,
        )
    worded = [claim for claim in claims if not wordless(claim.text, language=language)]
    if claims and not worded:
        return Undefined(NO_WORD_CLAIM)
    claims = worded
    correct = (
        tuple(
            any(supports([reference], claim.text, language=language) for reference in record.references)
            for claim in claims
        )
        if record.references
        else None
    )
    chunks = [chunk.text for chunk in record.contexts]
    in_chunks = _rows(
        [
            (claim.chunks or supporting_chunks(chunks, claim.text, language=language))
            if claim.verdict == "supported"
            else ()
            for claim in claims
        ],
        len(chunks),
    )
    return correct, in_chunks, capped


# --- the metrics ------------------------------------------------------------------------------------------


def _value(
    verdicts: NuggetVerdicts,
    read: Callable[[NuggetVerdicts], float],
    undefined: str,
    *,
    graded: bool,
    answer: bool = False,
) -> Outcome:
    """``read``'s value, undefined with ``undefined`` where it is NaN; a metric that reads the grades (``graded``) is
    undefined where a grades call failed, and notes the grades the quote check counted none; one that reads the
    answer's claims (``answer``) notes that the judge's list of them reached its cap."""
    if graded and verdicts.grades_undefined is not None:
        return Undefined(verdicts.grades_undefined)
    value = read(verdicts)
    if math.isnan(value):
        return Undefined(undefined)
    notes = [capped_note(verdicts.answer_capped)] if answer and verdicts.answer_capped is not None else []
    if graded and verdicts.unquoted:
        notes.append(f"{verdicts.unquoted} grade(s) quoted words the answer does not have: counted none")
    return Noted(value, "; ".join(notes)) if notes else value


def _nugget_metric(formula: Callable[..., float], vital: bool) -> Callable[[Record, ItemContext, RunContext], Outcome]:
    return _nuggets_metric(
        lambda v: formula(v.grades, v.vital), "no vital nugget" if vital else "no nugget", graded=True, chunks=False
    )


def _answer_metric(
    read: Callable[[NuggetVerdicts], float], undefined: str, *, correctness: bool = True, graded: bool = False
) -> Callable[[Record, ItemContext, RunContext], Outcome]:
    """A metric of the answer's claims (``correctness``: and whether a reference holds them; ``graded``: and the
    nuggets' grades): undefined where the answer abstains or states no claim, where it needs a reference the record
    lacks, or with ``undefined``."""

    def compute(record: Record, item: ItemContext, run: RunContext) -> Outcome:
        verdicts = nugget_verdicts(record, item, run)
        if isinstance(verdicts, Undefined):
            return verdicts
        if verdicts.answer_undefined is not None:
            return Undefined(verdicts.answer_undefined)
        if not verdicts.answer_in_chunks:
            return Undefined("the answer states no claim")
        if correctness and verdicts.answer_in_reference is None:
            return Undefined("record has no reference answer to check the answer's claims against")
        return _value(verdicts, read, undefined, graded=graded, answer=True)

    return compute


def _nuggets_metric(
    read: Callable[[NuggetVerdicts], float], undefined: str, *, graded: bool, chunks: bool, retriever: bool = False
) -> Callable[[Record, ItemContext, RunContext], Outcome]:
    """A metric of the nuggets (the reference's claims), with their grades (``graded``) or the retrieved chunks
    (``chunks``: undefined without any); one that tells what the retriever missed (``retriever``: its claim recall,
    the failure split) is undefined where the nuggets were written from the retrieved chunks (they would read 1
    and "the generator's" whatever the retriever did)."""

    def compute(record: Record, item: ItemContext, run: RunContext) -> Outcome:
        verdicts = nugget_verdicts(record, item, run)
        if isinstance(verdicts, Undefined):
            return verdicts
        if chunks and not record.contexts:
            return Undefined(NO_CHUNK)
        if retriever and verdicts.from_chunks:
            return Undefined(FROM_CHUNKS)
        return _value(verdicts, read, undefined, graded=graded)

    return compute


def _signature(run: RunContext) -> Mapping[str, Any]:
    judge = run.judge
    return {
        "judge:nuggets": judge.signature(NUGGETS),
        "judge:nugget_grades": judge.signature(NUGGET_GRADES),
        "judge:claims": judge.signature(asked_prompt(judge, CLAIMS)),
        "claims": judge.claims,
        "evidence_check": EVIDENCE_CHECK if run.settings.check_evidence else "off",
        "no_content_word": _NO_CONTENT_WORD,
        "retriever": _RETRIEVER,
        "claim_f1_without_claims": "0 where no nugget is stated fully",
        "idk": run.settings.idk.version,
        "language": language_signature(run.settings.language),
        "nuggets": _NUGGETS_SIGNATURE[run.settings.nugget_source],
        "partial_credit": "0.5",
    } | (
        {"judge:reference_claims": judge.signature(CLAIM_SPLIT)}
        if run.settings.nugget_source is NuggetSource.CLAIMS
        else {}
    )


_NO_CONTENT_WORD = (
    "a reference's sentence joined to the next; the judge's claim or nugget left out unless all it wrote; no fact "
    "for the chunks"
)
_RETRIEVER = (
    "whatever the answer states: claim recall on the reference the chunks hold best, precision on every reference's "
    "nuggets; no claim recall or failure split on nuggets written from the retrieved chunks"
)
_NUGGETS_SIGNATURE = {
    NuggetSource.SENTENCES: (
        "the record's where given, else the reference's sentences and list items, several references as "
        "alternatives (the judge's without a reference)"
    ),
    NuggetSource.CLAIMS: (
        "the record's where given, else the reference's claims, several references as alternatives (the judge's "
        "nuggets without a reference)"
    ),
    NuggetSource.JUDGE: "the record's where given, else the judge's",
}


def _retrieved_claim_recall(verdicts: NuggetVerdicts) -> float:
    """RAGChecker's retriever claim recall of the reference answer whose facts the chunks hold best: several
    reference answers are alternatives, and the retriever did its work when the chunks hold one of them, whatever
    the answer states. NaN where no reference answer has a fact for the chunks to hold."""
    values = [value for rows in verdicts.alternatives if not math.isnan(value := _M.context_claim_recall(rows))]
    return max(values, default=math.nan)


def _claim_f1(record: Record, item: ItemContext, run: RunContext) -> Outcome:
    """RAGChecker's F1 of the answer's claims against the nuggets. An answer with no claim to check (it abstains, or
    states none) and a reference: 0 where it states none of the nuggets fully, as the harmonic mean is 0 at R = 0
    whatever P (RAGChecker: 0 for every answer without claims), so that abstaining cannot raise a run's mean; else
    undefined, saying why (a decline that states the reference's decline has no precision to weigh)."""
    verdicts = nugget_verdicts(record, item, run)
    if isinstance(verdicts, Undefined) or not verdicts.claimless or not record.references:
        return _answer_f1(record, item, run)
    return _value(
        verdicts,
        lambda v: _M.claim_f1((), v.stated),
        verdicts.answer_undefined or "the answer states no claim",
        graded=True,
    )


_answer_f1 = _answer_metric(
    lambda v: _M.claim_f1(v.answer_in_reference, v.stated), "no claim or no nugget", graded=True
)

ABSTAINS = "the answer abstains: no claim"
NO_CHUNK = "record has no retrieved chunks"
FROM_CHUNKS = (
    "the nuggets were written from the retrieved chunks (no reference answer or nuggets): what the retriever missed "
    "cannot be told"
)
NO_WORD_CLAIM = 'the answer\'s claims have no content word or number to check (a bare "No.")'
NO_FACT = (
    "the nuggets state no fact for a chunk to hold: they only say that the answer is not known, or have no content "
    "word or number"
)
_M = claim_matrix
#: name, what it measures, compute, aggregation, higher is better
_SPECS: tuple[tuple[str, str, Callable[[Record, ItemContext, RunContext], Outcome], Aggregation, bool | None], ...] = (
    (
        "nugget_recall",
        "Nuggets the answer states / nuggets, partial support ½ (TREC's All score)",
        _nugget_metric(nuggets.nugget_recall, False),
        Aggregation.MEAN,
        True,
    ),
    (
        "nugget_recall_strict",
        "Nuggets the answer states fully / nuggets (TREC's All Strict)",
        _nugget_metric(nuggets.nugget_recall_strict, False),
        Aggregation.MEAN,
        True,
    ),
    (
        "nugget_recall_vital",
        "Vital nuggets the answer states / vital nuggets, partial support ½ (TREC's Vital)",
        _nugget_metric(nuggets.nugget_recall_vital, True),
        Aggregation.MEAN,
        True,
    ),
    (
        "nugget_recall_vital_strict",
        ("Vital nuggets the answer states fully / vital nuggets (TREC 2024 RAG's primary score)"),
        _nugget_metric(nuggets.nugget_recall_vital_strict, True),
        Aggregation.MEAN,
        True,
    ),
    (
        "claim_precision",
        "Answer claims a reference holds / answer claims (RAGChecker's precision)",
        _answer_metric(lambda v: _M.claim_precision(v.answer_in_reference), "no claim"),
        Aggregation.MEAN,
        True,
    ),
    (
        "claim_recall",
        "Nuggets the answer states fully / nuggets (RAGChecker's recall)",
        _nuggets_metric(lambda v: _M.claim_recall(v.stated), "no nugget", graded=True, chunks=False),
        Aggregation.MEAN,
        True,
    ),
    (
        "claim_f1",
        "Harmonic mean of claim_precision and claim_recall (RAGChecker's F1)",
        _claim_f1,
        Aggregation.MEAN,
        True,
    ),
    (
        "context_claim_recall",
        "Nuggets the retrieved chunks state / nuggets (RAGChecker's retriever claim recall)",
        _nuggets_metric(_retrieved_claim_recall, NO_FACT, graded=False, chunks=True, retriever=True),
        Aggregation.MEAN,
        True,
    ),
    (
        "claim_context_precision",
        ("Retrieved chunks that state a nugget / retrieved chunks (RAGChecker's context precision)"),
        _nuggets_metric(lambda v: _M.claim_context_precision(v.every_in_chunks), NO_CHUNK, graded=False, chunks=True),
        Aggregation.MEAN,
        True,
    ),
    (
        "context_utilization",
        "Retrieved nuggets the answer states / retrieved nuggets (RAGChecker)",
        _nuggets_metric(
            lambda v: _M.context_utilization(v.retrieved_in_chunks, v.stated),
            "no nugget was retrieved",
            graded=True,
            chunks=True,
        ),
        Aggregation.MEAN,
        True,
    ),
    (
        "noise_sensitivity_relevant",
        ("Wrong answer claims a chunk holding a nugget states / answer claims (RAGChecker)"),
        _answer_metric(
            lambda v: _M.noise_sensitivity_relevant(v.answer_in_chunks, v.answer_in_reference, v.nuggets_in_chunks),
            NO_CHUNK,
        ),
        Aggregation.MEAN,
        False,
    ),
    (
        "noise_sensitivity_irrelevant",
        ("Wrong answer claims only chunks holding no nugget state / answer claims (RAGChecker)"),
        _answer_metric(
            lambda v: _M.noise_sensitivity_irrelevant(v.answer_in_chunks, v.answer_in_reference, v.nuggets_in_chunks),
            NO_CHUNK,
        ),
        Aggregation.MEAN,
        False,
    ),
    (
        "hallucination",
        "Wrong answer claims no chunk states / answer claims (RAGChecker)",
        _answer_metric(lambda v: _M.hallucination(v.answer_in_chunks, v.answer_in_reference), NO_CHUNK),
        Aggregation.MEAN,
        False,
    ),
    (
        "self_knowledge",
        "Right answer claims no chunk states / answer claims (RAGChecker)",
        _answer_metric(lambda v: _M.self_knowledge(v.answer_in_chunks, v.answer_in_reference), NO_CHUNK),
        Aggregation.MEAN,
        None,
    ),
    (
        "claim_faithfulness",
        "Answer claims a chunk states / answer claims (RAGChecker's faithfulness)",
        _answer_metric(lambda v: _M.claim_faithfulness(v.answer_in_chunks), NO_CHUNK, correctness=False),
        Aggregation.MEAN,
        True,
    ),
    (
        "retrieval_failure",
        "The answer misses a vital nugget that no retrieved chunk states (the retriever lost it)",
        _nuggets_metric(
            lambda v: _M.retrieval_failure(v.grades, v.vital, v.failure_in_chunks),
            "no vital nugget",
            graded=True,
            chunks=True,
            retriever=True,
        ),
        Aggregation.RATE,
        False,
    ),
    (
        "generation_failure",
        "The answer misses a vital nugget that a retrieved chunk states (the generator lost it)",
        _nuggets_metric(
            lambda v: _M.generation_failure(v.grades, v.vital, v.failure_in_chunks),
            "no vital nugget",
            graded=True,
            chunks=True,
            retriever=True,
        ),
        Aggregation.RATE,
        False,
    ),
)

_SAME_ANSWERS = (
    "on 156 MT-RAG dev answers with the packaged judge and the reference's sentences as nuggets, the default (0.25 "
    "cross-collection for the claim-level score chosen on the other collections; less on the judge's nuggets), where "
    'token F1 reaches 0.36 and faithfulness_offline 0.40 (benchmarks/README.md, "Claim level"): read it with a '
    "larger judge"
)
#: Measured agreement with people (bench_claim_level.py, results/claim_level-mtrag-dev-local.json), shown after the
#: family's section of a report.
_AGREEMENT = {
    "nugget_recall": f"follows people's completeness at Spearman 0.35 [0.17, 0.52] {_SAME_ANSWERS}",
    "nugget_recall_strict": f"follows people's completeness at Spearman 0.34 [0.14, 0.52] {_SAME_ANSWERS}",
    "claim_recall": f"follows people's completeness at Spearman 0.34 [0.14, 0.52] {_SAME_ANSWERS}",
    "claim_f1": f"follows people's completeness at Spearman 0.35 [0.19, 0.47] {_SAME_ANSWERS}",
}

#: The metrics that read the nuggets (their grades, or the chunks that state them): where the nuggets are written
#: from each run's relevant chunks, two runs may score them on different nuggets (``compare`` says so).
READS_NUGGETS = frozenset(name for name, *_ in _SPECS) - {
    "claim_precision",
    "hallucination",
    "self_knowledge",
    "claim_faithfulness",
}

for _name, _what, _compute, _aggregation, _higher in _SPECS:
    register(
        Metric(
            name=_name,
            family="claim_level",
            description=_what,
            needs=("answer",),
            aggregation=_aggregation,
            value_range=(0.0, 1.0),
            higher_is_better=_higher,
            compute=_compute,
            signature=_signature,
            resources=frozenset({"judge"}),
            prefetch=_calls,
            agreement=_AGREEMENT.get(_name),
        )
    )
