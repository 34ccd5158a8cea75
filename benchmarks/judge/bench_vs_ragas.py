"""RAGAS beside ragmeter: judge calls, tokens and seconds per sample for the nearest five metrics, one judge.

The samples: ``--samples`` (3; 1 with ``--quick``) answers of MT-RAG's ``human_eval_tasks.jsonl`` read with
ragmeter's MT-RAG reader, chosen among the answers of the two models (not the reference responder) to answerable
tasks with 3 to 6 passages and a reference answer: that list in file order, shuffled with ``random.Random(0)``,
the first N (so the quick run's sample is the full run's first).

The judge: one :class:`ragmeter.judges.LocalServer` start (the packaged Qwen2.5-Coder-1.5B Q4_K_M, its defaults:
one slot, every core), behind a counting proxy on loopback (``_counting_proxy.py``) that forwards every request,
any path, to the server and writes down each one: wall seconds, the prompt and completion tokens the server
counted, llama.cpp's timings (prompt tokens from its cache and computed, tokens generated); requests that
generate nothing (llama.cpp's ``/tokenize``, ``/apply-template``, ``/slots``) are *control* requests, counted
with their seconds. One tiny request warms the server up first (not counted). Then, one after the other, each
tool at concurrency 1, no verdict cache on either side:

- ``ragas``: RAGAS 0.4.3's metrics collections (``ragas.metrics.collections``, the API its 0.4 documents; the
  older ``ragas.evaluate`` is deprecated there): ``AnswerCorrectness``, ``Faithfulness``,
  ``ContextPrecisionWithReference``, ``ContextRecall`` and ``AnswerRelevancy`` (the ``ResponseRelevancy`` of
  older releases), their defaults (correctness weights 0.75 / 0.25 with embeddings; relevancy ``strictness`` 3),
  each sample's five ``ascore`` calls awaited one at a time. The LLM: ``llm_factory`` (Instructor, JSON mode)
  around ``openai.AsyncOpenAI`` at the proxy's ``/v1`` (any key), RAGAS's model arguments but temperature 0 and
  seed 0 as ragmeter's (``top_p`` 0.1 and ``max_tokens`` 1024 as RAGAS sets them). Embeddings: a small
  :class:`~ragas.embeddings.base.BaseRagasEmbedding` around ragmeter's packaged ONNX all-MiniLM-L6-v2
  (``OnnxMiniLM``), so nothing is downloaded. RAGAS gets the last question alone (``user_input``), no history;
  passages are the chunks' texts.
- ``ragmeter-split`` and ``ragmeter-verify``: ``ragmeter.evaluate(metrics=["judged"])`` (seed 002's five
  metrics and their combined score) with the local judge as ragmeter builds it (``LocalBackend`` with
  ``PrefixStates``: each system message computed once and its slot state restored before each call; reply
  schemas' bounds in the grammar), ``Judge(concurrency=1, timeout_s=LOCAL_TIMEOUT_S, claims=...)``, one judge
  per mode for all samples, one ``evaluate`` per sample (so each sample's requests are told apart); claims
  ``split`` (the local judge's default: split only, the evidence check verifies) and ``verify``.

Reported per tool and mode, per sample and as means per sample: judge calls (generation requests), prompt and completion
tokens (the server's ``usage``), judge seconds (the generation requests' wall times at the proxy), the system messages
computed for their saved states (ragmeter only: ``/completion`` with nothing generated, their tokens and seconds, made
once per prompt and mode) and the control requests with their seconds, the wall seconds of the whole evaluation; NaN and
failures per metric and each metric's value (both tools gave real verdicts). The ratios RAGAS ÷ ragmeter (each mode) per
sample: judge tokens (the calls' prompt and completion tokens as the server counted them: each call's whole prompt, the
part restored from a saved state included; the goal's figure) and, beside, with the system messages' one-off computes
added; judge seconds *all in* (ragmeter's calls, its system messages' computes and its control requests: the goal's
figure) and *calls only*. Goals (issue text): ≥ 8× fewer judge tokens and ≥ 5× less judge time than RAGAS per sample.
Printed as Markdown and written to ``results/vs_ragas.json`` (``vs_ragas-quick.json`` with ``--quick``); ``--log FILE``
also writes every generation request and reply in full (JSON lines).

RAGAS is a benchmark-only extra (``bench-ragas`` in pyproject.toml: ragas, Instructor and langchain-openai
pinned), never a dependency of ragmeter. Its pins take openai 3.3.0 (Instructor 1.17 caps it below what
ragmeter's other environments may hold), so install it in a virtual environment of its own:

    python3 -m venv /work/ragas-venv
    /work/ragas-venv/bin/pip install -e '.[local,bench-ragas]'
    /work/ragas-venv/bin/python -m benchmarks.judge.bench_vs_ragas [--samples 3] [--quick] [--log FILE]

Offline: RAGAS's usage tracking is turned off (``RAGAS_DO_NOT_TRACK=true``) and Hugging Face's libraries are
told to stay offline; the five metrics load no tokenizer (tiktoken is only RAGAS's cost counting and test-set
generation, unused here), no NLTK data and no model: the embeddings are ragmeter's packaged ones. Without the
MT-RAG file, xllamacpp (``ragmeter[local]``) or RAGAS, the benchmark says so and exits 0. About 25–35 minutes
with ``--samples 3`` on 2 cores (most of it RAGAS's calls).
"""

