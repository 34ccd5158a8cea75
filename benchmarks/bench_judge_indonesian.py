"""The packaged judge on Indonesian answers: its claim split and its IDK verdict, with the Indonesian tools and with
the English ones on the same verdicts.

1. **Claims** on IndoNLI's ``test_lay`` pairs (a seeded choice, a third of each label): the hypothesis is the
   answer, the premise the only chunk. ``judge_faithfulness`` (the judge splits the answer into claims, the
   evidence check verifies each against the chunk) as a classifier of entailed vs not (AUROC), with the record's
   language Indonesian and English; and in which language the judge wrote its claims (the prompt asks it to copy
   the text's own words): the share of claims detected as Indonesian.
2. **IDK** on IDK-MRC's ``test`` split: unanswerable questions, each answered by a held-out refusal
   (``tests/text/data/idk_refusal_templates.json``, ``report``), and answerable ones answered by their span:
   ``idk_judge`` (the judge's verdict, kept as *declines* only where the answer has words that decline in its
   language) against the truth, as balanced accuracy, Indonesian and English.

The verdicts come from one judge with a verdict cache of this benchmark's own
(``~/.cache/ragmeter/indonesian.sqlite``), so the English and Indonesian readings see the same verdicts. About 10
minutes on two cores with ``--pairs 30 --questions 20``; results:
``benchmarks/results/judge_indonesian-local.json``.

    python benchmarks/bench_judge_indonesian.py [--pairs 30] [--questions 20]
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from _common import add_judge_arguments, judge_config, write_result
from bench_indonesian import idk_mrc, indonli, refusal_lists

from ragmeter import Settings, evaluate
from ragmeter.judges import open_judge
from ragmeter.stats.correlation import auroc
from ragmeter.text import detect_language


def nli_records(n: int, seed: int) -> list[dict[str, Any]]:
    rows = indonli("test_lay")
    rng = random.Random(seed)
    chosen = [row for label in "enc" for row in rng.sample([r for r in rows if r["label"] == label], n // 3)]
    return [{"id": f"nli-{row['pair_id']}", "question": "Apa yang dikatakan teks ini?", "answer": row["hypothesis"],
             "contexts": [{"doc_id": "p", "text": row["premise"]}], "labels": {"entailed": int(row["label"] == "e")}}
            for row in chosen]


def idk_records(n: int, seed: int) -> list[dict[str, Any]]:
    questions = idk_mrc("test")
    rng = random.Random(seed)
    refusals = refusal_lists()["report"]
    unanswerable = rng.sample([q for q in questions if q["is_impossible"]], n)
    answerable = rng.sample([q for q in questions if not q["is_impossible"]], n)
    return ([{"id": q["id"], "question": q["question"], "answer": refusals[i % len(refusals)],
              "answerability": "UNANSWERABLE", "labels": {"declines": 1}} for i, q in enumerate(unanswerable)]
            + [{"id": q["id"], "question": q["question"], "answer": q["answers"][0]["text"],
                "answerability": "ANSWERABLE", "labels": {"declines": 0}} for q in answerable])


def claims_languages(cache: Path) -> dict[str, int]:
    """In which language the claims of the cache's verdicts are written (this benchmark's cache holds only its
    own verdicts)."""
    with sqlite3.connect(cache) as db:
        rows = db.execute("SELECT verdict FROM verdicts WHERE verdict IS NOT NULL")
        verdicts = [json.loads(text) for (text,) in rows]
    claims = [claim if isinstance(claim, str) else claim["claim"]
              for verdict in verdicts for claim in verdict.get("claims", ())]
    return dict(Counter(detect_language(claim) for claim in claims))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=30, help="IndoNLI pairs (a third of each label)")
    parser.add_argument("--questions", type=int, default=20, help="IDK-MRC questions of each kind")
    parser.add_argument("--seed", type=int, default=0)
    add_judge_arguments(parser)
    parser.set_defaults(cache=Path.home() / ".cache" / "ragmeter" / "indonesian.sqlite")
    args = parser.parse_args()
    started = time.perf_counter()
    judge = open_judge(judge_config(args))
    out: dict[str, Any] = {"judge": judge.identity, "claims_mode": judge.claims}
    try:
        nli = nli_records(args.pairs, args.seed)
        entailed = np.array([r["labels"]["entailed"] for r in nli])
        for language in ("id", "en"):
            result = evaluate(nli, metrics=["judge_faithfulness"], judge=judge,
                              settings=Settings(language=language))
            values = result.scores["judge_faithfulness"]
            defined = ~np.isnan(values)
            out[f"IndoNLI test_lay/{language}"] = {
                "n": len(nli), "undefined": int((~defined).sum()),
                "auroc": auroc(values[defined], entailed[defined]),
                "mean entailed": float(np.nanmean(values[entailed == 1])),
                "mean not entailed": float(np.nanmean(values[entailed == 0]))}
        out["claims by language"] = claims_languages(args.cache)
        idk = idk_records(args.questions, args.seed)
        truth = np.array([r["labels"]["declines"] for r in idk], bool)
        for language in ("id", "en"):
            result = evaluate(idk, metrics=["idk_judge"], judge=judge, settings=Settings(language=language))
            said = result.scores["idk_judge"] == 1.0
            tpr, tnr = float(said[truth].mean()), float((~said[~truth]).mean())
            out[f"IDK-MRC test/{language}"] = {"n": len(idk), "balanced_accuracy": (tpr + tnr) / 2,
                                               "refusals_declined": tpr, "answers_answered": tnr,
                                               "undefined": int(np.isnan(result.scores["idk_judge"]).sum())}
    finally:
        judge.close()
    out["seconds"] = time.perf_counter() - started
    print(json.dumps(out, indent=2, ensure_ascii=False))
    write_result(f"judge_indonesian-{args.judge}", out)


if __name__ == "__main__":
    main()
