"""The packaged judge's speed in its two layouts, through a whole run, and what its first command spends before
its first verdict (issue 46).

Three parts, each on an idle machine (the judge takes both cores; figures taken beside other work are worthless):

- ``layouts``: items a minute of ``evaluate(metrics=["judged"])`` (seed 002's five metrics: a claims, a
  correctness and a relevance call an item) on the first N demo records (default: all 45), no verdict cache, the
  packaged judge in each layout (``calls``: each prompt a call of its own; ``shared``: one item prefix, the
  verdicts alone), each on a server of its own started fresh, back to back, ``--rounds`` times alternating which
  goes first. Start-up (``open_judge``) is timed apart from the run.
- ``remote``: the same through the remote path, ``--judge openai`` pointed at a llama.cpp server on loopback
  (the packaged model, one slot, llama.cpp's own prompt cache, which a remote endpoint has; claims split, as the
  local judge asks them): the engine sends an
  item's first call alone and its other calls once it is answered, so the server serves their shared start from
  its cache. One request at a time (``concurrency=1``), as one slot serves them.
- ``first``: the README's first command, ``ragmeter run --demo --judge local --limit 6``, timed whole in a child
  process with its peak memory (once on a machine without the states a run keeps, then ``--repeats`` times
  with them: the median is the figure), and the steps before its first verdict timed one by one in this process: the
  imports, the packaged model's check, the server's start (its model loaded, then healthy), the embedder's load,
  and the first call (the system message computed and saved, the item computed, the verdict written).

    python -m benchmarks.judge.bench_judge_speed layouts [--records 45] [--rounds 1]
    python -m benchmarks.judge.bench_judge_speed remote [--records 16]
    python -m benchmarks.judge.bench_judge_speed first [--repeats 3]

Results: ``benchmarks/results/judge_speed-<part>.json``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from benchmarks._common import write_result

LAYOUTS = ("calls", "shared")
FIRST_COMMAND = ["run", "--demo", "--judge", "local", "--limit", "6", "--no-progress"]


def _demo(n: int) -> list[Any]:
    from ragmeter import read_records
    from ragmeter.io.demo import demo_path

    return list(read_records(demo_path()))[:n]


def _timed_run(records: list[Any], judge: Any) -> dict[str, Any]:
    """``judge`` (closed here) through ``evaluate(metrics=["judged"])`` on ``records``: wall time, items a minute,
    the judge's requests, tokens and failures, and each metric's mean."""
    import numpy as np

    from ragmeter import Settings, evaluate

    try:
        started = time.perf_counter()
        result = evaluate(records, metrics=["judged"], judge=judge, settings=Settings(n_resamples=100))
        wall = time.perf_counter() - started
    finally:
        judge.close()
    assert result.judging is not None
    totals = result.judging.totals()
    return {
        "wall_s": round(wall, 1),
        "items_per_min": round(60 * len(records) / wall, 2),
        "requests": totals["requests"],
        "prompt_tokens": totals["prompt_tokens"],
        "completion_tokens": totals["completion_tokens"],
        "failures": len(result.judging.failures),
        "means": {m: round(float(np.nanmean(result.scores[m])), 3) for m in result.metrics},
    }


def layouts(records: list[Any], rounds: int) -> dict[str, Any]:
    from ragmeter.judges import JudgeConfig, open_judge

    runs = []
    for round_ in range(rounds):
        for layout in LAYOUTS if round_ % 2 == 0 else LAYOUTS[::-1]:
            load = os.getloadavg()[0]
            started = time.perf_counter()
            judge = open_judge(JudgeConfig(kind="local", layout=layout))
            startup = time.perf_counter() - started
            run = {
                "layout": layout,
                "round": round_,
                "startup_s": round(startup, 1),
                "load_average_at_start": round(load, 2),
                **_timed_run(records, judge),
            }
            print(run, flush=True)
            runs.append(run)
    return {"records": len(records), "runs": runs, **_ratio(runs)}


def remote(records: list[Any]) -> dict[str, Any]:
    from ragmeter.judges import JudgeConfig, LocalServer, open_judge

    runs = []
    for layout in LAYOUTS:
        with LocalServer() as server:
            assert server.base_url is not None
            judge = open_judge(
                JudgeConfig(
                    kind="openai",
                    model=server.model_id,
                    base_url=server.base_url,
                    api_key_env=None,
                    concurrency=1,
                    layout=layout,
                    timeout_s=600,
                    claims="split",
                )
            )
            run = {"layout": layout, **_timed_run(records, judge)}
        print(run, flush=True)
        runs.append(run)
    return {"records": len(records), "runs": runs, **_ratio(runs)}


def _ratio(runs: list[dict[str, Any]]) -> dict[str, Any]:
    best = {layout: max(r["items_per_min"] for r in runs if r["layout"] == layout) for layout in LAYOUTS}
    return {"items_per_min": best, "shared_over_calls": round(best["shared"] / best["calls"], 2)}


def first(repeats: int) -> dict[str, Any]:
    """The README's first command, whole: once without the system-message states a run keeps for the next one
    (the store is emptied first; a first run on a machine), then ``repeats`` times with them (a run's time
    varies by a few seconds from run to run on an idle machine: the median is the figure); then its steps before
    the first verdict one by one."""
    from ragmeter.core.files import cache_dir
    from ragmeter.judges.backends.local import STATES_FOLDER

    ragmeter = shutil.which("ragmeter") or sys.exit("the ragmeter command is not on PATH: activate its venv")
    shutil.rmtree(cache_dir() / STATES_FOLDER, ignore_errors=True)
    runs: dict[str, list[float]] = {"without stored states": [], "with stored states": []}
    for name in ["without stored states", *["with stored states"] * repeats]:
        folder = tempfile.mkdtemp(prefix="ragmeter-first-")
        try:
            started = time.perf_counter()
            subprocess.run(
                [ragmeter, *FIRST_COMMAND, "--out", os.path.join(folder, "run")], check=True, stdout=subprocess.DEVNULL
            )
            runs[name].append(round(time.perf_counter() - started, 1))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        print(f"{name}: {runs[name][-1]} s", flush=True)
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    out = {
        "command": "ragmeter " + " ".join(FIRST_COMMAND),
        "wall_s": runs,
        "median_with_stored_states_s": statistics.median(runs["with stored states"]),
        "load_average_at_end": round(os.getloadavg()[0], 2),
        "peak_rss_mib_largest_process": round(peak_mib),
        "steps_s": _steps(),
    }
    print(out, flush=True)
    return out


def _steps() -> dict[str, float]:
    """Seconds of each step before the first verdict, in the order a run takes them."""
    steps: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        steps[name] = round(now - clock, 2)
        clock = now

    imports = "import ragmeter.cli.run, ragmeter.engine.evaluation, ragmeter.metrics, ragmeter.judges"
    subprocess.run([sys.executable, "-c", imports], check=True)
    lap("imports of the command line (a fresh interpreter)")
    from ragmeter.judges.backends.local import LocalServer, packaged_model_path
    from ragmeter.judges.backends.prefix_states import LocalBackend
    from ragmeter.judges.layouts import judge_call
    from ragmeter.judges.prompts import CORRECTNESS
    from ragmeter.models import load_embedder

    lap("imports of the judge and models in this process")
    packaged_model_path()
    lap("packaged model checked (its verification stamp)")
    server = LocalServer()
    try:
        server.start()
        lap("server started: model loaded and healthy")
        load_embedder()
        lap("embedder loaded")
        assert server.base_url is not None
        backend = LocalBackend.at(
            server.base_url,
            model=server.model_id,
            api_key_env=None,
            timeout_s=600,
            bounds="schema",
            states_folder=server.states_dir,
        )
        request = judge_call(type("J", (), {"layout": "shared"}), CORRECTNESS, _demo(1)[0]).request
        backend._states.restore(request.messages[:1])
        lap("the shared system message computed and saved")
        backend._states.restore(request.messages[:1], request.item_prefix)
        lap("the first item computed and saved")
    finally:
        server.stop()
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", choices=("layouts", "remote", "first"))
    parser.add_argument("--records", type=int)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3, help="first: runs with the stored states (default 3)")
    args = parser.parse_args()
    if args.part == "first":
        out = first(args.repeats)
    elif args.part == "layouts":
        out = layouts(_demo(args.records or 45), args.rounds)
    else:
        out = remote(_demo(args.records or 16))
    print(f"written: {write_result(f'judge_speed-{args.part}', out)}")


if __name__ == "__main__":
    main()
