"""Where the packaged judge's time goes: llama.cpp's own timings for each call of seed 002's five metrics.

The demo's first N records (default 8), their three calls each (claims or claim_split, correctness, relevance)
sent one at a time, in the order the run makes them (a record's calls together), to a fresh :class:`LocalServer`
with its default settings. For every call llama.cpp reports the prompt tokens it took from its cache (``cache_n``), the
prompt tokens it computed (``prompt_n``) and the time, and the tokens it generated and the time; this prints
them per call and sums them per prompt. Throughput here is an upper bound of a run's: no verdict checks, no
repairs, no scoring.

    python -m benchmarks.judge.bench_judge_timings [N] [split|verify] [--reuse states|none|any] [--layout shared]

The second argument is the judge's claims mode (default: the local judge's, ``split``). ``--reuse``: how the
server may reuse computed prompts: ``states`` (the local judge's: each system message restored from its saved
slot state before the call, :mod:`ragmeter.judges.backends.prefix_states`), ``none`` (every prompt computed
whole, ``cache_prompt: false``: the local judge of issue 33) or ``any`` (llama.cpp's own reuse of whatever the
slot holds, which can change verdicts). Results: ``benchmarks/results/judge_timings-local-<mode>[-<reuse>].json``
(no suffix for ``states``).

``--layout``: the judge's layout (:mod:`ragmeter.judges.layouts`; default ``calls``, each prompt a call of its
own): ``shared`` (the local judge's default since issue 46) puts one system message holding every task first, then
the item (question, answer, references) and each task's line; a score is the verdict alone, its reply begun with
``{"score": `` for the judge, as the local judge asks it. Before each call the state of its item (computed once,
after the system message's) is restored, as the judge does. Result: ``judge_timings-local-shared.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import urllib.request
from collections import defaultdict
from typing import Any

from benchmarks._common import write_result
from ragmeter.judges.backends.prefix_states import begun

FIELDS = ("cache_n", "prompt_n", "prompt_ms", "predicted_n", "predicted_ms")


REUSE = ("states", "none", "any")
LAYOUTS = ("calls", "shared")


def _post(base_url: str, request: Any, reuse: str) -> dict[str, Any]:
    body = {
        "model": "local",
        "temperature": 0,
        "seed": 0,
        "max_tokens": request.max_tokens,
        **({"cache_prompt": reuse != "none"} if reuse != "any" else {}),
        "messages": [{"role": role, "content": content} for role, content in request.messages],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": request.schema_name, "strict": True, "schema": dict(request.schema)},
        },
    }
    post = urllib.request.Request(
        f"{base_url}/chat/completions", json.dumps(begun(body, request)).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(post, timeout=600) as response:
        return json.load(response)


def main() -> None:
    from ragmeter import Settings, read_records
    from ragmeter.engine.context import ItemContext, RunContext
    from ragmeter.io.demo import demo_path
    from ragmeter.judges import JudgeConfig, LocalServer, planning_judge
    from ragmeter.judges.backends.prefix_states import PrefixStates, lead
    from ragmeter.metrics import resolve_metrics

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", nargs="?", type=int, default=8)
    parser.add_argument("claims", nargs="?", choices=("split", "verify"))
    parser.add_argument("--reuse", choices=REUSE, default="states")
    parser.add_argument("--layout", choices=LAYOUTS, default="calls")
    args = parser.parse_args()
    n, claims, reuse, shared = args.records, args.claims, args.reuse, args.layout == "shared"
    if shared and reuse != "states":
        parser.error("--layout shared is timed with saved states only")
    records = list(read_records(demo_path()))[:n]
    metrics = resolve_metrics(["judged"])
    calls = []  # (record id, prompt name, request)
    with planning_judge(JudgeConfig(kind="local", claims=claims, layout=args.layout)) as planner:
        run = RunContext(Settings(), judge=planner)
        for record in records:  # each prompt once per record, in the order the metrics ask for them
            asked = {call.prompt.name: call for m in metrics for call in m.prefetch(record, ItemContext(), run)}
            calls += [(record.id, call.prompt.name, call.request) for call in asked.values()]
    load = os.getloadavg()[0]
    rows, totals = [], defaultdict(lambda: dict.fromkeys(FIELDS, 0.0))
    with LocalServer() as server:
        assert server.base_url is not None
        states = PrefixStates(server.base_url.removesuffix("/v1"), timeout_s=600)
        started = time.perf_counter()
        for record_id, name, request in calls:
            if reuse == "states":
                states.restore(lead(request), request.item_prefix)
            response = _post(server.base_url, request, reuse)
            timings = response.get("timings", {})
            row = {
                "record": record_id,
                "prompt": name,
                **{f: timings.get(f, 0) for f in FIELDS},
                "reply": response["choices"][0]["message"]["content"],
            }
            rows.append(row)
            for field in FIELDS:
                totals[name][field] += row[field]
            print(
                f"{record_id} {name:<12} cached {row['cache_n']:>5} computed {row['prompt_n']:>5} "
                f"({row['prompt_ms'] / 1000:5.1f} s)  generated {row['predicted_n']:>4} "
                f"({row['predicted_ms'] / 1000:5.1f} s)",
                flush=True,
            )
        wall = time.perf_counter() - started
    by_prompt = {
        name: {
            "cached_prompt_tokens": t["cache_n"],
            "computed_prompt_tokens": t["prompt_n"],
            "prompt_s": round(t["prompt_ms"] / 1000, 1),
            "prompt_tokens_per_s": round(1000 * t["prompt_n"] / t["prompt_ms"], 1),
            "generated_tokens": t["predicted_n"],
            "generation_s": round(t["predicted_ms"] / 1000, 1),
            "generated_tokens_per_s": round(1000 * t["predicted_n"] / t["predicted_ms"], 1),
        }
        for name, t in totals.items()
    }
    out = {
        "records": n,
        "claims": planner.claims,
        "reuse": reuse,
        "layout": args.layout,
        "calls": len(calls),
        "wall_s": round(wall, 1),
        "items_per_min": round(60 * n / wall, 2),
        "load_average_at_start": round(load, 2),
        "by_prompt": by_prompt,
        "calls_timed": rows,
    }
    for name, figures in by_prompt.items():
        print(f"{name:<12} {figures}")
    print(f"{n} records, {len(calls)} calls in {wall:.0f} s: {out['items_per_min']} items/min")
    name = (
        "judge_timings-local-shared"
        if shared
        else f"judge_timings-local-{planner.claims}" + ("" if reuse == "states" else f"-{reuse}")
    )
    print(f"written: {write_result(name, out, ensure_ascii=True)}")


if __name__ == "__main__":
    main()
