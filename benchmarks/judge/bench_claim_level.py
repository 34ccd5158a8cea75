"""Do claim-level scores follow people's completeness? Issue 47's agreement figures on MT-RAG's dev split.

On the first N answers of MT-RAG's dev split (``--limit``; the shuffled order of ``bench_judge_validity.py``, seed
0), one ``evaluate`` run with the judge computes the claim-level metrics (``ragmeter.metrics.claim_level``) beside
the signals ragmeter had before them, on the same records and verdicts: ``judge_faithfulness`` (the same claims
call), ``faithfulness_offline``, token F1, ROUGE-L and MT-RAG's ``Recall``, and the released GPT-4o-mini RL_F
(``human_eval_expected.jsonl``); and the same nuggets graded by the evidence check instead of the judge (the share
whose words the answer holds), which tells what the nuggets carry from what the judge's grades add. Reported, for
each signal:

- Spearman's ρ with the mean human **completeness** and **appropriateness** (and faithfulness), with n (a metric is
  undefined where its parts are: no nugget for a reference that only declines, an abstaining answer's claims)
  and a 95 % interval from resampling conversations;
- the same on the records where every claim-level candidate is defined, so that signals are compared on one set;
- the paired difference of each candidate's ρ with completeness against each older signal's, on that set, with
  its interval (the same conversations drawn for both);
- the validation protocol (``_folds.held_out``): which claim-level metric is *the* completeness signal, chosen on
  three collections and measured on the fourth, and chosen without each conversation; ``nugget_recall`` (TREC's
  headline score, the setting before any data) is listed first, so a tie keeps it;
- the judge's calls and tokens per answer, by prompt (issue 47's cost; a cached verdict counts what it cost when made).

``--compare-layouts`` scores the answers twice, with the local judge's default layout (``shared``: one item prefix
held by every call, which for the claims call carries the chunks that seed 002's calls need) and with ``calls`` (each
prompt a call of its own, the layout a remote judge gets, which costs the claim level fewer tokens), reports each as
above, and chooses the layout with its claim-level metric under the validation protocol (every pair a candidate,
``shared`` first so that a tie keeps it). ``--compare-nuggets`` does the same for where the nuggets come from
(``Settings.nugget_source``): the judge's (the source before any data, first), the reference's own sentences
(each a vital nugget, no nuggets call) or the reference's claims (split by the judge as an answer's are, each
vital), the answers graded on each by the same grades prompt. ``--compare-orders``
does the same for the order the nuggets are graded in, against the judge's position bias
(``bench_nugget_order.py``): the run's grades (one order, the product's; first) against each nugget's grades in
that order and reversed made one, by the lower of the two grades or by the mean of their credits (the reversed
grades are one more grades call an answer, read from the cache ``bench_nugget_order.py`` fills or made).
``--compare-batches`` does the same for how many nuggets a grades call shows (the issue: "choose batching size by
what survives these checks"): the run's ten (first) against three, each answer graded again on the same nuggets
three a call, with each batch's grades calls and tokens an answer and the share of grades the smaller batch
changes. ``--compare-credits`` does the same for how a nugget's grade counts: the grade the judge wrote (first)
against its expected credit under the judge's probability of each grade (G-Eval's probability-weighted score;
``_grade_probabilities``: each grades request of the run asked again for its tokens' log-probabilities, so an
OpenAI-compatible endpoint without a key, such as the local judge), with the share of grades whose reply differs
from the run's verdict. The other runs take ``--nugget-source`` (ragmeter's default, the reference's sentences,
unless given).

Verdicts are cached (``--cache``): an interrupted run goes on where it stopped, and a finished one is read again
without a call.

    python -m benchmarks.judge.bench_claim_level --limit 156
        [--compare-layouts | --compare-nuggets | --compare-orders | --compare-batches | --compare-credits]
        [--nugget-source judge]
        [--judge openai --judge-model M --judge-base-url URL]

Result: ``benchmarks/results/claim_level-mtrag-dev-<judge kind>.json`` (``…-layouts.json``, ``…-nuggets.json``,
``…-orders.json``, ``…-batches.json``, ``…-credits.json`` for the comparisons; ``-judge_nuggets`` added to a run's
name with ``--nugget-source judge``).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import _folds
from benchmarks._common import (
    add_judge_arguments,
    cluster_interval,
    dev_records,
    human_means,
    judge_config,
    mtrag_rows,
    write_result,
)
from benchmarks.judge._grade_probabilities import ProbabilityCache, grade_probabilities
from benchmarks.judge.bench_nugget_order import grades
from ragmeter import EvalResult, Settings, evaluate
from ragmeter.cli.common import choice_values
from ragmeter.core.records import Nugget, Record
from ragmeter.core.settings import NuggetSource
from ragmeter.engine.context import RunContext
from ragmeter.judges import JudgeConfig, open_judge
from ragmeter.judges.checks.evidence import supports
from ragmeter.judges.engine import Judge
from ragmeter.judges.nugget_prompts import NUGGETS_PER_CALL, grades_requests, quote_found, quoted_grades
from ragmeter.metrics.claim_level import item_nuggets
from ragmeter.metrics.claim_matrix import harmonic_mean
from ragmeter.metrics.nuggets import GRADES, nugget_recall, nugget_recall_strict

#: The claim-level candidates for the completeness signal, the setting before any data first.
CANDIDATES = ("nugget_recall", "nugget_recall_strict", "claim_recall", "claim_f1")
CLAIM_LEVEL = (*CANDIDATES, "nugget_recall_vital", "nugget_recall_vital_strict", "claim_precision")
#: What ragmeter had before the claim-level metrics, computed in the same run.
OLDER = ("judge_faithfulness", "faithfulness_offline", "token_f1", "rouge_l", "Recall")
RELEASED_RL_F = "released RL_F (GPT-4o-mini)"
#: Reported beside the candidates, never chosen: the nuggets graded by the evidence check instead of the judge.
LEXICAL = "nugget_recall, lexical grade"
DIMENSIONS = ("completeness", "appropriateness", "faithfulness")
#: The local judge's layouts compared by ``--compare-layouts``, its default first: a tie keeps it.
LAYOUTS = ("shared", "calls")
#: Where the nuggets come from, compared by ``--compare-nuggets`` (``Settings.nugget_source``), in the order they
#: were built, the judge's first (the source before any data), so that a tie keeps the earlier.
NUGGET_SOURCES = (NuggetSource.JUDGE, NuggetSource.SENTENCES, NuggetSource.CLAIMS)
#: How a nugget's grades in the two orders make one, compared by ``--compare-orders``, the product's one order first.
ORDERS = ("one order", "both orders, lower grade", "both orders, mean credit")
#: Nuggets a grades call shows, compared by ``--compare-batches``: the product's (AutoNuggetizer's ten) first; three,
#: the smallest batch that keeps an answer to about four calls (the claims, and ⌈5.2 / 3⌉ = 2 grades calls for MT-RAG
#: dev's 5.2 sentences a reference), fixed before any figure of it.
BATCHES = (NUGGETS_PER_CALL, 3)
#: How a nugget's grade counts, compared by ``--compare-credits``: the grade the judge wrote (the product's; first),
#: or its expected credit under the judge's probability of each grade at the grade's first token (G-Eval's
#: probability-weighted score): P(support) + ½·P(partial), strict P(support), and 0 where the quote is not words of
#: the answer, as the quote check counts such a grade none. Fixed before any figure of it.
CREDITS = ("the grade", "expected credit")


def _rho(x: np.ndarray, y: np.ndarray, clusters: list[str]) -> dict[str, Any]:
    keep = ~(np.isnan(x) | np.isnan(y))
    value = _folds.spearman(x, y)
    low, high = (
        cluster_interval(_folds.spearman, x[keep], y[keep], [c for c, k in zip(clusters, keep, strict=True) if k])
        if not np.isnan(value)
        else (np.nan, np.nan)
    )
    return {"n": int(keep.sum()), "rho": _folds._round(value), "low": _folds._round(low), "high": _folds._round(high)}


@dataclass(frozen=True)
class Run:
    """One ``evaluate`` run: its result, the judge's description (its layout with it) and wall seconds."""

    result: EvalResult
    judge: str
    wall_s: float


