"""The packaged judge on Indonesian answers: its claim split and its IDK verdict, with the Indonesian tools and with
the English ones on the same verdicts.

1. **Claims** on IndoNLI's ``test_lay`` pairs (a seeded choice, a third of each label): the hypothesis is the
   answer, the premise the only chunk. ``judge_faithfulness`` (the judge splits the answer into claims, the
   evidence check verifies each against the chunk) as a classifier of entailed vs not (AUROC), with the record's
   language Indonesian and English; and in which language the judge wrote its claims (detected per claim: a
   claim written in English finds no word in an Indonesian chunk). With ``--choose``, first the same on as many
   ``val`` pairs for each note of :data:`NOTES` the claim requests of Indonesian records could carry (the
   language's ``claims_note``): the one frozen was chosen there.
2. **IDK** on IDK-MRC's ``test`` split: unanswerable questions, each answered by a held-out refusal
   (``tests/text/data/idk_refusal_templates.json``, ``report``), and answerable ones answered by their span:
   ``idk_judge`` (the judge's verdict, kept as *declines* only where the answer has words that decline in its
   language) against the truth, as balanced accuracy, Indonesian and English.

The verdicts come from one judge with a verdict cache of this benchmark's own
(``~/.cache/ragmeter/indonesian.sqlite``), so the English and Indonesian readings see the same verdicts. About 10
minutes on two cores with ``--pairs 30 --questions 20``; results:
``benchmarks/results/judge_indonesian-local.json``.

    python -m benchmarks.judge.bench_judge_indonesian [--pairs 30] [--questions 20]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import add_judge_arguments, judge_config, write_result
from benchmarks._indonesian_data import idk_mrc, indonli, refusal_lists
from ragmeter import Settings, evaluate
from ragmeter.judges import open_judge
from ragmeter.judges.engine import JudgeCall
from ragmeter.judges.prompts import CLAIM_SPLIT, claim_split_request
from ragmeter.stats.correlation import auroc
from ragmeter.text import LANGUAGES, detect_language

#: The notes the claim requests of Indonesian records were chosen from, on IndoNLI's val pairs (``--choose``).
NOTES = {
    "no note": "",
    "a note in English": (
        "The TEXT is in Indonesian: write every claim in Indonesian, in the TEXT's own words, and translate nothing."
    ),
    "a note in Indonesian": (
        "Teks ini berbahasa Indonesia: tulis setiap klaim dalam bahasa Indonesia dengan "
        "kata-kata teks itu sendiri, tanpa menerjemahkan."
    ),
}


def nli_records(n: int, seed: int, split: str = "test_lay") -> list[dict[str, Any]]:
    rows = indonli(split)
    rng = random.Random(seed)
    chosen = [row for label in "enc" for row in rng.sample([r for r in rows if r["label"] == label], n // 3)]
    return [
        {
            "id": f"nli-{row['pair_id']}",
            "question": "Apa yang dikatakan teks ini?",
            "answer": row["hypothesis"],
            "contexts": [{"doc_id": "p", "text": row["premise"]}],
            "labels": {"entailed": int(row["label"] == "e")},
        }
        for row in chosen
    ]


def idk_records(n: int, seed: int) -> list[dict[str, Any]]:
    questions = idk_mrc("test")
    rng = random.Random(seed)
    refusals = refusal_lists()["report"]
    unanswerable = rng.sample([q for q in questions if q["is_impossible"]], n)
    answerable = rng.sample([q for q in questions if not q["is_impossible"]], n)
    return [
        {
            "id": q["id"],
            "question": q["question"],
            "answer": refusals[i % len(refusals)],
            "answerability": "UNANSWERABLE",
            "labels": {"declines": 1},
        }
        for i, q in enumerate(unanswerable)
    ] + [
        {
            "id": q["id"],
            "question": q["question"],
            "answer": q["answers"][0]["text"],
            "answerability": "ANSWERABLE",
            "labels": {"declines": 0},
        }
        for q in answerable
    ]


def claims_languages(judge: Any, records: list[dict[str, Any]], language: Any) -> dict[str, int]:
    """In which language the judge writes the claims of the records' answers (its verdicts are cached: the
    metric's run asked the same)."""
    calls = [JudgeCall(CLAIM_SPLIT, claim_split_request(r["answer"], language), 1) for r in records]
    claims = [claim for outcome in judge.run(calls) if outcome.verdict for claim in outcome.verdict["claims"]]
    return dict(Counter(detect_language(claim) for claim in claims))


