"""Do claim-level scores follow people's completeness? Issue 47's agreement figures on MT-RAG's dev split.

On the first N answers of MT-RAG's dev split (``--limit``; the shuffled order of ``bench_judge_validity.py``, seed
0), one ``evaluate`` run with the judge computes the claim-level metrics (``ragmeter.metrics.claim_level``) beside
the signals ragmeter had before them, on the same records and verdicts: ``judge_faithfulness`` (the same claims
call), ``faithfulness_offline``, token F1, ROUGE-L and MT-RAG's ``Recall``, and the released GPT-4o-mini RL_F
(``human_eval_expected.jsonl``). Reported, for each signal:

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

Verdicts are cached (``--cache``): an interrupted run goes on where it stopped, and a finished one is read again
without a call.

    python -m benchmarks.judge.bench_claim_level --limit 156 [--judge openai --judge-model M --judge-base-url URL]

Result: ``benchmarks/results/claim_level-mtrag-dev-<judge kind>.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
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
from ragmeter import Settings, evaluate
from ragmeter.judges import open_judge

#: The claim-level candidates for the completeness signal, the setting before any data first.
CANDIDATES = ("nugget_recall", "nugget_recall_strict", "claim_recall", "claim_f1")
CLAIM_LEVEL = (*CANDIDATES, "nugget_recall_vital", "nugget_recall_vital_strict", "claim_precision")
#: What ragmeter had before the claim-level metrics, computed in the same run.
OLDER = ("judge_faithfulness", "faithfulness_offline", "token_f1", "rouge_l", "Recall")
RELEASED_RL_F = "released RL_F (GPT-4o-mini)"
DIMENSIONS = ("completeness", "appropriateness", "faithfulness")


def _rho(x: np.ndarray, y: np.ndarray, clusters: list[str]) -> dict[str, Any]:
    keep = ~(np.isnan(x) | np.isnan(y))
    value = _folds.spearman(x, y)
    low, high = (
        cluster_interval(_folds.spearman, x[keep], y[keep], [c for c, k in zip(clusters, keep, strict=True) if k])
        if not np.isnan(value)
        else (np.nan, np.nan)
    )
    return {"n": int(keep.sum()), "rho": _folds._round(value), "low": _folds._round(low), "high": _folds._round(high)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, help="the first N answers of the shuffled dev split (all: 156)")
    add_judge_arguments(parser)
    parser.set_defaults(cache=Path.home() / ".cache" / "ragmeter" / "claim_level.sqlite")
    args = parser.parse_args()

    records = dev_records(args.limit)
    ratings, expected = mtrag_rows("human_eval_ratings_dev.jsonl"), mtrag_rows("human_eval_expected.jsonl")
    keys = [(r.id, str(r.model_id)) for r in records]
    human = {dim: np.array([human_means(ratings[k][dim]) for k in keys]) for dim in DIMENSIONS}
    conversations = [str(r.conversation_id) for r in records]
    collections = [_folds.collection_of(r) for r in records]

    judge = open_judge(judge_config(args))
    started = time.perf_counter()
    try:
        result = evaluate(
            records,
            metrics=[*CLAIM_LEVEL, *OLDER],
            judge=judge,
            progress=sys.stderr.isatty(),
            settings=Settings(n_resamples=100),
        )
    finally:
        judge.close()
    wall = time.perf_counter() - started
    scores = {m: np.asarray(result.scores[m], dtype=float) for m in (*CLAIM_LEVEL, *OLDER)}
    scores[RELEASED_RL_F] = np.array([float(expected[k]["rl_f"]) for k in keys])

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
    answers = len(records)
    usage = {
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
    out = {
        "judge": judge.description,
        "records": answers,
        "common_set": int(common.sum()),
        "collections": {c: collections.count(c) for c in sorted(set(collections))},
        "conversations": len(set(conversations)),
        "wall_s": round(wall, 1),
        "signals": signals,
        "paired_completeness": paired,
        "protocol": protocol,
        "usage": usage,
        "undefined": {
            m: {"n": len(v), "reasons": sorted(set(v.values()))[:5]} for m, v in result.undefined.items() if v
        },
    }

    print(
        f"{answers} dev answers, {len(set(conversations))} conversations, {int(common.sum())} with every "
        f"candidate defined; {wall:.0f} s"
    )
    print(f"{'signal':<34}{'n':>5}{'ρ completeness [95%]':>26}{'ρ appropriateness':>20}{'common set ρ compl.':>22}")
    for name, row in signals.items():
        c, a, s = row["completeness"], row["appropriateness"], row["common_set"]["completeness"]
        print(
            f"{name:<34}{c['n']:>5}{c['rho']!s:>10} [{c['low']!s:>6},{c['high']!s:>6}]{a['rho']!s:>20}{s['rho']!s:>22}"
        )
    for dim, report in protocol.items():
        cross, loco = report["cross_collection"], report["leave_one_conversation_out"]
        chosen = ", ".join(f"{c}: {fold['chosen']}" for c, fold in cross["folds"].items())
        print(f"held out ({dim}): cross-collection {cross['mean']} ({chosen}); LOCO {loco['value']}")
    print(f"written: {write_result(f'claim_level-mtrag-dev-{args.judge}', out)}")


if __name__ == "__main__":
    main()
