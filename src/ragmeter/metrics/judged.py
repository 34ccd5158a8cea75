"""Seed 002's LLM-judged metrics, with the rules of SPEC §3.

One ``claims`` call per item extracts the claims of the answer (of the reference when the answer
abstains) and verifies each against all retrieved chunks: supported / contradicted / unsupported, with
the chunks used. Faithfulness, Precision and Recall read that one verdict, evidence-checked when
``Settings.check_evidence`` (:mod:`ragmeter.judges.checks.evidence`: a supported claim must have its words,
numbers and scope in the chunks, and the sentences the claims leave out are checked as claims of their own).
A judge that splits only (``Judge.claims == "split"``, the packaged local judge's default) makes a
``claim_split`` call instead, shown the text alone, and the evidence check verifies every claim
(:func:`~ragmeter.judges.checks.evidence.verified_claims`). Correctness and Relevance each take one more call.
An item without retrieved chunks needs no claims call.

- Faithfulness = supported claims / claims of the answer, in [0, 1]; no context → 1.0 with the note
  "No context to verify".
- Precision = chunks that support a claim / retrieved chunks; no context → undefined.
- Recall = claims the chunks support / claims, over the answer's claims, or the reference's when the
  answer abstains; no context → 1.0, noted.
- Correctness and Relevance: the judge's 1–5 score.
- Weighted score = 0.4·Correctness + 0.2·(F + P + R), F, P and R on the 1–5 scale (1 + 4·ratio); undefined
  when a part is. Relevance is reported, weighted 0.

A failed judge call leaves the metrics that read it undefined, with the judge's reason; it is never a number.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragmeter.core.errors import ConfigError
from ragmeter.core.records import Record
from ragmeter.judges.checks.evidence import VERSION as EVIDENCE_CHECK
from ragmeter.judges.checks.evidence import Claim, checked_claims, verified_claims
from ragmeter.judges.engine import JudgeCall, JudgeOutcome
from ragmeter.judges.layouts import judge_call, layout_of
from ragmeter.judges.prompts import (
    CLAIM_SPLIT,
    CLAIMS,
    CORRECTNESS,
    RELEVANCE,
    Prompt,
    claims_cap,
)
from ragmeter.metrics._registry import Aggregation, Metric, Noted, Outcome, Undefined, register
from ragmeter.metrics.citation import abstained
from ragmeter.text.languages import LANGUAGES, Language, language_signature

if TYPE_CHECKING:
    from ragmeter.engine.context import ItemContext, RunContext
    from ragmeter.judges.engine import Judge

__all__ = [
    "Claim",
    "ClaimsCheck",
    "abstains",
    "asked_prompt",
    "claim_recall",
    "claims_call",
    "claims_outcome",
    "claims_text_call",
    "context_precision",
    "faithfulness",
    "faithfulness_metric",
    "faithfulness_outcome",
    "five_point",
    "judge_failure",
    "verdict_claims",
    "weighted_score",
]

ENGLISH = LANGUAGES["en"]

#: Seed 002's weights: Correctness 0.4; Faithfulness, Precision, Recall 0.2 each; Relevance 0.
WEIGHTS = {"correctness": 0.4, "faithfulness": 0.2, "precision": 0.2, "recall": 0.2}
NO_CONTEXT = "No context to verify"


def faithfulness(claims: Sequence[Claim]) -> float:
    """Supported claims / claims. NaN for no claim.

    >>> faithfulness([Claim("a", "supported", (1,)), Claim("b", "contradicted", (2,)), Claim("c", "unsupported")])
    0.3333333333333333
    """
    return sum(c.verdict == "supported" for c in claims) / len(claims) if claims else float("nan")


def context_precision(claims: Sequence[Claim], n_chunks: int) -> float:
    """Chunks that support at least one claim / retrieved chunks. NaN for no chunk.

    >>> context_precision([Claim("a", "supported", (1,)), Claim("b", "supported", (2,))], 3)
    0.6666666666666666
    """
    if n_chunks == 0:
        return float("nan")
    used = {number for c in claims if c.verdict == "supported" for number in c.chunks}
    return len(used) / n_chunks


def claim_recall(claims: Sequence[Claim]) -> float:
    """Claims the retrieved chunks cover (a chunk supports them) / claims. NaN for no claim.

    Over the answer's claims this equals Faithfulness; it differs when the answer abstains and the
    reference's claims are checked instead (seed 002: recall measures what retrieval brought).
    """
    return faithfulness(claims)


def five_point(ratio: float) -> float:
    """A ratio in [0, 1] on seed 002's 1–5 scale: 1 + 4·ratio.

    >>> round(five_point(2 / 3), 1)
    3.7
    """
    return 1.0 + 4.0 * ratio


def weighted_score(correctness: float, faithfulness: float, precision: float, recall: float) -> float:
    """0.4·Correctness + 0.2·(F + P + R) on the 1–5 scale; ``correctness`` is 1–5, the rest ratios in [0, 1].

    >>> weighted_score(3.0, 1.0, 2 / 3, 1.0)
    3.9333333333333336
    """
    return (
        WEIGHTS["correctness"] * correctness
        + WEIGHTS["faithfulness"] * five_point(faithfulness)
        + WEIGHTS["precision"] * five_point(precision)
        + WEIGHTS["recall"] * five_point(recall)
    )


# --- run-loop adapters -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaimsCheck:
    """Whose claims were checked (``answer`` or ``reference``), the claims, or why there are none."""

    source: str | None
    claims: tuple[Claim, ...] = ()
    undefined: str | None = None
    capped: int | None = None  # the cap on claims, when the judge's list reached it
    added: int = 0  # sentences of the text the judge's claims left out, checked as claims of their own


def abstains(record: Record, run: RunContext) -> bool:
    return bool(abstained(record.answer, idk=run.settings.idk, action=record.action, language=run.language(record)))


def asked_prompt(judge: Judge, prompt: Prompt) -> Prompt:
    """The prompt ``judge`` is asked where a metric reads ``prompt``'s verdicts: ``claim_split`` in place of
    ``claims`` when the judge splits only, else ``prompt`` itself; as the judge's layout asks it."""
    return layout_of(judge).prompt(CLAIM_SPLIT if prompt is CLAIMS and judge.claims == "split" else prompt)


