"""Peak memory (RSS) of ``ragmeter run`` over 10,000, 30,000 and 100,000 records.

Each size is a synthetic native JSONL file written to a temporary folder and scored in a fresh
subprocess running ``ragmeter run FILE --out DIR --no-progress --format json`` with every default
metric and the real packaged ONNX embedder. The peak resident set size is that child's own
``ru_maxrss``, read with ``os.wait4`` on it by a small launcher process (so one size's peak never
leaks into the next, as ``getrusage(RUSAGE_CHILDREN)`` in one parent would, and the benchmark
process's own size never leaks in through fork; see ``_LAUNCHER``).

Records: :func:`ragmeter.testing.synthetic_records`, a synthetic multi-turn RAG log (8 turns per conversation,
so intervals use the cluster bootstrap; 5 retrieved chunks from a corpus of 2,000 made of a pool of 3,000
sentences; citations, IDK answers, abstentions, references, token usage and latency). The embedder therefore
sees at most ~5,000 distinct texts whatever the run size, as on a real corpus where answers and chunks repeat,
and the run's memory growth comes from the per-item state ragmeter keeps, not from the embedding cache.

Sizes: 10k, 30k, 100k (``--quick``: 2k, 6k, 20k). Goals: under 1 GB at 100k, sub-linear growth.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._common import synthetic_inputs

FULL_SIZES = (10_000, 30_000, 100_000)
QUICK_SIZES = (2_000, 6_000, 20_000)
GOAL_MB = 1024


def _ragmeter_command() -> list[str]:
    script = Path(sys.executable).with_name("ragmeter")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from ragmeter.cli import main; sys.exit(main())"]


# A tiny launcher between this process and ragmeter. On Linux a child's ru_maxrss starts from the RSS
# of the process it was forked from (exec keeps the forked copy's high-water mark), so forking ragmeter
# straight from a benchmark process that holds, say, 200,000 records in memory would report that
# process's size. The launcher is a fresh small interpreter; it forks ragmeter, waits for it with
# os.wait4 and prints that child's peak RSS and CPU time as JSON on its last stderr line.
_LAUNCHER = """
import json, os, subprocess, sys
child = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(child.pid, 0)
print(json.dumps({"rc": os.waitstatus_to_exitcode(status), "maxrss_kb": usage.ru_maxrss,
                  "utime": usage.ru_utime, "stime": usage.ru_stime}), file=sys.stderr)
"""


def measure(path: Path, out_dir: Path) -> dict[str, Any]:
    """Run ``ragmeter run`` on ``path`` in a fresh process: wall time and peak RSS of that process."""
    command = [*_ragmeter_command(), "run", str(path), "--out", str(out_dir), "--no-progress", "--format", "json"]
    stdout_path, stderr_path = out_dir.with_suffix(".stdout"), out_dir.with_suffix(".stderr")
    start = time.perf_counter()
    with stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
        launcher = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, *command], stdout=stdout, stderr=stderr, check=False
        )
    wall = time.perf_counter() - start
    stderr_text = stderr_path.read_text(errors="replace")
    try:
        usage = json.loads(stderr_text.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        usage = {"rc": launcher.returncode}
    if launcher.returncode != 0 or usage.get("rc") != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {usage.get('rc')}:\n{stderr_text[-2000:]}")
    report = json.loads(stdout_path.read_text())
    summaries = {f"{s['metric']}.{s['statistic']}": s["value"] for s in report["summaries"]}
    return {
        "wall_s": wall,
        "peak_rss_mb": usage["maxrss_kb"] / 1024,  # Linux: kilobytes
        "cpu_s": usage["utime"] + usage["stime"],
        "n_items": report["n_items"],
        "overlap_mean": summaries.get("overlap.mean"),
    }


def run(*, quick: bool = False, sizes: tuple[int, ...] | None = None, keep: bool = False) -> dict[str, Any]:
    sizes = sizes or (QUICK_SIZES if quick else FULL_SIZES)
    runs = []
    for n, path, workdir in synthetic_inputs("ragmeter-bench-memory-", sizes, keep=keep):
        file_mb = path.stat().st_size / 2**20
        result = measure(path, workdir / f"out-{n}")
        result.update(records=n, file_mb=file_mb, records_per_s=n / result["wall_s"])
        runs.append(result)
        print(
            f"[memory] {n:>7,} records ({file_mb:.0f} MB file): "
            f"peak RSS {result['peak_rss_mb']:.0f} MB, "
            f"{result['wall_s']:.0f} s ({result['records_per_s']:.0f} records/s)",
            flush=True,
        )
    first, last = runs[0], runs[-1]
    growth = last["peak_rss_mb"] / first["peak_rss_mb"]
    size_ratio = last["records"] / first["records"]
    per_item_kb = (
        (last["peak_rss_mb"] - first["peak_rss_mb"]) * 1024 / (last["records"] - first["records"])
        if len(runs) > 1
        else None
    )
    out = {
        "name": "memory",
        "command": ("ragmeter run FILE --out DIR --no-progress --format json (all default metrics, ONNX embedder)"),
        "measure": "ru_maxrss of the ragmeter process, read with os.wait4 by a small launcher process",
        "runs": runs,
        "peak_rss_mb_by_size": {str(r["records"]): r["peak_rss_mb"] for r in runs},
        "growth_ratio": growth,
        "size_ratio": size_ratio,
        "marginal_kb_per_record": per_item_kb,
        "goal_mb": GOAL_MB,
        "meets_goal": last["peak_rss_mb"] < GOAL_MB and (len(runs) == 1 or growth < size_ratio),
        "quick": quick,
    }
    if len(runs) > 1:
        print(
            f"[memory] growth {first['records']:,} → {last['records']:,} records (×{size_ratio:.0f}): "
            f"RSS ×{growth:.2f}, {per_item_kb:.2f} KB per extra record; "
            f"goal < {GOAL_MB} MB and sub-linear: "
            f"{'met' if out['meets_goal'] else 'NOT met'}"
        )
    return out


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != "--quick"]
    chosen = tuple(int(a) for a in arguments) or None
    print(json.dumps(run(quick="--quick" in sys.argv, sizes=chosen), indent=2))
