"""Throughput of the lexical metrics (token F1 and Exact Match), in (prediction, reference) pairs per second.

Pairs are MT-RAG's human-evaluation tasks (``shared/data/mtrag/human_eval_tasks.jsonl``:
``predictions[0].text`` against ``targets[0].text``, about 98 and 88 words), repeated to about 200,000
pairs (20,000 with ``--quick``). When the file is absent, synthetic pairs of the same length are used.

Three timings:

- ``direct``: ``ragmeter.token_f1(p, [r])`` over every pair, then ``ragmeter.exact_match(p, [r])``;
  pairs/s = pairs / (time of F1 + time of EM), i.e. both metrics per pair;
- ``evaluate``: ``ragmeter.evaluate(records, metrics=["token_f1", "exact_match"])`` over the same pairs
  as prebuilt :class:`ragmeter.Record` objects (building them is not timed), with the default settings
  (2000-resample BCa for token F1's mean, Wilson for EM's rate);
- ``evaluate_scoring``: the same with ``Settings(n_resamples=100)``, which leaves the scoring loop
  (citation stripping, both metrics, per-item rows) and only a token bootstrap.
"""

from __future__ import annotations

import json
import random
import sys
import time
from typing import Any

from benchmarks._mtrag_data import HUMAN_EVAL_TASKS as TASKS_FILE
from benchmarks._mtrag_data import prediction_reference_pairs

FULL_PAIRS = 200_000
QUICK_PAIRS = 20_000


def base_pairs() -> tuple[list[tuple[str, str]], str]:
    """Distinct (prediction, reference) pairs and where they come from."""
    if TASKS_FILE.is_file():
        pairs = prediction_reference_pairs(TASKS_FILE)
        return pairs, f"MT-RAG {TASKS_FILE.name} ({len(pairs)} pairs, repeated)"
    rng = random.Random(0)
    words = [f"w{i}" for i in range(5000)] + ["the", "a", "an", "of", "and", "to", "in", "is"] * 200
    pairs = []
    for _ in range(500):
        reference = [rng.choice(words) for _ in range(88)]
        prediction = [w if rng.random() < 0.5 else rng.choice(words) for w in reference] + ["more"] * 10
        pairs.append((" ".join(prediction).capitalize() + ".", " ".join(reference).capitalize() + "."))
    return pairs, "synthetic (500 pairs of ~98/88 words, repeated)"


def run(*, quick: bool = False) -> dict[str, Any]:
    import ragmeter
    from ragmeter import Record, Settings

    distinct, source = base_pairs()
    target = QUICK_PAIRS if quick else FULL_PAIRS
    repeats = max(1, round(target / len(distinct)))
    pairs = distinct * repeats
    n = len(pairs)

    start = time.perf_counter()
    for prediction, reference in pairs:
        ragmeter.token_f1(prediction, [reference])
    t_f1 = time.perf_counter() - start
    start = time.perf_counter()
    for prediction, reference in pairs:
        ragmeter.exact_match(prediction, [reference])
    t_em = time.perf_counter() - start

    records = [Record(id=str(i), question="q", answer=p, references=(r,)) for i, (p, r) in enumerate(pairs)]
    timings = {}
    for label, settings in (("evaluate", Settings()), ("evaluate_scoring", Settings(n_resamples=100))):
        start = time.perf_counter()
        result = ragmeter.evaluate(records, metrics=["token_f1", "exact_match"], settings=settings)
        timings[label] = time.perf_counter() - start
    f1_mean, em_rate = result.summary("token_f1").value, result.summary("exact_match").value

    out = {
        "name": "lexical_throughput",
        "source": source,
        "pairs": n,
        "token_f1_s": t_f1,
        "exact_match_s": t_em,
        "token_f1_pairs_per_s": n / t_f1,
        "exact_match_pairs_per_s": n / t_em,
        "direct_pairs_per_s": n / (t_f1 + t_em),
        "evaluate_s": timings["evaluate"],
        "evaluate_pairs_per_s": n / timings["evaluate"],
        "evaluate_scoring_s": timings["evaluate_scoring"],
        "evaluate_scoring_pairs_per_s": n / timings["evaluate_scoring"],
        "token_f1_mean": f1_mean,
        "exact_match_rate": em_rate,
        "quick": quick,
    }
    print(
        f"[lexical] {n:,} pairs: direct F1+EM {out['direct_pairs_per_s']:,.0f} pairs/s "
        f"(F1 {out['token_f1_pairs_per_s']:,.0f}/s, EM {out['exact_match_pairs_per_s']:,.0f}/s); "
        f"evaluate {out['evaluate_pairs_per_s']:,.0f} pairs/s ({timings['evaluate']:.1f} s, default "
        f"2000 resamples), {out['evaluate_scoring_pairs_per_s']:,.0f} pairs/s with 100 resamples"
    )
    return out


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