from __future__ import annotations

from benchmarks._offline import go_offline

go_offline(RAGAS_DO_NOT_TRACK="true")  # before RAGAS is imported: no usage tracking

import argparse
import asyncio
import json
import math
import random
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._common import cell, markdown_table, missing_modules, write_result
from benchmarks._counting_proxy import LOCAL_JUDGE_NEEDED, CountingProxy, summarise, warm_up
from benchmarks._mtrag_data import HUMAN_EVAL_TASKS, missing

NAME = "vs_ragas"
FULL_SAMPLES = 3
QUICK_SAMPLES = 1
MIN_CHUNKS, MAX_CHUNKS = 3, 6
SEED = 0
RAGAS_VERSION = "0.4.3"
GOAL_TOKENS_RATIO = 8.0
GOAL_SECONDS_RATIO = 5.0
INSTALL = "pip install -e '.[local,bench-ragas]' (in a virtual environment of its own: see the docstring)"

#: RAGAS's metrics (collections class, the ascore arguments it takes) and ragmeter's nearest, in table order.
RAGAS_METRICS = {
    "answer_correctness": ("AnswerCorrectness", ("user_input", "response", "reference")),
    "faithfulness": ("Faithfulness", ("user_input", "response", "retrieved_contexts")),
    "context_precision_with_reference": (
        "ContextPrecisionWithReference",
        ("user_input", "reference", "retrieved_contexts"),
    ),
    "context_recall": ("ContextRecall", ("user_input", "retrieved_contexts", "reference")),
    "answer_relevancy": ("AnswerRelevancy", ("user_input", "response")),
}
NEAREST = {
    "answer_correctness": "judge_correctness",
    "faithfulness": "judge_faithfulness",
    "context_precision_with_reference": "judge_precision",
    "context_recall": "judge_recall",
    "answer_relevancy": "judge_relevance",
}
MODES = ("split", "verify")


# --- samples -------------------------------------------------------------------------------------------------


def eligible_answers() -> list[Any]:
    """The answers of the two models (not the reference responder) to answerable tasks with 3 to 6 passages and a
    reference answer, in file order (module docstring)."""
    from ragmeter import read_records

    return [
        r
        for r in read_records(HUMAN_EVAL_TASKS, format="mtrag")
        if r.model_id not in (None, "reference")
        and MIN_CHUNKS <= len(r.contexts) <= MAX_CHUNKS
        and r.references
        and (r.answerability or "ANSWERABLE") == "ANSWERABLE"
    ]


def choose_samples(n: int) -> list[Any]:
    """The first ``n`` of the eligible answers shuffled with seed 0 (module docstring)."""
    eligible = eligible_answers()
    random.Random(SEED).shuffle(eligible)
    if len(eligible) < n:
        raise SystemExit(f"only {len(eligible)} eligible answers in {HUMAN_EVAL_TASKS}")
    return eligible[:n]


def describe(record: Any) -> dict[str, Any]:
    return {
        "id": record.id,
        "model_id": record.model_id,
        "chunks": len(record.contexts),
        "history_turns": len(record.history),
        "question_chars": len(record.question),
        "answer_chars": len(record.answer),
        "reference_chars": len(record.references[0]),
        "chunk_chars": sum(len(c.text) for c in record.contexts),
    }


def ragas_inputs(record: Any) -> dict[str, Any]:
    return {
        "user_input": record.question,
        "response": record.answer,
        "reference": record.references[0],
        "retrieved_contexts": [chunk.text for chunk in record.contexts],
    }


