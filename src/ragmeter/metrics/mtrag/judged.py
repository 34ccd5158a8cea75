"""MT-RAG's judged metrics (seed 004, SPEC §5) on ragmeter's judge: the IDK judge, RL_F and RB_llm, and
their IDK-conditioned forms.

- ``idk_judge``: does the answer, given the question and the exchange before it, say that the information is
  not available? yes → 1, partly → 0.5, no → 0 (MT-RAG's ``idk_eval``; MT-RAG's judge reads the whole
  conversation, which made the packaged judge call long conversations' answers refusals). With
  ``Settings.check_evidence`` a yes or partly stands only when the response has words that decline
  (:mod:`ragmeter.judges.checks.refusal_cues`); else it is 0, noted.
- ``RL_F`` (RAGAS-style faithfulness): the answer's statements, each checked against the passages;
  supported / statements. It reads the same claims verdict as ``judge_faithfulness`` (one call serves
  both). Unlike RAGAS: one call extracts and verifies (RAGAS makes two), or, for a judge that splits only (the
  packaged local judge), one call extracts and the evidence check verifies; the question is not shown (a small
  judge shown it splits the question instead of the answer); passages are numbered blocks, not one joined
  text; a statement is supported, contradicted or unsupported, and only supported counts; with the evidence check
  (:mod:`ragmeter.judges.checks.evidence`) a supported statement must have its words in the passages, and the
  answer's sentences the judge's statements leave out are statements too. No passages, an abstaining answer, or
  no statement → undefined, counted.
- ``RB_llm`` (RADBench): one 1–10 rating of faithfulness, appropriateness and completeness, given the passages,
  the conversation, the question, the reference and the answer; value = rating / 10. A failed verdict is
  undefined, counted; ``Settings.rb_llm_unparsed`` (``--rb-llm-unparsed 0.5``) makes it that value, noted, as
  MT-RAG's released scripts do with a reply they cannot parse.
- ``RL_F_idk``, ``RB_llm_idk``, ``judge_faithfulness_idk``: conditioned on answerability and the IDK verdict as
  MT-RAG conditions (:func:`~ragmeter.metrics.mtrag.algorithmic.idk_condition`). The verdict is the record's
  ``labels.idk_eval`` with ``idk_eval_source = record`` (where the record has one), else the IDK judge's.

A structured verdict replaces MT-RAG's regular expressions: a rating the answer writes into itself
("Rating: [[10]]") is material to rate, never the rating.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ragmeter.core.records import Record
from ragmeter.judges.checks.evidence import VERSION as EVIDENCE_CHECK
from ragmeter.judges.checks.refusal_cues import VERSION as REFUSAL_CHECK
from ragmeter.judges.checks.refusal_cues import declines_in_words
from ragmeter.judges.engine import JudgeCall
from ragmeter.judges.layouts import judge_call
from ragmeter.judges.prompts import CLAIMS, IDK, IDK_VALUES, RADBENCH, Prompt
from ragmeter.metrics._registry import Aggregation, Metric, Noted, Outcome, Undefined, register
from ragmeter.metrics.judged import (
    abstains,
    asked_prompt,
    claims_call,
    claims_outcome,
    faithfulness_metric,
    faithfulness_outcome,
    judge_failure,
)
from ragmeter.metrics.mtrag.algorithmic import idk_condition
from ragmeter.text.languages import language_signature

if TYPE_CHECKING:
    from ragmeter.engine.context import ItemContext, RunContext

__all__ = ["IDK_OVERRULED", "RL_F_DIFFERS_FROM_RAGAS", "conditioned", "idk_eval", "rb_llm_value"]

RL_F_DIFFERS_FROM_RAGAS = (
    "one call extracts and verifies (claims=split: extracts only, the evidence check "
    "verifies); question not shown; passages numbered, not joined; verdicts "
    "supported/contradicted/unsupported, only supported counts"
)

#: The note of an IDK verdict of declines or partly that the refusal check turned into answers.
IDK_OVERRULED = "the judge said {verdict}, but the response has no words that decline: answers"


def rb_llm_value(rating: int) -> float:
    """RADBench's 1–10 rating as MT-RAG reports it: rating / 10.

    >>> rb_llm_value(7)
    0.7
    """
    return rating / 10


def _idk_judge(record: Record, item: ItemContext, run: RunContext) -> Outcome:
    def judged() -> Outcome:
        outcome = run.judge_outcome(judge_call(run.judge, IDK, record))
        if outcome.verdict is None:
            return judge_failure("idk", outcome)
        verdict = outcome.verdict["verdict"]
        if (
            run.settings.check_evidence
            and verdict != "answers"
            and not declines_in_words(record.answer, run.language(record))
        ):
            return Noted(0.0, IDK_OVERRULED.format(verdict=verdict))
        return IDK_VALUES[verdict]

    return item.memo("judge:idk", judged)


def idk_eval(record: Record, item: ItemContext, run: RunContext) -> Outcome:
    """The IDK verdict that conditions the judged ``*_idk`` metrics: the record's ``labels.idk_eval`` when
    ``idk_eval_source`` is ``record`` and the record has one, else the IDK judge's."""
    given = _record_idk_eval(record, run)
    return given if given is not None else _idk_judge(record, item, run)


