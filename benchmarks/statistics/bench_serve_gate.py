"""``ragmeter serve``'s drop checks (issue 49): false alarms on windows where nothing changed, and the drops they catch.

    python -m benchmarks.statistics.bench_serve_gate [--quick]

Data: the CI gate benchmark's real runs, scored once with the offline metrics (``bench_gate.load_pairs``): the demo
(45 items a run), MT-RAG's released answers of two models (159 tasks each) and a synthetic 10,000-record log. Each
source's items of both runs are one pool of traffic, its conversations the units.

1. **False alarms.** Per replication, a baseline window and a window are drawn from the same pool, independently:
   conversations with replacement (each draw a new conversation) until the window holds ``size`` traces (50, 200,
   1,000). ``check_window`` then applies a regression rule to every gated metric of the source (token F1, ROUGE-L,
   Overlap, total tokens; exact match and citation presence; latency), Holm over them, α = 0.05, at least 30
   defined scores a side. Any ``drop`` is a false alarm. Rate with its Wilson 95 % interval; goal ≤ 5 %.
2. **Drops caught.** The same draws with the window's token F1 lowered by 2δ on a random half of its traces
   (δ = 0.02, 0.05: the mean drops by about δ); caught when token F1's verdict is a drop (all rules applied, as a
   team would run them).
3. **Cost.** Seconds per check, for the window sizes above.

The permutation test runs ``N_PERMUTATIONS`` reassignments here (``check_window`` runs 9,999 by default): the
rate of p-values below α is at most α for any count (the p-value is (count + 1) / (n + 1)), so fewer only cost
resolution, not validity. Every draw comes from ``numpy.random.default_rng`` with the seeds below. Writes
``results/serve_gate.json`` (``results/serve_gate-quick.json`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from benchmarks._common import share_with_interval, write_result
from benchmarks.statistics.bench_gate import Pair, exchangeable, load_pairs, shifted
from ragmeter.analysis.gate import GateRule
from ragmeter.serve.drops import Sample, check_window

ALPHA = 0.05
SEED = 0
SIZES = (50, 200, 1_000)
DELTAS = (0.02, 0.05)
N_RESAMPLES = 200
N_PERMUTATIONS = 999
GOAL_FALSE_ALARMS = 0.05


def _pool(pair: Pair) -> Pair:
    """Both runs' items as one pool of traffic (the second run's conversations renamed apart): ``a`` holds it."""
    values = {m: np.concatenate([pair.a[m], pair.b[m]]) for m in pair.metrics}
    conversations = np.concatenate([[f"a:{c}" for c in pair.conversations], [f"b:{c}" for c in pair.conversations]])
    return Pair(pair.source, values, values, conversations, pair.signatures)


def _window(pool: Pair, size: int, rng: np.random.Generator, label: str) -> tuple[dict[str, np.ndarray], Sample]:
    values, _, units = exchangeable(pool, rng, clustered=True, size=size)  # a and b are the same pool: a draw
    return values, _sample(label, values, tuple(f"{label}{u}" for u in units))


def _sample(label: str, values: dict[str, np.ndarray], clusters: tuple[str, ...]) -> Sample:
    return Sample(label, values, dict.fromkeys(values, clusters))


def replicate(pool: Pair, size: int, replications: int, seed: int) -> dict[str, Any]:
    """A/A windows and the same windows with token F1 lowered: alarms, catches and seconds per check."""
    rng = np.random.default_rng(seed)
    rules = [GateRule(m) for m in pool.metrics]
    alarms, caught = 0, dict.fromkeys(DELTAS, 0)
    per_metric = dict.fromkeys(pool.metrics, 0)
    seconds = 0.0
    for _ in range(replications):
        _, baseline = _window(pool, size, rng, "a")
        values, window = _window(pool, size, rng, "b")
        began = time.perf_counter()
        verdicts = check_window(
            window, baseline, rules, alpha=ALPHA, n_resamples=N_RESAMPLES, n_permutations=N_PERMUTATIONS, seed=SEED
        )
        seconds += time.perf_counter() - began
        dropped = [v.rule.metric for v in verdicts if v.status == "drop"]
        alarms += bool(dropped)
        for metric in dropped:
            per_metric[metric] += 1
        for delta in DELTAS:
            lowered = _sample("b", shifted(values, "token_f1", delta, rng), window.clusters["token_f1"])
            verdicts = check_window(
                lowered, baseline, rules, alpha=ALPHA, n_resamples=N_RESAMPLES, n_permutations=N_PERMUTATIONS, seed=SEED
            )
            caught[delta] += any(v.rule.metric == "token_f1" and v.status == "drop" for v in verdicts)
    return {
        "source": pool.source,
        "size": size,
        "replications": replications,
        "metrics": list(pool.metrics),
        "false_alarms": share_with_interval(alarms, replications),
        "false_alarms_per_metric": {m: n / replications for m, n in per_metric.items()},
        "token_f1_drop_caught": {str(d): share_with_interval(n, replications) for d, n in caught.items()},
        "seconds_per_check": seconds / replications,
    }


def run(quick: bool) -> dict[str, Any]:
    began = time.perf_counter()
    pairs = load_pairs(2_000 if quick else 10_000)
    rows = []
    for k, pair in enumerate(pairs.values()):
        pool = _pool(pair)
        for size in SIZES:
            replications = 100 if quick else (200 if size >= 1_000 else 1_000)
            row = replicate(pool, size, replications, seed=SEED + 100 * k + size)
            rows.append(row)
            print(
                f"{row['source']} {size}: false alarms {row['false_alarms']['rate']:.3f}, token F1 −0.05 caught "
                f"{row['token_f1_drop_caught']['0.05']['rate']:.2f}, {row['seconds_per_check']:.2f} s a check",
                flush=True,
            )
    worst = max(row["false_alarms"]["rate"] for row in rows)
    return {
        "alpha": ALPHA,
        "n_resamples": N_RESAMPLES,
        "n_permutations": N_PERMUTATIONS,
        "rows": rows,
        "meets_false_alarm_goal": worst <= GOAL_FALSE_ALARMS,
        "total_s": time.perf_counter() - began,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="100 replications a setting, a 2,000-record log")
    args = parser.parse_args()
    out = run(args.quick)
    path = write_result("serve_gate-quick" if args.quick else "serve_gate", out)
    print(json.dumps({k: out[k] for k in ("meets_false_alarm_goal", "total_s")}, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