def _scores(
    records: list[Any], config: JudgeConfig, source: NuggetSource, expected: dict[Any, Any]
) -> tuple[Run, dict[str, np.ndarray]]:
    """One ``evaluate`` run of the claim-level metrics and the older signals, with the judge of ``config`` and the
    nuggets of ``source``, and every signal's value per answer (the released RL_F with them)."""
    judge = open_judge(config)
    settings = Settings(n_resamples=100, nugget_source=source)
    started = time.perf_counter()
    try:
        result = evaluate(
            records, metrics=[*CLAIM_LEVEL, *OLDER], judge=judge, progress=sys.stderr.isatty(), settings=settings
        )
        lexical = _lexical_recall(records, settings, judge)
    finally:
        judge.close()
    run = Run(result, judge.description, time.perf_counter() - started)
    scores = {m: np.asarray(result.scores[m], dtype=float) for m in (*CLAIM_LEVEL, *OLDER)}
    scores[LEXICAL] = lexical
    scores[RELEASED_RL_F] = np.array([float(expected[(r.id, str(r.model_id))]["rl_f"]) for r in records])
    return run, scores


def _lexical_recall(records: list[Record], settings: Settings, judge: Judge) -> np.ndarray:
    """Per answer, the share of the nuggets the run graded (``item_nuggets``; the judge's read from the cache the
    run filled) whose words the evidence check finds in the answer
    (:func:`~ragmeter.judges.checks.evidence.supports`): nugget recall without the grades call, which tells the
    nuggets apart from the judge's grading of them. NaN where the record has no nugget."""
    run = RunContext(settings, judge=judge)
    values = []
    for record in records:
        found = item_nuggets(record, run)
        language = run.language(record)
        stated = (
            [supports([record.answer], n.text, language=language) for n in found] if isinstance(found, tuple) else []
        )
        values.append(np.mean(stated) if stated else np.nan)
    return np.array(values)


