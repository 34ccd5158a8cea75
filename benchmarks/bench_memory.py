"""Peak memory (RSS) of ``ragmeter run`` over 10,000, 30,000 and 100,000 records.

Each size is a synthetic native JSONL file written to a temporary folder and scored in a fresh
subprocess running ``ragmeter run FILE --out DIR --no-progress --format json`` with every default
metric and the real packaged ONNX embedder. The peak resident set size is that child's own
``ru_maxrss``, read with ``os.wait4`` on it by a small launcher process (so one size's peak never
leaks into the next, as ``getrusage(RUSAGE_CHILDREN)`` in one parent would, and the benchmark
process's own size never leaks in through fork; see ``_LAUNCHER``).

Records look like a multi-turn RAG log: 8 turns per conversation (so intervals use the cluster
bootstrap), 5 retrieved chunks drawn from a corpus of 2,000 chunks (each 3–6 sentences of a pool of
3,000 distinct sentences), answers of 2–4 sentences of that pool, most citing a retrieved chunk (and
mostly a sentence of it, so Overlap is neither 0 nor 1), some citing a chunk that was not retrieved,
some with no citation, a few IDK answers and explicit abstentions, a reference answer, token usage of
1–2 LLM calls and a latency. The embedder therefore sees at most ~5,000
distinct texts whatever the run size, as on a real corpus where answers and chunks repeat, and the
run's memory growth comes from the per-item state ragmeter keeps, not from the embedding cache.

Sizes: 10k, 30k, 100k (``--quick``: 2k, 6k, 20k). Goals: under 1 GB at 100k, sub-linear growth.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

FULL_SIZES = (10_000, 30_000, 100_000)
QUICK_SIZES = (2_000, 6_000, 20_000)
GOAL_MB = 1024
N_SENTENCES = 3_000
N_CHUNKS = 2_000
TURNS_PER_CONVERSATION = 8

_WORDS = (  # noqa: SIM905  (a word list reads better as text)
    "account balance bank card charge credit debit deposit fee fund interest loan money payment rate "
    "savings tax transfer budget cost price market stock share bond insurance policy claim coverage "
    "premium deductible benefit employee employer salary wage pension retirement plan contract lease "
    "rent tenant landlord property house home car vehicle engine battery electric fuel energy power "
    "solar wind water river lake ocean island city town village country state government court law "
    "judge appeal case form library research student school college university course exam degree "
    "doctor patient hospital health disease treatment medicine vaccine virus symptom diet exercise "
    "sleep weather storm rain snow winter summer spring autumn season travel flight airport hotel "
    "ticket passport visa border customs museum history war treaty king queen empire president vote "
    "election party senate congress computer software hardware network server data file password "
    "email phone screen camera photo video music song album artist film actor director award the a "
    "an of to in on for with by from at about after before during under over between through is are "
    "was were has have had can could will would should may might must does did"
).split()


def _sentence(rng: random.Random, low: int, high: int) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(low, high))]
    return " ".join(words).capitalize()


def _pools(seed: int = 0, n_sentences: int = N_SENTENCES,
           n_chunks: int = N_CHUNKS) -> tuple[list[str], list[tuple[str, str, list[str]]]]:
    """``n_sentences`` distinct sentences, and ``n_chunks`` chunks (doc_id, text, its sentences) made of 3–6 of
    them."""
    rng = random.Random(seed)
    sentences = [f"{_sentence(rng, 8, 20)} {i}" for i in range(n_sentences)]  # the index keeps them distinct
    chunks = []
    for i in range(n_chunks):
        parts = rng.sample(sentences, rng.randint(3, 6))
        chunks.append((f"doc-{i // 3}-{i % 3}", " ".join(f"{p}." for p in parts), parts))
    return sentences, chunks


IDK_SENTENCES = ("I don't know the answer to that.", "The provided documents do not mention this.",
                 "I'm not sure about the exact figure.")


def synthetic_records(n: int, seed: int = 0, *, n_sentences: int = N_SENTENCES,
                      n_chunks: int = N_CHUNKS) -> Iterator[dict[str, Any]]:
    """``n`` native-format records (dicts), deterministic for a seed; their texts come from pools of
    ``n_sentences`` sentences and ``n_chunks`` chunks."""
    sentences, chunks = _pools(seed, n_sentences, n_chunks)
    rng = random.Random(seed + 1)
    for i in range(n):
        contexts = rng.sample(chunks, 5)
        parts = []
        for _ in range(rng.randint(2, 4)):
            doc_id, _, chunk_sentences = rng.choice(contexts)
            # Mostly a sentence of the cited chunk (usually supported), else any sentence (usually not).
            sentence = rng.choice(chunk_sentences if rng.random() < 0.6 else sentences)
            roll = rng.random()
            if roll < 0.85:
                parts.append(f"{sentence} [CIT:{doc_id}].")
            elif roll < 0.92:
                parts.append(f"{sentence} [CIT:{rng.choice(chunks)[0]}].")  # usually a doc not retrieved
            else:
                parts.append(f"{sentence}.")
        if rng.random() < 0.05:
            parts = [rng.choice(IDK_SENTENCES)]
        record: dict[str, Any] = {
            "id": f"q{i}",
            "question": _sentence(rng, 6, 12) + "?",
            "answer": " ".join(parts),
            "contexts": [{"doc_id": d, "text": t} for d, t, _ in contexts],
            "references": [rng.choice(sentences) + "."],
            "answerability": "UNANSWERABLE" if rng.random() < 0.1 else "ANSWERABLE",
            "usage": [{"prompt_tokens": rng.randint(800, 3000), "completion_tokens": rng.randint(20, 300)}
                      for _ in range(rng.randint(1, 2))],
            "latency_ms": round(rng.lognormvariate(7.0, 0.5), 1),
            "metadata": {"conversation_id": f"conv-{i // TURNS_PER_CONVERSATION}", "run_id": "bench"},
        }
        if rng.random() < 0.02:
            record["action"] = "ABSTAIN"
        yield record


def write_jsonl(path: Path, n: int, seed: int = 0, **pools: int) -> int:
    with path.open("w", encoding="utf-8") as handle:
        for record in synthetic_records(n, seed, **pools):
            handle.write(json.dumps(record) + "\n")
    return path.stat().st_size


def _ragmeter_command() -> list[str]:
    script = Path(sys.executable).with_name("ragmeter")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from ragmeter.cli.commands import main; sys.exit(main())"]


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
    command = [*_ragmeter_command(), "run", str(path), "--out", str(out_dir), "--no-progress",
               "--format", "json"]
    stdout_path, stderr_path = out_dir.with_suffix(".stdout"), out_dir.with_suffix(".stderr")
    start = time.perf_counter()
    with stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
        launcher = subprocess.run([sys.executable, "-c", _LAUNCHER, *command], stdout=stdout, stderr=stderr,
                                  check=False)
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
    return {"wall_s": wall, "peak_rss_mb": usage["maxrss_kb"] / 1024,  # Linux: kilobytes
            "cpu_s": usage["utime"] + usage["stime"], "n_items": report["n_items"],
            "overlap_mean": summaries.get("overlap.mean")}


def synthetic_inputs(prefix: str, sizes: Iterable[int], *, keep: bool = False) -> Iterator[tuple[int, Path, Path]]:
    """For each size ``n``: ``(n, file, folder)``, a JSONL file of ``n`` synthetic records in a temporary folder;
    the file is removed once its turn is over, the folder (and what was written beside it) at the end, unless
    ``keep``."""
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        for n in sizes:
            path = workdir / f"records-{n}.jsonl"
            write_jsonl(path, n)
            yield n, path, workdir
            path.unlink()
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def run(*, quick: bool = False, sizes: tuple[int, ...] | None = None, keep: bool = False) -> dict[str, Any]:
    sizes = sizes or (QUICK_SIZES if quick else FULL_SIZES)
    runs = []
    for n, path, workdir in synthetic_inputs("ragmeter-bench-memory-", sizes, keep=keep):
        file_mb = path.stat().st_size / 2**20
        result = measure(path, workdir / f"out-{n}")
        result.update(records=n, file_mb=file_mb, records_per_s=n / result["wall_s"])
        runs.append(result)
        print(f"[memory] {n:>7,} records ({file_mb:.0f} MB file): "
              f"peak RSS {result['peak_rss_mb']:.0f} MB, "
              f"{result['wall_s']:.0f} s ({result['records_per_s']:.0f} records/s)", flush=True)
    first, last = runs[0], runs[-1]
    growth = last["peak_rss_mb"] / first["peak_rss_mb"]
    size_ratio = last["records"] / first["records"]
    per_item_kb = ((last["peak_rss_mb"] - first["peak_rss_mb"]) * 1024 / (last["records"] - first["records"])
                   if len(runs) > 1 else None)
    out = {
        "name": "memory",
        "command": ("ragmeter run FILE --out DIR --no-progress --format json "
                    "(all default metrics, ONNX embedder)"),
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
        print(f"[memory] growth {first['records']:,} → {last['records']:,} records (×{size_ratio:.0f}): "
              f"RSS ×{growth:.2f}, {per_item_kb:.2f} KB per extra record; "
              f"goal < {GOAL_MB} MB and sub-linear: "
              f"{'met' if out['meets_goal'] else 'NOT met'}")
    return out


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != "--quick"]
    chosen = tuple(int(a) for a in arguments) or None
    print(json.dumps(run(quick="--quick" in sys.argv, sizes=chosen), indent=2))