def claims_text_call(
    record: Record, text: str, judge: Judge, *, check_evidence: bool, language: Language | None = None
) -> JudgeCall:
    """The call that asks ``judge`` for the claims of ``text`` (``record``'s answer or reference). A judge that
    splits only leaves every verdict to the evidence check, so it needs ``check_evidence``."""
    if asked_prompt(judge, CLAIMS).name == CLAIM_SPLIT.name:
        if not check_evidence:
            raise ConfigError(
                "a judge that only splits claims leaves their verdicts to the evidence check: turn "
                "check_evidence on, or ask the judge to verify (JudgeConfig(claims='verify'), "
                "--judge-claims verify)"
            )
        return judge_call(judge, CLAIM_SPLIT, record, text=text, language=language)
    return judge_call(judge, CLAIMS, record, text=text, language=language)


def claims_call(record: Record, run: RunContext) -> JudgeCall | None:
    """The claims call for ``record``, or ``None`` when none is needed or possible."""
    if not record.contexts:
        return None
    if not abstains(record, run):
        text = record.answer
    elif record.references:
        text = record.references[0]
    else:
        return None
    return claims_text_call(
        record, text, run.judge, check_evidence=run.settings.check_evidence, language=run.language(record)
    )


def judge_failure(prompt: str, outcome: JudgeOutcome) -> Undefined:
    return Undefined(f"judge failed ({prompt}): {outcome.failure}")


def verdict_claims(
    verdict: Mapping[str, Any],
    record: Record,
    text: str,
    *,
    check_evidence: bool,
    split: bool = False,
    language: Language = ENGLISH,
) -> tuple[Claim, ...]:
    """The claims of a ``claims`` verdict on ``text`` (``record``'s answer or reference, written in ``language``),
    evidence-checked against the record's chunks when ``check_evidence``
    (:func:`~ragmeter.judges.checks.evidence.checked_claims`: the
    sentences of ``text`` the claims leave out are added); of a ``claim_split`` verdict (``split``: its claims
    are sentences, without verdicts), verified by the check whatever ``check_evidence`` says
    (:func:`~ragmeter.judges.checks.evidence.verified_claims`)."""
    chunks = [chunk.text for chunk in record.contexts]
    if split:
        return verified_claims(verdict["claims"], chunks, text, language=language)
    claims = tuple(Claim(c["claim"], c["verdict"], tuple(c["chunks"]), c["evidence"]) for c in verdict["claims"])
    return checked_claims(claims, chunks, text, language=language) if check_evidence else claims


