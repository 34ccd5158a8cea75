"""Does a verdict of the packaged local judge depend on what its server did before? (issues 33 and 34)

llama.cpp's server keeps the last prompt of its slot and, with ``cache_prompt`` on (its default), computes only
the part of a new prompt after the prefix the two share. The shared part was computed in other batches than
the same prompt computed whole, and at temperature 0 a near-tie between two tokens can then go the other way.

The calls: the local judge's calls for seed 002's five metrics (claims split, correctness, relevance), in its layout, on
the first ``--records`` demo records (8), each distinct call once. Each pass replays them all through the judge (one
slot, no verdict cache) and records every verdict. For each way of reusing computed prompts named by ``--reuse``
(default: all three), on a fresh server:

- ``any``: llama.cpp's own reuse of whatever its slot holds (``cache_prompt`` on): order A (the order a run
  makes the calls), then order B (shuffled, seed 1) on the same warm server;
- ``none``: every prompt computed whole (``cache_prompt: false``, issue 33's local judge): order B, then A;
- ``states``: the local judge's (issue 34): each system message computed once, saved, and restored into the
  slot before each call (:mod:`ragmeter.judges.backends.prefix_states`); in the shared layout (issue 46) each
  item computed once after it, saved and restored before each of the item's calls: order B, then A.

Then ``fresh servers``: the first ``--fresh`` calls, each on a server of its own (nothing before it), with the
``states`` reuse (the first mode named when ``states`` is not). Printed and written: the verdicts that differ
between passes (and from the fresh servers' on the calls those made), and each pass's calls per minute and
prompt tokens.

    python -m benchmarks.judge.bench_judge_determinism [--records 8] [--fresh 4] [--reuse any none states]

Results: ``benchmarks/results/judge_determinism.json`` (all three modes), else
``judge_determinism-<modes>.json``; ``-shared`` after it for the shared layout (issue 46).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from typing import Any

from benchmarks._common import write_result
from ragmeter import Settings, read_records
from ragmeter.engine.context import ItemContext, RunContext
from ragmeter.io.demo import demo_path
from ragmeter.judges import LOCAL_TIMEOUT_S, Judge, JudgeCall, JudgeConfig, LocalServer, OpenAIBackend
from ragmeter.judges.backends.prefix_states import LocalBackend
from ragmeter.metrics import resolve_metrics

REUSE = ("any", "none", "states")


def demo_calls(n_records: int) -> list[JudgeCall]:
    """The distinct judge calls of the five judged metrics on the first ``n_records`` demo records, in the
    order a run plans them."""
    records = list(read_records(demo_path()))[:n_records]
    local = JudgeConfig(kind="local")  # the local judge's calls: claims split only, in its layout (issue 46: shared)
    planner = Judge(
        OpenAIBackend(base_url="http://127.0.0.1:9/v1", model="planner", api_key_env=None),
        claims=local.claim_mode,
        layout=local.call_layout,
    )
    run = RunContext(Settings(), judge=planner)
    calls: dict[str, JudgeCall] = {}
    try:
        for record in records:
            item = ItemContext()
            for metric in resolve_metrics(["judged"]):
                if metric.prefetch is not None and metric.missing_field(record) is None:
                    for call in metric.prefetch(record, item, run):
                        calls.setdefault(planner.key(call), call)
    finally:
        planner.close()
    return list(calls.values())


def replay(server: LocalServer, calls: list[JudgeCall], reuse: str) -> tuple[list[Any], dict]:
    """Every call's verdict (or failure) on ``server``, one at a time in the given order."""
    options = {"base_url": server.base_url, "model": server.model_id, "api_key_env": None, "timeout_s": LOCAL_TIMEOUT_S}
    if reuse == "states":
        backend: OpenAIBackend = LocalBackend.at(**options)
    else:
        backend = OpenAIBackend(cache_prompt=None if reuse == "any" else False, **options)
    judge = Judge(backend, concurrency=1, timeout_s=LOCAL_TIMEOUT_S)
    started = time.perf_counter()
    try:
        outcomes = judge.run(calls)
    finally:
        judge.close()
    seconds = time.perf_counter() - started
    usage = judge.usage
    return (
        [o.verdict if o.verdict is not None else {"failure": o.failure} for o in outcomes],
        {
            "seconds": round(seconds, 1),
            "calls_per_min": round(60 * len(calls) / seconds, 2),
            "prompt_tokens": sum(u.prompt_tokens for u in usage.values()),
            "completion_tokens": sum(u.completion_tokens for u in usage.values()),
        },
    )


def started() -> LocalServer:
    server = LocalServer()
    server.start()
    return server


def differing(first: list[Any], second: list[Any]) -> list[int]:
    return [
        i
        for i, (a, b) in enumerate(zip(first, second, strict=True))
        if json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=8)
    parser.add_argument("--fresh", type=int, default=4)
    parser.add_argument("--reuse", nargs="+", choices=REUSE, default=list(REUSE))
    args = parser.parse_args()
    calls = demo_calls(args.records)
    order_b = list(range(len(calls)))
    random.Random(1).shuffle(order_b)
    shuffled = [calls[i] for i in order_b]
    verdicts: dict[str, list[Any]] = {}
    costs: dict[str, dict] = {}

    def unshuffled(values: list[Any]) -> list[Any]:
        out: list[Any] = [None] * len(values)
        for position, index in enumerate(order_b):
            out[index] = values[position]
        return out

    for name in args.reuse:
        server = started()
        try:
            first_order = [("order A", calls), ("order B", shuffled)]
            for label, ordered in first_order if name == "any" else first_order[::-1]:
                values, cost = replay(server, ordered, name)
                key = f"{name}, {label}"
                verdicts[key] = values if label == "order A" else unshuffled(values)
                costs[key] = cost
                print(f"{key}: {cost}", flush=True)
        finally:
            server.stop()
    fresh, fresh_reuse = [], "states" if "states" in args.reuse else args.reuse[0]
    for call in calls[: args.fresh]:
        server = started()
        try:
            values, _ = replay(server, [call], fresh_reuse)
            fresh.extend(values)
        finally:
            server.stop()
    names = list(verdicts)
    pairs = {f"{a} vs {b}": differing(verdicts[a], verdicts[b]) for i, a in enumerate(names) for b in names[i + 1 :]}
    against_fresh = {name: differing(values[: args.fresh], fresh) for name, values in verdicts.items()}
    for pair, where in pairs.items():
        print(f"{pair}: {len(where)} of {len(calls)} verdicts differ {where}")
    for name, where in against_fresh.items():
        print(f"{name} vs fresh servers: {len(where)} of {args.fresh} differ {where}")
    out = {
        "records": args.records,
        "reuse": args.reuse,
        "fresh_reuse": fresh_reuse,
        "calls": len(calls),
        "prompts": [c.prompt.name for c in calls],
        "fresh_calls": args.fresh,
        "costs": costs,
        "differ": pairs,
        "differ_from_fresh": against_fresh,
        "verdicts": verdicts,
        "fresh": fresh,
    }
    layout = JudgeConfig(kind="local").call_layout
    name = (
        "judge_determinism"
        + ("" if set(args.reuse) == set(REUSE) else "-" + "-".join(args.reuse))
        + ("" if layout == "calls" else f"-{layout}")
    )
    print(f"written: {write_result(name, out)}")


if __name__ == "__main__":
    main()
