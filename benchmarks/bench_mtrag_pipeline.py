"""Wall time of ``ragmeter mtrag --step algorithmic`` on MT-RAG files, as a user runs it.

Each timing is a real subprocess, ``python -m ragmeter.cli mtrag --step algorithmic -i IN -o OUT
--format json``, with the default packaged ONNX MiniLM for BERTScore and a fresh output path in a
temporary folder, so nothing is resumed and every value is computed. The wall time therefore includes
interpreter start-up, imports, the model load (and its sha256 check), reading and writing the JSONL,
and the summary with its bootstrap intervals that the command prints. Inputs:

- ``human_eval``: ``shared/data/mtrag/human_eval_tasks.jsonl`` (477 records, as released);
- ``reference_tasks``: ``shared/data/mtrag/mtragun_reference_tasks.jsonl`` (507 tasks), copied to a
  temporary file where each task gets ``predictions: [{"text": targets[0].text}]`` (its reference
  answer as the prediction; a task without targets would get an empty prediction).

Each input is timed once by default (``run(repeats=N)`` keeps the minimum of N; ``--quick`` keeps only
the first 120 records of each file). Then the step is re-run on its own output (``-i OUT -o OUT2``): every
value is present, so nothing is recomputed and the time is the command's fixed cost plus reading and
writing. Without the MT-RAG files the benchmark is skipped with a message.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _mtrag_data import HUMAN_EVAL_TASKS as HUMAN_EVAL
from _mtrag_data import REFERENCE_TASKS, missing

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
        kept = [line for _, line in zip(range(limit), lines)]
    target.write_text("".join(kept), encoding="utf-8")
    return len(kept)


def time_step(source: Path, target: Path) -> tuple[float, dict[str, Any]]:
    """Wall time of one ``ragmeter mtrag --step algorithmic`` subprocess, and its JSON summary."""
    command = [sys.executable, "-m", "ragmeter.cli", "mtrag", "--step", "algorithmic", "-i", str(source),
               "-o", str(target), "--format", "json"]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {done.returncode}: {done.stderr[-2000:]}")
    return elapsed, json.loads(done.stdout)


def run(*, quick: bool = False, repeats: int = 1) -> dict[str, Any]:
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
        for label, source, description in (
                ("human_eval", human, f"{HUMAN_EVAL.name}, as released"),
                ("reference_tasks", references,
                 f"{REFERENCE_TASKS.name} ({n_reference_tasks} tasks), reference answer as prediction")):
            times, summary, output = [], {}, tmp / "none"
            for attempt in range(repeats):
                output = tmp / f"{label}.out{attempt}.jsonl"
                elapsed, summary = time_step(source, output)
                times.append(elapsed)
                print(f"[mtrag pipeline] {label}: {summary['records']} records in {elapsed:.2f} s",
                      flush=True)
            rerun_s, rerun = time_step(output, tmp / f"{label}.rerun.jsonl")
            if rerun["computed"] != 0:
                raise AssertionError(f"re-running on its own output recomputed {rerun['computed']} records")
            if summary["computed"] != summary["records"]:
                raise AssertionError(f"{label}: {summary['computed']} of {summary['records']} "
                                     "records computed")
            best = min(times)
            inputs.append({
                "input": label,
                "description": description,
                "records": summary["records"],
                "computed": summary["computed"],
                "wall_s": times,
                "wall_min_s": best,
                "records_per_s": summary["records"] / best,
                "rerun_s": rerun_s,
                "rerun_computed": rerun["computed"],
                "bertscore_signature": summary["signatures"].get("bertscore"),
            })
            print(f"[mtrag pipeline] {label}: {summary['records']} records, {best:.2f} s "
                  f"({summary['records'] / best:.1f} records/s); re-run on its output {rerun_s:.2f} s "
                  f"({rerun['computed']} recomputed)", flush=True)
    return {
        "name": "mtrag_pipeline",
        "command": "python -m ragmeter.cli mtrag --step algorithmic -i IN -o OUT --format json",
        "measure": ("wall time of the subprocess (start-up, imports, model load, scoring, writing, summary); "
                    f"minimum of {repeats} run(s), fresh output each time"),
        "inputs": inputs,
        "quick": quick,
    }


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
