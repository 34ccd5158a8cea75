"""Wall time of ``ragmeter mtrag --step algorithmic`` on MT-RAG files, as a user runs it.

Each timing is a real subprocess, ``python -m ragmeter.cli mtrag --step algorithmic -i IN -o OUT
--format json``, with the default packaged ONNX MiniLM for BERTScore and a fresh output path in a
temporary folder, so nothing is resumed and every value is computed. The wall time therefore includes
interpreter start-up, imports, the model load (and its sha256 check), reading and writing the JSONL,
and the summary with its bootstrap intervals that the command prints. Inputs:

- ``human_eval``: ``shared/data/mtrag/human_eval_tasks.jsonl`` (477 records, as released);
- ``reference_tasks``: ``shared/data/mtrag/mtragun_reference_tasks.jsonl`` (507 tasks), copied to a
  temporary file where each task gets ``predictions: [{"text": targets[0].text}]`` (its reference
  answer as the prediction; a task without targets would get an empty prediction);
- with ``--scale N``, ``human_eval_N``: ``human_eval`` repeated to N records, each copy's task ids made new,
  so that all N are scored (issue 34 asks for 5,000).

Each input is timed once by default (``--repeats N`` keeps the minimum of N; ``--quick`` keeps only
the first 120 records of each file); every run's peak RSS is read from the kernel (``os.wait4``: that child's
own high-water mark). Then the step is re-run on its own output (``-i OUT -o OUT2``): every
value is present, so nothing is recomputed and the time is the command's fixed cost plus reading and
writing. Without the MT-RAG files the benchmark is skipped with a message.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._mtrag_data import HUMAN_EVAL_TASKS as HUMAN_EVAL
from benchmarks._mtrag_data import REFERENCE_TASKS, missing

QUICK_RECORDS = 120


def reference_as_prediction(source: Path, target: Path, limit: int | None = None) -> int:
    """Write ``source`` to ``target`` with each task's first reference as its prediction; tasks written."""
    written = 0
    with source.open(encoding="utf-8") as lines, target.open("w", encoding="utf-8") as out:
        for line in lines:
            if limit is not None and written >= limit:
                break
            task = json.loads(line)
            targets = task.get("targets") or []
            task["predictions"] = [{"text": targets[0]["text"] if targets else ""}]
            out.write(json.dumps(task, ensure_ascii=False) + "\n")
            written += 1
    return written


def head(source: Path, target: Path, limit: int) -> int:
    """The first ``limit`` lines of ``source`` in ``target``."""
    with source.open(encoding="utf-8") as lines:
        kept = list(itertools.islice(lines, limit))
    target.write_text("".join(kept), encoding="utf-8")
    return len(kept)


def time_step(source: Path, target: Path) -> tuple[float, dict[str, Any], float]:
    """Wall time of one ``ragmeter mtrag --step algorithmic`` subprocess, its JSON summary and its peak RSS
    in MB (the kernel's count for that child alone)."""
    command = [
        sys.executable,
        "-m",
        "ragmeter.cli",
        "mtrag",
        "--step",
        "algorithmic",
        "-i",
        str(source),
        "-o",
        str(target),
        "--format",
        "json",
    ]
    start = time.perf_counter()
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        child = subprocess.Popen(command, stdout=stdout, stderr=stderr)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own resource use: its peak RSS
        child.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.perf_counter() - start
        stdout.seek(0)
        stderr.seek(0)
        if child.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command)} exited with {child.returncode}: {stderr.read().decode(errors='replace')[-2000:]}"
            )
        summary = json.load(stdout)
    return elapsed, summary, usage.ru_maxrss / 1024  # kilobytes on Linux


def repeated(source: Path, target: Path, n: int) -> int:
    """``n`` records in ``target``: ``source``'s records over and over, each copy's ``task_id`` made new
    (``<task_id>#<copy>``) so that every record is scored; records written."""
    with source.open(encoding="utf-8") as lines:
        tasks = [json.loads(line) for line in lines if line.strip()]
    with target.open("w", encoding="utf-8") as out:
        for i in range(n):
            task = dict(tasks[i % len(tasks)])
            task["task_id"] = f"{task['task_id']}#{i // len(tasks)}"
            out.write(json.dumps(task, ensure_ascii=False) + "\n")
    return n


