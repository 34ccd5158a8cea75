"""The LLM annotator (``ragmeter labels annotate``) with a real judge: are its files valid, and does it agree with
people where people labelled?

1. MT-RAG: the first N records (``--mtrag N``, 20) of the shuffled dev split (as ``bench_judge_validity``) whose
   passages carry MT-RAG's ``context_relevance`` (read as ``topically_relevant``); the annotator's chunk labels
   against them: raw agreement, its share of 1s beside the people's, Cohen's κ (undefined when the people's
   labels are all one class, as they are when every passage shown was judged relevant).
2. The demo: the first M demo records (``--demo M``, all 45) with every label; the file it writes is read back by
   ``labels merge``'s reader against the records beside the demo's two people (``demo-labels-ana.csv``,
   ``demo-labels-ben.csv``), which must find no problem; per label, Cohen's κ of the LLM with each person and of
   the two people, and each one's share of 1s. The failed calls are counted.
3. MT-RAG's grounding: the first K shuffled dev answers of the non-reference responders (``--grounding K``, 24:
   ``bench_judge_validity``'s records, whose claims verdicts its cache holds) labelled ``support_present`` and
   ``unsupported_claim_present``; Spearman of each (the second negated: an unsupported claim should mean less
   faithful) with mean human faithfulness, through ``ragmeter.human.with_people``.

Seconds and judge tokens per record are reported. The judge is the packaged one unless ``--judge openai``; verdicts
are cached (``--cache``). Results: ``benchmarks/results/annotator-<judge>.json``.

    python -m benchmarks.judge.bench_annotator --judge local --mtrag 20 --demo 45
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import DATA, add_judge_arguments, dev_records, judge_config, write_result
from ragmeter import Settings, agreement, read_records
from ragmeter.core.records import ALL_LABELS, CHUNK_LABELS
from ragmeter.human.annotation_files import read_annotations, write_rows
from ragmeter.human.annotator import GROUNDING, annotate
from ragmeter.io.demo import demo_path
from ragmeter.judges import open_judge
from ragmeter.stats.inter_annotator import cohen_kappa

_COUNTS = ("calls", "cached", "requests", "repairs", "failures", "prompt_tokens", "completion_tokens")


def _timed(records: list[Any], judge: Any, labels: tuple[str, ...]) -> tuple[Any, float, dict[str, Any]]:
    """The annotation, its seconds, and what the judge did for it, by prompt."""
    before = {name: {k: getattr(u, k) for k in _COUNTS} for name, u in judge.usage.items()}
    started = time.perf_counter()
    result = annotate(records, judge, labels=labels)
    seconds = time.perf_counter() - started
    spent = {
        name: {k: getattr(u, k) - before.get(name, {}).get(k, 0) for k in _COUNTS} for name, u in judge.usage.items()
    }
    return result, seconds, spent


def versus_humans(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Spearman of the annotator's support_present and of 1 − unsupported_claim_present with mean human
    faithfulness, through ``ragmeter.human.with_people`` (the answer rows written as a scores file)."""
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        scores = Path(folder) / "labels.jsonl"
        scores.write_text(
            "".join(
                json.dumps(
                    {
                        "task_id": r["record_id"],
                        "model_id": r["model_id"],
                        "support_present": r["support_present"],
                        "no_unsupported_claim": 1 - r["unsupported_claim_present"],
                    }
                )
                + "\n"
                for r in rows
                if r["unit"] == "answer"
            ),
            encoding="utf-8",
        )
        for metric in ("support_present", "no_unsupported_claim"):
            result = agreement(
                scores,
                DATA / "human_eval_ratings_dev.jsonl",
                metric=metric,
                label="faithfulness",
                settings=Settings(n_resamples=1000),
            )
            spearman = result.figures[0]
            out[metric] = {
                "n": result.n,
                "spearman": round(spearman.value, 3),
                "low": round(spearman.low, 3),
                "high": round(spearman.high, 3),
                "share_of_1": round(float(np.mean(result.scores)), 3),
            }
    return out


