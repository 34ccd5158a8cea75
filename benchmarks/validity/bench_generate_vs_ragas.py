"""RAGAS's ``TestsetGenerator`` beside ``ragmeter generate``: the same chunks, one judge server, items asked, kept
and failed, judge calls and tokens.

Issue 48's side-by-side: the generators of RAGAS, DeepEval and Giskard are their most complained-about feature
(empty sets with no reason, runs that fail on a local model's malformed JSON), so both run here on the model a team
without an API has, the packaged Qwen2.5-Coder-1.5B Q4_K_M: one :class:`ragmeter.judges.LocalServer` start (one
slot, every core) behind ``bench_vs_ragas.py``'s counting proxy, which writes down every request with the tokens
the server counted. One tiny request warms the server up (not counted). Then, one after the other:

- ``ragmeter``: :func:`ragmeter.testsets.pipeline.generate` as ``ragmeter generate CHUNKS --n N`` runs it
  (factoid and explanation questions, seed 0, each language's own embedder for near-duplicates), with the local
  judge as ``--judge local`` builds it (``LocalBackend`` at the proxy, its saved states, the shared layout) and a
  new, empty verdict cache. Asked, kept, dropped per reason, and the judge calls that failed after their repairs.
- ``ragas``: RAGAS 0.4.3's ``TestsetGenerator.generate_with_chunks`` (its pre-chunked path: RAGAS's own summary,
  theme, NER and embedding extractors and node filter on each chunk, personas, then its default query
  distribution: single-hop specific, multi-hop abstract and specific), ``testset_size`` N, the LLM as RAGAS's test
  set guide builds it (``LangchainLLMWrapper`` around LangChain's ``ChatOpenAI``) at the proxy with temperature 0
  and seed 0, embeddings ragmeter's packaged MiniLM (``bench_vs_ragas.minilm_embeddings``, nothing downloaded),
  one worker (the server has one slot; RAGAS's default of 16 would only queue) and the local judge's timeout,
  exceptions collected (``raise_exceptions=False``) so that what fails is counted, not fatal. Kept: the samples with
  a question and a reference; failed: the rest of what it was asked, and a stage that raised, with its error.

The chunks: the first ``--chunks`` (20) of ragmeter's bundled demo chunks (``demo-chunks.jsonl``: the library's,
pool's and bus service's pages, English, one or two sentences a chunk), the same list for both tools; ``--n`` (10)
items each. Reported per tool: items asked, written (ragmeter), kept, failed (with reasons), judge calls and tokens
(the server's ``usage``), tokens per kept item, wall seconds and kept items a minute, and every kept item (question,
reference, kind), so that a reader can see what each wrote. Results: ``results/generate_vs_ragas.json``.

RAGAS is a benchmark-only extra (``bench-ragas``), in its own virtual environment as for ``bench_vs_ragas.py``:

    python3 -m venv /work/ragas-venv
    /work/ragas-venv/bin/pip install -e '.[local,bench-ragas]'
    /work/ragas-venv/bin/python -m benchmarks.validity.bench_generate_vs_ragas [--chunks 20] [--n 10]

Offline: RAGAS's usage tracking is off and Hugging Face's libraries stay offline (set by ``bench_vs_ragas``); RAGAS's
extractors count tokens with tiktoken's ``o200k_base``, which tiktoken would download: the benchmark points
``TIKTOKEN_CACHE_DIR`` at the copy llama-index-core ships in its wheel (in the ``bench-ragas`` extra). Without
xllamacpp, RAGAS or that file the benchmark says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from collections import Counter
from importlib import resources, util
from pathlib import Path
from typing import Any

from benchmarks._common import cell, markdown_table, missing_modules, write_result
from benchmarks._counting_proxy import (
    LOCAL_JUDGE_NEEDED,
    CountingProxy,
    counted_local_server,
    judge_at_proxy,
    summarise,
)
from benchmarks.judge.bench_vs_ragas import INSTALL, RAGAS_VERSION, minilm_embeddings

NAME = "generate_vs_ragas"
CHUNKS = 20
ITEMS = 10
SEED = 0
KINDS = ("factoid", "explanation")


def demo_chunks(k: int) -> list[dict[str, str]]:
    """The first ``k`` rows of ragmeter's bundled demo chunk file."""
    text = resources.files("ragmeter.data").joinpath("demo-chunks.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()[:k]]


def tool_figures(proxy: CountingProxy, label: str, kept: int, wall: float) -> dict[str, Any]:
    counted = summarise(proxy.records_for(label))
    tokens = counted["prompt_tokens"] + counted["completion_tokens"]
    return {
        **{k: counted[k] for k in ("calls", "prompt_tokens", "completion_tokens", "prompt_computes_tokens")},
        "judge_tokens": tokens,
        "judge_tokens_per_kept_item": tokens / kept if kept else None,
        "wall_s": wall,
        "kept_per_minute": kept / (wall / 60) if wall else None,
    }


# --- ragmeter --------------------------------------------------------------------------------------------------


def ragmeter_pass(rows: list[dict[str, str]], proxy: CountingProxy, server: Any, n: int) -> dict[str, Any]:
    from ragmeter.app.generate import language_embedders
    from ragmeter.judges import JudgeCache
    from ragmeter.testsets import pipeline
    from ragmeter.testsets.corpus import read_chunks

    label = "ragmeter"
    embedder_for, duplicate_cosine_for = language_embedders("auto")
    with tempfile.TemporaryDirectory() as folder:
        chunk_file = Path(folder) / "chunks.jsonl"
        chunk_file.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        judge = judge_at_proxy(server, proxy, layout="shared", cache=JudgeCache(Path(folder) / "verdicts.sqlite"))
        proxy.label = label
        started = time.perf_counter()
        try:
            records, report = pipeline.generate(
                read_chunks(chunk_file),
                judge,
                n=n,
                kinds=KINDS,
                seed=SEED,
                embedder_for=embedder_for,
                duplicate_cosine_for=duplicate_cosine_for,
            )
        finally:
            wall = time.perf_counter() - started
            proxy.label = ""
            judge.close()
    failed = {f"{kind}: {reason}": count for (kind, reason), count in report.dropped.items() if "judge" in reason}
    return {
        "asked": n,
        "written": sum(report.asked.values()),
        "kept": len(records),
        "failed": sum(failed.values()),
        "failures": failed,
        "dropped": {f"{kind}: {reason}": count for (kind, reason), count in sorted(report.dropped.items())},
        "why_short": report.why_short,
        **tool_figures(proxy, label, len(records), wall),
        "items": [
            {"kind": r.metadata["question_type"], "question": r.question, "reference": r.references[0]} for r in records
        ],
    }


# --- RAGAS -----------------------------------------------------------------------------------------------------


def ragas_pass(rows: list[dict[str, str]], proxy: CountingProxy, model: str, n: int) -> dict[str, Any]:
    from langchain_openai import ChatOpenAI
    from ragas.llms import LangchainLLMWrapper
    from ragas.run_config import RunConfig
    from ragas.testset import TestsetGenerator

    from ragmeter.judges import LOCAL_TIMEOUT_S

    label = "ragas"
    chat = ChatOpenAI(
        model=model,
        base_url=proxy.base_url,
        api_key="sk-local-no-key",
        temperature=0.0,
        seed=SEED,
        timeout=LOCAL_TIMEOUT_S,
    )
    generator = TestsetGenerator(llm=LangchainLLMWrapper(chat), embedding_model=minilm_embeddings())
    proxy.label = label
    started = time.perf_counter()
    error, samples = None, []
    try:
        testset = generator.generate_with_chunks(
            [row["text"] for row in rows],
            testset_size=n,
            run_config=RunConfig(max_workers=1, timeout=int(LOCAL_TIMEOUT_S), seed=SEED),
            raise_exceptions=False,
        )
        samples = [sample.model_dump() for sample in testset.samples]
    except Exception as exc:  # noqa: BLE001  (RAGAS failing on the local model is the finding: reported)
        where = traceback.extract_tb(exc.__traceback__)[-1]
        error = f"{type(exc).__name__}: {str(exc)[:800]} (at {Path(where.filename).name}:{where.lineno} {where.name})"
    finally:
        wall = time.perf_counter() - started
        proxy.label = ""
    items = [
        {
            "kind": s.get("synthesizer_name"),
            "question": (s.get("eval_sample") or {}).get("user_input"),
            "reference": (s.get("eval_sample") or {}).get("reference"),
        }
        for s in samples
    ]
    kept = [item for item in items if item["question"] and item["reference"]]
    return {
        "asked": n,
        "kept": len(kept),
        "failed": n - len(kept),
        "error": error,
        "by_kind": dict(Counter(str(item["kind"]) for item in kept)),
        **tool_figures(proxy, label, len(kept), wall),
        "items": kept,
    }


# --- run -------------------------------------------------------------------------------------------------------


def tiktoken_files() -> Path | None:
    """The tiktoken encodings llama-index-core ships (``o200k_base`` among them), or None."""
    spec = util.find_spec("llama_index.core")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "_static" / "tiktoken_cache"
    return folder if folder.is_dir() else None


def skipped() -> dict[str, Any] | None:
    absent = missing_modules(
        NAME,
        (
            LOCAL_JUDGE_NEEDED,
            ("ragas", f"RAGAS is not installed ({INSTALL})"),
        ),
    )
    if absent is not None:
        return absent
    if "TIKTOKEN_CACHE_DIR" not in os.environ:
        files = tiktoken_files()
        if files is None:
            why = f"no offline copy of tiktoken's encodings: llama-index-core is not installed ({INSTALL})"
            print(f"[{NAME}] skipped: {why}")
            return {"name": NAME, "skipped": why}
        os.environ["TIKTOKEN_CACHE_DIR"] = str(files)
    return None


def markdown(passes: dict[str, dict[str, Any]]) -> str:
    rows = [
        ("items asked", "asked", 0),
        ("items written (ragmeter: up to two writes an item, each checked)", "written", 0),
        ("kept", "kept", 0),
        ("failed", "failed", 0),
        ("judge calls", "calls", 0),
        ("judge tokens (prompt + completion)", "judge_tokens", 0),
        ("judge tokens per kept item", "judge_tokens_per_kept_item", 0),
        ("wall seconds", "wall_s", 0),
        ("kept items a minute", "kept_per_minute", 2),
    ]
    cells = ((title, [cell(p.get(key), digits) for p in passes.values()]) for title, key, digits in rows)
    return "\n".join(markdown_table("", list(passes), cells))


def run(n_chunks: int, n: int) -> dict[str, Any]:
    reason = skipped()
    if reason is not None:
        return reason
    import ragas

    rows = demo_chunks(n_chunks)
    passes: dict[str, dict[str, Any]] = {}
    with counted_local_server() as (server, proxy):
        passes["ragmeter"] = ragmeter_pass(rows, proxy, server, n)
        print(f"[{NAME}] ragmeter: kept {passes['ragmeter']['kept']} of {n}", flush=True)
        passes["ragas"] = ragas_pass(rows, proxy, server.model_id, n)
        print(f"[{NAME}] ragas: kept {passes['ragas']['kept']} of {n} {passes['ragas']['error'] or ''}", flush=True)
        unlabelled = [r for r in proxy.records if not r["label"]]
    table = markdown(passes)
    print(table, flush=True)
    return {
        "name": NAME,
        "chunks": f"the first {n_chunks} of ragmeter's demo-chunks.jsonl: {sorted({r['doc_id'] for r in rows})}",
        "items_asked": n,
        "judge": {"model": server.model_id, "slots": server.parallel, "threads": server.threads},
        "ragas": {"version": ragas.__version__, "expected": RAGAS_VERSION},
        "passes": passes,
        "requests_outside_passes": len(unlabelled),
        "markdown": table,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=CHUNKS, help=f"demo chunks (default {CHUNKS})")
    parser.add_argument("--n", type=int, default=ITEMS, help=f"items asked of each tool (default {ITEMS})")
    args = parser.parse_args()
    out = run(args.chunks, args.n)
    if "skipped" not in out:
        print(f"written: {write_result(NAME, out)}")


if __name__ == "__main__":
    sys.exit(main())
