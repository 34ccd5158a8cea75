"""Run every ragmeter benchmark, print the figures, and write them to benchmarks/results/.

    python benchmarks/run_all.py [--quick] [--only overlap,lexical,memory]

Writes ``results/latest.json`` (every figure, with the machine and versions) and ``results/latest.md``
(the same as tables). ``--quick`` runs smaller sizes, for a check that everything works.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_lexical
import bench_memory
import bench_overlap_overhead

BENCHMARKS: dict[str, Callable[..., dict[str, Any]]] = {
    "overlap": bench_overlap_overhead.run,
    "lexical": bench_lexical.run,
    "memory": bench_memory.run,
}
RESULTS = HERE / "results"


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def environment() -> dict[str, Any]:
    import ragmeter

    return {
        "date_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "ragmeter": ragmeter.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "load_average_at_start": os.getloadavg(),
        "packages": {p: _version(p) for p in ("numpy", "onnxruntime", "tokenizers", "nupunkt", "scipy")},
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def to_markdown(report: dict[str, Any]) -> str:
    env = report["environment"]
    lines = [
        "# ragmeter benchmarks",
        "",
        (f"Run {env['date_utc']} with `python benchmarks/run_all.py{' --quick' if report['quick'] else ''}` "
        f"in {report['total_s']:.0f} s."),
        f"Machine: {env['processor']}, {env['cpu_count']} CPUs, {env['platform']}; Python {env['python']}, "
        f"ragmeter {env['ragmeter']}, "
        + ", ".join(f"{k} {v}" for k, v in env["packages"].items() if v) + ".",
        "",
    ]
    results = report["results"]
    o = results.get("overlap")
    if o:
        lines += ["## Overlap: embedding overhead", ""]
        if "skipped" in o or "error" in o:
            lines += [o.get("skipped") or f"failed: {o['error']}", ""]
        else:
            eval_runs = ", ".join(f"{t:.2f}" for t in o["evaluate_s"])
            encode_runs = ", ".join(f"{t:.2f}" for t in o["encode_s"])
            verdict = "met" if o["meets_goal"] else "not met"
            lines += [
                (f"{o['records']} MT-RAG reference tasks with passages "
                 f"({o['tasks_without_passages_skipped']} without passages left out), "
                 f"{o['answer_sentences']} cited answer sentences, {o['texts_embedded']} distinct texts "
                 f"embedded (evaluate embedded {o['texts_embedded_by_evaluate']}, the same set). "
                 f"{o['settings']}."),
                "",
                "| side | runs (s) | min (s) |",
                "|---|---|---|",
                f"| `evaluate(metrics=['overlap'])` | {eval_runs} | {o['evaluate_min_s']:.2f} |",
                f"| `OnnxMiniLM().encode(texts)` | {encode_runs} | {o['encode_min_s']:.2f} |",
                "",
                f"**Ratio evaluate / encode = {o['ratio']:.3f}** (goal ≤ {o['goal_ratio']}: {verdict}).",
                "",
            ]
    x = results.get("lexical")
    if x:
        lines += ["## Lexical metrics: throughput", ""]
        if "error" in x:
            lines += [f"failed: {x['error']}", ""]
        else:
            both = x["token_f1_s"] + x["exact_match_s"]
            lines += [
                f"{x['pairs']:,} pairs from {x['source']}.",
                "",
                "| path | time (s) | pairs/s |",
                "|---|---|---|",
                f"| `token_f1` direct | {x['token_f1_s']:.2f} | {x['token_f1_pairs_per_s']:,.0f} |",
                f"| `exact_match` direct | {x['exact_match_s']:.2f} | {x['exact_match_pairs_per_s']:,.0f} |",
                f"| both, direct | {both:.2f} | **{x['direct_pairs_per_s']:,.0f}** |",
                (f"| `evaluate(metrics=['token_f1','exact_match'])`, default settings (2000 resamples) "
                 f"| {x['evaluate_s']:.2f} | **{x['evaluate_pairs_per_s']:,.0f}** |"),
                (f"| same, `Settings(n_resamples=100)` | {x['evaluate_scoring_s']:.2f} "
                 f"| {x['evaluate_scoring_pairs_per_s']:,.0f} |"),
                "",
            ]
    m = results.get("memory")
    if m:
        lines += ["## Memory: peak RSS of `ragmeter run`", ""]
        if "error" in m:
            lines += [f"failed: {m['error']}", ""]
        else:
            lines += [
                f"`{m['command']}`; {m['measure']}. Synthetic native records (see `bench_memory.py`).",
                "",
                "| records | file (MB) | peak RSS (MB) | wall (s) | records/s |",
                "|---|---|---|---|---|",
            ]
            lines += [(f"| {r['records']:,} | {r['file_mb']:.0f} | **{r['peak_rss_mb']:.0f}** "
                       f"| {r['wall_s']:.0f} | {r['records_per_s']:.0f} |") for r in m["runs"]]
            verdict = "met" if m["meets_goal"] else "not met"
            lines += [
                "",
                (f"Growth ×{m['growth_ratio']:.2f} in RSS for ×{m['size_ratio']:.0f} records "
                 f"({_fmt(m['marginal_kb_per_record'])} KB per extra record); goal < {m['goal_mb']} MB "
                 f"at the largest size and sub-linear growth: {verdict}."),
                "",
            ]
    lines += ["## Run conditions", "", "| benchmark | duration (s) | load average before (1/5/15 min) |",
              "|---|---|---|"]
    for name, result in results.items():
        load = result.get("load_average_before")
        lines.append(f"| {name} | {result.get('duration_s', 0):.0f} | "
                     + ("–" if load is None else " / ".join(f"{x:.2f}" for x in load)) + " |")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run, a few minutes)")
    parser.add_argument("--only", help=f"comma-separated subset of {', '.join(BENCHMARKS)}")
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder for latest.json and latest.md")
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.only.split(",")] if args.only else list(BENCHMARKS)
    unknown = [name for name in chosen if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; choose from {', '.join(BENCHMARKS)}")

    report: dict[str, Any] = {"quick": args.quick, "environment": environment(), "results": {}}
    start = time.perf_counter()
    failed = False
    for name in chosen:
        began, load = time.perf_counter(), os.getloadavg()
        try:
            report["results"][name] = BENCHMARKS[name](quick=args.quick)
        except Exception as exc:  # noqa: BLE001  (a broken benchmark must not hide the others' figures)
            traceback.print_exc()
            report["results"][name] = {"name": name, "error": f"{type(exc).__name__}: {exc}"}
            failed = True
        report["results"][name].update(duration_s=time.perf_counter() - began, load_average_before=load)
    report["total_s"] = time.perf_counter() - start

    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "latest.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    markdown = to_markdown(report)
    (args.results / "latest.md").write_text(markdown + "\n", encoding="utf-8")
    print()
    print(markdown)
    print(f"\nwrote {args.results / 'latest.json'} and {args.results / 'latest.md'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
