"""``faithfulness_offline``: where its weight comes from, and how far it agrees with human faithfulness.

On MT-RAG's dev split (the 156 answers of the non-reference responders, ratings averaged over annotators, as
``bench_judge_validity``), with the packaged MiniLM:

1. BertKPrec and Extractiveness_RougeL per record, through the library;
2. the weight of BertKPrec in the blend chosen on a grid (steps of 0.05) for the highest Spearman ρ with mean
   human faithfulness, on all records, and again with one conversation held out at a time (leave one
   conversation out: each held-out record's value comes from the weight chosen without its conversation);
3. the registered ``faithfulness_offline`` measured: ρ with faithfulness and completeness, with the
   conversation-bootstrap interval, beside its parts and MT-RAG's released metrics on the same records;
4. least squares on the human scale, for comparison with the rank-chosen weight.

It says whether the frozen ``WEIGHT_BERT`` is still the weight the data choose. Runs in about a minute on two
cores; results: ``benchmarks/results/faithfulness_offline.json``.

    python benchmarks/bench_faithfulness_offline.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from ragmeter import evaluate
from ragmeter.metrics.citation import abstained
from ragmeter.metrics.faithfulness_offline import VERSION, WEIGHT_BERT

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_judge_validity import (  # noqa: E402
    HERE,
    RELEASED,
    _jsonl,
    correlations,
    cross_validated_combination,
    dev_records,
    human_means,
    spearman_ci,
)

GRID = np.round(np.arange(0.0, 1.0001, 0.05), 2)
PARTS = ("BertKPrec", "Extractiveness_RougeL")


def main() -> None:
    records = dev_records(None)
    ratings, expected = _jsonl("human_eval_ratings_dev.jsonl"), _jsonl("human_eval_expected.jsonl")
    keys = [(r.id, str(r.model_id)) for r in records]
    human = {dim: np.array([human_means(ratings[k][dim]) for k in keys]) for dim in ("faithfulness", "completeness")}
    clusters = [str(r.conversation_id) for r in records]
    started = time.perf_counter()
    result = evaluate(records, metrics=["faithfulness_offline", *PARTS])
    wall = time.perf_counter() - started
    ours = np.asarray(result.scores["faithfulness_offline"], dtype=float)
    bert, extractive = (np.asarray(result.scores[name], dtype=float) for name in PARTS)
    # the records the blend scores: passages, and an answer that does not decline (the rest follow rules)
    grounded = np.array([bool(r.contexts) and not abstained(r.answer, action=r.action) for r in records])

    def blended(weight: float) -> np.ndarray:
        return np.where(grounded, weight * np.nan_to_num(bert) + (1 - weight) * np.nan_to_num(extractive), ours)

    faithfulness = human["faithfulness"]
    chosen = float(max(GRID, key=lambda w: spearmanr(blended(w), faithfulness).statistic))
    held_out, per_fold = np.empty(len(records)), {}
    conversations = np.array(clusters)
    for conversation in sorted(set(clusters)):
        held = conversations == conversation
        weight = float(max(GRID, key=lambda w: spearmanr(blended(w)[~held], faithfulness[~held]).statistic))
        per_fold[conversation] = weight
        held_out[held] = blended(weight)[held]
    rho, low, high = spearman_ci(held_out, faithfulness, clusters)

    least_squares = cross_validated_combination({"BertKPrec": bert[grounded], "Extr": extractive[grounded]},
                                                (faithfulness[grounded] - 1) / 3,
                                                [c for c, g in zip(clusters, grounded, strict=True) if g])
    fitted = ours.copy()
    fitted[grounded] = np.clip(least_squares, 0, 1)

    rows = [correlations("faithfulness_offline (frozen weight)", dict(enumerate(ours.tolist())), human, clusters,
                         1.0)]
    for name, values in zip(PARTS, (bert, extractive), strict=True):
        conditioned = np.where(grounded, values, ours)  # the same no-passage and refusal rules as the blend
        rows.append(correlations(f"{name} (same rules)", dict(enumerate(conditioned.tolist())), human, clusters,
                                 1.0))
    rows.append(correlations("least squares, held out by conversation", dict(enumerate(fitted.tolist())), human,
                             clusters, 1.0))
    for label, field in RELEASED.items():
        values = {i: float(expected[k][field]) for i, k in enumerate(keys) if expected[k].get(field) is not None}
        rows.append(correlations(label, values, human, clusters, 1.0))

    no_passage = np.array([not r.contexts for r in records])
    groups = {"no passage, declines": no_passage & (ours == 1.0), "no passage, answers": no_passage & (ours == 0.0)}
    out: dict[str, Any] = {
        "records": len(records), "conversations": len(set(clusters)), "wall_s": round(wall, 1),
        "frozen": {"version": VERSION, "weight_bert": WEIGHT_BERT},
        "chosen_on_all": chosen, "still_chosen": chosen == WEIGHT_BERT,
        "held_out": {"weights": per_fold, "rho": round(rho, 3), "low": round(low, 3), "high": round(high, 3)},
        "rows": rows,
        "no_passage_human_faithfulness": {name: {"n": int(mask.sum()),
                                                 "mean": round(float(faithfulness[mask].mean()), 2)}
                                          for name, mask in groups.items() if mask.any()},
    }
    print(f"{len(records)} dev records, {out['conversations']} conversations, {wall:.0f} s")
    print(f"weight of BertKPrec chosen on all records: {chosen} (frozen: {WEIGHT_BERT}, {VERSION})")
    print(f"chosen with one conversation held out: {sorted(per_fold.values())}; held-out ρ {rho:.3f} "
          f"[{low:.2f}, {high:.2f}]")
    for row in rows:
        f, c = row["faithfulness"], row["completeness"]
        print(f"{row['metric']:<48}{row['n']:>4}  ρ faithfulness {f['rho']:6.3f} [{f['low']:.2f}, {f['high']:.2f}]"
              f"  ρ completeness {c['rho']:6.3f}")
    for name, figures in out["no_passage_human_faithfulness"].items():
        print(f"{name}: {figures['n']} records, mean human faithfulness {figures['mean']}")
    path = HERE / "results" / "faithfulness_offline.json"
    path.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"written: {path}")


if __name__ == "__main__":
    main()