# --- RAGAS -----------------------------------------------------------------------------------------------------


def minilm_embeddings() -> Any:
    """RAGAS's modern embeddings interface around ragmeter's packaged ONNX MiniLM (nothing downloaded)."""
    from ragas.embeddings.base import BaseRagasEmbedding

    from ragmeter.models.onnx_minilm import OnnxMiniLM

    class MiniLMEmbeddings(BaseRagasEmbedding):
        def __init__(self) -> None:
            super().__init__(cache=None)
            self.model = OnnxMiniLM()
            self.texts = 0

        def embed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
            self.texts += len(texts)
            return [[float(x) for x in row] for row in self.model.encode(list(texts))]

        def embed_text(self, text: str, **kwargs: Any) -> list[float]:
            return self.embed_texts([text])[0]

        async def aembed_text(self, text: str, **kwargs: Any) -> list[float]:
            return self.embed_text(text)

        async def aembed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
            return self.embed_texts(texts)

    return MiniLMEmbeddings()


def ragas_metrics(base_url: str, model: str, embeddings: Any) -> tuple[dict[str, Any], Any]:
    """RAGAS's five metrics on the LLM at ``base_url`` (module docstring), and the OpenAI client to close."""
    from openai import AsyncOpenAI
    from ragas.llms import llm_factory
    from ragas.metrics import collections

    from ragmeter.judges import LOCAL_TIMEOUT_S

    client = AsyncOpenAI(base_url=base_url, api_key="sk-local-no-key", timeout=LOCAL_TIMEOUT_S)
    llm = llm_factory(model, provider="openai", client=client, temperature=0.0, seed=0)
    built = {}
    for name, (class_name, _) in RAGAS_METRICS.items():
        cls = getattr(collections, class_name)
        needs_embeddings = class_name in ("AnswerCorrectness", "AnswerRelevancy")
        built[name] = cls(llm=llm, embeddings=embeddings) if needs_embeddings else cls(llm=llm)
    return built, client


async def _ragas_pass(records: list[Any], proxy: CountingProxy, model: str) -> dict[str, Any]:
    embeddings = minilm_embeddings()
    metrics, client = ragas_metrics(proxy.base_url, model, embeddings)
    samples = []
    try:
        for i, record in enumerate(records):
            inputs = ragas_inputs(record)
            values, errors, seconds = {}, {}, {}
            started = time.perf_counter()
            for name, metric in metrics.items():
                proxy.label = f"ragas/{record.id}/{name}"
                t0 = time.perf_counter()
                try:
                    result = await metric.ascore(**{k: inputs[k] for k in RAGAS_METRICS[name][1]})
                    values[name] = number(result.value)
                except Exception as exc:  # noqa: BLE001  (a failed metric is a finding: reported, the run goes on)
                    values[name] = None
                    errors[name] = f"{type(exc).__name__}: {str(exc)[:500]}"
                seconds[name] = time.perf_counter() - t0
                print(
                    f"[vs_ragas] ragas sample {i + 1}/{len(records)} {name}: {values[name]} "
                    f"({seconds[name]:.0f} s){' ' + errors[name] if name in errors else ''}",
                    flush=True,
                )
            wall = time.perf_counter() - started
            rows = proxy.records_for(f"ragas/{record.id}/", prefix=True)
            samples.append(
                {
                    "id": record.id,
                    "wall_s": wall,
                    "values": values,
                    "errors": errors,
                    "metric_s": seconds,
                    **summarise(rows),
                    "by_metric": {
                        name: _short(summarise(proxy.records_for(f"ragas/{record.id}/{name}"))) for name in metrics
                    },
                }
            )
    finally:
        proxy.label = ""
        await client.close()
    return {"samples": samples, "texts_embedded": embeddings.texts}


def ragas_pass(records: list[Any], proxy: CountingProxy, model: str) -> dict[str, Any]:
    return asyncio.run(_ragas_pass(records, proxy, model))


# --- ragmeter --------------------------------------------------------------------------------------------------


