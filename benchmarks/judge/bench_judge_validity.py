"""How far the judged metrics agree with human ratings, and with MT-RAG's released judge values.

Records: the answers of MT-RAG's *dev* split by the non-reference responders (GPT-4o, Llama-3.1-405B) in
``human_eval_tasks.jsonl``, in a fixed shuffled order (seed 0; ``--limit N`` takes the first N, so a short run
still spans many conversations). Human ratings: ``human_eval_ratings_dev.jsonl``, each record's faithfulness
and completeness averaged over its annotators. Released values: ``human_eval_expected.jsonl`` (MT-RAG's
GPT-4o-mini RL_F and RB_llm, IDK-conditioned, its RB_agg and DeBERTa BertKPrec).

For every metric it prints Spearman's ρ with mean human faithfulness and completeness, with a 95 % bootstrap
interval that resamples conversations (records of one conversation together), the share of records at the
metric's ceiling beside the share the humans put at theirs, and the IDK judge's accuracy and Cohen's κ against
the released IDK verdicts (``conditional_idk`` turned back into the verdict: the conformance test says how).

    python -m benchmarks.judge.bench_judge_validity --judge local --limit 40
    python -m benchmarks.judge.bench_judge_validity --judge openai --judge-model gpt-4o-mini --limit 40

Verdicts are cached (``--cache``, default ``~/.cache/ragmeter/validity.sqlite``): a re-run, or a variant that
reads the same verdicts (``--no-evidence-check``), makes no call. Results go to
``benchmarks/results/judge_validity-<judge>[-<tag>].json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from benchmarks._common import (
    RELEASED,
    add_judge_arguments,
    correlations,
    dev_records,
    human_means,
    judge_config,
    mtrag_rows,
    released_idk,
    write_result,
)
from ragmeter import Settings, evaluate
from ragmeter.judges import open_judge
from ragmeter.stats.inter_annotator import cohen_kappa

JUDGED = [
    "judge_faithfulness",
    "judge_faithfulness_idk",
    "judge_precision",
    "judge_recall",
    "RL_F",
    "RL_F_idk",
    "RB_llm",
    "RB_llm_idk",
    "idk_judge",
]
OFFLINE = ["BertKPrec", "Extractiveness_RougeL", "RB_agg", "RB_agg_idk"]


def cross_validated_combination(features: dict[str, np.ndarray], target: np.ndarray, clusters: list[str]) -> np.ndarray:
    """Leave-one-conversation-out predictions of ``target`` by least squares on ``features`` (plus an
    intercept): each record's value comes from weights fitted without its conversation."""
    x = np.column_stack([np.ones(len(target)), *features.values()])
    predicted = np.empty(len(target))
    for cluster in set(clusters):
        held = np.array([c == cluster for c in clusters])
        weights, *_ = np.linalg.lstsq(x[~held], target[~held], rcond=None)
        predicted[held] = x[held] @ weights
    return predicted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_judge_arguments(parser)
    parser.add_argument("--limit", type=int, help="the first N records of the shuffled dev split")
    parser.add_argument("--metrics", default=",".join(JUDGED), help="judged metrics to measure")
    parser.add_argument("--no-evidence-check", action="store_true", help="read the judge's verdicts unchecked")
    parser.add_argument("--tag", default="", help="suffix of the results file")
    args = parser.parse_args()

    records = dev_records(args.limit)
    ratings, expected = mtrag_rows("human_eval_ratings_dev.jsonl"), mtrag_rows("human_eval_expected.jsonl")
    keys = [(r.id, str(r.model_id)) for r in records]
    human = {dim: np.array([human_means(ratings[k][dim]) for k in keys]) for dim in ("faithfulness", "completeness")}
    clusters = [str(r.conversation_id) for r in records]
    settings = Settings(check_evidence=not args.no_evidence_check, n_resamples=100)

    judge = open_judge(judge_config(args))
    started = time.perf_counter()
    try:
        judged = evaluate(
            records, metrics=args.metrics.split(","), settings=settings, judge=judge, progress=sys.stderr.isatty()
        )
    finally:
        judge.close()
    wall = time.perf_counter() - started
    offline = evaluate(records, metrics=OFFLINE, settings=settings)

    rows = []
    human_ceiling = {dim: round(float(np.mean(values >= 4)), 3) for dim, values in human.items()}
    for result in (judged, offline):
        for name in result.metrics:
            scores = result.scores[name]
            values = {i: float(v) for i, v in enumerate(scores) if not np.isnan(v)}
            rows.append(correlations(name, values, human, clusters, 1.0))
    combined = ("judge_faithfulness", "BertKPrec", "Extractiveness_RougeL")
    scores = {**judged.scores, **offline.scores}
    if all(name in scores for name in combined):
        complete = [i for i in range(len(records)) if not any(np.isnan(scores[n][i]) for n in combined)]
        features = {n: np.asarray(scores[n])[complete] for n in combined}
        predicted = cross_validated_combination(
            features, human["faithfulness"][complete], [clusters[i] for i in complete]
        )
        rows.append(
            correlations(
                "combination (CV by conversation): judge_faithfulness, BertKPrec, Extr.",
                dict(zip(complete, predicted.tolist(), strict=True)),
                human,
                clusters,
                np.inf,
            )
        )
    for label, field in RELEASED.items():
        values = {i: float(expected[k][field]) for i, k in enumerate(keys) if expected[k].get(field) is not None}
        rows.append(correlations(label, values, human, clusters, 1.0))

    versus_released = {}
    for ours, field in (("RL_F_idk", "rl_f"), ("RB_llm_idk", "rb_llm"), ("RB_agg_idk", "rb_agg")):
        if ours in scores:
            pairs = [
                (float(v), float(expected[k][field]))
                for v, k in zip(scores[ours], keys, strict=True)
                if not np.isnan(v) and expected[k].get(field) is not None
            ]
            x, y = np.array([a for a, _ in pairs]), np.array([b for _, b in pairs])
            rho = float(spearmanr(x, y).statistic) if len(pairs) > 2 and np.ptp(x) > 0 else float("nan")
            versus_released[f"{ours} vs released {field}"] = {"n": len(pairs), "rho": round(rho, 3)}

    idk: dict[str, Any] = {}
    if "idk_judge" in judged.metrics:
        pairs = [
            (
                int(v == 1.0),
                released_idk(str(r.answerability.value if r.answerability else ""), expected[k]["conditional_idk"]),
            )
            for v, r, k in zip(judged.scores["idk_judge"], records, keys, strict=True)
            if not np.isnan(v)
        ]
        ours, theirs = [p[0] for p in pairs], [p[1] for p in pairs]
        idk = {
            "n": len(pairs),
            "accuracy": round(float(np.mean([a == b for a, b in pairs])), 3),
            "kappa": round(cohen_kappa(ours, theirs), 3),
            "released_idk": int(sum(theirs)),
            "judge_idk": sum(ours),
        }

    usage = {p: u.to_dict() for p, u in judged.judging.usage.items()} if judged.judging else {}
    out = {
        "judge": judge.identity,
        "records": len(records),
        "evidence_check": settings.check_evidence,
        "wall_s": round(wall, 1),
        "human_at_ceiling": human_ceiling,
        "rows": rows,
        "idk": idk,
        "versus_released": versus_released,
        "usage": usage,
        "undefined": {m: len(v) for m, v in judged.undefined.items() if v},
    }
    print(
        f"{len(records)} dev records, judge {judge.identity}, evidence check {settings.check_evidence}, "
        f"{wall:.0f} s; humans at their ceiling (4): {human_ceiling}"
    )
    print(f"{'metric':<48}{'n':>4}{'ρ faithfulness [95%]':>26}{'ρ completeness [95%]':>26}{'at ceiling':>12}")
    for row in rows:
        cells = "".join(
            f"{row[d]['rho']:>10.2f} [{row[d]['low']:5.2f},{row[d]['high']:5.2f}]"
            for d in ("faithfulness", "completeness")
        )
        print(f"{row['metric']:<48}{row['n']:>4}{cells}{row['at_ceiling']:>12.2f}")
    for pair, figures in versus_released.items():
        print(f"Spearman {pair}: {figures['rho']} (n={figures['n']})")
    if idk:
        print(f"IDK judge against the released verdicts: accuracy {idk['accuracy']}, κ {idk['kappa']} (n={idk['n']})")
    name = f"judge_validity-{args.judge}" + (f"-{args.tag}" if args.tag else "")
    print(f"written: {write_result(name, out)}")


if __name__ == "__main__":
    main()