def _order_grades(record: Record, found: tuple[Nugget, ...], run: RunContext) -> list[tuple[str, str]]:
    """Each nugget's grades (after the quote check, as a run counts them) with the nuggets in their order and
    reversed; none where a call failed."""
    forward = _batched_grades(run, record, list(found), NUGGETS_PER_CALL)
    backward = _batched_grades(run, record, list(found[::-1]), NUGGETS_PER_CALL)[::-1] if len(found) > 1 else forward
    return list(zip(forward, backward, strict=True)) if forward and backward else []


def _order_scores(
    records: list[Record], config: JudgeConfig, source: NuggetSource, scores: dict[str, np.ndarray]
) -> dict[str, dict[str, np.ndarray]]:
    """The candidates of each of :data:`ORDERS`: ``scores`` (a run's) for one order; for both orders, each nugget's
    two grades made one — the lower (``none`` < ``partial`` < ``support``), or the mean of their credits (support 1,
    partial ½; strict: the share of the two that are support) — and ``claim_f1`` from the run's ``claim_precision``."""
    judge = open_judge(config)
    try:
        run = RunContext(Settings(nugget_source=source), judge=judge)
        pairs = []
        for record in records:
            found = item_nuggets(record, run)
            pairs.append(_order_grades(record, found, run) if isinstance(found, tuple) else [])
    finally:
        judge.close()

    def credit(rule: str, strict: bool) -> np.ndarray:
        weights = {grade: float(grade == "support") if strict else weight for grade, weight in GRADES.items()}
        combine = min if rule == ORDERS[1] else (lambda a, b: (a + b) / 2)
        return np.array([np.mean([combine(weights[a], weights[b]) for a, b in p]) if p else np.nan for p in pairs])

    out = {ORDERS[0]: {m: scores[m] for m in CANDIDATES}}
    for rule in ORDERS[1:]:
        out[rule] = _candidates(credit(rule, strict=False), credit(rule, strict=True), scores["claim_precision"])
    return out


