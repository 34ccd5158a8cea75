"""Speed of ragmeter's retrieval family against ``pytrec_eval`` (trec_eval), value for value.

Synthetic data, drawn once with ``numpy.random.default_rng(0)``: 100,000 queries (10,000 with
``--quick``), each with K = 10 retrieved chunks (distinct doc ids per query) and a judged pool.

- Each query has an "ease" e ~ Beta(1.2, 2.0); the chunk at rank r is relevant with probability
  e · (1 − 0.05 (r − 1)) (relevance thins out down the ranking, and some queries have nothing
  relevant), and a relevant chunk has grade 2 (sufficient) with probability 0.35, else grade 1.
- 90 % of the retrieved chunks are judged; an unjudged one has grade 0 everywhere (trec_eval's
  "unjudged = not relevant"). The judged pool is the judged retrieved chunks plus 0–5
  (Poisson(2), capped) judged-but-not-retrieved docs of grade 0/1/2 with probabilities 0.55/0.30/0.15.
- Chunk labels follow the grade: ``topically_relevant`` = grade ≥ 1, ``evidence_sufficient`` = grade 2;
  ``misleading`` = 1 with probability 0.06 on chunks of grade < 2.

Both representations are built before any timing: :class:`ragmeter.Record` objects (``contexts`` with
those labels, ``qrels`` = the judged pool) and pytrec_eval's ``qrels``/``run`` dicts (run scores
strictly decreasing by rank). In this one process, alternating, three times each (minimum kept;
``gc.collect()`` before each timing, the collector left on inside it):

- ``pytrec_eval``: ``RelevanceEvaluator(qrels, {"ndcg_cut_10", "P_10", "recip_rank"})`` (timed apart:
  construction, ``.evaluate(run)``, and both);
- ``ragmeter``: ``ragmeter.evaluate(records, metrics=["retrieval@10"], settings=...)``, which scores all
  six retrieval metrics at 10 (topical_precision, sufficiency_hit, sufficiency_rate,
  misleading_context_rate, mrr, ndcg) and their intervals, with four settings: NDCG ideal=pool with
  linear gain (trec_eval's NDCG) and ideal=retrieved with exponential gain (the default), each with
  ``n_resamples=100`` (the smallest allowed: per-item scoring plus a token bootstrap) and with the
  default 2,000 resamples.

Headline: ragmeter (pool, 100 resamples) ÷ pytrec_eval (construction + evaluate), minimum ÷ minimum;
goal ≤ 1.5 (issue 34). The machine may be shared, so each repetition's own ratio (the two sides timed back
to back) is reported too, with its best and its spread (largest − smallest).
Not timed: ragmeter's ndcg@10 (pool, linear) must equal ndcg_cut_10, topical_precision@10 P_10 and
mrr@10 recip_rank within 1e-12 for every query (the benchmark fails otherwise); the largest absolute
difference of each is reported. Without pytrec_eval (``pip install pytrec-eval-terrier``) the benchmark
is skipped with a message.
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import time
from typing import Any

import numpy as np

FULL_QUERIES = 100_000
QUICK_QUERIES = 10_000
K = 10
REPEATS = 3
GOAL_RATIO = 1.5
TOLERANCE = 1e-12
SEED = 0
MEASURES = ("ndcg_cut_10", "P_10", "recip_rank")
#: pytrec_eval measure -> the ragmeter metric that must give the same value per query.
EQUIVALENT = {"ndcg_cut_10": f"ndcg@{K}", "P_10": f"topical_precision@{K}", "recip_rank": f"mrr@{K}"}
MAX_EXTRA_JUDGED = 5
JUDGED_SHARE = 0.9


def make_data(n_queries: int, seed: int = SEED) -> dict[str, np.ndarray]:
    """The synthetic collection as arrays (one row per query); see the module docstring."""
    rng = np.random.default_rng(seed)
    width = K + MAX_EXTRA_JUDGED
    docs = rng.integers(0, 10_000_000, size=(n_queries, width))
    while True:  # distinct doc ids within each query: redraw the rows that repeat one
        ordered = np.sort(docs, axis=1)
        repeated = np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))
        if not len(repeated):
            break
        docs[repeated] = rng.integers(0, 10_000_000, size=(len(repeated), width))
    ease = rng.beta(1.2, 2.0, size=(n_queries, 1))
    p_relevant = ease * (1 - 0.05 * np.arange(K))
    relevant = rng.random((n_queries, K)) < p_relevant
    sufficient = rng.random((n_queries, K)) < 0.35
    judged = rng.random((n_queries, K)) < JUDGED_SHARE
    grades = np.where(relevant & judged, np.where(sufficient, 2, 1), 0)
    misleading = (rng.random((n_queries, K)) < 0.06) & (grades < 2)
    n_extra = np.minimum(rng.poisson(2.0, size=n_queries), MAX_EXTRA_JUDGED)
    extra_grades = rng.choice(3, size=(n_queries, MAX_EXTRA_JUDGED), p=[0.55, 0.30, 0.15])
    noise = rng.random((n_queries, K))
    return {
        "docs": docs,
        "grades": grades,
        "judged": judged,
        "misleading": misleading.astype(int),
        "n_extra": n_extra,
        "extra_grades": extra_grades,
        "noise": noise,
    }


def build_records(data: dict[str, np.ndarray]) -> list[Any]:
    """ragmeter :class:`Record` objects: contexts with their labels, qrels = the judged pool."""
    from ragmeter import Chunk, Record

    records = []
    for i, (docs, grades, judged, misleading, n_extra, extra) in enumerate(
        zip(
            data["docs"].tolist(),
            data["grades"].tolist(),
            data["judged"].tolist(),
            data["misleading"].tolist(),
            data["n_extra"].tolist(),
            data["extra_grades"].tolist(),
            strict=True,
        )
    ):
        ids = [f"D{d}" for d in docs]
        contexts = tuple(
            Chunk(
                doc_id,
                doc_id,
                labels={"topically_relevant": int(g >= 1), "evidence_sufficient": int(g == 2), "misleading": m},
            )
            for doc_id, g, m in zip(ids[:K], grades, misleading, strict=True)
        )
        qrels = {doc_id: g for doc_id, g, j in zip(ids[:K], grades, judged, strict=True) if j}
        qrels.update(zip(ids[K : K + n_extra], extra[:n_extra], strict=True))
        records.append(Record(id=f"q{i}", question="", answer="", contexts=contexts, qrels=qrels))
    return records


def build_trec(data: dict[str, np.ndarray]) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """pytrec_eval's qrels and run: the same pools, scores strictly decreasing by rank."""
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    scores = (K - np.arange(K)) + 0.5 * data["noise"]  # gaps of more than 0.5 between ranks
    for i, (docs, grades, judged, n_extra, extra, row) in enumerate(
        zip(
            data["docs"].tolist(),
            data["grades"].tolist(),
            data["judged"].tolist(),
            data["n_extra"].tolist(),
            data["extra_grades"].tolist(),
            scores.tolist(),
            strict=True,
        )
    ):
        ids = [f"D{d}" for d in docs]
        pool = {doc_id: g for doc_id, g, j in zip(ids[:K], grades, judged, strict=True) if j}
        pool.update(zip(ids[K : K + n_extra], extra[:n_extra], strict=True))
        qrels[f"q{i}"] = pool
        run[f"q{i}"] = dict(zip(ids[:K], row, strict=True))
    return qrels, run


