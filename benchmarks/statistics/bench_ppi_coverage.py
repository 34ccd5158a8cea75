"""Coverage of the prediction-powered intervals (``ragmeter.stats.ppi``, issue 32), by simulation.

Each dataset is a run of 5,000 answers with a human rating on 1–5 (``round(3 + z)``, clipped) and a judge's
rating on the same scale (``round(3 + ρ·z + √(1 − ρ²)·e + offset)``, clipped): a good judge (ρ = 0.8), a weak
one (ρ = 0.3), a useless one (ρ = 0) and a biased one (ρ = 0.8, offset +0.7). Of the 5,000, 50, 150 or 500 are
labelled. *Independent*: z and e are independent across answers and the labelled ones are drawn one by one.
*Clustered*: answers come in conversations of five turns that share half of z's variance (and half of e's), and
the labels are drawn by conversation (10, 30 or 100 whole conversations), the design where clusters matter
most. The target is the mean human rating of the dataset's 5,000 answers.

For each case and each of ``--repetitions`` datasets (2,000; seed 0): does the 95 % PPI++ interval, as
``ragmeter estimate`` computes it (the jackknife over conversations, or over answers in the independent design),
cover the target, and the labelled-only one; the PPI++ interval's width over the labelled-only one's; the
effective labels. The column *other*: in the independent design, the coverage of the plug-in interval
(``ppi-python``'s formulas); in the clustered one, that of the jackknife over answers (conversations ignored).

    python -m benchmarks.statistics.bench_ppi_coverage [--repetitions 2000]

Results: ``benchmarks/results/ppi_coverage.json``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from benchmarks._common import write_result
from ragmeter.stats.intervals import wilson_interval
from ragmeter.stats.ppi import effective_labels, labelled_mean, ppi_mean

ITEMS = 5000
TURNS = 5
JUDGES = {
    "good (ρ 0.8)": (0.8, 0.0),
    "weak (ρ 0.3)": (0.3, 0.0),
    "useless (ρ 0)": (0.0, 0.0),
    "biased (ρ 0.8, +0.7)": (0.8, 0.7),
}
LABELS = (50, 150, 500)


def dataset(rng: np.random.Generator, rho: float, offset: float, clustered: bool) -> tuple[np.ndarray, ...]:
    """(human ratings, judge ratings, conversations) of one run."""
    conversations = np.repeat(np.arange(ITEMS // TURNS), TURNS)
    if clustered:
        z = math.sqrt(0.5) * rng.normal(size=ITEMS // TURNS)[conversations] + math.sqrt(0.5) * rng.normal(size=ITEMS)
        e = math.sqrt(0.5) * rng.normal(size=ITEMS // TURNS)[conversations] + math.sqrt(0.5) * rng.normal(size=ITEMS)
    else:
        z, e = rng.normal(size=ITEMS), rng.normal(size=ITEMS)
    human = np.clip(np.round(3 + z), 1, 5)
    judge = np.clip(np.round(3 + rho * z + math.sqrt(1 - rho * rho) * e + offset), 1, 5)
    return human, judge, conversations


def one_case(rho: float, offset: float, clustered: bool, n: int, repetitions: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    covered = covered_alone = covered_other = 0
    ratios, worth = [], []
    answers = np.arange(ITEMS)
    for _ in range(repetitions):
        human, judge, conversations = dataset(rng, rho, offset, clustered)
        if clustered:
            labelled = np.isin(conversations, rng.choice(ITEMS // TURNS, n // TURNS, replace=False))
        else:
            labelled = np.zeros(ITEMS, bool)
            labelled[rng.choice(ITEMS, n, replace=False)] = True
        units = conversations if clustered else answers  # as ragmeter estimate clusters them
        target = human.mean()
        tuned = ppi_mean(
            human[labelled],
            judge[labelled],
            judge[~labelled],
            clusters=units[labelled],
            unlabelled_clusters=units[~labelled],
        )
        alone = labelled_mean(human[labelled], clusters=units[labelled])
        other = (
            ppi_mean(
                human[labelled],
                judge[labelled],
                judge[~labelled],
                clusters=answers[labelled],
                unlabelled_clusters=answers[~labelled],
            )
            if clustered
            else ppi_mean(human[labelled], judge[labelled], judge[~labelled])
        )
        covered += tuned.low <= target <= tuned.high
        covered_alone += alone.low <= target <= alone.high
        covered_other += other.low <= target <= other.high
        ratios.append(tuned.width / alone.width)
        worth.append(effective_labels(tuned, alone))
    low, high = wilson_interval(covered, repetitions)
    return {
        "coverage": covered / repetitions,
        "coverage_interval": [round(low, 4), round(high, 4)],
        "labelled_only_coverage": covered_alone / repetitions,
        ("coverage_if_conversations_ignored" if clustered else "plug_in_coverage"): covered_other / repetitions,
        "width_vs_labelled_only": float(np.mean(ratios)),
        "effective_labels": float(np.median(worth)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    rows = []
    print(
        f"{'design':<12}{'judge':<22}{'labels':>7}{'PPI++ cover':>13}{'alone':>8}{'width':>8}{'eff. n':>8}{'other':>13}"
    )
    for design, clustered in (("independent", False), ("clustered", True)):
        for judge, (rho, offset) in JUDGES.items():
            for n in LABELS:
                row = {
                    "design": design,
                    "judge": judge,
                    "labels": n,
                    **one_case(rho, offset, clustered, n, args.repetitions, args.seed + len(rows)),
                }
                rows.append(row)
                other = row.get("coverage_if_conversations_ignored", row.get("plug_in_coverage"))
                print(
                    f"{design:<12}{judge:<22}{n:>7}{row['coverage']:>13.3f}{row['labelled_only_coverage']:>8.3f}"
                    f"{row['width_vs_labelled_only']:>8.2f}{row['effective_labels']:>8.0f}{other:>13.3f}"
                )
    worst = min(r["coverage"] for r in rows)
    out = {
        "items": ITEMS,
        "turns_per_conversation": TURNS,
        "repetitions": args.repetitions,
        "seed": args.seed,
        "confidence": 0.95,
        "rows": rows,
        "lowest_coverage": worst,
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(f"lowest PPI++ coverage: {worst:.3f}; {out['seconds']} s")
    print(f"written: {write_result('ppi_coverage', out)}")


if __name__ == "__main__":
    main()