def _candidates(recall: np.ndarray, strict: np.ndarray, precision: np.ndarray) -> dict[str, np.ndarray]:
    """:data:`CANDIDATES` from per-answer nugget recall (partial ½) and strict recall, with ``claim_f1`` from a run's
    ``claim_precision`` (the product's harmonic mean)."""
    f1 = np.array([harmonic_mean(p, r) for p, r in zip(precision, strict, strict=True)])
    return {"nugget_recall": recall, "nugget_recall_strict": strict, "claim_recall": strict, "claim_f1": f1}


def _batch_scores(
    records: list[Record], config: JudgeConfig, source: NuggetSource, scores: dict[str, np.ndarray]
) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, Any]]:
    """The candidates of each of :data:`BATCHES`: ``scores`` (a run's) for the product's batch; for the smaller one,
    each answer graded on its nuggets that many a call (after the quote check, as a run counts them). With them,
    each batch's grades calls and tokens per answer (a cached call counted at what it cost when made) and the share
    of the grades the smaller batch changes."""
    judge = open_judge(config)
    try:
        run = RunContext(Settings(nugget_source=source), judge=judge)
        found = [item_nuggets(record, run) for record in records]
        counted: dict[int, list[list[str]]] = {}
        spent: dict[str, dict[str, float]] = {}
        for size in BATCHES:
            before = _grades_spent(judge)
            counted[size] = [
                _batched_grades(run, record, list(nuggets), size) if isinstance(nuggets, tuple) else []
                for record, nuggets in zip(records, found, strict=True)
            ]
            calls, tokens = (after - was for after, was in zip(_grades_spent(judge), before, strict=True))
            spent[str(size)] = {
                "calls_per_answer": round(calls / len(records), 2),
                "tokens_per_answer": round(tokens / len(records), 1),
            }
    finally:
        judge.close()
    recall, strict = (
        np.array([formula(g, [True] * len(g)) if g else np.nan for g in counted[BATCHES[1]]])
        for formula in (nugget_recall, nugget_recall_strict)
    )
    pairs = zip(*(counted[size] for size in BATCHES), strict=True)
    differ = [
        a != b
        for shipped, smaller in pairs
        if len(shipped) == len(smaller)
        for a, b in zip(shipped, smaller, strict=True)
    ]
    candidates = {
        str(BATCHES[0]): {m: scores[m] for m in CANDIDATES},
        str(BATCHES[1]): _candidates(recall, strict, scores["claim_precision"]),
    }
    changed = {"grades_compared": len(differ), "grades_changed": round(float(np.mean(differ)), 3) if differ else None}
    return candidates, {"grades": spent, **changed}


