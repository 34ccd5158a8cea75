"""The CI gate (issue 29): false alarms on A/A pairs, power against known shifts, speed, and two naive rules beside it.

    python -m benchmarks.statistics.bench_gate [--quick]

Data: three real pairs of runs, scored once with offline metrics (citation's Overlap with the hashing embedder):
the demo (``demo_path("v1")`` against ``demo_path("gate")``, 45 items), MT-RAG's released answers
(``human_eval_tasks.jsonl``: gpt-4o against llama-3.1-405b-instruct on the same 159 tasks, paired by task) and two
synthetic 10,000-record runs (``write_synthetic_records`` with seeds 0 and 1, 8 turns per conversation).
Gated metrics (regression mode, α = 0.05, Holm over the gated metrics): means ``token_f1``, ``rouge_l``,
``overlap``, ``total_tokens`` (lower is better); rates ``exact_match``, ``citation_presence_rate``; the quantile
metric ``latency_ms`` (lower is better, compared by its per-item mean). A metric a source lacks is not gated there
(MT-RAG has no latency or tokens). ``abstained`` is scored but not gated: it has no direction, and the gate
refuses a metric whose direction it does not know.

1. **False alarms.** Per replication, the pair is made exchangeable: conversations drawn with replacement (each
   draw a new conversation, its items new ids), and the A and B values swapped at random per conversation
   (*clustered*: the gate resamples and flips conversations) or, with every item its own conversation, items
   drawn and swapped per item (*unclustered*). A then B are the same process, so any failing verdict is a
   false alarm. ``compare`` (percentile interval, ``N_RESAMPLES`` resamples, its 9,999 sign flips) then
   ``apply_gate``; a family (means, rates, quantiles) raises an alarm in a replication when any of its metrics
   fails. Rate and Wilson 95 % interval over the replications; goal ≤ 5 %.
2. **Power.** Exchangeable pairs (clustered) of about 45, 477 and 10,000 items (conversations drawn until the
   size is reached: the demo at 45, MT-RAG at 477, synthetic at 10,000; latency at 477 from the synthetic
   runs, as MT-RAG has none), then B shifted: token F1 lowered by 2δ (clipped at 0) on a random half of the
   items (δ = 0.01, 0.02, 0.05: the mean drops by about δ), or every latency raised by 10 %. The gate has all
   the source's rules, as a team would run it; a pair is caught when the shifted metric's verdict fails.
3. **Naive rules** on the same pairs, metric by metric: *DeepEval-style* (``assert_test`` fails a test case when
   a metric's score is below its threshold, and a test run fails when any case fails): "any case" fails when any
   B item is on the wrong side of the threshold; "share" fails when more B items than A items are (thresholds:
   0.5, DeepEval's default, for scores in [0, 1]; 3,000 tokens; 2,000 ms). *RAGAS-style*: fails when B's mean is
   worse than A's by more than 0.01 (for tokens and latency, 1 % of A's mean).
4. **Speed.** Two 100,000-item runs (``EvalResult`` objects) with 12 metrics of synthetic per-item scores,
   conversations of 8: ``compare`` with its default settings (2,000 percentile resamples, 9,999 sign flips) then
   ``apply_gate`` on all 12, wall time (minimum of ``SPEED_REPEATS``); beside it, the same metrics compared one
   at a time (the cost before the draws were shared across metrics). Goal < 30 s on 2 cores.

Every draw comes from ``numpy.random.default_rng`` with the seeds below. Writes ``results/gate.json``
(``results/gate-quick.json`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import share_with_interval, write_result
from benchmarks._mtrag_data import DATA_DIR
from ragmeter import HashingEmbedder, evaluate, read_records
from ragmeter.analysis.compare import ScoredRun, compare
from ragmeter.analysis.gate import GateRule, apply_gate
from ragmeter.core.settings import Settings
from ragmeter.core.signature import Signature
from ragmeter.io.demo import demo_path
from ragmeter.results.run_result import EvalResult
from ragmeter.testing import write_synthetic_records

ALPHA = 0.05
SEED = 0
N_RESAMPLES = 200  # the regression verdict reads the permutation p only; the interval feeds the detectable drop
FAMILIES = {
    "means": ("token_f1", "rouge_l", "overlap", "total_tokens"),
    "rates": ("exact_match", "citation_presence_rate"),
    "quantiles": ("latency_ms",),
}
GATED = tuple(m for family in FAMILIES.values() for m in family)
SCORED = (*GATED, "abstained")
LOWER_IS_BETTER = {"total_tokens", "latency_ms"}
#: DeepEval-style per-item thresholds (0.5 is DeepEval's default threshold).
THRESHOLDS = {
    "token_f1": 0.5,
    "rouge_l": 0.5,
    "overlap": 0.5,
    "total_tokens": 3000.0,
    "exact_match": 0.5,
    "citation_presence_rate": 0.5,
    "latency_ms": 2000.0,
}
RAGAS_MARGIN = 0.01
F1_DROPS = (0.01, 0.02, 0.05)
LATENCY_RISE = 0.10
SHIFTED_SHARE = 0.5
POWER_SIZES = {
    "token_f1": (("demo", 45), ("mtrag", 477), ("synthetic", 10_000)),
    "latency_ms": (("demo", 45), ("synthetic", 477), ("synthetic", 10_000)),
}
SYNTHETIC_ITEMS = 10_000
SPEED_ITEMS = 100_000
SPEED_METRICS = (
    "token_f1",
    "rouge_l",
    "overlap",
    "faithfulness_offline",
    "total_tokens",
    "prompt_tokens",
    "completion_tokens",
    "latency_ms",
    "exact_match",
    "citation_presence_rate",
    "idk_citation_count",
    "malformed_citation_count",
)
SPEED_REPEATS = 2
GOAL_FALSE_ALARMS = 0.05
#: Runs of at least this many items may get fewer replications (``--large-replications``): each costs ~0.5 s.
LARGE = 5_000
GOAL_SPEED_S = 30.0


@dataclass(frozen=True)
class Pair:
    """Two runs' per-item values of the same items (paired by position), with each item's conversation."""

    source: str
    a: dict[str, np.ndarray]
    b: dict[str, np.ndarray]
    conversations: np.ndarray
    signatures: dict[str, str]

    @property
    def metrics(self) -> tuple[str, ...]:
        return tuple(m for m in GATED if m in self.a and not np.all(np.isnan(self.a[m])))


# --- the pairs ------------------------------------------------------------------------------------------------


def _scored(records: list[Any]) -> EvalResult:
    return evaluate(records, metrics=list(SCORED), settings=Settings(n_resamples=100), embedder=HashingEmbedder())


def _pair(source: str, records_a: list[Any], records_b: list[Any]) -> Pair:
    a, b = _scored(records_a), _scored(records_b)
    index_b = {item: j for j, item in enumerate(b.item_ids)}
    ia = [i for i, item in enumerate(a.item_ids) if item in index_b]
    ib = [index_b[a.item_ids[i]] for i in ia]
    conversations = np.array([a.conversation_ids[i] or a.item_ids[i] for i in ia])
    return Pair(
        source,
        {m: a.scores[m][ia] for m in a.scores},
        {m: b.scores[m][ib] for m in b.scores},
        conversations,
        {m: s.render() for m, s in a.signatures.items()},
    )


def load_pairs(synthetic_items: int) -> dict[str, Pair]:
    pairs = {"demo": _pair("demo", list(read_records(demo_path("v1"))), list(read_records(demo_path("gate"))))}
    tasks = DATA_DIR / "human_eval_tasks.jsonl"
    if tasks.is_file():
        records = list(read_records(tasks, format="mtrag"))
        pairs["mtrag"] = _pair(
            "mtrag",
            [r for r in records if r.model_id == "gpt-4o"],
            [r for r in records if r.model_id == "llama-3.1-405b-instruct"],
        )
    with tempfile.TemporaryDirectory(prefix="ragmeter-gate-") as folder:
        runs = []
        for seed in (0, 1):
            path = Path(folder) / f"synthetic-{seed}.jsonl"
            write_synthetic_records(path, synthetic_items, seed=seed)
            runs.append(list(read_records(path)))
        pairs["synthetic"] = _pair("synthetic", *runs)
    return pairs


def exchangeable(
    pair: Pair, rng: np.random.Generator, *, clustered: bool, size: int | None = None
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray]:
    """An A/A pair drawn from ``pair``: units (conversations, or items when not ``clustered``) drawn with
    replacement until ``size`` items (default: as many units as ``pair`` has), A and B swapped per unit at random.
    Returns A's and B's values and each item's unit label."""
    if clustered:
        _, codes = np.unique(pair.conversations, return_inverse=True)
        members = [np.flatnonzero(codes == u) for u in range(codes.max() + 1)]
    else:
        members = [np.array([i]) for i in range(len(pair.conversations))]
    target = size or len(pair.conversations)
    mean_size = len(pair.conversations) / len(members)
    drawn: list[int] = []
    items = 0
    while items < target:
        more = rng.integers(0, len(members), size=max(1, int(np.ceil((target - items) / mean_size))))
        for u in more:
            if items >= target:
                break
            drawn.append(int(u))
            items += len(members[u])
    index = np.concatenate([members[u] for u in drawn])
    unit = np.repeat(np.arange(len(drawn)), [len(members[u]) for u in drawn])
    swap = (rng.integers(0, 2, size=len(drawn)) == 1)[unit]
    a = {m: np.where(swap, pair.b[m][index], pair.a[m][index]) for m in pair.metrics}
    b = {m: np.where(swap, pair.a[m][index], pair.b[m][index]) for m in pair.metrics}
    return a, b, unit