def claims_outcome(record: Record, item: ItemContext, run: RunContext) -> ClaimsCheck:
    def check() -> ClaimsCheck:
        call = claims_call(record, run)
        if call is None:
            if not record.contexts:
                return ClaimsCheck(None)
            return ClaimsCheck(None, undefined="the answer abstains and there is no reference to take claims from")
        outcome = run.judge_outcome(call)
        if outcome.verdict is None:
            return ClaimsCheck(None, undefined=judge_failure("claims", outcome).reason)
        source = "reference" if abstains(record, run) else "answer"
        text = record.answer if source == "answer" else record.references[0]
        claims = verdict_claims(
            outcome.verdict,
            record,
            text,
            check_evidence=run.settings.check_evidence,
            language=run.language(record),
            split=call.prompt.name == CLAIM_SPLIT.name,
        )
        capped = reached_cap(outcome.verdict, text, run.language(record))
        return ClaimsCheck(source, claims, capped=capped, added=len(claims) - len(outcome.verdict["claims"]))

    return item.memo("judge:claims", check)


def reached_cap(verdict: Mapping[str, Any], text: str, language: Language) -> int | None:
    """The cap on a claims verdict's list for ``text`` (:func:`~ragmeter.judges.prompts.claims_cap`, in the
    ``language`` its request was written for) where the list reached it, else ``None``."""
    cap = claims_cap(text, language)
    return cap if len(verdict["claims"]) >= cap else None


def capped_note(cap: int) -> str:
    return f"the judge listed the most claims allowed ({cap}): later ones may be missing"


def faithfulness_metric(record: Record, item: ItemContext, run: RunContext) -> Outcome:
    if not record.contexts:
        return Noted(1.0, NO_CONTEXT)
    if abstains(record, run):
        return Noted(1.0, "the answer abstains: no claim to verify")
    check = claims_outcome(record, item, run)
    if check.undefined is not None:
        return Undefined(check.undefined)
    if not check.claims:
        return Noted(1.0, "the judge found no factual claim")
    return faithfulness_outcome(check)


def faithfulness_outcome(check: ClaimsCheck) -> Outcome:
    """Faithfulness of checked claims (at least one), noted when the judge's list reached its cap or left
    sentences out."""
    return _noted(check, faithfulness(check.claims), added=True)


def _noted(check: ClaimsCheck, value: float, *, added: bool = False) -> Outcome:
    """``value``, noted when the judge's list reached its cap, and (``added``) how many sentences it left out."""
    notes = []
    if check.capped is not None:
        notes.append(capped_note(check.capped))
    if added and check.added:
        notes.append(f"{check.added} sentence(s) the judge's claims left out, checked on their own")
    return Noted(value, "; ".join(notes)) if notes else value


def _precision(record: Record, item: ItemContext, run: RunContext) -> Outcome:
    if not record.contexts:
        return Undefined("record has no retrieved chunks")
    check = claims_outcome(record, item, run)
    if check.undefined is not None:
        return Undefined(check.undefined)
    value = context_precision(check.claims, len(record.contexts))
    if not check.claims:
        return Noted(value, "the judge found no factual claim")
    if check.source == "reference":
        return Noted(value, "claims of the reference (the answer abstains)")
    return _noted(check, value)


def _recall(record: Record, item: ItemContext, run: RunContext) -> Outcome:
    if not record.contexts:
        return Noted(1.0, NO_CONTEXT)
    check = claims_outcome(record, item, run)
    if check.undefined is not None:
        return Undefined(check.undefined)
    if not check.claims:
        return Noted(1.0, "the judge found no factual claim")
    value = claim_recall(check.claims)
    if check.source == "reference":
        return Noted(value, "claims of the reference (the answer abstains)")
    return _noted(check, value, added=True)


def _score(prompt: Prompt) -> Callable[[Record, ItemContext, RunContext], Outcome]:
    name = prompt.name

    def compute(record: Record, item: ItemContext, run: RunContext) -> Outcome:
        def judged() -> Outcome:
            outcome = run.judge_outcome(judge_call(run.judge, prompt, record))
            return judge_failure(name, outcome) if outcome.verdict is None else float(outcome.verdict["score"])

        return item.memo(f"judge:{name}", judged)

    return compute


_correctness = _score(CORRECTNESS)
_relevance = _score(RELEVANCE)


def _weighted(record: Record, item: ItemContext, run: RunContext) -> Outcome:
    parts: dict[str, float] = {}
    for name, compute in (
        ("correctness", _correctness),
        ("faithfulness", faithfulness_metric),
        ("precision", _precision),
        ("recall", _recall),
    ):
        outcome = compute(record, item, run)
        if isinstance(outcome, Undefined):
            return Undefined(f"{name} is undefined: {outcome.reason}")
        parts[name] = outcome.value if isinstance(outcome, Noted) else outcome
    return weighted_score(**parts)