def _credit_scores(
    records: list[Record], config: JudgeConfig, source: NuggetSource, scores: dict[str, np.ndarray]
) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, Any]]:
    """The candidates of each of :data:`CREDITS`: ``scores`` (a run's) for the grade; for the expected credit, each
    grades request of the run asked again for its tokens' probabilities (``_grade_probabilities``), read on that
    reply's own grades and quotes. The reply is the run's but where the judge's computation differs between the two
    calls (a near tie of two grades can turn): the grades that differ from the run's verdicts are counted."""
    judge = open_judge(config)
    cache = ProbabilityCache(config.cache.with_name(config.cache.stem + "-grade_probabilities.jsonl"))
    recall, strict, compared, differ = [], [], 0, 0
    try:
        run = RunContext(Settings(nugget_source=source), judge=judge)
        for record in records:
            found = item_nuggets(record, run)
            credits = _expected_credits(record, found, run, cache) if isinstance(found, tuple) else None
            if credits is None:
                recall.append(np.nan)
                strict.append(np.nan)
                continue
            recall.append(np.mean([c for c, _, _ in credits]))
            strict.append(np.mean([s for _, s, _ in credits]))
            compared += len(credits)
            differ += sum(changed for _, _, changed in credits)
    finally:
        judge.close()
    candidates = {
        CREDITS[0]: {m: scores[m] for m in CANDIDATES},
        CREDITS[1]: _candidates(np.array(recall), np.array(strict), scores["claim_precision"]),
    }
    return candidates, {"grades_compared": compared, "grades_that_differ_from_the_run": differ}


def _expected_credits(
    record: Record, nuggets: tuple[Nugget, ...], run: RunContext, cache: ProbabilityCache
) -> list[tuple[float, float, bool]] | None:
    """Each nugget's expected credit and strict credit (see :data:`CREDITS`), and whether the reply's grade or quote
    differs from the run's verdict; ``None`` where the run's call failed."""
    verdicts = grades(run, record, list(nuggets))
    if verdicts is None:
        return None
    replied = [
        pair
        for request, _ in grades_requests(record, list(nuggets))
        for pair in zip(*grade_probabilities(run.judge, request, cache), strict=True)
    ]
    language, credits = run.language(record), []
    for (grade, p), verdict in zip(replied, verdicts, strict=True):
        changed = (grade["grade"], grade["quote"]) != (verdict["grade"], verdict["quote"])
        if quote_found(grade["quote"], record.answer, language=language):
            credits.append((p["support"] + p["partial"] / 2, p["support"], changed))
        else:
            credits.append((0.0, 0.0, changed))
    return credits


def _grades_spent(judge: Judge) -> tuple[int, int]:
    """The grades calls ``judge`` has run and their tokens (a cached call's as when it was made), so far."""
    usage = judge.usage.get("nugget_grades")
    if usage is None:
        return 0, 0
    tokens = usage.prompt_tokens + usage.completion_tokens + usage.cached_prompt_tokens + usage.cached_completion_tokens
    return usage.calls, tokens


def _batched_grades(run: RunContext, record: Record, nuggets: list[Nugget], size: int) -> list[str]:
    """``record``'s answer graded on ``nuggets``, ``size`` a call, after the quote check; none where a call failed."""
    counted = []
    for start in range(0, len(nuggets), size):
        graded = grades(run, record, nuggets[start : start + size])
        if graded is None:
            return []
        counted += [grade for grade, _ in quoted_grades(graded, record.answer, language=run.language(record))]
    return counted


def _report(
    run: Run, scores: dict[str, np.ndarray], records: list[Any], human: dict[str, np.ndarray]
) -> dict[str, Any]:
    """The figures of one run (see the module)."""
    conversations = [str(r.conversation_id) for r in records]
    collections = [_folds.collection_of(r) for r in records]
    common = np.all([~np.isnan(scores[m]) for m in CANDIDATES], axis=0)
    picked = [c for c, k in zip(conversations, common, strict=True) if k]
    signals: dict[str, Any] = {}
    for name, x in scores.items():
        signals[name] = {dim: _rho(x, human[dim], conversations) for dim in DIMENSIONS}
        signals[name]["common_set"] = {dim: _rho(x[common], human[dim][common], picked) for dim in DIMENSIONS}
    paired = {
        f"{new} − {old}": _folds.paired_difference(
            _folds.spearman, scores[new][common], scores[old][common], human["completeness"][common], picked
        )
        for new in CANDIDATES
        for old in (*OLDER, RELEASED_RL_F)
    }
    protocol = {
        dim: _folds.held_out(
            list(CANDIDATES),
            lambda m: scores[m][common],
            human[dim][common],
            [c for c, k in zip(collections, common, strict=True) if k],
            picked,
            _folds.spearman,
        )
        for dim in ("completeness", "appropriateness")
    }
    return {
        "judge": run.judge,
        "records": len(records),
        "common_set": int(common.sum()),
        "collections": {c: collections.count(c) for c in sorted(set(collections))},
        "conversations": len(set(conversations)),
        "wall_s": round(run.wall_s, 1),
        "signals": signals,
        "paired_completeness": paired,
        "protocol": protocol,
        "usage": _usage(run.result, len(records)),
        "undefined": {
            m: {"n": len(v), "reasons": sorted(set(v.values()))[:5]} for m, v in run.result.undefined.items() if v
        },
    }