def versus_people(votes: dict[Any, dict[str, dict[str, int]]]) -> dict[str, dict[str, Any]]:
    """Per label, over the units all three labelled: κ of the LLM with Ana and with Ben, and of the two people;
    each one's share of 1s."""
    out = {}
    for label in ALL_LABELS:
        units = [unit[label] for unit in votes.values() if label in unit and len(unit[label]) == 3]
        if not units:
            continue
        llm = next(a for a in units[0] if a not in ("ana", "ben"))
        column = {a: [u[a] for u in units] for a in ("ana", "ben", llm)}
        out[label] = {
            "units": len(units),
            **{f"share_of_1_{'llm' if a == llm else a}": round(float(np.mean(v)), 3) for a, v in column.items()},
            "kappa_llm_ana": round(cohen_kappa(column[llm], column["ana"]), 3),
            "kappa_llm_ben": round(cohen_kappa(column[llm], column["ben"]), 3),
            "kappa_ana_ben": round(cohen_kappa(column["ana"], column["ben"]), 3),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_judge_arguments(parser)
    parser.add_argument("--mtrag", type=int, default=20, help="MT-RAG dev records with relevance labels")
    parser.add_argument("--demo", type=int, default=45, help="demo records, every label")
    parser.add_argument("--grounding", type=int, default=24, help="non-reference dev answers, grounding labels")
    args = parser.parse_args()

    labelled = [r for r in dev_records(None) if any("topically_relevant" in c.labels for c in r.contexts)]
    mtrag = list({r.id: r for r in labelled}.values())[: args.mtrag]  # one answer per task: the labels are the task's
    demo = list(read_records(demo_path()))[: args.demo]
    judge = open_judge(judge_config(args))
    try:
        on_mtrag, mtrag_s, mtrag_usage = _timed(mtrag, judge, CHUNK_LABELS)
        on_demo, demo_s, demo_usage = _timed(demo, judge, ALL_LABELS)
        grounded = [r for r in dev_records(None) if r.model_id != "reference"][: args.grounding]
        on_grounding, grounding_s, grounding_usage = _timed(grounded, judge, GROUNDING)
        identity = judge.identity
    finally:
        judge.close()

    by_unit = {(r["record_id"], r["model_id"], r["rank"]): r for r in on_mtrag.rows if r["unit"] == "chunk"}
    pairs = [
        (
            int(by_unit[(rec.id, rec.model_id or "", rank)]["topically_relevant"]),
            int(chunk.labels["topically_relevant"]),
        )
        for rec in mtrag
        for rank, chunk in enumerate(rec.contexts, start=1)
        if "topically_relevant" in chunk.labels and (rec.id, rec.model_id or "", rank) in by_unit
    ]
    ours, theirs = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    relevance = {
        "chunks": len(pairs),
        "raw_agreement": round(float(np.mean(ours == theirs)), 3) if pairs else None,
        "llm_share_of_1": round(float(ours.mean()), 3) if pairs else None,
        "people_share_of_1": round(float(theirs.mean()), 3) if pairs else None,
        "cohen_kappa": cohen_kappa(list(ours), list(theirs)) if pairs else None,
        "failures": on_mtrag.failures,
    }
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "llm.jsonl"
        written = write_rows(on_demo.rows, path, ALL_LABELS)
        people = [] if len(demo) < 45 else [demo_path().with_name(f"demo-labels-{p}.csv") for p in ("ana", "ben")]
        read = read_annotations([*people, path], demo)
    demo_out = {
        "records": len(demo),
        "rows": written,
        "problems": [str(e) for e in read.errors][:20],
        "n_problems": len(read.errors),
        "failures": on_demo.failures,
        "versus_people": versus_people(read.votes) if people else None,
    }
    grounding = {
        "records": len(grounded),
        "seconds": round(grounding_s, 1),
        "usage": grounding_usage,
        "versus_human_faithfulness": versus_humans(on_grounding.rows),
    }
    out = {
        "judge": identity,
        "mtrag": {
            "records": len(mtrag),
            "seconds": round(mtrag_s, 1),
            "usage": mtrag_usage,
            "topically_relevant": relevance,
        },
        "demo": {**demo_out, "seconds": round(demo_s, 1), "usage": demo_usage},
        "grounding": grounding,
    }
    kappa = relevance["cohen_kappa"]
    print(f"judge {identity}")
    print(
        f"MT-RAG, {len(mtrag)} records, {len(pairs)} labelled passages ({mtrag_s:.0f} s): raw agreement "
        f"{relevance['raw_agreement']}, LLM 1s {relevance['llm_share_of_1']} vs people's "
        f"{relevance['people_share_of_1']}, κ {kappa}; failed calls {len(on_mtrag.failures)}"
    )
    print(
        f"demo, {len(demo)} records ({demo_s:.0f} s): {written} rows, {len(read.errors)} problems when read back "
        f"beside the two people's files, {len(on_demo.failures)} failed calls"
    )
    for label, figures in (demo_out["versus_people"] or {}).items():
        print(
            f"  {label:<28} 1s: LLM {figures['share_of_1_llm']:.2f}, Ana {figures['share_of_1_ana']:.2f}, Ben "
            f"{figures['share_of_1_ben']:.2f}; κ LLM–Ana {figures['kappa_llm_ana']}, LLM–Ben "
            f"{figures['kappa_llm_ben']}, Ana–Ben {figures['kappa_ana_ben']}"
        )
    for label, figures in grounding["versus_human_faithfulness"].items():
        print(
            f"grounding, {len(grounded)} dev answers: {label} against human faithfulness: Spearman "
            f"{figures['spearman']} [{figures['low']}, {figures['high']}] (n={figures['n']})"
        )
    print(f"written: {write_result(f'annotator-{args.judge}', out, default=str)}")


if __name__ == "__main__":
    main()
