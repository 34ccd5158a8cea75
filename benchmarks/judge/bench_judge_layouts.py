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

``--compare continued`` sets side by side, the same way, the shared layout's two ways of asking a score: the judge
writing the whole reply (``whole``, as a remote judge does) and the reply begun for it, ``{"score": `` written by the
request, the digit by the judge, after a task line that names the task alone (``continued``, the local judge's;
:mod:`ragmeter.judges.layouts`). Only the scores' calls differ (the
claims and IDK calls are the same requests, so their verdicts are the same), so only ``judge_correctness`` is
measured, against people and on the preference pairs.

    python -m benchmarks.judge.bench_judge_layouts --limit 48
    python -m benchmarks.judge.bench_judge_layouts --compare continued

Results: ``benchmarks/results/judge_layouts-mtrag-dev.json``, ``judge_layouts-continued-mtrag-dev.json``.
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
from ragmeter.judges import Judge, JudgeConfig, open_judge

#: What each comparison sets side by side: the current way first (a tie keeps it), then the new one, and the
#: metrics whose verdicts differ between them.
COMPARISONS = {
    "layouts": (("calls", "shared"), ("judge_faithfulness_idk", "RL_F_idk", "judge_correctness", "idk_judge")),
    "continued": (("whole", "continued"), ("judge_correctness",)),
}
#: Each metric's human dimension, the one it is meant to follow.
TARGETS = {"judge_faithfulness_idk": "faithfulness", "RL_F_idk": "faithfulness", "judge_correctness": "completeness"}


def _accuracy(x: np.ndarray, y: np.ndarray) -> float:
    keep = ~(np.isnan(x) | np.isnan(y))
    return float(np.mean(x[keep] == y[keep])) if keep.any() else float("nan")


def _open(candidate: str, cache: Path) -> Judge:
    """The packaged judge as ``candidate`` asks: in a layout (``calls``, ``shared``), or in the shared layout with
    its scores begun for it (``continued``, the local judge's own) or written whole (``whole``)."""
    judge = open_judge(JudgeConfig(kind="local", layout="calls" if candidate == "calls" else "shared", cache=cache))
    if candidate == "whole":
        judge.backend.continues_replies = False  # type: ignore[attr-defined]  # this judge only: the reply whole
    return judge


def _judged(records: list[Any], candidate: str, metrics: tuple[str, ...], cache: Path) -> tuple[Any, float]:
    judge = _open(candidate, cache)
    started = time.perf_counter()
    try:
        result = evaluate(
            records,
            metrics=list(metrics),
            judge=judge,
            progress=sys.stderr.isatty(),
            settings=Settings(n_resamples=100),
        )
    finally:
        judge.close()
    return result, time.perf_counter() - started