def _usage(result: EvalResult, answers: int) -> dict[str, Any]:
    """The judge's calls and tokens by prompt, with both per answer."""
    return {
        prompt: {
            **u.to_dict(),
            "calls_per_answer": round(u.calls / answers, 2),
            "tokens_per_answer": round(
                (u.prompt_tokens + u.completion_tokens + u.cached_prompt_tokens + u.cached_completion_tokens) / answers,
                1,
            ),
        }
        for prompt, u in result.judging.usage.items()
    }


def _print(out: dict[str, Any]) -> None:
    print(
        f"{out['judge']}: {out['records']} dev answers, {out['conversations']} conversations, {out['common_set']} "
        f"with every candidate defined; {out['wall_s']:.0f} s"
    )
    print(f"{'signal':<34}{'n':>5}{'ρ completeness [95%]':>26}{'ρ appropriateness':>20}{'common set ρ compl.':>22}")
    for name, row in out["signals"].items():
        c, a, s = row["completeness"], row["appropriateness"], row["common_set"]["completeness"]
        print(
            f"{name:<34}{c['n']:>5}{c['rho']!s:>10} [{c['low']!s:>6},{c['high']!s:>6}]{a['rho']!s:>20}{s['rho']!s:>22}"
        )
    _print_protocol(out["protocol"])


def _print_protocol(protocol: dict[str, Any]) -> None:
    for dim, report in protocol.items():
        cross, loco = report["cross_collection"], report["leave_one_conversation_out"]
        chosen = ", ".join(f"{c}: {fold['chosen']}" for c, fold in cross["folds"].items())
        print(f"held out ({dim}): cross-collection {cross['mean']} ({chosen}); LOCO {loco['value']}")


