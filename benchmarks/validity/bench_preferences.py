"""How far reference-based metrics follow pairwise human preferences (issue 27, part 4).

Reads any pairwise-preference file (format and reader: :mod:`ragmeter.human.preferences`), scores both responses of
every pair with ``ragmeter.evaluate``, and for each metric correlates metric(A) − metric(B) with the humans' preference
(+1: A better), as RAGChecker's meta-evaluation does: Pearson and Spearman, each with a 95 % percentile interval from
2,000 bootstrap resamples of conversations (pairs of one conversation together; seed 0), n pairs, and the pairs left out
because the metric is undefined on a side.

Without a file it first builds the MT-RAG set, ``results/preferences-mtrag-dev.jsonl``, from MT-RAG's dev split
(``shared/data/mtrag``, Apache-2.0): for each of the 78 dev tasks, response A = GPT-4o's answer, response B =
Llama-3.1-405B-Instruct's (the ``reference`` responder is left out: its answer is the reference); each
annotator who rated both answers gives per dimension (r_A − r_B) / 3 of their 1–4 ratings (aspects
``faithfulness``, ``appropriateness``, ``completeness``, ``naturalness``), ``win_rate`` (w_A − w_B) / 100 of
their win-rates, and as ``preferences`` the mean of the four dimensions' values. A task with no annotator in
common is left out.

    python -m benchmarks.validity.bench_preferences --judge local     # builds the MT-RAG set, then measures it
    python -m benchmarks.validity.bench_preferences --no-judge --quick
    python -m benchmarks.validity.bench_preferences FILE.jsonl --no-judge

Results go to ``results/preferences-<file stem>[-no-judge|-<layout>][-<judged>][-quick].json`` (``-<layout>``
where ``--judge-layout`` names the judge's layout, ``-<judged>`` where ``--judged`` names other judged metrics than
``judge_correctness``, e.g. ``--judged claim_level``); judge verdicts are cached (``--cache``, default
``~/.cache/ragmeter/preferences.sqlite``; the verdicts of ``bench_claim_level.py``, made on the same MT-RAG dev
answers, serve this set from its cache, ``--cache ~/.cache/ragmeter/claim_level.sqlite``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import rankdata

import ragmeter
from benchmarks._common import add_judge_arguments, cluster_interval, judge_config, write_result
from benchmarks._mtrag_data import DATA_DIR, HUMAN_EVAL_TASKS
from ragmeter import Settings, evaluate, read_records
from ragmeter.human.preferences import PreferencePair, read_preferences
from ragmeter.io.native import record_to_dict
from ragmeter.judges import open_judge

HERE = Path(__file__).resolve().parents[1]  # benchmarks/
RATINGS = DATA_DIR / "human_eval_ratings_dev.jsonl"
MTRAG_FILE = HERE / "results" / "preferences-mtrag-dev.jsonl"
OFFLINE = ["token_f1", "exact_match", "rouge_l", "RougeL_stemFalse", "Recall", "BertscoreR", "RB_agg", "RB_agg_idk"]
JUDGED = ["judge_correctness"]
DIMENSIONS = ("faithfulness", "appropriateness", "completeness", "naturalness")
RESPONDERS = ("gpt-4o", "llama-3.1-405b-instruct")
N_BOOT = 2000
SEED = 0
QUICK_PAIRS = 6


def build_mtrag_dev(path: Path = MTRAG_FILE) -> dict[str, Any]:
    """Write MT-RAG's dev split as preference pairs to ``path`` (see the module's docstring); return counts and
    how the paired preference compares with the difference of all annotators' mean ratings."""
    answers = {
        (r.id, r.model_id): r
        for r in read_records(HUMAN_EVAL_TASKS, format="mtrag")
        if r.metadata.get("split") == "dev"
    }
    ratings = {(row["task_id"], row["model_id"]): row for row in map(json.loads, RATINGS.open(encoding="utf-8"))}
    tasks = list(dict.fromkeys(task for task, model in answers if model == RESPONDERS[0]))
    lines, skipped, common_counts, unpaired = [], [], [], []
    for task in tasks:
        rated = [ratings[(task, model)] for model in RESPONDERS]
        common = [
            a
            for a in rated[0]["faithfulness"]
            if all(a in row[key] for row in rated for key in (*DIMENSIONS, "win-rate"))
        ]
        if not common:
            skipped.append(task)
            continue
        aspects = {
            dim: {a: round((int(rated[0][dim][a]) - int(rated[1][dim][a])) / 3, 4) for a in common}
            for dim in DIMENSIONS
        }
        aspects["win_rate"] = {a: round((rated[0]["win-rate"][a] - rated[1]["win-rate"][a]) / 100, 4) for a in common}
        preferences = {
            a: round(sum(int(rated[0][d][a]) - int(rated[1][d][a]) for d in DIMENSIONS) / 12, 4) for a in common
        }
        unpaired.append(
            sum(
                np.mean([int(v) for v in rated[0][d].values()]) - np.mean([int(v) for v in rated[1][d].values()])
                for d in DIMENSIONS
            )
            / 12
        )
        common_counts.append(len(common))
        a, b = (record_to_dict(answers[(task, model)]) for model in RESPONDERS)
        metadata = {
            k: a["metadata"][k] for k in ("turn", "collection", "question_type", "multi_turn") if k in a["metadata"]
        }
        lines.append(
            {
                "id": task,
                "conversation_id": a["metadata"]["conversation_id"],
                "question": a["question"],
                **{k: a[k] for k in ("history", "contexts", "references", "answerability") if k in a},
                "response_a": a["answer"],
                "response_b": b["answer"],
                "model_a": RESPONDERS[0],
                "model_b": RESPONDERS[1],
                "preferences": preferences,
                "aspects": aspects,
                "metadata": {**metadata, "source": "MT-RAG human_eval dev split (Apache-2.0)"},
            }
        )
    with path.open("w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    paired = [float(np.mean(list(line["preferences"].values()))) for line in lines]
    return {
        "file": str(path.relative_to(HERE.parent)),
        "pairs": len(lines),
        "tasks": len(tasks),
        "skipped_no_common_annotator": skipped,
        "common_annotators": {str(k): common_counts.count(k) for k in sorted(set(common_counts))},
        "paired_vs_all_annotators": {
            "pearson": round(_pearson(np.array(paired), np.array(unpaired)), 3),
            "spearman": round(_spearman(np.array(paired), np.array(unpaired)), 3),
            "same_sign": round(float(np.mean(np.sign(paired) == np.sign(unpaired))), 3),
        },
    }


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    return _pearson(rankdata(x), rankdata(y))


def correlation_ci(
    x: np.ndarray, y: np.ndarray, clusters: list[str], *, n_boot: int = N_BOOT, seed: int = SEED
) -> dict[str, Any]:
    """Pearson and Spearman of ``x`` with ``y``, each with its 95 % percentile interval from ``n_boot`` resamples
    of clusters with replacement (the same resamples for both; draws without variation on a side are skipped)."""
    out: dict[str, Any] = {}
    for name, statistic in (("pearson", _pearson), ("spearman", _spearman)):
        low, high = cluster_interval(statistic, x, y, clusters, n_resamples=n_boot, seed=seed)
        out[name] = [_round(statistic(x, y)), _round(low), _round(high)]
    return out


def _round(value: float) -> float | None:
    return None if np.isnan(value) else round(float(value), 3)


def score_pairs(pairs: list[PreferencePair], metrics: list[str], judge: Any = None) -> tuple[dict, dict, float]:
    """Per metric: the difference metric(A) − metric(B) per pair (NaN where a side is undefined), the reasons
    a side is undefined (reason: count), and the wall time of ``evaluate``."""
    records = [record for pair in pairs for record in (pair.a, pair.b)]
    started = time.perf_counter()
    result = evaluate(
        records, metrics=metrics, settings=Settings(n_resamples=100), judge=judge, progress=sys.stderr.isatty()
    )
    wall = time.perf_counter() - started
    differences, reasons = {}, {}
    for name in result.metrics:
        scores = np.asarray(result.scores[name], dtype=float)
        differences[name] = scores[0::2] - scores[1::2]
        counts: dict[str, int] = defaultdict(int)
        for reason in result.undefined.get(name, {}).values():
            counts[reason] += 1
        reasons[name] = dict(counts)
    return differences, reasons, wall


def measure(
    pairs: list[PreferencePair], differences: dict[str, np.ndarray], reasons: dict[str, dict[str, int]]
) -> list[dict[str, Any]]:
    """One row per metric: its correlations with the overall preference and with each aspect."""
    targets = {"overall": np.array([p.preference for p in pairs])}
    for aspect in sorted({a for p in pairs for a in p.aspects}):
        targets[aspect] = np.array([p.aspects.get(aspect, np.nan) for p in pairs])
    clusters = [p.cluster for p in pairs]
    rows = []
    for name, diff in differences.items():
        row: dict[str, Any] = {
            "metric": name,
            "n_undefined": int(np.isnan(diff).sum()),
            "undefined_reasons": reasons.get(name, {}),
        }
        for target, human in targets.items():
            keep = ~np.isnan(diff) & ~np.isnan(human)
            row[target] = {
                "n": int(keep.sum()),
                **correlation_ci(diff[keep], human[keep], [c for c, k in zip(clusters, keep, strict=True) if k]),
            }
        defined = diff[~np.isnan(diff)]
        row["share_zero_difference"] = round(float(np.mean(defined == 0)), 3) if defined.size else 0.0
        rows.append(row)
    return rows


def annotator_agreement(pairs: list[PreferencePair]) -> dict[str, Any] | None:
    """The humans' own agreement, a ceiling for the metrics: on the pairs with two annotators or more, the first
    annotator's preference against the mean of the others'."""
    rated = [p for p in pairs if p.annotators >= 2]
    if len(rated) < 3:
        return None
    one = np.array([p.values[0] for p in rated])
    others = np.array([float(np.mean(p.values[1:])) for p in rated])
    return {"n": len(rated), **correlation_ci(one, others, [p.cluster for p in rated])}


def _cell(figures: list[float | None]) -> str:
    value, low, high = (f"{v:5.2f}" if v is not None else "  nan" for v in figures)
    return f"{value} [{low},{high}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, help="a preference file (default: build the MT-RAG set)")
    parser.add_argument("--no-judge", action="store_true", help="leave the judged metrics out")
    parser.add_argument(
        "--judged",
        default=",".join(JUDGED),
        help=f"the judged metrics, names or families, comma-separated ({','.join(JUDGED)}; e.g. claim_level)",
    )
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_PAIRS} pairs drawn with seed {SEED}")
    add_judge_arguments(parser)
    parser.set_defaults(cache=Path.home() / ".cache" / "ragmeter" / "preferences.sqlite")
    args = parser.parse_args()

    built = None
    if args.file is None:
        if not HUMAN_EVAL_TASKS.is_file() or not RATINGS.is_file():
            sys.exit(f"MT-RAG's data is missing: {DATA_DIR}")
        built = build_mtrag_dev()
        print(f"built {built['file']}: {built['pairs']} pairs of {built['tasks']} dev tasks")
    path = args.file or MTRAG_FILE
    pairs = read_preferences(path)
    if args.quick:  # a seeded sample, so that the few pairs span several conversations
        chosen = np.random.default_rng(SEED).choice(len(pairs), min(QUICK_PAIRS, len(pairs)), replace=False)
        pairs = [pairs[i] for i in sorted(chosen)]

    differences, reasons, wall = score_pairs(pairs, OFFLINE)
    timings = {"offline_s": round(wall, 1)}
    judge_identity = None
    if not args.no_judge:
        judge = open_judge(judge_config(args))
        judge_identity = judge.description
        try:
            judged, judged_reasons, wall = score_pairs(pairs, args.judged.split(","), judge)
        finally:
            judge.close()
        differences.update(judged)
        reasons.update(judged_reasons)
        timings.update(judge_s=round(wall, 1), judge_s_per_answer=round(wall / (2 * len(pairs)), 2))
    rows = measure(pairs, differences, reasons)

    shown = path.resolve().relative_to(HERE.parent) if path.resolve().is_relative_to(HERE.parent) else path
    signature = {
        "file": str(shown),
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest()[:16],
        "pairs": len(pairs),
        "bootstrap": f"{N_BOOT} resamples of conversations, 95 % percentile, seed {SEED}",
        "ragmeter": ragmeter.__version__,
        "judge": judge_identity,
    }
    out = {
        "signature": signature,
        "built": built,
        "timings": timings,
        "preference_mean": round(float(np.mean([p.preference for p in pairs])), 3),
        "annotators_per_pair": round(float(np.mean([p.annotators for p in pairs])), 2),
        "first_annotator_vs_others": annotator_agreement(pairs),
        "rows": rows,
    }
    aspects = [key for key in rows[0] if isinstance(rows[0][key], dict) and "n" in rows[0][key] and key != "overall"]
    print(
        f"{len(pairs)} pairs of {path.name}; Pearson / Spearman of metric(A) − metric(B) with the preference "
        f"(95 % interval, conversations resampled); timings {timings}"
    )
    print(
        f"{'metric':<18}{'n':>4}{'undef':>6}{'Δ=0':>6}{'Pearson overall':>22}{'Spearman overall':>22}  "
        + "".join(f"{'ρ ' + a:>17}" for a in aspects)
    )
    for row in rows:
        print(
            f"{row['metric']:<18}{row['overall']['n']:>4}{row['n_undefined']:>6}{row['share_zero_difference']:>6.2f}"
            f"{_cell(row['overall']['pearson']):>22}{_cell(row['overall']['spearman']):>22}  "
            + "".join(f"{_cell(row[a]['spearman'])[:5]:>17}" for a in aspects)
        )
    if out["first_annotator_vs_others"]:
        agreement = out["first_annotator_vs_others"]
        print(
            f"{'one annotator vs the others':<28}{agreement['n']:>6}{_cell(agreement['pearson']):>22}"
            f"{_cell(agreement['spearman']):>22}"
        )
    suffix = (
        ("-no-judge" if args.no_judge else f"-{args.judge_layout}" if args.judge_layout else "")
        + ("" if args.no_judge or args.judged == ",".join(JUDGED) else f"-{args.judged.replace(',', '+')}")
        + ("-quick" if args.quick else "")
    )
    target = write_result(f"preferences-{path.stem.removeprefix('preferences-')}{suffix}", out)
    print(f"written: {target}")


if __name__ == "__main__":
    main()