def faithfulness(judge: Any, records: list[dict[str, Any]], language: str) -> dict[str, Any]:
    entailed = np.array([r["labels"]["entailed"] for r in records])
    values = evaluate(
        records, metrics=["judge_faithfulness"], judge=judge, settings=Settings(language=language)
    ).scores["judge_faithfulness"]
    defined = ~np.isnan(values)
    return {
        "n": len(records),
        "undefined": int((~defined).sum()),
        "auroc": auroc(values[defined], entailed[defined]),
        "mean entailed": float(np.nanmean(values[entailed == 1])),
        "mean not entailed": float(np.nanmean(values[entailed == 0])),
    }


def choose_note(judge: Any, records: list[dict[str, Any]]) -> dict[str, Any]:
    """Each of :data:`NOTES` given to the Indonesian language in turn, on ``records``."""
    frozen = LANGUAGES["id"]
    out = {}
    try:
        for name, note in NOTES.items():
            LANGUAGES["id"] = dataclasses.replace(frozen, claims_note=note)
            out[name] = {
                **faithfulness(judge, records, "id"),
                "claims by language": claims_languages(judge, records, LANGUAGES["id"]),
            }
    finally:
        LANGUAGES["id"] = frozen
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=30, help="IndoNLI pairs (a third of each label)")
    parser.add_argument("--questions", type=int, default=20, help="IDK-MRC questions of each kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--choose", action="store_true", help="first compare the claims notes (NOTES) on as many of IndoNLI's val pairs"
    )
    add_judge_arguments(parser)
    parser.set_defaults(cache=Path.home() / ".cache" / "ragmeter" / "indonesian.sqlite")
    args = parser.parse_args()
    started = time.perf_counter()
    judge = open_judge(judge_config(args))
    out: dict[str, Any] = {"judge": judge.identity, "claims_mode": judge.claims}
    try:
        if args.choose:
            out["IndoNLI val: the claims note"] = choose_note(judge, nli_records(args.pairs, args.seed, "val"))
        nli = nli_records(args.pairs, args.seed)
        for language in ("id", "en"):
            out[f"IndoNLI test_lay/{language}"] = faithfulness(judge, nli, language)
        out["IndoNLI test_lay/id"]["claims by language"] = claims_languages(judge, nli, LANGUAGES["id"])
        idk = idk_records(args.questions, args.seed)
        truth = np.array([r["labels"]["declines"] for r in idk], bool)
        for language in ("id", "en"):
            result = evaluate(idk, metrics=["idk_judge"], judge=judge, settings=Settings(language=language))
            said = result.scores["idk_judge"] == 1.0
            tpr, tnr = float(said[truth].mean()), float((~said[~truth]).mean())
            out[f"IDK-MRC test/{language}"] = {
                "n": len(idk),
                "balanced_accuracy": (tpr + tnr) / 2,
                "refusals_declined": tpr,
                "answers_answered": tnr,
                "undefined": int(np.isnan(result.scores["idk_judge"]).sum()),
            }
    finally:
        judge.close()
    out["seconds"] = time.perf_counter() - started
    print(json.dumps(out, indent=2, ensure_ascii=False))
    write_result(f"judge_indonesian-{args.judge}", out)


if __name__ == "__main__":
    main()
