"""``faithfulness_offline``: how far it agrees with human faithfulness, and whether its weight holds held out.

On MT-RAG's dev split (the 156 answers of the non-reference responders, ratings averaged over annotators, as
``bench_judge_validity``), with the packaged MiniLM and the default settings:

1. the registered ``faithfulness_offline`` (version ``mtrag-dev-2``), BertKPrec and Extractiveness_RougeL per
   record, through the library; undefined records are counted with their reasons and left out of every ρ;
2. the weight of BertKPrec validated under the protocol of ``_folds`` (``benchmarks/README.md``, "Validation
   protocol"): chosen on a grid (steps of 0.05, the frozen weight first so that ties keep it) for the highest
   Spearman ρ with mean human faithfulness on three collections and measured on the fourth, all four ways, and
   with one conversation held out at a time; the weight moves the records the blend scores, the conditioned
   values (a refusal, an unanswerable question, an empty answer) stay as the metric gives them;
3. the same figures for its parts conditioned the same way, for the rules of ``mtrag-dev-1`` (reproduced here
   for comparison only: no passage, 1 if the answer declines, else 0; a refusal 1) and, with no choice, for
   MT-RAG's released metrics; in sample beside them, ρ with faithfulness and completeness with the
   conversation-bootstrap interval.

It says whether the frozen ``WEIGHT_BERT`` survives held out: whether the folds choose it, and whether the
weights they choose instead do better on the data they did not see. Runs in about a minute on two cores;
results: ``benchmarks/results/faithfulness_offline.json``.

    python -m benchmarks.validity.bench_faithfulness_offline
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from benchmarks import _folds
from benchmarks._common import RELEASED, dev_records, human_means, mtrag_rows, spearman_ci, write_result
from ragmeter import Settings, evaluate
from ragmeter.core.records import Record
from ragmeter.metrics.citation import abstained
from ragmeter.metrics.faithfulness_offline import VERSION, WEIGHT_BERT
from ragmeter.metrics.mtrag.algorithmic import IDK_CORRECT, idk_eval_from_detector

#: The frozen weight first, so that a tie keeps it.
GRID = [WEIGHT_BERT, *(w for w in np.round(np.arange(0.0, 1.0001, 0.05), 2).tolist() if w != WEIGHT_BERT)]
PARTS = ("BertKPrec", "Extractiveness_RougeL")
Values = Callable[[Any], np.ndarray]


def blend_decides(record: Record, settings: Settings) -> bool:
    """Whether ``faithfulness_offline`` gives ``record`` the blend (the rest its conditioning decides): an answer
    that says something and does not decline, to an answerable (or unknown) question, with passages."""
    declines = idk_eval_from_detector(record.answer, settings.idk) == 1
    return (
        bool(record.answer.strip())
        and record.answerability not in IDK_CORRECT
        and not declines
        and bool(record.contexts)
    )


def old_rules(record: Record, settings: Settings) -> float | None:
    """``mtrag-dev-1``'s value where a rule decides it (no passage: 1 if the answer declines, else 0; a refusal:
    1), else None (the blend). For comparison only: these rules were fitted to a few dev answers."""
    declines = bool(abstained(record.answer, idk=settings.idk, action=record.action))
    if not record.contexts or declines:
        return 1.0 if declines else 0.0
    return None


def best_on(candidates: Sequence[Any], values: Values, target: np.ndarray, seen: np.ndarray) -> Any:
    """The candidate with the highest ρ on ``seen``, as ``_folds.validate`` chooses (NaN last, ties: the first)."""
    scores = [np.nan_to_num(_folds.spearman(values(c)[seen], target[seen]), nan=-np.inf) for c in candidates]
    return candidates[int(np.argmax(scores))]


def loco_values(candidates: Sequence[Any], values: Values, target: np.ndarray, clusters: list[str]) -> np.ndarray:
    """Each conversation's values under the candidate chosen without it: the leave-one-conversation-out values of
    ``_folds.validate``, which gives their ρ but not the values its interval needs."""
    groups = np.asarray(clusters)
    pooled = np.full(len(target), np.nan)
    for conversation in set(clusters):
        held = groups == conversation
        pooled[held] = values(best_on(candidates, values, target, ~held))[held]
    return pooled


def interval(x: np.ndarray, y: np.ndarray, clusters: list[str]) -> dict[str, float]:
    """ρ over the records where ``x`` is defined, with its 95 % interval over conversations."""
    keep = ~np.isnan(x)
    rho, low, high = spearman_ci(x[keep], y[keep], [c for c, k in zip(clusters, keep, strict=True) if k])
    return {"rho": round(rho, 3), "low": round(low, 3), "high": round(high, 3)}


def validated(
    name: str,
    candidates: Sequence[Any],
    values: Values,
    human: dict[str, np.ndarray],
    clusters: list[str],
    collections: list[str],
) -> dict[str, Any]:
    """One row: the figures of ``values`` with the choice among ``candidates`` held out (a single candidate: no
    choice), the first candidate's in sample and in each collection beside them."""
    faithfulness = human["faithfulness"]
    report = _folds.validate(candidates, values, faithfulness, collections=collections, conversations=clusters)
    frozen = values(candidates[0])
    pooled = loco_values(candidates, values, faithfulness, clusters)
    loco = report["leave_one_conversation_out"]
    if not np.isclose(_folds.spearman(pooled, faithfulness), loco["value"], equal_nan=True):
        raise SystemExit(f"{name}: the held-out values disagree with _folds.validate")
    labels = np.asarray(collections)
    per_collection = {
        collection: _folds.spearman(frozen[labels == collection], faithfulness[labels == collection])
        for collection in report["cross_collection"]["folds"]
    }
    folds = {
        collection: {
            "weight": fold["chosen"],
            "rho": round(fold["value"], 3),
            "n": fold["n"],
            "rho_frozen": round(per_collection[collection], 3),
        }
        for collection, fold in report["cross_collection"]["folds"].items()
    }
    row: dict[str, Any] = {
        "metric": name,
        "n": int((~np.isnan(frozen)).sum()),
        "weight": candidates[0],
        "cross_collection": {
            "mean": round(report["cross_collection"]["mean"], 3),
            "mean_frozen": round(float(np.nanmean(list(per_collection.values()))), 3),
            "folds": folds,
        },
        "leave_one_conversation_out": interval(pooled, faithfulness, clusters),
        "in_sample": {dimension: interval(frozen, ratings, clusters) for dimension, ratings in human.items()},
    }
    if len(candidates) > 1:
        row["leave_one_conversation_out"]["weights"] = loco["chosen"]
        row["in_sample"]["chosen"] = {
            "weight": report["in_sample"]["chosen"],
            "rho": round(report["in_sample"]["value"], 3),
        }
        for collection, fold in folds.items():  # no choice: whether the frozen weight is best where not chosen
            held = labels == collection
            best = best_on(candidates, values, faithfulness, held)
            fold["best_held_out"] = {
                "weight": best,
                "rho": round(_folds.spearman(values(best)[held], faithfulness[held]), 3),
            }
    return row