def ragmeter_pass(records: list[Any], proxy: CountingProxy, model: str, claims: str) -> dict[str, Any]:
    import ragmeter
    from ragmeter.judges import LOCAL_TIMEOUT_S, Judge
    from ragmeter.judges.backends.prefix_states import LocalBackend, PrefixStates

    label = f"ragmeter-{claims}"
    states = PrefixStates(proxy.root_url, timeout_s=LOCAL_TIMEOUT_S)
    backend = LocalBackend(
        states=states,
        base_url=proxy.base_url,
        model=model,
        api_key_env=None,
        timeout_s=LOCAL_TIMEOUT_S,
        bounds="schema",
    )
    judge = Judge(backend, concurrency=1, timeout_s=LOCAL_TIMEOUT_S, claims=claims)  # no cache: none given
    samples = []
    try:
        for i, record in enumerate(records):
            proxy.label = f"{label}/{record.id}"
            started = time.perf_counter()
            result = ragmeter.evaluate([record], metrics=["judged"], judge=judge)
            wall = time.perf_counter() - started
            proxy.label = ""
            assert result.judging is not None
            values = {name: number(scores[0]) for name, scores in result.scores.items()}
            undefined = {name: reasons[0] for name, reasons in result.undefined.items() if 0 in reasons}
            totals = result.judging.totals()
            samples.append(
                {
                    "id": record.id,
                    "wall_s": wall,
                    "values": values,
                    "undefined": undefined,
                    "judge_failures": [
                        {"prompt": f["prompt"], "reason": f["reason"], "raw": (f["raw"] or "")[:300]}
                        for f in result.judging.failures
                    ],
                    "judge_own_count": {
                        k: totals[k]
                        for k in (
                            "calls",
                            "requests",
                            "retries",
                            "repairs",
                            "failures",
                            "prompt_tokens",
                            "completion_tokens",
                        )
                    },
                    **summarise(proxy.records_for(f"{label}/{record.id}")),
                }
            )
            print(
                f"[vs_ragas] {label} sample {i + 1}/{len(records)}: {wall:.0f} s, "
                + ", ".join(f"{k} {v}" for k, v in values.items()),
                flush=True,
            )
    finally:
        proxy.label = ""
        judge.close()
    return {"claims": claims, "samples": samples}


# --- figures ---------------------------------------------------------------------------------------------------


def number(value: Any) -> float | None:
    """``value`` as a float, or None where it is none, not a number or NaN."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _short(summary: dict[str, Any]) -> dict[str, Any]:
    return {
        k: summary[k]
        for k in ("calls", "prompt_tokens", "completion_tokens", "judge_s", "cut_at_max_tokens", "unanswered")
    }


def per_sample(samples: list[dict[str, Any]]) -> dict[str, float]:
    """Means per sample; ``judge_tokens``: prompt + completion tokens of the judge calls (each call's whole prompt,
    the part restored from a saved state included); ``*_all_in``: with the system messages computed for their
    states (tokens, seconds: made once per prompt and mode, so a share of each sample) and the control requests
    (seconds) added."""
    n = len(samples)

    def mean(key: str) -> float:
        return sum(s[key] for s in samples) / n

    out = {
        key: mean(key)
        for key in (
            "calls",
            "prompt_tokens",
            "completion_tokens",
            "prompt_tokens_computed",
            "prompt_tokens_from_cache",
            "judge_s",
            "prompt_computes",
            "prompt_computes_tokens",
            "prompt_computes_s",
            "control_requests",
            "control_s",
            "wall_s",
            "cut_at_max_tokens",
            "unanswered",
        )
    }
    out["judge_tokens"] = out["prompt_tokens"] + out["completion_tokens"]
    out["judge_tokens_all_in"] = out["judge_tokens"] + out["prompt_computes_tokens"]
    out["judge_s_all_in"] = out["judge_s"] + out["prompt_computes_s"] + out["control_s"]
    return out


def nan_and_failures(tool: str, samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Per metric: samples without a value (``nan``) and, for RAGAS, those whose ``ascore`` raised (``failed``,
    counted in ``nan`` too); for ragmeter, the judge calls that ended without a verdict, by prompt."""
    names = list(samples[0]["values"]) if samples else []
    out: dict[str, Any] = {name: {"nan": sum(1 for s in samples if s["values"].get(name) is None)} for name in names}
    if tool == "ragas":
        for name in names:
            out[name]["failed"] = sum(1 for s in samples if name in s["errors"])
    else:
        failed: dict[str, int] = {}
        for s in samples:
            for f in s["judge_failures"]:
                failed[f["prompt"]] = failed.get(f["prompt"], 0) + 1
        out["judge_failures_by_prompt"] = failed
    return out


