"""Run every ragmeter benchmark, print the figures, and write them to benchmarks/results/.

    python -m benchmarks.run_all [--quick]
        [--only overlap,lexical,memory,rouge,bertscore,mtrag_pipeline,retrieval,judge,gate]

Writes ``results/latest.json`` (every figure, with the machine and versions) and ``results/latest.md``
(the same as tables). ``--quick`` runs smaller sizes, for a check that everything works. With
``--only``, the figures of the benchmarks not run are kept from the existing ``latest.json`` (each
result records when it was run; ``--replace`` writes only this run's figures instead).
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

from benchmarks.judge import bench_judge
from benchmarks.scale import bench_memory
from benchmarks.speed import (
    bench_bertscore,
    bench_lexical,
    bench_mtrag_pipeline,
    bench_overlap_overhead,
    bench_retrieval,
    bench_rouge,
)
from benchmarks.statistics import bench_gate

BENCHMARKS: dict[str, Callable[..., dict[str, Any]]] = {
    "overlap": bench_overlap_overhead.run,
    "lexical": bench_lexical.run,
    "memory": bench_memory.run,
    "rouge": bench_rouge.run,
    "bertscore": bench_bertscore.run,
    "mtrag_pipeline": bench_mtrag_pipeline.run,
    "retrieval": bench_retrieval.run,
    "judge": bench_judge.run,
    "gate": bench_gate.run,
}
HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
PACKAGES = (
    "numpy",
    "onnxruntime",
    "tokenizers",
    "nupunkt",
    "scipy",
    "rapidfuzz",
    "rouge-score",
    "bert-score",
    "torch",
    "transformers",
    "pytrec-eval-terrier",
    "openai",
    "xllamacpp",
)


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
        "packages": {p: _version(p) for p in PACKAGES},
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


def _command(run: dict[str, Any]) -> str:
    return run.get("command") or f"python -m benchmarks.run_all{' --quick' if run.get('quick') else ''}"


def _machine(env: dict[str, Any]) -> str:
    packages = ", ".join(f"{k} {v}" for k, v in env["packages"].items() if v)
    return (
        f"Machine: {env['processor']}, {env['cpu_count']} CPUs, {env['platform']}; "
        f"Python {env['python']}, ragmeter {env['ragmeter']}, {packages}."
    )


def _same_machine(first: dict[str, Any], second: dict[str, Any]) -> bool:
    keys = ("processor", "cpu_count", "platform", "python", "ragmeter")
    if any(first.get(k) != second.get(k) for k in keys):
        return False
    shared = set(first.get("packages", {})) & set(second.get("packages", {}))
    return all(first["packages"][k] == second["packages"][k] for k in shared)


def _failed(result: dict[str, Any]) -> str | None:
    if "skipped" in result:
        return str(result["skipped"])
    if "error" in result:
        return f"failed: {result['error']}"
    return None


def _markdown_rouge(r: dict[str, Any]) -> list[str]:
    lines = ["## ROUGE-L: ragmeter vs rouge-score", ""]
    if _failed(r):
        return lines + [_failed(r) or "", ""]
    verdict = "met" if r["meets_goal"] else "not met"
    return lines + [
        (
            f"{r['pairs']:,} (prediction, reference) pairs from {r['source']}, both sides in one process; every "
            f"value equal within {r['tolerance']:g} (max |Δ| = {r['max_abs_diff']:.3g})."
        ),
        "",
        "| implementation | time (s) | pairs/s |",
        "|---|---|---|",
        (f"| `ragmeter.metrics.rouge.rouge_l(p, r)` | {r['ragmeter_s']:.2f} | {r['ragmeter_pairs_per_s']:,.0f} |"),
        (
            f"| `RougeScorer(['rougeL'], use_stemmer=False).score(r, p)` | {r['rouge_score_s']:.2f} "
            f"| {r['rouge_score_pairs_per_s']:,.0f} |"
        ),
        "",
        f"**Speed-up rouge-score / ragmeter = ×{r['ratio']:.1f}** (goal ≥ {r['goal_ratio']:g}: {verdict}).",
        "",
    ]


def _markdown_bertscore(b: dict[str, Any]) -> list[str]:
    lines = ["## BERTScore: MT-RAG's algorithmic work, bert-score vs ragmeter", ""]
    if _failed(b):
        return lines + [_failed(b) or "", ""]
    verdict = "met" if b["meets_goal"] else "not met"
    counts = b.get("pairs_differing_over_tolerance", {})
    differing = (
        f"{counts.get('P_references', 0)} P and {counts.get('R_references', 0)} R of "
        f"{b['reference_pairs']} reference pairs, {counts.get('P_passages', 0)} P of "
        f"{b['passage_pairs']} passage pairs"
    )

    def runs(key: str) -> str:
        return ", ".join(f"{t:.2f}" for t in b[key])

    skipped = (
        f"{b['empty_predictions_skipped']} empty predictions, {b['empty_references_skipped']} empty "
        f"references and {b['empty_passages_skipped']} empty passages left out"
    )
    return lines + [
        (
            f"{b['records']} records of {b['source']} ({skipped}): {b['reference_pairs']} "
            f"(prediction, reference) pairs for P and R, {b['passage_pairs']} (prediction, passage) pairs for "
            f"BertKPrec. Model: "
            f"{b['model']}. {b['texts_total']:,} texts in all, {b['texts_distinct']:,} distinct (what ragmeter "
            f"encodes); bert-score encodes {b['texts_bert_score_encodes']:,} (each call's distinct texts). "
            f"Times exclude the model load (a fresh model per run); minimum of {b['runs']} run(s)."
        ),
        "",
        "| side | runs (s) | min (s) | bert-score ÷ side |",
        "|---|---|---|---|",
        (
            f"| bert-score `BERTScorer.score`, 2 calls (references: P+R; passages: P), batch "
            f"{b['bert_score_batch_size']} | {runs('bert_score_s')} | {b['bert_score_min_s']:.2f} | 1.00 |"
        ),
        (
            f"| ragmeter `CachedTokenEncoder(HFTokenEncoder(…, layer=6))` + `greedy_match` (torch) "
            f"| {runs('ragmeter_torch_s')} | {b['ragmeter_torch_min_s']:.2f} "
            f"| **{b['ratio_bert_score_over_torch']:.2f}** |"
        ),
        (
            f"| ragmeter `CachedTokenEncoder(OnnxMiniLM())` + `greedy_match` (default, int8 ONNX) "
            f"| {runs('ragmeter_onnx_s')} | {b['ragmeter_onnx_min_s']:.2f} "
            f"| **{b['ratio_bert_score_over_onnx']:.2f}** |"
        ),
        "",
        (
            f"Goal bert-score / ragmeter-torch ≥ {b['goal_ratio']:g}: {verdict}. Plain `bert_score.score()` "
            f"(2 calls, its 2 model loads included): {b['bert_score_score_with_loads_s']:.2f} s."
        ),
        "",
        "| values compared with bert-score | max \\|ΔP\\| | max \\|ΔR\\| | pairs with \\|Δ\\| > tolerance |",
        "|---|---|---|---|",
        (f"| ragmeter-torch, `greedy_match` | {b['max_abs_diff_P']:.2g} | {b['max_abs_diff_R']:.2g} | {differing} |"),
        (
            f"| ragmeter-torch embeddings with bert-score's padding rule (`padded_greedy_match`) "
            f"| {b['padding_rule']['max_abs_diff_P']:.2g} | {b['padding_rule']['max_abs_diff_R']:.2g} | – |"
        ),
        (
            f"| ragmeter-onnx (int8), `greedy_match`, for information | {b['onnx']['max_abs_diff_P']:.2g} "
            f"| {b['onnx']['max_abs_diff_R']:.2g} | – |"
        ),
        "",
        (
            f"Tolerance {b['tolerance']:g}. bert-score takes its maxima over a padded, masked cosine matrix, so "
            "in a batch a padded position counts as a cosine of 0: a token whose cosines with a text shorter "
            "than the batch's longest are all negative gets 0, not its best cosine. ragmeter takes the maximum "
            "over the real tokens (BERTScore's definition); applying bert-score's rule to ragmeter's embeddings "
            "reproduces bert-score, so the encodings agree."
        ),
        "",
    ]


def _markdown_pipeline(m: dict[str, Any]) -> list[str]:
    lines = ["## MT-RAG pipeline: `ragmeter mtrag --step algorithmic`", ""]
    if _failed(m):
        return lines + [_failed(m) or "", ""]
    lines += [
        f"`{m['command']}`; {m['measure']}. Default packaged ONNX MiniLM for BERTScore.",
        "",
        "| input | records | wall (s) | records/s | re-run on its output (s) |",
        "|---|---|---|---|---|",
    ]
    lines += [
        (
            f"| {r['description']} | {r['records']:,} | {r['wall_min_s']:.1f} "
            f"| **{r['records_per_s']:.1f}** | {r['rerun_s']:.2f} ({r['rerun_computed']} recomputed) |"
        )
        for r in m["inputs"]
    ]
    return lines + [""]


def _markdown_retrieval(r: dict[str, Any]) -> list[str]:
    lines = ["## Retrieval family: ragmeter vs pytrec_eval", ""]
    if _failed(r):
        return lines + [_failed(r) or "", ""]
    verdict = "met" if r["meets_goal"] else "not met"
    diffs = ", ".join(f"{metric} {diff:.3g}" for metric, diff in r["max_abs_diff"].items())

    def runs(times: list[float]) -> str:
        return ", ".join(f"{t:.3f}" for t in times)

    lines += [
        (
            f"{r['n_queries']:,} queries × {r['k']} retrieved chunks, {r['source']}; both sides in one process, "
            f"data built before timing, minimum of {r['runs']} alternating runs. ragmeter's ndcg@{r['k']} "
            f"(ideal=pool, linear gain), topical_precision@{r['k']} and mrr@{r['k']} equal pytrec_eval's "
            f"ndcg_cut_10, P_10 and recip_rank on every query within {r['tolerance']:g} (max |Δ|: {diffs})."
        ),
        "",
        "| side | runs (s) | min (s) | queries/s | ÷ pytrec_eval |",
        "|---|---|---|---|---|",
        (
            f"| pytrec_eval `RelevanceEvaluator(qrels, {{{', '.join(r['pytrec_eval_measures'])}}})` "
            f"| {runs(r['pytrec_eval_construct_s'])} | {r['pytrec_eval_construct_min_s']:.3f} | – | – |"
        ),
        (
            f"| pytrec_eval `.evaluate(run)` | {runs(r['pytrec_eval_evaluate_s'])} "
            f"| {r['pytrec_eval_evaluate_min_s']:.3f} | – | – |"
        ),
        (
            f"| pytrec_eval, both | {runs(r['pytrec_eval_s'])} | {r['pytrec_eval_min_s']:.3f} "
            f"| {r['pytrec_eval_queries_per_s']:,.0f} | 1.00 |"
        ),
    ]
    for name, times in r["ragmeter_s"].items():
        ratio = f"{r['ratios'][name]:.2f}"
        lines.append(
            f"| ragmeter `evaluate(retrieval@{r['k']})`, {r['ragmeter_settings'][name]} | {runs(times)} "
            f"| {r['ragmeter_min_s'][name]:.3f} | {r['ragmeter_queries_per_s'][name]:,.0f} "
            f"| {f'**{ratio}**' if name == 'pool_100' else ratio} |"
        )
    return lines + [
        "",
        (
            f"**Ratio ragmeter (ideal=pool, 100 resamples) / pytrec_eval (construct + evaluate) = "
            f"{r['ratio']:.2f}** (goal ≤ {r['goal_ratio']:g}: {verdict})."
        ),
        "",
    ]


def _markdown_judge(j: dict[str, Any]) -> list[str]:
    lines = ["## LLM judge: concurrency, tokens per sample, local throughput", ""]
    if _failed(j):
        return lines + [_failed(j) or "", ""]
    c = j["concurrency"]
    child = c["child_server"]
    lines += [
        (
            f"`Judge(OpenAIBackend(…), concurrency={c['concurrency']}).run(calls)`: {c['calls']:,} distinct calls "
            f"through the real `openai` client to the loopback fake server, {c['latency_s']:g} s latency per "
            f"request. Ideal {c['ideal_s']:.2f} s."
        ),
        "",
        "| fake server | wall (s) | wall / ideal | calls/s | CPU ms per call |",
        "|---|---|---|---|---|",
        (
            f"| same process | {c['wall_s']:.2f} | **{c['ratio']:.3f}** | {c['calls_per_s']:.0f} "
            f"| {c['process_cpu_ms_per_call']:.2f} (client + server) |"
        ),
        (
            f"| child process | {child['wall_s']:.2f} | {child['ratio']:.3f} | {child['calls_per_s']:.0f} "
            f"| {child['client_cpu_ms_per_call']:.2f} client, {child['server_cpu_ms_per_call']:.2f} server |"
        ),
        "",
        f"Goal wall / ideal ≤ {c['goal_ratio']:g}: {'met' if c['meets_goal'] else 'not met'}.",
        "",
    ]
    local = j["local"]
    if "skipped" in local:
        return lines + [f"Local judge: {local['skipped']}", ""]
    t, r = local["tokens"], local["throughput"]
    lines += [
        (
            f"Local judge: {local['model']}, llama.cpp server with {local['slots']} slots and {local['threads']} "
            f"threads, started in {local['startup_s']:.1f} s."
        ),
        "",
        "| prompt | calls | prompt tokens / sample | completion tokens / sample |",
        "|---|---|---|---|",
        *(
            f"| {name} | {p['calls']} | {p['prompt_tokens_per_sample']:,.0f} | "
            f"{p['completion_tokens_per_sample']:,.0f} |"
            for name, p in t["by_prompt"].items()
        ),
        "",
        (
            f"**{t['total_tokens_per_sample']:,.0f} judge tokens per sample** for all five seed-002 metrics, "
            f"counted by the server, on {t['samples']} synthetic sample(s) of {t['input_tokens_per_sample']:.0f} "
            f"input tokens (answer ≤ {t['shape']['answer']}, reference ≤ {t['shape']['reference']}, "
            f"{t['shape']['chunks']} chunks ≤ {t['shape']['chunk_tokens']}); {t['repairs']} repairs, "
            f"{t['failures']} failures. Goal ≤ {t['goal_tokens']:,}: {'met' if t['meets_goal'] else 'not met'} "
            f"(RAGAS's nearest five: about {t['ragas_reference_tokens']:,})."
        ),
        "",
        *(
            line
            for run in (r, local.get("throughput_verify"))
            if run
            for line in (
                (
                    f"Throughput, claims={run.get('claims', 'verify')}: {run['source']}, all five judged metrics, "
                    f"{run['chunks_per_record']:.1f} chunks per record, judge concurrency {run['judge_concurrency']}: "
                    f"{run['wall_s']:.0f} s, **{run['items_per_min']:.2f} items per minute** "
                    f"({run['s_per_item']:.1f} s per item, {run['requests_per_item']:.2f} requests per item, "
                    f"{run['failures']} failures)."
                ),
                "",
            )
        ),
        "Goal (issue 11): at least 6 items per minute with the default (claims=split).",
        "",
    ]
    return lines


def to_markdown(report: dict[str, Any]) -> str:
    env = report["environment"]
    results = report["results"]
    earlier = report.get("earlier_runs") or []
    this_run = [name for name, result in results.items() if result.get("date_utc", env["date_utc"]) == env["date_utc"]]
    lines = [
        "# ragmeter benchmarks",
        "",
        (
            f"Run {env['date_utc']} with `{_command(report)}` in {report['total_s']:.0f} s"
            + (f" ({', '.join(this_run)})." if earlier else ".")
        ),
        _machine(env),
    ]
    for run in earlier:
        lines += [
            "",
            (
                f"Figures of {', '.join(run['benchmarks'])} kept from the run of {run['date_utc']} "
                f"(`{_command(run)}`, {run['total_s']:.0f} s)"
                + ("." if _same_machine(run["environment"], env) else f"; {_machine(run['environment'])}")
            ),
        ]
    lines.append("")
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
                (
                    f"{o['records']} MT-RAG reference tasks with passages "
                    f"({o['tasks_without_passages_skipped']} without passages left out), "
                    f"{o['answer_sentences']} cited answer sentences, {o['texts_embedded']} distinct texts "
                    f"embedded (evaluate embedded {o['texts_embedded_by_evaluate']}, the same set). "
                    f"{o['settings']}."
                ),
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
                (
                    f"| `evaluate(metrics=['token_f1','exact_match'])`, default settings (2000 resamples) "
                    f"| {x['evaluate_s']:.2f} | **{x['evaluate_pairs_per_s']:,.0f}** |"
                ),
                (
                    f"| same, `Settings(n_resamples=100)` | {x['evaluate_scoring_s']:.2f} "
                    f"| {x['evaluate_scoring_pairs_per_s']:,.0f} |"
                ),
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
            lines += [
                (
                    f"| {r['records']:,} | {r['file_mb']:.0f} | **{r['peak_rss_mb']:.0f}** "
                    f"| {r['wall_s']:.0f} | {r['records_per_s']:.0f} |"
                )
                for r in m["runs"]
            ]
            verdict = "met" if m["meets_goal"] else "not met"
            lines += [
                "",
                (
                    f"Growth ×{m['growth_ratio']:.2f} in RSS for ×{m['size_ratio']:.0f} records "
                    f"({_fmt(m['marginal_kb_per_record'])} KB per extra record); goal < {m['goal_mb']} MB "
                    f"at the largest size and sub-linear growth: {verdict}."
                ),
                "",
            ]
    if "rouge" in results:
        lines += _markdown_rouge(results["rouge"])
    if "bertscore" in results:
        lines += _markdown_bertscore(results["bertscore"])
    if "mtrag_pipeline" in results:
        lines += _markdown_pipeline(results["mtrag_pipeline"])
    if "retrieval" in results:
        lines += _markdown_retrieval(results["retrieval"])
    if "judge" in results:
        lines += _markdown_judge(results["judge"])
    lines += [
        "## Run conditions",
        "",
        "| benchmark | run (UTC) | duration (s) | load average before (1/5/15 min) |",
        "|---|---|---|---|",
    ]
    for name, result in results.items():
        load = result.get("load_average_before")
        lines.append(
            f"| {name} | {result.get('date_utc', env['date_utc'])} "
            f"| {result.get('duration_s', 0):.0f} | "
            + ("–" if load is None else " / ".join(f"{x:.2f}" for x in load))
            + " |"
        )
    lines.append("")
    return "\n".join(lines)


def merge_with_earlier(report: dict[str, Any], path: Path) -> dict[str, Any]:
    """``report`` plus the results of ``path`` (an earlier latest.json) for the benchmarks it did not run.

    Each kept result keeps the date of the run that produced it, and ``earlier_runs`` lists those runs
    (date, command, total time, machine and versions) with the benchmarks each still contributes.
    """
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
        old_results = old["results"]
        old_env = old["environment"]
    except (OSError, ValueError, KeyError, TypeError):
        return report
    runs = {run["date_utc"]: run for run in old.get("earlier_runs") or []}
    runs[old_env["date_utc"]] = {
        "date_utc": old_env["date_utc"],
        "quick": old.get("quick", False),
        "command": _command(old),
        "total_s": old.get("total_s", 0.0),
        "environment": old_env,
    }
    kept = {}
    for name, result in old_results.items():
        if name not in report["results"]:
            kept[name] = {**result, "date_utc": result.get("date_utc", old_env["date_utc"])}
    if not kept:
        return report
    order = list(BENCHMARKS)
    merged = {**kept, **report["results"]}
    rank = {name: i for i, name in enumerate(order)}
    report["results"] = dict(sorted(merged.items(), key=lambda item: rank.get(item[0], len(order))))
    earlier = []
    for date, run in sorted(runs.items()):
        names = [name for name, result in report["results"].items() if name in kept and result["date_utc"] == date]
        if names:
            earlier.append({**run, "benchmarks": names})
    report["earlier_runs"] = earlier
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run, a few minutes)")
    parser.add_argument("--only", help=f"comma-separated subset of {', '.join(BENCHMARKS)}")
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder for latest.json and latest.md")
    parser.add_argument(
        "--replace",
        action="store_true",
        help="with --only, drop the figures of the other benchmarks instead of keeping them",
    )
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.only.split(",")] if args.only else list(BENCHMARKS)
    unknown = [name for name in chosen if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; choose from {', '.join(BENCHMARKS)}")

    command = (
        "python -m benchmarks.run_all"
        + (" --quick" if args.quick else "")
        + (f" --only {','.join(chosen)}" if args.only else "")
    )
    report: dict[str, Any] = {"quick": args.quick, "command": command, "environment": environment(), "results": {}}
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
        report["results"][name].update(
            duration_s=time.perf_counter() - began, load_average_before=load, date_utc=report["environment"]["date_utc"]
        )
    report["total_s"] = time.perf_counter() - start
    if not args.replace:
        report = merge_with_earlier(report, args.results / "latest.json")

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