def shifted(b: dict[str, np.ndarray], metric: str, amount: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """``b`` with ``metric`` made worse: token F1 lowered by 2·amount on a random half of the items (clipped at 0),
    latency raised by the share ``amount`` everywhere."""
    values = b[metric].copy()
    if metric == "latency_ms":
        values *= 1 + amount
    else:
        hit = rng.random(len(values)) < SHIFTED_SHARE
        values[hit] = np.clip(values[hit] - amount / SHIFTED_SHARE, 0.0, 1.0)
    return {**b, metric: values}


# --- the rules ------------------------------------------------------------------------------------------------


def _scored_run(name: str, values: dict[str, np.ndarray], units: np.ndarray, signatures: dict[str, str]) -> ScoredRun:
    keys = tuple((str(i), None) for i in range(len(units)))
    return ScoredRun(
        name, keys, values, {m: signatures[m] for m in values}, tuple(f"u{u}" for u in units), ({},) * len(units)
    )


def gate_failures(
    a: dict[str, np.ndarray], b: dict[str, np.ndarray], units: np.ndarray, signatures: dict[str, str]
) -> dict[str, bool]:
    """ragmeter's gate (regression mode on every metric of the pair): metric → failed."""
    [comparison] = compare(
        _scored_run("A", a, units, signatures),
        _scored_run("B", b, units, signatures),
        settings=Settings(n_resamples=N_RESAMPLES, ci_method="percentile", seed=SEED),
    )
    gate = apply_gate(comparison, [GateRule(m) for m in a], alpha=ALPHA)
    return {v.rule.metric: not v.passed for v in gate.verdicts}


def _worse_side(metric: str, values: np.ndarray) -> np.ndarray:
    return values > THRESHOLDS[metric] if metric in LOWER_IS_BETTER else values < THRESHOLDS[metric]


def naive_failures(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> dict[str, dict[str, bool]]:
    """DeepEval-style (any case, share of cases) and RAGAS-style verdicts: rule → metric → failed."""
    out: dict[str, dict[str, bool]] = {"deepeval_any_case": {}, "deepeval_share": {}, "ragas_margin": {}}
    for m, values in a.items():
        both = ~np.isnan(values) & ~np.isnan(b[m])
        va, vb = values[both], b[m][both]
        out["deepeval_any_case"][m] = bool(_worse_side(m, vb).any())
        out["deepeval_share"][m] = bool(_worse_side(m, vb).mean() > _worse_side(m, va).mean())
        margin = RAGAS_MARGIN * va.mean() if m in LOWER_IS_BETTER else RAGAS_MARGIN
        worse_by = vb.mean() - va.mean() if m in LOWER_IS_BETTER else va.mean() - vb.mean()
        out["ragas_margin"][m] = bool(worse_by > margin)
    return out


RULES = ("gate", "deepeval_any_case", "deepeval_share", "ragas_margin")


# --- replications (in worker processes; the pairs reach them through fork) ---------------------------------

_PAIRS: dict[str, Pair] = {}


def _false_alarm_replication(job: tuple[str, bool, int]) -> dict[str, dict[str, bool]]:
    source, clustered, rep = job
    pair = _PAIRS[source]
    rng = np.random.default_rng([SEED, rep, int(clustered), list(_PAIRS).index(source)])
    a, b, units = exchangeable(pair, rng, clustered=clustered)
    return {"gate": gate_failures(a, b, units, pair.signatures), **naive_failures(a, b)}


def _power_replication(job: tuple[str, str, float, int, int]) -> dict[str, bool]:
    metric, source, amount, size, rep = job
    pair = _PAIRS[source]
    rng = np.random.default_rng([SEED + 1, rep, size, round(amount * 1000), len(metric)])
    a, b, units = exchangeable(pair, rng, clustered=True, size=size)
    b = shifted(b, metric, amount, rng)
    naive = naive_failures({metric: a[metric]}, {metric: b[metric]})
    return {
        "gate": gate_failures(a, b, units, pair.signatures)[metric],
        **{rule: verdicts[metric] for rule, verdicts in naive.items()},
        "items": len(units),
        "drop": float(np.nanmean(a[metric]) - np.nanmean(b[metric])),
    }


def _parallel(function: Callable[[Any], Any], jobs: list[Any], workers: int) -> list[Any]:
    if workers <= 1:
        return [function(job) for job in jobs]
    with get_context("fork").Pool(workers) as pool:
        return pool.map(function, jobs, chunksize=max(1, len(jobs) // (8 * workers)))


def false_alarms(replications: int, workers: int, large: int) -> list[dict[str, Any]]:
    rows = []
    for source, pair in _PAIRS.items():
        for clustered in (True, False):
            replications_here = large if len(pair.conversations) >= LARGE else replications
            began = time.perf_counter()
            jobs = [(source, clustered, r) for r in range(replications_here)]
            runs = _parallel(_false_alarm_replication, jobs, workers)
            metrics = pair.metrics
            row: dict[str, Any] = {
                "source": source,
                "clustered": clustered,
                "replications": replications_here,
                "items": len(pair.conversations),
                "conversations": len(set(pair.conversations)),
                "metrics": list(metrics),
                "seconds": time.perf_counter() - began,
            }
            for rule in RULES:
                families = {family: [m for m in names if m in metrics] for family, names in FAMILIES.items()}
                row[rule] = {
                    family: share_with_interval(
                        sum(any(run[rule][m] for m in names) for run in runs), replications_here
                    )
                    for family, names in {**families, "any": list(metrics)}.items()
                    if names
                }
                row[rule]["per_metric"] = {m: sum(run[rule][m] for run in runs) / replications_here for m in metrics}
            rows.append(row)
            print(
                f"false alarms {source} clustered={clustered}: gate {row['gate']['any']['rate']:.3f} "
                f"({row['seconds']:.0f} s)",
                flush=True,
            )
    return rows


def power(replications: int, workers: int, large: int) -> list[dict[str, Any]]:
    rows = []
    cases = [("token_f1", drop) for drop in F1_DROPS] + [("latency_ms", LATENCY_RISE)]
    for metric, amount in cases:
        for source, size in POWER_SIZES[metric]:
            if source not in _PAIRS:
                continue
            began = time.perf_counter()
            count = large if size >= LARGE else replications
            runs = _parallel(_power_replication, [(metric, source, amount, size, r) for r in range(count)], workers)
            row = {
                "metric": metric,
                "shift": (f"−{amount:g} on the mean" if metric == "token_f1" else f"+{amount:.0%} on every item"),
                "source": source,
                "size": size,
                "replications": count,
                "items_mean": float(np.mean([r["items"] for r in runs])),
                "realised_mean_change": float(np.mean([r["drop"] for r in runs])),
                "seconds": time.perf_counter() - began,
                **{rule: share_with_interval(sum(r[rule] for r in runs), count) for rule in RULES},
            }
            rows.append(row)
            print(
                f"power {metric} {amount:g} {source}@{size}: gate {row['gate']['rate']:.3f} ({row['seconds']:.0f} s)",
                flush=True,
            )
    return rows


# --- speed ------------------------------------------------------------------------------------------------------


def _speed_run(name: str, rng: np.random.Generator, n: int, base: dict[str, np.ndarray] | None) -> EvalResult:
    scores = {}
    for metric in SPEED_METRICS:
        if metric in ("exact_match", "citation_presence_rate"):
            values = (rng.random(n) < 0.3).astype(float)
        elif metric.endswith("_count"):
            values = rng.poisson(0.2, n).astype(float)
        elif metric.endswith("tokens"):
            values = np.round(rng.lognormal(7.0, 0.4, n))
        elif metric == "latency_ms":
            values = np.round(rng.lognormal(7.0, 0.5, n), 1)
        else:
            values = rng.beta(2.0, 3.0, n)
        if base is not None:  # B: A's value, changed on a third of the items
            values = np.where(rng.random(n) < 1 / 3, values, base[metric])
        scores[metric] = values
    settings = Settings()
    return EvalResult(
        tuple(f"q{i}" for i in range(n)),
        (None,) * n,
        scores,
        {},
        (),
        {m: Signature(m, {"bench": "gate"}) for m in SPEED_METRICS},
        settings,
        conversation_ids=tuple(f"c{i // 8}" for i in range(n)),
    )


def speed(n: int, repeats: int, one_at_a_time: bool) -> dict[str, Any]:
    rng = np.random.default_rng(SEED + 2)
    a = _speed_run("A", rng, n, None)
    b = _speed_run("B", rng, n, dict(a.scores))
    rules = [GateRule(m) for m in SPEED_METRICS]
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        [comparison] = compare(a, b)
        gate = apply_gate(comparison, rules, alpha=ALPHA)
        times.append(time.perf_counter() - began)
    out: dict[str, Any] = {
        "items": n,
        "metrics": len(SPEED_METRICS),
        "metric_names": list(SPEED_METRICS),
        "settings": "compare's default: percentile interval, 2,000 resamples, 9,999 sign flips",
        "seconds": times,
        "min_s": min(times),
        "goal_s": GOAL_SPEED_S,
        "meets_goal": min(times) < GOAL_SPEED_S,
        "gate_passed": gate.passed,
        "cpu_count": os.cpu_count(),
        "load_average_before": os.getloadavg(),
    }
    if one_at_a_time:
        began = time.perf_counter()
        for metric in SPEED_METRICS:
            compare(_subset(a, metric), _subset(b, metric))
        out["one_metric_at_a_time_s"] = time.perf_counter() - began
    return out


def _subset(run: EvalResult, metric: str) -> EvalResult:
    return EvalResult(
        run.item_ids,
        run.model_ids,
        {metric: run.scores[metric]},
        {},
        (),
        {metric: run.signatures[metric]},
        run.settings,
        conversation_ids=run.conversation_ids,
    )


# --- the run ----------------------------------------------------------------------------------------------------


def run(quick: bool = False, workers: int = 2, large_replications: int | None = None) -> dict[str, Any]:
    replications = 100 if quick else 1000
    large = large_replications or replications
    began = time.perf_counter()
    _PAIRS.clear()
    _PAIRS.update(load_pairs(2000 if quick else SYNTHETIC_ITEMS))
    loaded = time.perf_counter() - began
    sizes = {
        s: {
            "items": len(p.conversations),
            "conversations": len(set(p.conversations)),
            "metrics": list(p.metrics),
            "undefined": {m: int(np.isnan(p.a[m]).sum() + np.isnan(p.b[m]).sum()) for m in p.metrics},
        }
        for s, p in _PAIRS.items()
    }
    abstained = {
        s: {"a": float(np.nanmean(p.a["abstained"])), "b": float(np.nanmean(p.b["abstained"]))}
        for s, p in _PAIRS.items()
    }
    out: dict[str, Any] = {
        "name": "gate",
        "quick": quick,
        "replications": replications,
        "alpha": ALPHA,
        "seed": SEED,
        "n_resamples": N_RESAMPLES,
        "workers": workers,
        "families": {k: list(v) for k, v in FAMILIES.items()},
        "thresholds": THRESHOLDS,
        "ragas_margin": RAGAS_MARGIN,
        "pairs": sizes,
        "abstain_rates": abstained,
        "scoring_s": loaded,
        "goal_false_alarm_rate": GOAL_FALSE_ALARMS,
    }
    out["large_replications"] = large
    out["false_alarms"] = false_alarms(replications, workers, large)
    out["power"] = power(replications, workers, large)
    out["speed"] = speed(20_000 if quick else SPEED_ITEMS, 1 if quick else SPEED_REPEATS, one_at_a_time=not quick)
    out["meets_false_alarm_goal"] = all(
        row["gate"][family]["rate"] <= GOAL_FALSE_ALARMS
        for row in out["false_alarms"]
        for family in FAMILIES
        if family in row["gate"]
    )
    out["total_s"] = time.perf_counter() - began
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--quick", action="store_true", help="100 replications, 2,000 synthetic items, 20,000 for speed"
    )
    parser.add_argument("--workers", type=int, default=2, help="processes for the replications (default 2)")
    parser.add_argument(
        "--large-replications",
        type=int,
        help=f"replications for the runs of {LARGE:,} items or more (default: as many as the others; "
        "about 25 minutes on 2 cores at 1,000)",
    )
    args = parser.parse_args()
    out = run(quick=args.quick, workers=args.workers, large_replications=args.large_replications)
    path = write_result("gate-quick" if args.quick else "gate", out)
    print(json.dumps({k: out[k] for k in ("meets_false_alarm_goal", "speed", "total_s")}, indent=2, default=str))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