def ratios(ragas: dict[str, float], ours: dict[str, float]) -> dict[str, float | None]:
    def ratio(a: float, b: float) -> float | None:
        return a / b if b else None

    return {
        "judge_tokens": ratio(ragas["judge_tokens"], ours["judge_tokens"]),
        "judge_tokens_all_in": ratio(ragas["judge_tokens_all_in"], ours["judge_tokens_all_in"]),
        "judge_s_all_in": ratio(ragas["judge_s_all_in"], ours["judge_s_all_in"]),
        "judge_s_calls_only": ratio(ragas["judge_s"], ours["judge_s"]),
        "calls": ratio(ragas["calls"], ours["calls"]),
        "wall_s": ratio(ragas["wall_s"], ours["wall_s"]),
    }


def markdown(
    means: dict[str, dict[str, float]],
    ratio_rows: dict[str, dict[str, float | None]],
    passes: dict[str, dict[str, Any]],
) -> str:
    tools = list(means)
    rows = [
        ("judge calls", "calls", 1),
        ("prompt tokens", "prompt_tokens", 0),
        ("completion tokens", "completion_tokens", 0),
        ("judge tokens (calls)", "judge_tokens", 0),
        ("system messages computed for states: tokens", "prompt_computes_tokens", 0),
        ("judge tokens + system messages computed", "judge_tokens_all_in", 0),
        ("prompt tokens computed (not from llama.cpp's cache)", "prompt_tokens_computed", 0),
        ("judge seconds (calls)", "judge_s", 1),
        ("system messages computed: seconds", "prompt_computes_s", 1),
        ("control requests", "control_requests", 1),
        ("control seconds", "control_s", 1),
        ("judge seconds, all in", "judge_s_all_in", 1),
        ("wall seconds", "wall_s", 1),
        ("replies cut at max tokens", "cut_at_max_tokens", 1),
    ]
    ratio_keys = (
        ("judge tokens (goal ≥ 8)", "judge_tokens"),
        ("judge tokens, with the system messages computed for states", "judge_tokens_all_in"),
        ("judge seconds, all in (goal ≥ 5)", "judge_s_all_in"),
        ("judge seconds, calls only", "judge_s_calls_only"),
        ("judge calls", "calls"),
        ("wall seconds", "wall_s"),
    )
    lines = markdown_table("per sample", tools, ((t, [cell(means[m][k], d) for m in tools]) for t, k, d in rows))
    lines += [
        "",
        *markdown_table(
            "RAGAS ÷ ragmeter",
            list(ratio_rows),
            ((t, [cell(ratio_rows[m][k], 2) for m in ratio_rows]) for t, k in ratio_keys),
        ),
    ]
    lines += [
        "",
        "| sample | RAGAS metric | RAGAS | ragmeter metric | " + " | ".join(t for t in tools if t != "ragas") + " |",
        "|---|---|---:|---|" + "---:|" * (len(tools) - 1),
    ]
    for i, sample in enumerate(passes["ragas"]["samples"]):
        for name, ours in NEAREST.items():
            theirs = sample["values"].get(name)
            shown = cell(theirs, 3) if name not in sample["errors"] else "failed"
            lines.append(
                f"| {i + 1} | {name} | {shown} | {ours} | "
                + " | ".join(cell(passes[t]["samples"][i]["values"].get(ours), 3) for t in tools if t != "ragas")
                + " |"
            )
    return "\n".join(lines)


# --- run -------------------------------------------------------------------------------------------------------


def skipped() -> dict[str, Any] | None:
    absent = missing(NAME, "vs_ragas", HUMAN_EVAL_TASKS)
    if absent is not None:
        return absent
    absent = missing_modules(
        NAME,
        (
            LOCAL_JUDGE_NEEDED,
            ("ragas", f"RAGAS is not installed ({INSTALL})"),
            ("instructor", f"Instructor is not installed ({INSTALL})"),
        ),
    )
    if absent is not None:
        return absent
    import ragas

    if ragas.__version__ != RAGAS_VERSION:
        print(f"[vs_ragas] note: RAGAS {ragas.__version__} installed, the figures are for {RAGAS_VERSION} ({INSTALL})")
    return None