def _variant_choice(
    scores: dict[str, dict[str, np.ndarray]], records: list[Any], human: dict[str, np.ndarray]
) -> dict[str, Any]:
    """Which variant (a layout, a nugget source) with which claim-level metric a claim-level run should use, under
    the validation protocol: every (variant, candidate) pair, the shipped variant first so that a tie keeps it, on
    the answers where every candidate of every variant is defined."""
    pairs = [f"{variant}/{m}" for variant in scores for m in CANDIDATES]
    common = np.all([~np.isnan(scores[p.split("/")[0]][p.split("/")[1]]) for p in pairs], axis=0)
    conversations = [str(r.conversation_id) for r, k in zip(records, common, strict=True) if k]
    collections = [_folds.collection_of(r) for r, k in zip(records, common, strict=True) if k]
    return {
        "common_set": int(common.sum()),
        "protocol": {
            dim: _folds.held_out(
                pairs,
                lambda p: scores[p.split("/")[0]][p.split("/")[1]][common],
                human[dim][common],
                collections,
                conversations,
                _folds.spearman,
            )
            for dim in ("completeness", "appropriateness")
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, help="the first N answers of the shuffled dev split (all: 156)")
    compared = parser.add_mutually_exclusive_group()
    compared.add_argument(
        "--compare-layouts",
        action="store_true",
        help="score under the shared and the calls layout and choose between them under the validation protocol",
    )
    compared.add_argument(
        "--compare-nuggets",
        action="store_true",
        help="score on the judge's nuggets, the reference's sentences and its claims and choose under the validation "
        "protocol",
    )
    compared.add_argument(
        "--compare-orders",
        action="store_true",
        help="grade the nuggets in one order and in both and choose under the validation protocol",
    )
    compared.add_argument(
        "--compare-batches",
        action="store_true",
        help=f"grade the nuggets {BATCHES[0]} and {BATCHES[1]} a call and choose under the validation protocol",
    )
    compared.add_argument(
        "--compare-credits",
        action="store_true",
        help="count each nugget by the grade the judge wrote and by its expected credit under the judge's token "
        "probabilities, and choose under the validation protocol",
    )
    parser.add_argument(
        "--nugget-source",
        choices=choice_values(NuggetSource),
        default=Settings.nugget_source,
        help="where the nuggets come from (ragmeter run's option; --compare-nuggets scores each)",
    )
    add_judge_arguments(parser)
    parser.set_defaults(cache=Path.home() / ".cache" / "ragmeter" / "claim_level.sqlite")
    args = parser.parse_args()

    records = dev_records(args.limit)
    ratings, expected = mtrag_rows("human_eval_ratings_dev.jsonl"), mtrag_rows("human_eval_expected.jsonl")
    human = {dim: np.array([human_means(ratings[(r.id, str(r.model_id))][dim]) for r in records]) for dim in DIMENSIONS}
    config = judge_config(args)
    source = NuggetSource(args.nugget_source)
    base = f"claim_level-mtrag-dev-{args.judge}"
    other_source = "" if source is Settings.nugget_source else f"-{source}_nuggets"
    if args.compare_layouts:
        kind, variants = "layouts", {layout: (replace(config, layout=layout), source) for layout in LAYOUTS}
    elif args.compare_nuggets:
        kind, variants = "nuggets", {str(each): (config, each) for each in NUGGET_SOURCES}
    elif args.compare_orders or args.compare_batches or args.compare_credits:
        run, run_scores = _scores(records, config, source, expected)
        if args.compare_orders:
            kind, what, regraded, extra = "orders", "order", _order_scores(records, config, source, run_scores), {}
        elif args.compare_credits:
            kind, what, (regraded, extra) = "credits", "credit", _credit_scores(records, config, source, run_scores)
        else:
            kind, what, (regraded, extra) = "batches", "batch", _batch_scores(records, config, source, run_scores)
        conversations = [str(r.conversation_id) for r in records]
        shipped = next(iter(regraded))
        out = {
            shipped: _report(run, run_scores, records, human),
            kind: {
                rule: {m: {dim: _rho(x, human[dim], conversations) for dim in DIMENSIONS} for m, x in by_metric.items()}
                for rule, by_metric in regraded.items()
            },
            **extra,
            **_variant_choice(regraded, records, human),
        }
        _print(out[shipped])
        print(f"the {what} and metric chosen:")
        _print_protocol(out["protocol"])
        print(f"written: {write_result(f'{base}-{kind}{other_source}', out)}")
        return
    else:
        out = _report(*_scores(records, config, source, expected), records, human)
        _print(out)
        print(f"written: {write_result(base + other_source, out)}")
        return
    runs, scores = {}, {}
    for name, (variant_config, variant_source) in variants.items():
        runs[name], scores[name] = _scores(records, variant_config, variant_source, expected)
    out = {
        kind: {name: _report(runs[name], scores[name], records, human) for name in variants},
        **_variant_choice(scores, records, human),
    }
    for report in out[kind].values():
        _print(report)
    print(f"the {kind[:-1]} and metric chosen:")
    _print_protocol(out["protocol"])
    name = f"{base}-{kind}" + (other_source if kind == "layouts" else "")
    print(f"written: {write_result(name, out)}")


if __name__ == "__main__":
    main()