def _calls(record: Record, run: RunContext, names: Iterable[str]) -> list[JudgeCall]:
    calls = []
    for name in names:
        if name == "claims":
            call = claims_call(record, run)
            if call is not None:
                calls.append(call)
        elif name == "correctness" and record.references:
            calls.append(judge_call(run.judge, CORRECTNESS, record))
        elif name == "relevance":
            calls.append(judge_call(run.judge, RELEVANCE, record))
    return calls


def _prefetch(*names: str) -> Callable[[Record, ItemContext, RunContext], list[JudgeCall]]:
    return lambda record, item, run: _calls(record, run, names)


def _judged_by(*prompts: Prompt, weights: bool = False, idk: bool = False) -> Callable[[RunContext], Mapping[str, Any]]:
    """The signature values of a metric read from ``prompts``' verdicts: the judge and each prompt's hash,
    the IDK patterns when abstaining answers are told apart, and the weights of the weighted score."""

    def values(run: RunContext) -> Mapping[str, Any]:
        out: dict[str, Any] = {f"judge:{p.name}": run.judge.signature(asked_prompt(run.judge, p)) for p in prompts}
        if CLAIMS in prompts:
            out["claims"] = run.judge.claims
            out["evidence_check"] = EVIDENCE_CHECK if run.settings.check_evidence else "off"
        if idk:
            out["idk"] = run.settings.idk.version
        if idk or CLAIMS in prompts:
            out["language"] = language_signature(run.settings.language)
        if weights:
            out["weights"] = ",".join(f"{name}:{weight:g}" for name, weight in WEIGHTS.items()) + ",relevance:0"
        return out

    return values


_CLAIMS_SIGNATURE = _judged_by(CLAIMS, idk=True)
_SPECS: tuple[tuple[str, str, tuple[str, ...], tuple[float, float], Any, Any, tuple[str, ...]], ...] = (
    (
        "judge_correctness",
        "Judge's 1–5 rating of the answer's factual agreement with the reference",
        ("answer", "references"),
        (1.0, 5.0),
        _correctness,
        _judged_by(CORRECTNESS),
        ("correctness",),
    ),
    (
        "judge_faithfulness",
        "Supported claims / claims of the answer, each claim checked against all chunks; no context: 1.0, noted",
        ("answer",),
        (0.0, 1.0),
        faithfulness_metric,
        _CLAIMS_SIGNATURE,
        ("claims",),
    ),
    (
        "judge_precision",
        (
            "Retrieved chunks that support a claim of the answer (of the reference when it "
            "abstains) / retrieved chunks; no context: undefined"
        ),
        ("answer",),
        (0.0, 1.0),
        _precision,
        _CLAIMS_SIGNATURE,
        ("claims",),
    ),
    (
        "judge_recall",
        "Claims of the answer (of the reference when it abstains) the chunks support / claims; no context: 1.0, noted",
        ("answer",),
        (0.0, 1.0),
        _recall,
        _CLAIMS_SIGNATURE,
        ("claims",),
    ),
    (
        "judge_relevance",
        "Judge's 1–5 rating of how well the answer addresses the question",
        ("answer",),
        (1.0, 5.0),
        _relevance,
        _judged_by(RELEVANCE),
        ("relevance",),
    ),
    (
        "judge_score",
        "0.4·Correctness + 0.2·(Faithfulness + Precision + Recall), all on 1–5; undefined when a part is",
        ("answer", "references"),
        (1.0, 5.0),
        _weighted,
        _judged_by(CORRECTNESS, CLAIMS, weights=True, idk=True),
        ("claims", "correctness"),
    ),
)

#: Seed 002's Faithfulness against people, held out (``benchmarks/judge/bench_judge_heldout.py``): its rules, not the
#: judge, hold it back.
_FAITHFULNESS_AGREEMENT = (
    "agrees with people at Spearman 0.45 [0.24, 0.64] cross-collection on MT-RAG dev with the "
    "packaged judge (156 answers): seed 002's rules score an answer with no passage 1.0; read "
    "judge_faithfulness_idk"
)

for _name, _what, _needs, _range, _fn, _settings, _prompts in _SPECS:
    register(
        Metric(
            name=_name,
            family="judged",
            description=_what,
            needs=_needs,
            aggregation=Aggregation.MEAN,
            value_range=_range,
            higher_is_better=True,
            compute=_fn,
            signature=_settings,
            resources=frozenset({"judge"}),
            prefetch=_prefetch(*_prompts),
            five_point=_range == (0.0, 1.0),
            agreement=_FAITHFULNESS_AGREEMENT if _name == "judge_faithfulness" else None,
        )
    )