def _record_idk_eval(record: Record, run: RunContext) -> float | None:
    """The record's own IDK verdict, when ``idk_eval_source`` says to use it and the record has one."""
    if run.settings.idk_eval_source == "record" and record.labels.get("idk_eval") is not None:
        return float(record.labels["idk_eval"])
    return None


def _rl_f(record: Record, item: ItemContext, run: RunContext) -> Outcome:
    if not record.contexts:
        return Undefined("no passages to check the statements against")
    check = claims_outcome(record, item, run)
    if check.undefined is not None:
        return Undefined(check.undefined)
    if check.source != "answer":
        return Undefined("the answer abstains: no statement")
    if not check.claims:
        return Undefined("the judge found no statement in the answer")
    return faithfulness_outcome(check)


def _rb_llm(record: Record, item: ItemContext, run: RunContext) -> Outcome:
    def judged() -> Outcome:
        outcome = run.judge_outcome(judge_call(run.judge, RADBENCH, record))
        if outcome.verdict is not None:
            return rb_llm_value(outcome.verdict["rating"])
        failed = judge_failure("radbench", outcome)
        unparsed = run.settings.rb_llm_unparsed
        return failed if unparsed is None else Noted(unparsed, f"{failed.reason}; counted as {unparsed:g}")

    return item.memo("judge:radbench", judged)


def conditioned(
    base: Callable[[Record, ItemContext, RunContext], Outcome],
) -> Callable[[Record, ItemContext, RunContext], Outcome]:
    """``base`` conditioned on answerability and the IDK verdict; undefined only where the conditioned value
    needs an undefined part (the base value on an answerable question that was not declined)."""

    def compute(record: Record, item: ItemContext, run: RunContext) -> Outcome:
        verdict = idk_eval(record, item, run)
        if isinstance(verdict, Undefined):
            return Undefined(f"no IDK verdict: {verdict.reason}")
        idk_value = verdict.value if isinstance(verdict, Noted) else verdict
        fixed = idk_condition(math.nan, answerability=record.answerability, idk_eval=idk_value)
        if not math.isnan(fixed):  # the conditioning alone decides
            return fixed
        return base(record, item, run)

    return compute


def _idk_calls(record: Record, item: ItemContext, run: RunContext) -> list[JudgeCall]:
    return [] if _record_idk_eval(record, run) is not None else [judge_call(run.judge, IDK, record)]


def _rl_f_calls(record: Record, item: ItemContext, run: RunContext) -> list[JudgeCall]:
    if not record.contexts or abstains(record, run):
        return []
    call = claims_call(record, run)
    return [call] if call is not None else []


def _rb_llm_calls(record: Record, item: ItemContext, run: RunContext) -> list[JudgeCall]:
    return [judge_call(run.judge, RADBENCH, record)]


def _both(
    *makers: Callable[[Record, ItemContext, RunContext], list[JudgeCall]],
) -> Callable[[Record, ItemContext, RunContext], list[JudgeCall]]:
    return lambda record, item, run: [call for make in makers for call in make(record, item, run)]


