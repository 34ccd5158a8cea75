"""Speed of ragmeter's ROUGE-L against Google's ``rouge-score``, value for value.

Pairs are MT-RAG's human-evaluation tasks (``shared/data/mtrag/human_eval_tasks.jsonl``:
``predictions[0].text`` against ``targets[0].text``, about 98 and 88 words), the 477 pairs cycled to
exactly 20,000 (2,000 with ``--quick``). Both sides run in this one process, one after the other, over
the same pairs:

- ``ragmeter``: ``ragmeter.metrics.rouge.rouge_l(prediction, reference)`` (rapidfuzz's bit-parallel LCS);
- ``rouge-score``: ``RougeScorer(["rougeL"], use_stemmer=False).score(reference, prediction)["rougeL"]
  .fmeasure`` (the scorer is built outside the timer; its LCS is a pure-Python dynamic programme).

Every value must agree within 1e-12 (the benchmark fails otherwise); the largest absolute difference
is reported. Goal: rouge-score time / ragmeter time ≥ 10. Without the MT-RAG file the benchmark is
skipped with a message.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from typing import Any

from benchmarks._mtrag_data import HUMAN_EVAL_TASKS as TASKS_FILE
from benchmarks._mtrag_data import missing, prediction_reference_pairs

FULL_PAIRS = 20_000
QUICK_PAIRS = 2_000
GOAL_RATIO = 10.0
TOLERANCE = 1e-12


def run(*, quick: bool = False) -> dict[str, Any]:
    skipped = missing("rouge_l_speed", "rouge", TASKS_FILE)
    if skipped:
        return skipped

    from rouge_score import rouge_scorer

    from ragmeter.metrics.rouge import rouge_l

    distinct = prediction_reference_pairs(TASKS_FILE)
    n = QUICK_PAIRS if quick else FULL_PAIRS
    pairs = list(itertools.islice(itertools.cycle(distinct), n))

    start = time.perf_counter()
    ours = [rouge_l(prediction, reference) for prediction, reference in pairs]
    t_ragmeter = time.perf_counter() - start

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    start = time.perf_counter()
    theirs = [scorer.score(reference, prediction)["rougeL"].fmeasure for prediction, reference in pairs]
    t_rouge_score = time.perf_counter() - start

    differences = [abs(a - b) for a, b in zip(ours, theirs, strict=True)]
    max_diff = max(differences)
    mismatches = sum(d > TOLERANCE for d in differences)
    if mismatches:
        worst = differences.index(max_diff)
        raise AssertionError(
            f"{mismatches} of {n} ROUGE-L values differ by more than {TOLERANCE} "
            f"(worst: pair {worst % len(distinct)}, ragmeter {ours[worst]!r} vs "
            f"rouge-score {theirs[worst]!r})"
        )
    ratio = t_rouge_score / t_ragmeter
    out = {
        "name": "rouge_l_speed",
        "source": f"MT-RAG {TASKS_FILE.name} ({len(distinct)} pairs, cycled)",
        "pairs": n,
        "distinct_pairs": len(distinct),
        "ragmeter_s": t_ragmeter,
        "rouge_score_s": t_rouge_score,
        "ragmeter_pairs_per_s": n / t_ragmeter,
        "rouge_score_pairs_per_s": n / t_rouge_score,
        "ratio": ratio,
        "goal_ratio": GOAL_RATIO,
        "meets_goal": ratio >= GOAL_RATIO,
        "max_abs_diff": max_diff,
        "tolerance": TOLERANCE,
        "all_equal": True,
        "mean_rouge_l": sum(ours) / n,
        "quick": quick,
    }
    print(
        f"[rouge] {n:,} pairs: ragmeter rouge_l {t_ragmeter:.2f} s ({out['ragmeter_pairs_per_s']:,.0f}/s), "
        f"rouge-score {t_rouge_score:.2f} s ({out['rouge_score_pairs_per_s']:,.0f}/s) → ×{ratio:.1f} "
        f"(goal ≥ {GOAL_RATIO:g}: {'met' if out['meets_goal'] else 'NOT met'}); max |Δ| = {max_diff:.3g}"
    )
    return out


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
