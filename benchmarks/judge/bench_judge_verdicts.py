"""Verdicts lost with the packaged local judge: how many judge calls end without a usable verdict.

Issue 10's goal: no verdict lost on the 45 demo records and on 40 MT-RAG records with the packaged judge
(Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, llama.cpp, one slot). A verdict is lost when a reply stays invalid
after its one repair: most often a "reason" that runs on until the token limit cuts it off, twice.

The MT-RAG records are the first 40 answers of the *dev* split of ``human_eval_tasks.jsonl`` by the
non-reference responders (GPT-4o, Llama-3.1-405B): the test split stays untouched for judge-validity work.

Variants (``--variant``):

- ``grammar`` (ragmeter's default for the local judge): the reply schema's ``maxLength`` bounds go into the
  grammar llama.cpp constrains decoding with, and the instructions ask for short strings;
- ``instructions``: the same instructions, no bounds in the grammar (what an endpoint that refuses them gets);
- ``remote``: the remote path, ``--judge openai`` pointed at the same llama.cpp server: the judge opened from
  ``JudgeConfig(kind="openai", base_url=…)``, the bounds where
  :func:`~ragmeter.judges.backends.openai.endpoint_bounds` puts them for that address (in the schema), with
  the local judge's calls (claims split only) one at a time (the server has one slot), so that the two paths
  are asked the same.

``--metrics scores`` judges Correctness and Relevance only (the prompts whose reason ran past its limit);
``--metrics claims`` Faithfulness, Precision and Recall (the one claims call); ``--metrics judged`` all five
metrics (claims, correctness and relevance calls). No verdict cache: every
call is made. Results go to ``benchmarks/results/judge_verdicts-<variant>-<metrics>.json``.

    python -m benchmarks.judge.bench_judge_verdicts --variant grammar --metrics judged
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from typing import Any

from benchmarks._common import DATA, write_result
from ragmeter import evaluate, read_records
from ragmeter.io.demo import demo_path
from ragmeter.judges import LOCAL_TIMEOUT_S, Judge, JudgeConfig, LocalServer, OpenAIBackend, open_judge

MTRAG_TASKS = DATA / "human_eval_tasks.jsonl"
N_MTRAG = 40
METRICS = {
    "scores": ["judge_correctness", "judge_relevance"],
    "judged": ["judged"],
    "claims": ["judge_faithfulness", "judge_precision", "judge_recall"],
}


def mtrag_dev_records(n: int) -> list[Any]:
    if not MTRAG_TASKS.is_file():
        sys.exit(f"MT-RAG's data is missing: {MTRAG_TASKS}")
    records = [
        r
        for r in read_records(MTRAG_TASKS, format="mtrag")
        if r.metadata.get("split") == "dev" and r.model_id != "reference"
    ]
    return records[:n]


def open_local_judge(variant: str, server: LocalServer) -> tuple[Judge, float]:
    """The judge of ``variant`` on ``server`` (started here), and the seconds the start took."""
    started = time.perf_counter()
    base_url = server.start()
    if variant == "remote":
        judge = open_judge(
            JudgeConfig(
                kind="openai",
                model=server.model_id,
                base_url=base_url,
                api_key_env=None,
                concurrency=server.parallel,
                timeout_s=LOCAL_TIMEOUT_S,
                claims=JudgeConfig(kind="local").claim_mode,
            )
        )
    else:
        backend = OpenAIBackend(
            base_url=base_url,
            model=server.model_id,
            api_key_env=None,
            timeout_s=LOCAL_TIMEOUT_S,
            bounds="schema" if variant == "grammar" else "instructions",
        )
        judge = Judge(backend, cache=None, concurrency=server.parallel, timeout_s=LOCAL_TIMEOUT_S)
    return judge, time.perf_counter() - started


def measure(name: str, records: list[Any], judge: Judge, metrics: list[str]) -> dict[str, Any]:
    started = time.perf_counter()
    result = evaluate(records, metrics=metrics, judge=judge, progress=sys.stderr.isatty())
    wall = time.perf_counter() - started
    assert result.judging is not None
    usage = {prompt: u.to_dict() for prompt, u in result.judging.usage.items()}
    failures = [
        {"id": f["id"], "prompt": f["prompt"], "reason": f["reason"][:300], "raw_tail": (f["raw"] or "")[-200:]}
        for f in result.judging.failures
    ]
    return {
        "dataset": name,
        "items": len(result),
        "wall_s": round(wall, 1),
        "items_per_min": round(60 * len(result) / wall, 2),
        "totals": result.judging.totals(),
        "by_prompt": usage,
        "lost": len(failures),
        "lost_by_prompt": dict(Counter(f["prompt"] for f in failures)),
        "failures": failures,
        "means": {s.metric: round(s.value, 4) for s in result.summaries},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=("grammar", "instructions", "remote"), default="grammar")
    parser.add_argument("--metrics", choices=tuple(METRICS), default="judged")
    parser.add_argument("--datasets", default="demo,mtrag", help="comma-separated: demo, mtrag")
    parser.add_argument(
        "--ids",
        help="comma-separated record ids: judge only these (a re-run of the calls that "
        "were lost; with one slot and temperature 0 the others do not change)",
    )
    args = parser.parse_args()
    datasets = {"demo": lambda: list(read_records(demo_path())), "mtrag": lambda: mtrag_dev_records(N_MTRAG)}
    server = LocalServer()
    judge, start_s = open_local_judge(args.variant, server)
    out: dict[str, Any] = {
        "variant": args.variant,
        "metrics": args.metrics,
        "judge": judge.identity,
        "server_start_s": round(start_s, 1),
        "runs": [],
    }
    try:
        for name in args.datasets.split(","):
            records = datasets[name]()
            if args.ids:
                records = [r for r in records if r.id in set(args.ids.split(","))]
            run = measure(name, records, judge, METRICS[args.metrics])
            out["runs"].append(run)
            print(
                f"{name}: {run['items']} items, {run['totals']['calls']} calls, {run['totals']['repairs']} repairs, "
                f"{run['lost']} verdicts lost {run['lost_by_prompt']}, {run['wall_s']} s",
                flush=True,
            )
            for failure in run["failures"]:
                print(f"  lost: {failure['id']} {failure['prompt']}: {failure['reason']}", flush=True)
    finally:
        judge.close()
        server.stop()
    suffix = "-rerun" if args.ids else ""
    print(f"written: {write_result(f'judge_verdicts-{args.variant}-{args.metrics}{suffix}', out)}")


if __name__ == "__main__":
    main()