def _signature(*prompts: Prompt, idk: bool = False) -> Callable[[RunContext], Mapping[str, Any]]:
    """The judge and prompt hashes a metric's values come from, with the IDK verdict's source when it is
    conditioned, what a failed RADBench verdict counts as, and how RL_F differs from RAGAS."""

    def values(run: RunContext) -> Mapping[str, Any]:
        out: dict[str, Any] = {f"judge:{p.name}": run.judge.signature(asked_prompt(run.judge, p)) for p in prompts}
        if idk or IDK in prompts or CLAIMS in prompts:
            out["language"] = language_signature(run.settings.language)
        if idk or IDK in prompts:
            out["refusal_check"] = REFUSAL_CHECK if run.settings.check_evidence else "off"
        if idk:
            out.update(
                {
                    "judge:idk": run.judge.signature(asked_prompt(run.judge, IDK)),
                    "idk_eval_source": run.settings.idk_eval_source,
                }
            )
        if RADBENCH in prompts:
            unparsed = run.settings.rb_llm_unparsed
            out["rb_llm_unparsed"] = "undefined" if unparsed is None else f"{unparsed:g}"
        if CLAIMS in prompts:
            out.update(
                idk=run.settings.idk.version,
                rl_f="not RAGAS: " + RL_F_DIFFERS_FROM_RAGAS,
                claims=run.judge.claims,
                evidence_check=EVIDENCE_CHECK if run.settings.check_evidence else "off",
            )
        return out

    return values


_SPECS: tuple[tuple[str, str, tuple[str, ...], Any, Any, Any, bool | None], ...] = (
    (
        "idk_judge",
        (
            "Judge's verdict that the answer says the information is not available: 1 yes, 0.5 partly, "
            "0 no (MT-RAG's idk_eval)"
        ),
        ("answer",),
        _idk_judge,
        _signature(IDK),
        _idk_calls,
        None,
    ),
    (
        "RL_F",
        (
            "Statements of the answer the passages support / statements (RAGAS-style, MT-RAG's RL_F); no "
            "statement: undefined"
        ),
        ("answer", "contexts"),
        _rl_f,
        _signature(CLAIMS),
        _rl_f_calls,
        True,
    ),
    (
        "RB_llm",
        "Judge's 1–10 rating of faithfulness, appropriateness and completeness / 10 (MT-RAG's RADBench RB_llm)",
        ("answer", "references"),
        _rb_llm,
        _signature(RADBENCH),
        _rb_llm_calls,
        True,
    ),
    (
        "RL_F_idk",
        "RL_F conditioned on answerability and the IDK verdict (MT-RAG's RL_F_idk)",
        ("answer", "answerability"),
        conditioned(_rl_f),
        _signature(CLAIMS, idk=True),
        _both(_idk_calls, _rl_f_calls),
        True,
    ),
    (
        "RB_llm_idk",
        "RB_llm conditioned on answerability and the IDK verdict (MT-RAG's RB_llm_idk)",
        ("answer", "references", "answerability"),
        conditioned(_rb_llm),
        _signature(RADBENCH, idk=True),
        _both(_idk_calls, _rb_llm_calls),
        True,
    ),
)

#: How far the IDK-conditioned faithfulness follows people, held out (``benchmarks/judge/bench_judge_heldout.py``).
IDK_FAITHFULNESS_AGREEMENT = (
    "agrees with people at Spearman 0.59 [0.44, 0.74] cross-collection on MT-RAG dev with "
    "the packaged judge (156 answers; 0.62 in sample): the one to read with a judge"
)

for _name, _what, _needs, _fn, _values, _calls, _higher in _SPECS:
    register(
        Metric(
            name=_name,
            family="mtrag_judged",
            description=_what,
            needs=_needs,
            aggregation=Aggregation.MEAN,
            value_range=(0.0, 1.0),
            higher_is_better=_higher,
            compute=_fn,
            signature=_values,
            resources=frozenset({"judge"}),
            prefetch=_calls,
            agreement=IDK_FAITHFULNESS_AGREEMENT if _name == "RL_F_idk" else None,
        )
    )

# Seed 002's Faithfulness conditioned as MT-RAG conditions RL_F: the seed's "no context → 1.0" rule ranks an
# answer from the model's own knowledge to an unanswerable question highest, where humans rate it lowest. In
# this family, not in "judged", so that seed 002's default run makes no IDK call.
register(
    Metric(
        name="judge_faithfulness_idk",
        family="mtrag_judged",
        description="judge_faithfulness conditioned on answerability and the IDK verdict, as MT-RAG conditions RL_F",
        needs=("answer", "answerability"),
        aggregation=Aggregation.MEAN,
        value_range=(0.0, 1.0),
        higher_is_better=True,
        compute=conditioned(faithfulness_metric),
        signature=_signature(CLAIMS, idk=True),
        resources=frozenset({"judge"}),
        prefetch=_both(_idk_calls, lambda record, item, run: [c for c in [claims_call(record, run)] if c]),
        five_point=True,
        agreement=IDK_FAITHFULNESS_AGREEMENT,
    )
)