def run(*, quick: bool = False, n_samples: int | None = None, log: Path | None = None) -> dict[str, Any]:
    reason = skipped()
    if reason is not None:
        return reason
    import ragas

    from ragmeter.judges import LocalServer

    n = n_samples or (QUICK_SAMPLES if quick else FULL_SAMPLES)
    records = choose_samples(n)
    print(
        f"[vs_ragas] {n} sample(s): "
        + ", ".join(f"{r.id} ({r.model_id}, {len(r.contexts)} passages)" for r in records),
        flush=True,
    )
    server = LocalServer()
    started = time.perf_counter()
    try:
        server.start()
    except Exception as exc:  # noqa: BLE001  (missing model parts: say so, as the other judge benchmarks do)
        server.stop()
        why = f"the local judge did not start: {type(exc).__name__}: {exc}"
        print(f"[vs_ragas] skipped: {why}")
        return {"name": NAME, "skipped": why}
    startup = time.perf_counter() - started
    assert server.base_url is not None
    print(
        f"[vs_ragas] local server ({server.model_id}, {server.parallel} slot(s), {server.threads} threads) "
        f"started in {startup:.1f} s",
        flush=True,
    )
    passes: dict[str, dict[str, Any]] = {}
    try:
        with CountingProxy(server.base_url.removesuffix("/v1"), keep_bodies=log is not None) as proxy:
            warm_up(proxy, server.model_id)
            runs = {"ragas": lambda: ragas_pass(records, proxy, server.model_id)}
            for claims in MODES:
                runs[f"ragmeter-{claims}"] = lambda c=claims: ragmeter_pass(records, proxy, server.model_id, c)
            for tool, one_pass in runs.items():
                try:
                    passes[tool] = one_pass()
                except Exception as exc:  # noqa: BLE001  (one tool's crash is reported; the others still run)
                    passes[tool] = {"error": f"{type(exc).__name__}: {exc}", "samples": []}
                    print(f"[vs_ragas] {tool} stopped: {passes[tool]['error']}", flush=True)
            if log is not None:
                with log.open("w", encoding="utf-8") as handle:
                    for row in proxy.records:
                        handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            unlabelled = [r for r in proxy.records if not r["label"]]
    finally:
        server.stop()

    means = {tool: per_sample(p["samples"]) for tool, p in passes.items() if len(p["samples"]) == n}
    ratio_rows = {
        f"÷ {claims}": ratios(means["ragas"], means[f"ragmeter-{claims}"])
        for claims in MODES
        if "ragas" in means and f"ragmeter-{claims}" in means
    }
    table = markdown(means, ratio_rows, passes)
    print(table, flush=True)
    goals = {
        mode: {
            "tokens": (r["judge_tokens"] or 0) >= GOAL_TOKENS_RATIO,
            "seconds": (r["judge_s_all_in"] or 0) >= GOAL_SECONDS_RATIO,
        }
        for mode, r in ratio_rows.items()
    }
    return {
        "name": NAME,
        "quick": quick,
        "samples": n,
        "seed": SEED,
        "choice": (
            f"answers of {HUMAN_EVAL_TASKS.name} by the two models (not the reference responder), "
            f"answerable, {MIN_CHUNKS}–{MAX_CHUNKS} passages, a reference; shuffled with "
            f"random.Random({SEED}), the first {n}"
        ),
        "sample_shapes": [describe(r) for r in records],
        "judge": {
            "model": server.model_id,
            "slots": server.parallel,
            "threads": server.threads,
            "startup_s": startup,
            "concurrency": 1,
        },
        "ragas": {
            "version": ragas.__version__,
            "metrics": {name: f"ragas.metrics.collections.{cls}" for name, (cls, _) in RAGAS_METRICS.items()},
            "llm": "llm_factory(provider='openai', AsyncOpenAI at the proxy), temperature 0, seed 0",
            "embeddings": "ragmeter's OnnxMiniLM (all-MiniLM-L6-v2 int8) behind BaseRagasEmbedding",
        },
        "nearest": NEAREST,
        "per_sample": means,
        "ratios": ratio_rows,
        "goal": {"judge_tokens_ratio": GOAL_TOKENS_RATIO, "judge_s_ratio": GOAL_SECONDS_RATIO},
        "meets_goal": goals,
        "nan_and_failures": {tool: nan_and_failures(tool, p["samples"]) for tool, p in passes.items()},
        "passes": passes,
        "requests_outside_passes": len(unlabelled),  # between passes (the warm-up has its label): should be 0
        "markdown": table,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=None, help=f"samples (default {FULL_SAMPLES})")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SAMPLES} sample")
    parser.add_argument("--log", type=Path, default=None, help="write every generation request and reply here")
    args = parser.parse_args()
    out = run(quick=args.quick, n_samples=args.samples, log=args.log)
    if "skipped" in out:
        return
    name = f"{NAME}-quick" if args.quick else NAME
    print(f"written: {write_result(name, out)}")


if __name__ == "__main__":
    sys.exit(main())
