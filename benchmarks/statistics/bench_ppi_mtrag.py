"""Prediction-powered estimates on real ratings (issue 32): MT-RAG's dev split, 156 answers (GPT-4o and
Llama-3.1-405B, 78 tasks each, 10 conversations) with human faithfulness (1–4, each answer's annotators' mean).

For k = 20, 40 and 80 labels, ``--draws`` times (1,000; seed 0): keep the human ratings of k answers drawn at
random, estimate the mean human faithfulness of all 156 with ``ragmeter.stats.ppi.ppi_mean`` (clustered by
conversation, as ``ragmeter estimate`` does) from a signal, and check whether the interval covers the mean of
all 156 ratings; the same for the labelled-only interval, and the widths. The signals: MT-RAG's released
judged ``rl_f`` (RAGAS-style faithfulness by its GPT-4o-mini judge, IDK-conditioned) and ``rb_llm`` (its
RADBench judge), read from ``human_eval_expected.jsonl`` — verdicts made without these ratings — and ragmeter's
``faithfulness_offline``, computed here (its one weight was chosen on this split's ratings, so its figures are
in sample: a score chosen with the labels is not the independent predictor PPI assumes).

The paired case: the difference Llama − GPT-4o in mean human faithfulness over the 78 tasks both answered,
from the differences of each signal, with k = 20 and 40 labelled tasks (both answers rated).

    python -m benchmarks.statistics.bench_ppi_mtrag [--draws 1000]

Results: ``benchmarks/results/ppi_mtrag.json``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from benchmarks._common import dev_records, human_means, mtrag_rows, write_result
from ragmeter import Settings, evaluate
from ragmeter.stats.ppi import effective_labels, labelled_mean, ppi_mean

LABELS = (20, 40, 80)
PAIRED_LABELS = (20, 40)
RELEASED = ("rl_f", "rb_llm")
MODELS = ("gpt-4o", "llama-3.1-405b-instruct")


def draws(y: np.ndarray, f: np.ndarray, conversations: np.ndarray, k: int, n_draws: int, seed: int) -> dict:
    """Coverage of the mean of all ``y`` and widths, over ``n_draws`` random labelled subsets of size ``k``."""
    rng = np.random.default_rng(seed)
    target = float(y.mean())
    covered = covered_alone = failed = 0
    widths, widths_alone, worth = [], [], []
    for _ in range(n_draws):
        labelled = np.zeros(len(y), bool)
        labelled[rng.choice(len(y), k, replace=False)] = True
        if len(set(conversations[labelled])) < 2:
            failed += 1
            continue
        tuned = ppi_mean(
            y[labelled],
            f[labelled],
            f[~labelled],
            clusters=conversations[labelled],
            unlabelled_clusters=conversations[~labelled],
        )
        alone = labelled_mean(y[labelled], clusters=conversations[labelled])
        covered += tuned.low <= target <= tuned.high
        covered_alone += alone.low <= target <= alone.high
        widths.append(tuned.width)
        widths_alone.append(alone.width)
        worth.append(effective_labels(tuned, alone))
    done = n_draws - failed
    return {
        "k": k,
        "draws": n_draws,
        "failed": failed,
        "coverage": covered / done,
        "labelled_only_coverage": covered_alone / done,
        "mean_width": float(np.mean(widths)),
        "labelled_only_mean_width": float(np.mean(widths_alone)),
        "width_saving": 1 - float(np.mean(widths)) / float(np.mean(widths_alone)),
        "median_effective_labels": float(np.median(worth)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    records = dev_records(None)
    offline = evaluate(records, metrics=["faithfulness_offline"], settings=Settings(n_resamples=200))
    ours = {(row["id"], row["model_id"]): row["scores"].get("faithfulness_offline") for row in offline.items()}
    ratings, released = mtrag_rows("human_eval_ratings_dev.jsonl"), mtrag_rows("human_eval_expected.jsonl")
    keys = sorted((r.id, r.model_id) for r in records)
    human = np.array([human_means(ratings[key]["faithfulness"]) for key in keys])
    conversations = np.array([key[0].split("<::>")[0] for key in keys])
    signals = {name: np.array([float(released[key][name]) for key in keys]) for name in RELEASED}
    signals["faithfulness_offline (in sample)"] = np.array([math.nan if ours[k] is None else ours[k] for k in keys])

    tasks = sorted({key[0] for key in keys})
    index = {key: i for i, key in enumerate(keys)}
    pairs = [
        (index[(t, MODELS[0])], index[(t, MODELS[1])])
        for t in tasks
        if (t, MODELS[0]) in index and (t, MODELS[1]) in index
    ]
    first, second = (np.array(side) for side in zip(*pairs, strict=True))
    rows = []
    print(
        f"{len(keys)} answers, {len(set(conversations))} conversations; mean human faithfulness "
        f"{human.mean():.3f}; {len(pairs)} tasks answered by both"
    )
    print(
        f"{'estimate':<12}{'signal':<36}{'k':>4}{'PPI++ cover':>13}{'alone':>8}{'width':>8}{'alone':>8}"
        f"{'saving':>8}{'eff. n':>8}"
    )
    for name, f in signals.items():
        keep = ~np.isnan(f)
        cases = [("mean", human[keep], f[keep], conversations[keep], LABELS)]
        both = keep[first] & keep[second]
        cases.append(
            (
                "difference",
                human[second][both] - human[first][both],
                f[second][both] - f[first][both],
                conversations[first][both],
                PAIRED_LABELS,
            )
        )
        for of, y, scores, clusters, ks in cases:
            for k in ks:
                row = {
                    "estimate": of,
                    "signal": name,
                    "items": len(y),
                    "undefined": int((~keep).sum()),
                    "target": float(y.mean()),
                    **draws(y, scores, clusters, k, args.draws, args.seed + k),
                }
                rows.append(row)
                print(
                    f"{of:<12}{name:<36}{k:>4}{row['coverage']:>13.3f}{row['labelled_only_coverage']:>8.3f}"
                    f"{row['mean_width']:>8.3f}{row['labelled_only_mean_width']:>8.3f}"
                    f"{row['width_saving']:>8.1%}{row['median_effective_labels']:>8.0f}"
                )
    out = {
        "answers": len(keys),
        "conversations": len(set(conversations)),
        "paired_tasks": len(pairs),
        "mean_human_faithfulness": float(human.mean()),
        "difference": f"{MODELS[1]} − {MODELS[0]}",
        "draws": args.draws,
        "seed": args.seed,
        "rows": rows,
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(f"{out['seconds']} s; written: {write_result('ppi_mtrag', out)}")


if __name__ == "__main__":
    main()