def run(*, quick: bool = False) -> dict[str, Any]:
    try:
        import pytrec_eval
    except ImportError:
        message = "skipped: pytrec_eval is not installed (pip install pytrec-eval-terrier)"
        print(f"[retrieval] {message}")
        return {"name": "retrieval_speed", "skipped": message}

    import ragmeter
    from ragmeter import Settings

    n = QUICK_QUERIES if quick else FULL_QUERIES
    start = time.perf_counter()
    data = make_data(n)
    records = build_records(data)
    qrels, trec_run = build_trec(data)
    build_s = time.perf_counter() - start
    judged = sum(len(pool) for pool in qrels.values())
    grade_counts = np.bincount(data["grades"].ravel(), minlength=3)
    del data

    configs = {
        "pool_100": Settings(ndcg_ideal="pool", ndcg_gain="linear", n_resamples=100),
        "retrieved_100": Settings(n_resamples=100),
        "pool_2000": Settings(ndcg_ideal="pool", ndcg_gain="linear"),
        "retrieved_2000": Settings(),
    }
    construct_s: list[float] = []
    evaluate_s: list[float] = []
    ragmeter_s: dict[str, list[float]] = {name: [] for name in configs}
    results: dict[str, Any] = {}
    for _ in range(REPEATS):
        gc.collect()
        start = time.perf_counter()
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES))
        construct_s.append(time.perf_counter() - start)
        gc.collect()
        start = time.perf_counter()
        theirs = evaluator.evaluate(trec_run)
        evaluate_s.append(time.perf_counter() - start)
        del evaluator
        for name, settings in configs.items():
            gc.collect()
            start = time.perf_counter()
            results[name] = ragmeter.evaluate(records, metrics=[f"retrieval@{K}"], settings=settings)
            ragmeter_s[name].append(time.perf_counter() - start)
    pytrec_s = [c + e for c, e in zip(construct_s, evaluate_s, strict=True)]
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes

    # Equality with trec_eval (not timed): every query, every measure.
    ours = results["pool_100"]
    index = {item_id: i for i, item_id in enumerate(ours.item_ids)}
    if len(theirs) != n or set(theirs) != set(index):
        raise AssertionError(f"pytrec_eval scored {len(theirs)} queries, ragmeter {len(index)} of {n}")
    order = [index[qid] for qid in theirs]
    max_abs_diff: dict[str, float] = {}
    for measure, metric in EQUIVALENT.items():
        trec_values = np.array([scores[measure] for scores in theirs.values()])
        our_values = np.asarray(ours.scores[metric])[order]
        differences = np.abs(our_values - trec_values)  # NaN (undefined) fails the check below
        worst = int(np.nanargmax(differences)) if not np.all(np.isnan(differences)) else 0
        max_abs_diff[metric] = float(np.max(differences))
        if not np.all(differences <= TOLERANCE):
            raise AssertionError(
                f"{metric} differs from pytrec_eval's {measure} on "
                f"{int(np.sum(~(differences <= TOLERANCE)))} of {n} queries (e.g. "
                f"{list(theirs)[worst]}: ragmeter {our_values[worst]!r}, pytrec_eval "
                f"{trec_values[worst]!r})"
            )
    for name, result in results.items():
        undefined = {m: len(r) for m, r in result.undefined.items() if r}
        if undefined:
            raise AssertionError(f"ragmeter ({name}) left queries undefined: {undefined}")

    best = {name: min(times) for name, times in ragmeter_s.items()}
    pytrec_min = min(pytrec_s)
    ratio = best["pool_100"] / pytrec_min
    per_run = {name: [t / p for t, p in zip(times, pytrec_s, strict=True)] for name, times in ragmeter_s.items()}
    out = {
        "name": "retrieval_speed",
        "source": (
            f"synthetic (numpy default_rng({SEED})): graded 0/1/2 chunks, {JUDGED_SHARE:.0%} of retrieved "
            f"judged, 0–{MAX_EXTRA_JUDGED} judged-but-not-retrieved docs per query"
        ),
        "n_queries": n,
        "k": K,
        "retrieved_grade_counts": {str(g): int(c) for g, c in enumerate(grade_counts)},
        "judged_docs": judged,
        "build_s": build_s,
        "runs": REPEATS,
        "pytrec_eval_measures": list(MEASURES),
        "pytrec_eval_construct_s": construct_s,
        "pytrec_eval_evaluate_s": evaluate_s,
        "pytrec_eval_s": pytrec_s,
        "pytrec_eval_construct_min_s": min(construct_s),
        "pytrec_eval_evaluate_min_s": min(evaluate_s),
        "pytrec_eval_min_s": pytrec_min,
        "ragmeter_settings": {
            name: (f"ndcg_ideal={s.ndcg_ideal}, ndcg_gain={s.ndcg_gain}, n_resamples={s.n_resamples}")
            for name, s in configs.items()
        },
        "ragmeter_s": ragmeter_s,
        "ragmeter_min_s": best,
        "ragmeter_queries_per_s": {name: n / t for name, t in best.items()},
        "pytrec_eval_queries_per_s": n / pytrec_min,
        "ratio": ratio,
        "ratios": {name: t / pytrec_min for name, t in best.items()},
        "ratios_per_run": per_run,
        "ratio_per_run_best": min(per_run["pool_100"]),
        "ratio_per_run_spread": max(per_run["pool_100"]) - min(per_run["pool_100"]),
        "goal_ratio": GOAL_RATIO,
        "meets_goal": ratio <= GOAL_RATIO,
        "max_abs_diff": max_abs_diff,
        "tolerance": TOLERANCE,
        "all_equal": True,
        "means": {
            "ndcg@10 (pool, linear)": ours.summary(f"ndcg@{K}").value,
            "ndcg@10 (retrieved, exponential)": results["retrieved_100"].summary(f"ndcg@{K}").value,
            "ndcg_cut_10 (pytrec_eval)": float(np.mean([s["ndcg_cut_10"] for s in theirs.values()])),
            **{m: ours.summary(m).value for m in ours.metrics if not m.startswith("ndcg")},
        },
        "process_peak_rss_mb": peak_rss_mb,
        "quick": quick,
    }
    print(
        f"[retrieval] {n:,} queries × {K}: pytrec_eval {pytrec_min:.2f} s (construct "
        f"{min(construct_s):.2f} + evaluate {min(evaluate_s):.2f}); ragmeter evaluate(retrieval@{K}) "
        + ", ".join(f"{name} {t:.2f} s" for name, t in best.items())
        + f" → ratio {ratio:.2f} (goal ≤ {GOAL_RATIO:g}: {'met' if out['meets_goal'] else 'NOT met'}; per run "
        + ", ".join(f"{r:.2f}" for r in per_run["pool_100"])
        + f": best {out['ratio_per_run_best']:.2f}, spread {out['ratio_per_run_spread']:.2f}); "
        f"max |Δ| " + ", ".join(f"{m} {d:.3g}" for m, d in max_abs_diff.items())
    )
    return out


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