def run(*, quick: bool = False, repeats: int = 1, scale: int | None = None) -> dict[str, Any]:
    skipped = missing("mtrag_pipeline", "mtrag pipeline", HUMAN_EVAL, REFERENCE_TASKS)
    if skipped:
        return skipped

    limit = QUICK_RECORDS if quick else None
    inputs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ragmeter-bench-mtrag-") as folder:
        tmp = Path(folder)
        human = HUMAN_EVAL
        if limit is not None:
            human = tmp / "human_eval_head.jsonl"
            head(HUMAN_EVAL, human, limit)
        references = tmp / "reference_tasks_as_predictions.jsonl"
        n_reference_tasks = reference_as_prediction(REFERENCE_TASKS, references, limit)
        sources = [
            ("human_eval", human, f"{HUMAN_EVAL.name}, as released"),
            (
                "reference_tasks",
                references,
                f"{REFERENCE_TASKS.name} ({n_reference_tasks} tasks), reference answer as prediction",
            ),
        ]
        if scale is not None:
            scaled = tmp / f"human_eval_x{scale}.jsonl"
            repeated(HUMAN_EVAL, scaled, scale)
            sources.append(
                (
                    f"human_eval_{scale}",
                    scaled,
                    f"{HUMAN_EVAL.name} repeated to {scale} records, each copy with new task ids",
                )
            )
        for label, source, description in sources:
            times, peaks, summary, output = [], [], {}, tmp / "none"
            for attempt in range(repeats):
                output = tmp / f"{label}.out{attempt}.jsonl"
                elapsed, summary, peak = time_step(source, output)
                times.append(elapsed)
                peaks.append(peak)
                print(
                    f"[mtrag pipeline] {label}: {summary['records']} records in {elapsed:.2f} s, "
                    f"peak RSS {peak:.0f} MB",
                    flush=True,
                )
            rerun_s, rerun, _ = time_step(output, tmp / f"{label}.rerun.jsonl")
            if rerun["computed"] != 0:
                raise AssertionError(f"re-running on its own output recomputed {rerun['computed']} records")
            if summary["computed"] != summary["records"]:
                raise AssertionError(f"{label}: {summary['computed']} of {summary['records']} records computed")
            best = min(times)
            inputs.append(
                {
                    "input": label,
                    "description": description,
                    "records": summary["records"],
                    "computed": summary["computed"],
                    "wall_s": times,
                    "wall_min_s": best,
                    "records_per_s": summary["records"] / best,
                    "peak_rss_mb": peaks,
                    "peak_rss_max_mb": max(peaks),
                    "rerun_s": rerun_s,
                    "rerun_computed": rerun["computed"],
                    "bertscore_signature": summary["signatures"].get("bertscore"),
                }
            )
            print(
                f"[mtrag pipeline] {label}: {summary['records']} records, {best:.2f} s "
                f"({summary['records'] / best:.1f} records/s, peak RSS {max(peaks):.0f} MB); re-run on its "
                f"output {rerun_s:.2f} s "
                f"({rerun['computed']} recomputed)",
                flush=True,
            )
    return {
        "name": "mtrag_pipeline",
        "command": "python -m ragmeter.cli mtrag --step algorithmic -i IN -o OUT --format json",
        "measure": (
            "wall time of the subprocess (start-up, imports, model load, scoring, writing, summary); "
            f"minimum of {repeats} run(s), fresh output each time; peak RSS of each run (os.wait4)"
        ),
        "inputs": inputs,
        "quick": quick,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--scale", type=int, help="also time human_eval repeated to this many records")
    arguments = parser.parse_args()
    print(json.dumps(run(quick=arguments.quick, repeats=arguments.repeats, scale=arguments.scale), indent=2))