def conditioned_groups(
    records: list[Record], blended: np.ndarray, values: np.ndarray, faithfulness: np.ndarray
) -> dict[str, dict[str, float]]:
    """The records the conditioning decides, by answerability and value, with their mean human faithfulness
    (rated 1–4): what the rules put at 0 and 1."""
    groups: dict[str, list[int]] = {}
    for i, record in enumerate(records):
        if not blended[i]:
            answerability = record.answerability.value if record.answerability else "unknown"
            value = "undefined" if np.isnan(values[i]) else f"{values[i]:g}"
            groups.setdefault(f"{answerability}: {value}", []).append(i)
    return {
        name: {"n": len(rows), "human_faithfulness": round(float(faithfulness[rows].mean()), 2)}
        for name, rows in sorted(groups.items())
    }


def main() -> None:
    records = dev_records(None)
    ratings, expected = mtrag_rows("human_eval_ratings_dev.jsonl"), mtrag_rows("human_eval_expected.jsonl")
    keys = [(r.id, str(r.model_id)) for r in records]
    human = {dim: np.array([human_means(ratings[k][dim]) for k in keys]) for dim in ("faithfulness", "completeness")}
    clusters = [str(r.conversation_id) for r in records]
    collections = [_folds.collection_of(r) for r in records]
    settings = Settings()
    started = time.perf_counter()
    result = evaluate(records, metrics=["faithfulness_offline", *PARTS], settings=settings)
    wall = time.perf_counter() - started
    ours = np.asarray(result.scores["faithfulness_offline"], dtype=float)
    bert, extractive = (np.asarray(result.scores[name], dtype=float) for name in PARTS)
    blended = np.array([blend_decides(r, settings) for r in records])
    if not np.allclose(ours[blended], WEIGHT_BERT * bert[blended] + (1 - WEIGHT_BERT) * extractive[blended]):
        raise SystemExit("blend_decides no longer matches faithfulness_offline: update it")
    old = np.array([np.nan if (v := old_rules(r, settings)) is None else v for r in records])

    def registered(weight: float) -> np.ndarray:
        return np.where(blended, weight * bert + (1 - weight) * extractive, ours)

    def dev_1(weight: float) -> np.ndarray:
        return np.where(np.isnan(old), weight * bert + (1 - weight) * extractive, old)

    rows = [validated(f"faithfulness_offline ({VERSION})", GRID, registered, human, clusters, collections)]
    for name, part in zip(PARTS, (bert, extractive), strict=True):
        conditioned = np.where(blended, part, ours)
        rows.append(
            validated(
                f"{name} (conditioned the same way)", [None], lambda _, v=conditioned: v, human, clusters, collections
            )
        )
    rows.append(validated("mtrag-dev-1 rules (old, for comparison only)", GRID, dev_1, human, clusters, collections))
    for label, field in RELEASED.items():
        released = np.array([np.nan if expected[k].get(field) is None else float(expected[k][field]) for k in keys])
        rows.append(validated(label, [None], lambda _, v=released: v, human, clusters, collections))

    main_row = rows[0]
    folds = main_row["cross_collection"]["folds"]
    out: dict[str, Any] = {
        "records": len(records),
        "conversations": len(set(clusters)),
        "collections": dict(Counter(collections)),
        "wall_s": round(wall, 1),
        "frozen": {"version": VERSION, "weight_bert": WEIGHT_BERT},
        "grid": GRID,
        "undefined": {
            "n": len(result.undefined["faithfulness_offline"]),
            "reasons": dict(Counter(result.undefined["faithfulness_offline"].values())),
        },
        "blend_scores": int(blended.sum()),
        "conditioned": conditioned_groups(records, blended, ours, human["faithfulness"]),
        "differs_from_mtrag_dev_1": int(
            (~np.isclose(registered(WEIGHT_BERT), dev_1(WEIGHT_BERT), equal_nan=True)).sum()
        ),
        "frozen_weight": {
            "chosen_by_every_collection_fold": all(f["weight"] == WEIGHT_BERT for f in folds.values()),
            "held_out_at_least_chosen": (
                main_row["cross_collection"]["mean_frozen"] >= main_row["cross_collection"]["mean"]
            ),
        },
        "rows": rows,
    }
    print(
        f"{len(records)} dev records, {out['conversations']} conversations, collections {out['collections']}, "
        f"{wall:.0f} s; the blend scores {out['blend_scores']}; undefined {out['undefined']['n']}"
        f"/{len(records)} {out['undefined']['reasons']}; values that differ from mtrag-dev-1's: "
        f"{out['differs_from_mtrag_dev_1']}"
    )
    for name, group in out["conditioned"].items():
        print(f"conditioned, {name}: {group['n']} records, mean human faithfulness {group['human_faithfulness']}")
    for row in rows:
        cross, loco, inside = row["cross_collection"], row["leave_one_conversation_out"], row["in_sample"]
        print(f"\n{row['metric']} (n {row['n']})")
        print(
            f"  cross-collection ρ {cross['mean']:.3f}"
            + (f" (frozen weight everywhere: {cross['mean_frozen']:.3f})" if row["weight"] is not None else "")
            + "; "
            + ", ".join(
                f"{c} {f['rho']:.3f} (n {f['n']}" + (f", w {f['weight']})" if f["weight"] is not None else ")")
                for c, f in cross["folds"].items()
            )
        )
        if row["weight"] is not None:
            print(
                "  frozen weight held out / best weight held out: "
                + ", ".join(
                    f"{c} {f['rho_frozen']:.3f} / {f['best_held_out']['rho']:.3f} (w {f['best_held_out']['weight']})"
                    for c, f in cross["folds"].items()
                )
            )
        print(
            f"  leave one conversation out ρ {loco['rho']:.3f} [{loco['low']:.2f}, {loco['high']:.2f}]"
            + (f", weights {loco['weights']}" if row["weight"] is not None else "")
        )
        f, c = inside["faithfulness"], inside["completeness"]
        print(
            f"  in sample ρ faithfulness {f['rho']:.3f} [{f['low']:.2f}, {f['high']:.2f}], completeness "
            f"{c['rho']:.3f} [{c['low']:.2f}, {c['high']:.2f}]"
            + (
                f"; in-sample choice {inside['chosen']['weight']} (ρ {inside['chosen']['rho']:.3f})"
                if "chosen" in inside
                else ""
            )
        )
    print(f"\nfrozen weight {WEIGHT_BERT}: {out['frozen_weight']}")
    print(f"written: {write_result('faithfulness_offline', out)}")


if __name__ == "__main__":
    main()
