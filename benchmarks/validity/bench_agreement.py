"""Every offline ragmeter signal against MT-RAG's dev-split human ratings, through ``ragmeter.human.with_people``
(issue 13), next to MT-RAG's released metrics on the same items.

The 234 answers of MT-RAG's dev split (``human_eval_tasks.jsonl`` records whose ``split`` is ``dev``: the
reference answers and those of GPT-4o and Llama-3.1-405B) are scored by ``evaluate`` with the offline signals
that apply (no judge: the judged ones are measured by ``bench_judge_validity``), their ``items.jsonl`` written as
a run writes it, and each signal checked with ``ragmeter.human.with_people`` against human faithfulness and completeness
(``human_eval_ratings_dev.jsonl``: each item's annotators' mean; intervals resample conversations), beside the
released values in ``human_eval_expected.jsonl`` and the annotators' own agreement (the ceiling).

    python -m benchmarks.validity.bench_agreement

Results: ``benchmarks/results/agreement-mtrag-dev.json``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import DATA, write_result
from ragmeter import Settings, agreement, evaluate, read_records

OURS = [
    "faithfulness_offline",
    "BertKPrec",
    "Extractiveness_RougeL",
    "RB_agg",
    "RB_agg_idk",
    "RougeL_stemFalse",
    "BertscoreR",
    "Recall",
]
RELEASED = ["rl_f", "rb_llm", "rb_agg", "Bert-KPrec", "RougeL", "Bert-Rec"]
LABELS = ("faithfulness", "completeness")


def main() -> None:
    tasks, ratings = DATA / "human_eval_tasks.jsonl", DATA / "human_eval_ratings_dev.jsonl"
    if not tasks.is_file():
        sys.exit(f"MT-RAG's data is missing: {tasks}")
    records = [r for r in read_records(tasks, format="mtrag") if r.metadata.get("split") == "dev"]
    started = time.perf_counter()
    result = evaluate(records, metrics=OURS, settings=Settings(n_resamples=200))
    scored = time.perf_counter() - started
    settings = Settings(n_resamples=1000)
    rows, signatures = [], set()
    with tempfile.TemporaryDirectory() as folder:
        items = Path(folder) / "items.jsonl"
        items.write_text("".join(json.dumps(row) + "\n" for row in result.items()), encoding="utf-8")
        for source, path, metrics in (
            ("ragmeter", items, OURS),
            ("released", DATA / "human_eval_expected.jsonl", RELEASED),
        ):
            for metric in metrics:
                row = {"source": source, "metric": metric}
                for label in LABELS:
                    figures = agreement(path, ratings, metric=metric, label=label, settings=settings)
                    spearman = figures.figures[0]
                    signatures.add(figures.signature.split("|ci:")[1])
                    row[label] = {
                        "n": figures.n,
                        "spearman": round(spearman.value, 3),
                        "low": round(spearman.low, 3),
                        "high": round(spearman.high, 3),
                        "kendall": round(figures.figures[1].value, 3),
                        "ceiling": round(figures.ceiling.value, 3) if figures.ceiling else None,
                    }
                rows.append(row)
    out = {
        "items": len(records),
        "score_s": round(scored, 1),
        "rows": rows,
        "statistics": sorted(signatures),
        "signatures": {m: result.signatures[m].render() for m in result.metrics},
    }
    print(
        f"{len(records)} dev items; ceiling (annotators, leave-one-out Spearman): faithfulness "
        f"{rows[0]['faithfulness']['ceiling']}, completeness {rows[0]['completeness']['ceiling']}"
    )
    print(f"{'signal':<34}{'n':>5}{'ρ faithfulness [95%]':>26}{'ρ completeness [95%]':>26}")
    for row in rows:
        cells = "".join(
            f"{row[label]['spearman']:>10.3f} [{row[label]['low']:.2f}, {row[label]['high']:.2f}]" for label in LABELS
        )
        print(f"{row['source'] + ' ' + row['metric']:<34}{row['faithfulness']['n']:>5}{cells}")
    print(f"written: {write_result('agreement-mtrag-dev', out, ensure_ascii=True)}")


if __name__ == "__main__":
    main()