def _preferences(candidates: tuple[str, str], cache: Path) -> dict[str, Any]:
    """``judge_correctness`` on the preference pairs as each candidate asks (see the module docstring)."""
    if not MTRAG_FILE.is_file():
        build_mtrag_dev()
    pairs = read_preferences(MTRAG_FILE)
    preference = np.array([p.preference for p in pairs])
    clusters = [p.cluster for p in pairs]
    differences = {}
    for candidate in candidates:
        judge = _open(candidate, cache)
        try:
            differences[candidate] = score_pairs(pairs, ["judge_correctness"], judge)[0]["judge_correctness"]
        finally:
            judge.close()
    current, new = candidates
    keep = ~(np.isnan(differences[current]) | np.isnan(differences[new]))
    kept = [c for c, k in zip(clusters, keep, strict=True) if k]
    return {
        "pairs": int(keep.sum()),
        "spearman": {
            name: _folds._round(_folds.spearman(d[keep], preference[keep])) for name, d in differences.items()
        },
        "graded_alike": {name: round(float(np.mean(d[keep] == 0)), 3) for name, d in differences.items()},
        "paired": _folds.paired_difference(
            _folds.spearman, differences[new][keep], differences[current][keep], preference[keep], kept
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
    parser.add_argument("--compare", choices=tuple(COMPARISONS), default="layouts")
    args = parser.parse_args()
    candidates, metrics = COMPARISONS[args.compare]
    current, new = candidates

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
    for candidate in candidates:  # one after the other, the same records and server settings
        results[candidate], walls[candidate] = _judged(records, candidate, metrics, args.cache)
        print(f"{candidate}: {walls[candidate]:.0f} s", flush=True)
    scores = {m: {c: np.asarray(results[c].scores[m], dtype=float) for c in candidates} for m in metrics}
    if "idk_judge" in scores:  # the IDK judge's verdict as MT-RAG's: 1 when it says the answer declines
        scores["idk_judge"] = {
            c: np.where(np.isnan(v), np.nan, (v == 1.0).astype(float)) for c, v in scores["idk_judge"].items()
        }

    rows: dict[str, Any] = {}
    for metric in metrics:
        figures = (
            [(dim, human[dim], _folds.spearman) for dim in ("faithfulness", "completeness")]
            if metric != "idk_judge"
            else [("released IDK verdict", released, _accuracy)]
        )
        for dimension, target, statistic in figures:
            report = _folds.held_out(
                list(candidates), scores[metric].__getitem__, target, collections, conversations, statistic
            )
            report["paired"] = _folds.paired_difference(
                statistic, scores[metric][new], scores[metric][current], target, conversations
            )
            report["main"] = TARGETS.get(metric, "released IDK verdict") == dimension
            rows[f"{metric} / {dimension}"] = report
    usage = {c: {p: u.to_dict() for p, u in results[c].judging.usage.items()} for c in candidates}
    same = {m: round(float(np.mean(scores[m][current] == scores[m][new])), 3) for m in metrics}
    out = {
        "compared": list(candidates),
        "records": len(records),
        "collections": {c: collections.count(c) for c in sorted(set(collections))},
        "conversations": len(set(conversations)),
        "wall_s": {k: round(v, 1) for k, v in walls.items()},
        "rows": rows,
        "same_value_share": same,
        "usage": usage,
        "undefined": {c: {m: len(v) for m, v in results[c].undefined.items() if v} for c in candidates},
        "preferences": _preferences(candidates, args.cache),
    }

    print(f"{len(records)} dev records, {len(set(conversations))} conversations; collections {out['collections']}")
    print(
        f"{'metric / target':<44}{current:>10}{new:>10}{f'{new} − {current} [95%]':>30}"
        f"{'held-out (4 folds)':>20}{'LOCO':>8}"
    )
    for name, report in rows.items():
        each, paired = report["each_candidate"], report["paired"]
        cross, loco = report["cross_collection"], report["leave_one_conversation_out"]
        print(
            f"{name + (' *' if report['main'] else ''):<44}{each[current]['in_sample']:>10}"
            f"{each[new]['in_sample']:>10}"
            f"{paired['difference']:>14} [{paired['low']:>6},{paired['high']:>6}]"
            f"{cross['mean']!s:>12} ({','.join(str(f['chosen'])[0] for f in cross['folds'].values())})"
            f"{loco['value']!s:>8}"
        )
    print(f"share of records with the same value both ways: {same}")
    preferences = out["preferences"]
    paired = preferences["paired"]
    print(
        f"preference pairs ({preferences['pairs']}), ρ of judge_correctness(A) − (B) with the overall preference: "
        f"{current} {preferences['spearman'][current]}, {new} {preferences['spearman'][new]}, {new} − {current} "
        f"{paired['difference']} [{paired['low']}, {paired['high']}]; graded alike {preferences['graded_alike']}"
    )
    name = "judge_layouts-mtrag-dev" if args.compare == "layouts" else f"judge_layouts-{args.compare}-mtrag-dev"
    print(f"written: {write_result(name, out)}")


if __name__ == "__main__":
    main()
