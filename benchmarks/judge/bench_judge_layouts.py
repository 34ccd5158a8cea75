"""Does the shared layout judge as well as each prompt's own call? The packaged judge's two layouts, side by side.

On the first N answers of MT-RAG's dev split (``--limit``; the shuffled order of ``bench_judge_validity.py``, seed
0, so a short run spans many conversations), each layout judges the same records with the same server settings
(``JudgeConfig(kind="local", layout=...)``), one after the other, with one verdict cache (``--cache``), so an
interrupted run picks up where it stopped and a finished one is read again without a call; a call the two layouts
make alike (the IDK judge keeps its own call in both) is made once. Measured against people and against MT-RAG's
released judge, for each layout:

- ``judge_faithfulness_idk`` and ``RL_F_idk`` (IDK-conditioned, as MT-RAG reports them) against the mean human
  faithfulness, ``judge_correctness`` against the mean human completeness (and each against the other
  dimension): Spearman's ρ with a 95 % interval from resampling conversations;
- the IDK judge's accuracy against the released IDK verdicts, with its interval (the same call in both layouts
  since the IDK judge kept its own; shown to say so);
- the paired difference shared − calls of each figure, on the same records, with its interval (the same
  conversations drawn for both layouts);
- the validation protocol (``_folds.held_out``): the layout chosen on three collections and measured on the
  fourth, and chosen without each conversation; the current layout (``calls``) is listed first, so a tie keeps it;
- on ``bench_preferences.py``'s pairs (two answers to one dev question, people's preference between them; the pair
  file that benchmark builds), Spearman's ρ of ``judge_correctness(A) − judge_correctness(B)`` with the overall
  preference in each layout, the paired difference shared − calls (conversations resampled), and the share of pairs
  the judge grades alike.

The shared layout ships where no figure is worse beyond its interval. Wall time and the judge's tokens of each
layout are reported too (the speed is ``bench_judge_timings.py``'s, on an idle machine).

    python -m benchmarks.judge.bench_judge_layouts --limit 48

Results: ``benchmarks/results/judge_layouts-mtrag-dev.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import _folds
from benchmarks._common import dev_records, human_means, mtrag_rows, released_idk, write_result
from benchmarks.validity.bench_preferences import MTRAG_FILE, build_mtrag_dev, score_pairs
from ragmeter import Settings, evaluate
from ragmeter.human.preferences import read_preferences
from ragmeter.judges import JudgeConfig, open_judge

LAYOUTS = ("calls", "shared")
METRICS = ("judge_faithfulness_idk", "RL_F_idk", "judge_correctness", "idk_judge")
#: Each metric's human dimension, the one it is meant to follow.
TARGETS = {"judge_faithfulness_idk": "faithfulness", "RL_F_idk": "faithfulness", "judge_correctness": "completeness"}


def _accuracy(x: np.ndarray, y: np.ndarray) -> float:
    keep = ~(np.isnan(x) | np.isnan(y))
    return float(np.mean(x[keep] == y[keep])) if keep.any() else float("nan")


def _judged(records: list[Any], layout: str, cache: Path) -> tuple[Any, float]:
    judge = open_judge(JudgeConfig(kind="local", layout=layout, cache=cache))
    started = time.perf_counter()
    try:
        result = evaluate(
            records,
            metrics=list(METRICS),
            judge=judge,
            progress=sys.stderr.isatty(),
            settings=Settings(n_resamples=100),
        )
    finally:
        judge.close()
    return result, time.perf_counter() - started


def _preferences(cache: Path) -> dict[str, Any]:
    """``judge_correctness`` on the preference pairs in both layouts (see the module docstring)."""
    if not MTRAG_FILE.is_file():
        build_mtrag_dev()
    pairs = read_preferences(MTRAG_FILE)
    preference = np.array([p.preference for p in pairs])
    clusters = [p.cluster for p in pairs]
    differences = {}
    for layout in LAYOUTS:
        judge = open_judge(JudgeConfig(kind="local", layout=layout, cache=cache))
        try:
            differences[layout] = score_pairs(pairs, ["judge_correctness"], judge)[0]["judge_correctness"]
        finally:
            judge.close()
    keep = ~(np.isnan(differences["calls"]) | np.isnan(differences["shared"]))
    kept = [c for c, k in zip(clusters, keep, strict=True) if k]
    return {
        "pairs": int(keep.sum()),
        "spearman": {
            layout: _folds._round(_folds.spearman(d[keep], preference[keep])) for layout, d in differences.items()
        },
        "graded_alike": {layout: round(float(np.mean(d[keep] == 0)), 3) for layout, d in differences.items()},
        "paired": _folds.paired_difference(
            _folds.spearman, differences["shared"][keep], differences["calls"][keep], preference[keep], kept
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, help="the first N records of the shuffled dev split (all: 156)")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path.home() / ".cache" / "ragmeter" / "validity-calls.sqlite",
        help="the verdict cache of both layouts",
    )
    args = parser.parse_args()

    records = dev_records(args.limit)
    ratings, expected = mtrag_rows("human_eval_ratings_dev.jsonl"), mtrag_rows("human_eval_expected.jsonl")
    keys = [(r.id, str(r.model_id)) for r in records]
    human = {dim: np.array([human_means(ratings[k][dim]) for k in keys]) for dim in ("faithfulness", "completeness")}
    released = np.array(
        [
            released_idk(str(r.answerability.value if r.answerability else ""), expected[k]["conditional_idk"])
            for r, k in zip(records, keys, strict=True)
        ],
        dtype=float,
    )
    conversations = [str(r.conversation_id) for r in records]
    collections = [_folds.collection_of(r) for r in records]

    results, walls = {}, {}
    for layout in LAYOUTS:  # one after the other, the same records and server settings
        results[layout], walls[layout] = _judged(records, layout, args.cache)
        print(f"{layout}: {walls[layout]:.0f} s", flush=True)
    scores = {m: {layout: np.asarray(results[layout].scores[m], dtype=float) for layout in LAYOUTS} for m in METRICS}
    # the IDK judge's verdict as MT-RAG's: 1 when it says the answer declines
    scores["idk_judge"] = {
        layout: np.where(np.isnan(v), np.nan, (v == 1.0).astype(float)) for layout, v in scores["idk_judge"].items()
    }

    rows: dict[str, Any] = {}
    for metric in METRICS:
        figures = (
            [(dim, human[dim], _folds.spearman) for dim in ("faithfulness", "completeness")]
            if metric != "idk_judge"
            else [("released IDK verdict", released, _accuracy)]
        )
        for dimension, target, statistic in figures:
            report = _folds.held_out(
                list(LAYOUTS), scores[metric].__getitem__, target, collections, conversations, statistic
            )
            report["paired"] = _folds.paired_difference(
                statistic, scores[metric]["shared"], scores[metric]["calls"], target, conversations
            )
            report["main"] = TARGETS.get(metric, "released IDK verdict") == dimension
            rows[f"{metric} / {dimension}"] = report
    usage = {layout: {p: u.to_dict() for p, u in results[layout].judging.usage.items()} for layout in LAYOUTS}
    same = {m: round(float(np.mean(scores[m]["calls"] == scores[m]["shared"])), 3) for m in METRICS}
    out = {
        "records": len(records),
        "collections": {c: collections.count(c) for c in sorted(set(collections))},
        "conversations": len(set(conversations)),
        "wall_s": {k: round(v, 1) for k, v in walls.items()},
        "rows": rows,
        "same_value_share": same,
        "usage": usage,
        "undefined": {layout: {m: len(v) for m, v in results[layout].undefined.items() if v} for layout in LAYOUTS},
        "preferences": _preferences(args.cache),
    }

    print(f"{len(records)} dev records, {len(set(conversations))} conversations; collections {out['collections']}")
    print(
        f"{'metric / target':<44}{'calls':>8}{'shared':>8}{'shared − calls [95%]':>26}"
        f"{'held-out (4 folds)':>20}{'LOCO':>8}"
    )
    for name, report in rows.items():
        each, paired = report["each_candidate"], report["paired"]
        cross, loco = report["cross_collection"], report["leave_one_conversation_out"]
        print(
            f"{name + (' *' if report['main'] else ''):<44}{each['calls']['in_sample']:>8}"
            f"{each['shared']['in_sample']:>8}"
            f"{paired['difference']:>10} [{paired['low']:>6},{paired['high']:>6}]"
            f"{cross['mean']!s:>12} ({','.join(str(f['chosen'])[0] for f in cross['folds'].values())})"
            f"{loco['value']!s:>8}"
        )
    print(f"share of records with the same value in both layouts: {same}")
    preferences = out["preferences"]
    paired = preferences["paired"]
    print(
        f"preference pairs ({preferences['pairs']}), ρ of judge_correctness(A) − (B) with the overall preference: "
        f"calls {preferences['spearman']['calls']}, shared {preferences['spearman']['shared']}, shared − calls "
        f"{paired['difference']} [{paired['low']}, {paired['high']}]; graded alike {preferences['graded_alike']}"
    )
    print(f"written: {write_result('judge_layouts-mtrag-dev', out)}")


if __name__ == "__main__":
    main()
