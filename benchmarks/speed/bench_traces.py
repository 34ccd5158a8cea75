"""Reading OpenTelemetry traces (OTLP JSON lines, OpenInference attributes) against reading the same records
from ragmeter's native JSONL: 100,000 RAG traces, about 1,000,000 spans, in bounded memory.

    python -m benchmarks.speed.bench_traces [--traces N] [--repeats R] [--quick] [--workdir DIR] [--seed S] [--save]

**Data** (seeded; in a temporary folder, removed at the end, or in ``--workdir``, kept), for N and N/4 traces:

- ``traces-N.jsonl``: OTLP JSON lines as an OTel collector's file exporter writes them, one compact
  ``{"resourceSpans": [{"resource": ..., "scopeSpans": [{"scope": ..., "spans": [...]}]}]}`` per line, hex
  ids, int64 times and ``intValue`` as strings, attributes as ``KeyValue``/``AnyValue``. Each line is one
  export of a ``BatchSpanProcessor`` with its defaults: up to 512 spans, fewer when its 5 s schedule delay (in
  the traces' own time) comes first. Spans come in the order they end (children before their parent) from
  ``IN_FLIGHT`` = 4 requests served at once, so traces interleave. Each trace is a RAG request of about 10
  spans with OpenInference attributes (names from ``openinference.semconv.trace``): a root CHAIN
  (``input.value`` the question, ``output.value`` the answer with ``[CIT:doc]`` markers, ``session.id`` of a
  session of 1–5 turns, 3 on average, served in order, ``user.id``, ``metadata``, ``tag.tags``); an input
  GUARDRAIL; a CHAIN that condenses the question; a RETRIEVER with 5 documents (id, content of 300–600
  characters, score, metadata) around an EMBEDDING of the query (its vector left out, as
  ``OPENINFERENCE_HIDE_EMBEDDING_VECTORS`` does); a RERANKER keeping 3 of them on half the traces; a CHAIN
  that synthesises, around a CHAIN that formats the prompt, the LLM span (model, the system prompt, earlier
  turns and the prompt as input messages, the answer as output message, token counts) and a CHAIN that checks
  the citations; an output GUARDRAIL on half the traces.
- ``records-N.jsonl``: the records ``ragmeter.read_records`` makes of ``traces-N.jsonl``, written with
  ``record_to_dict``, so both files hold the same records; read back, their count and a sample of about 1,000
  of them must equal those of the trace file.

**Measure.** Each read runs in a fresh interpreter: ``for _ in ragmeter.read_records(path): count += 1``,
timed from after ``import ragmeter`` (the OpenInference names are imported by the first trace, inside the
timing). Peak RSS is that interpreter's own ``getrusage(RUSAGE_SELF).ru_maxrss``; the baseline is the same
figure right after ``import ragmeter``. A small launcher process stands between this process and each read: on
Linux a process's ``ru_maxrss`` starts from the peak of the process it was forked (or vforked) from, so a read
started from here would report this process's size. ``--repeats R`` runs every read R times (the best time is
reported, each run beside it; the highest peak).

**Memory bound.** The same reads of the N/4 files: a bounded reader's peak RSS above the baseline does not
grow four times from N/4 to N traces.

Sizes: ``--traces`` (default 100,000; ``--quick`` 10,000). Prints progress on stderr and Markdown tables for
``benchmarks/README.md`` on stdout; ``--save`` also writes ``results/traces[-quick].json``.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ragmeter
from ragmeter.io.formats.native import record_to_dict

try:
    from openinference.semconv.resource import ResourceAttributes
    from openinference.semconv.trace import (
        DocumentAttributes,
        EmbeddingAttributes,
        MessageAttributes,
        OpenInferenceMimeTypeValues,
        OpenInferenceSpanKindValues,
        RerankerAttributes,
        SpanAttributes,
    )
except ImportError:
    sys.exit("this benchmark needs the OpenInference conventions: pip install 'ragmeter[otel]'")

TRACES = 100_000
QUICK_TRACES = 10_000
SEED = 0
IN_FLIGHT = 4
BATCH_SPANS = 512  # BatchSpanProcessor's max_export_batch_size
SCHEDULE_DELAY_NS = 5_000_000_000  # and its schedule_delay_millis
N_CHUNKS = 3_000
TOP_K = 5
RERANK_TOP_N = 3
RERANK_SHARE = 0.5
OUTPUT_GUARD_SHARE = 0.5
SAMPLE = 1_000
MS = 1_000_000
START_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
CHAIN, LLM, RETRIEVER, EMBEDDING, RERANKER, GUARDRAIL = (
    OpenInferenceSpanKindValues.CHAIN.value,
    OpenInferenceSpanKindValues.LLM.value,
    OpenInferenceSpanKindValues.RETRIEVER.value,
    OpenInferenceSpanKindValues.EMBEDDING.value,
    OpenInferenceSpanKindValues.RERANKER.value,
    OpenInferenceSpanKindValues.GUARDRAIL.value,
)
JSON_MIME, TEXT_MIME = OpenInferenceMimeTypeValues.JSON.value, OpenInferenceMimeTypeValues.TEXT.value
RESOURCE = {
    "service.name": "support-rag",
    "service.version": "2.3.1",
    "deployment.environment": "production",
    "host.name": "rag-worker-3",
    "process.pid": 48213,
    "telemetry.sdk.language": "python",
    "telemetry.sdk.name": "opentelemetry",
    "telemetry.sdk.version": "1.45.2",
    ResourceAttributes.PROJECT_NAME: "support-rag",
}
SCOPE = {"name": "openinference.instrumentation.llama_index", "version": "4.6.1"}
SYSTEM_PROMPT = (
    "You are a support assistant. Answer the question from the context below only. After "
    "each sentence, cite the passage it comes from as [CIT:doc_id]. If the context does not "
    "answer the question, say that you do not know."
)
IDK = "I don't know: the documents I found do not answer this."

_WORDS = (  # noqa: SIM905  (a word list reads better as text)
    "account balance billing card charge credit invoice payment refund subscription plan tier quota limit "
    "cluster node region zone instance volume snapshot backup restore bucket object storage network subnet "
    "gateway firewall rule port certificate key secret token password login session user group role policy "
    "permission access audit log metric alert dashboard trace span latency error timeout retry request "
    "response endpoint service deployment release version upgrade migration database table index query "
    "replica shard cache queue topic message event webhook schedule job task pipeline build artifact image "
    "container registry tenant organisation project workspace team owner admin support ticket incident "
    "the a an of to in on for with by from at about after before during under over between through is are "
    "was were has have had can could will would should may might must does did not only also when if then "
    "each every any most several new old default custom daily monthly public private primary secondary "
    "automatically manually quickly safely café naïve résumé – € °C"
).split()


# --- text ---------------------------------------------------------------------------------------------------


def _sentence(rng: random.Random, low: int, high: int) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(low, high)))
    return text[0].upper() + text[1:]


@dataclass(frozen=True)
class Passage:
    """One chunk of the knowledge base the traces retrieve from, and the sentences it is made of."""

    doc_id: str
    title: str
    text: str
    sentences: tuple[str, ...]


def corpus(rng: random.Random, n: int = N_CHUNKS) -> list[Passage]:
    """``n`` chunks of 300–600 characters (whole sentences), three per document."""
    chunks = []
    for i in range(n):
        target = rng.randint(300, 600)
        sentences: list[str] = []
        while sum(len(s) + 2 for s in sentences) < target:
            sentences.append(_sentence(rng, 6, 16))
        while len(sentences) > 1 and sum(len(s) + 2 for s in sentences) > 600:
            sentences.pop()
        doc = i // 3
        text = " ".join(f"{s}." for s in sentences)
        chunks.append(Passage(f"kb-{doc:04d}-{i % 3}", _sentence(rng, 2, 5), text, tuple(sentences)))
    return chunks


# --- OTLP JSON ----------------------------------------------------------------------------------------------


def any_value(value: Any) -> dict[str, Any]:
    """An OTLP ``AnyValue`` as OTLP/JSON writes it (64-bit integers as strings)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    return {"stringValue": value}


def key_values(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": any_value(value)} for key, value in attributes.items()]


def _documents(prefix: str, chunks: list[Passage], scores: list[float], *, metadata: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, (chunk, score) in enumerate(zip(chunks, scores, strict=True)):
        out[f"{prefix}.{i}.{DocumentAttributes.DOCUMENT_ID}"] = chunk.doc_id
        out[f"{prefix}.{i}.{DocumentAttributes.DOCUMENT_CONTENT}"] = chunk.text
        out[f"{prefix}.{i}.{DocumentAttributes.DOCUMENT_SCORE}"] = score
        if metadata:
            out[f"{prefix}.{i}.{DocumentAttributes.DOCUMENT_METADATA}"] = json.dumps(
                {
                    "file_name": f"{chunk.doc_id.rsplit('-', 1)[0]}.md",
                    "title": chunk.title,
                    "chunk": int(chunk.doc_id.rsplit("-", 1)[1]),
                },
                ensure_ascii=False,
            )
    return out


def _messages(prefix: str, messages: list[tuple[str, str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, (role, content) in enumerate(messages):
        out[f"{prefix}.{i}.{MessageAttributes.MESSAGE_ROLE}"] = role
        out[f"{prefix}.{i}.{MessageAttributes.MESSAGE_CONTENT}"] = content
    return out


Timed = tuple[int, dict[str, Any]]  # (end time in ns, span)


def _ms(rng: random.Random, low: float, high: float) -> int:
    """A duration of ``low``–``high`` ms, in ns."""
    return int(rng.uniform(low, high) * MS)


class _Trace:
    """The spans of one trace as they are built, each with its end time."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.trace_id = f"{rng.getrandbits(128):032x}"
        self.spans: list[Timed] = []

    def new_id(self) -> str:
        return f"{self.rng.getrandbits(64):016x}"

    def add(
        self, span_id: str, name: str, parent: str | None, start: int, end: int, attributes: dict[str, Any]
    ) -> None:
        span: dict[str, Any] = {"traceId": self.trace_id, "spanId": span_id}
        if parent is not None:
            span["parentSpanId"] = parent
        span.update(
            flags=256,
            name=name,
            kind=1,
            startTimeUnixNano=str(start),
            endTimeUnixNano=str(end),
            attributes=key_values(attributes),
            status={"code": 1},
        )
        self.spans.append((end, span))

    def leaf(self, name: str, parent: str, start: int, end: int, attributes: dict[str, Any]) -> None:
        self.add(self.new_id(), name, parent, start, end, attributes)


def rag_trace(
    rng: random.Random, chunks: list[Passage], session: str, user: str, history: list[tuple[str, str]], t0: int
) -> tuple[list[Timed], int, str, str]:
    """One RAG request starting at ``t0`` (ns): its spans with their end times, in end order (every child ends
    before its parent), the request's end, its question and its answer."""
    trace = _Trace(rng)
    root, retrieve, synthesize = trace.new_id(), trace.new_id(), trace.new_id()
    question = _sentence(rng, 7, 16) + "?"
    query = question if not history else f"{question[:-1]}, following up on: {history[-1][0][:-1]}?"
    guard = {
        SpanAttributes.OUTPUT_VALUE: '{"flagged": false, "categories": []}',
        SpanAttributes.OUTPUT_MIME_TYPE: JSON_MIME,
    }

    at = t0 + _ms(rng, 0.1, 0.5)
    end = at + _ms(rng, 15, 60)
    trace.leaf("input_guardrail", root, at, end, {KIND: GUARDRAIL, SpanAttributes.INPUT_VALUE: question, **guard})
    at = end + _ms(rng, 0.1, 0.3)
    end = at + _ms(rng, 2, 15)
    trace.leaf(
        "condense_question",
        root,
        at,
        end,
        {KIND: CHAIN, SpanAttributes.INPUT_VALUE: question, SpanAttributes.OUTPUT_VALUE: query},
    )

    retrieved = rng.sample(chunks, TOP_K)
    scores = sorted((round(rng.uniform(0.45, 0.92), 4) for _ in range(TOP_K)), reverse=True)
    at = end + _ms(rng, 0.1, 0.3)
    embed_at = at + _ms(rng, 0.2, 0.6)
    embed_end = embed_at + _ms(rng, 20, 80)
    trace.leaf(
        "embed_query",
        retrieve,
        embed_at,
        embed_end,
        {
            KIND: EMBEDDING,
            SpanAttributes.EMBEDDING_MODEL_NAME: "BAAI/bge-small-en-v1.5",
            f"{SpanAttributes.EMBEDDING_EMBEDDINGS}.0.{EmbeddingAttributes.EMBEDDING_TEXT}": query,
        },
    )
    end = embed_end + _ms(rng, 5, 40)
    trace.add(
        retrieve,
        "retrieve",
        root,
        at,
        end,
        {
            KIND: RETRIEVER,
            SpanAttributes.INPUT_VALUE: query,
            **_documents(SpanAttributes.RETRIEVAL_DOCUMENTS, retrieved, scores, metadata=True),
        },
    )
    final = retrieved
    if rng.random() < RERANK_SHARE:
        final = rng.sample(retrieved, RERANK_TOP_N)
        new_scores = sorted((round(rng.uniform(0.2, 0.99), 4) for _ in range(RERANK_TOP_N)), reverse=True)
        at = end + _ms(rng, 0.1, 0.3)
        end = at + _ms(rng, 40, 180)
        trace.leaf(
            "rerank",
            root,
            at,
            end,
            {
                KIND: RERANKER,
                RerankerAttributes.RERANKER_QUERY: query,
                RerankerAttributes.RERANKER_MODEL_NAME: "BAAI/bge-reranker-base",
                RerankerAttributes.RERANKER_TOP_K: RERANK_TOP_N,
                **_documents(RerankerAttributes.RERANKER_INPUT_DOCUMENTS, retrieved, scores, metadata=False),
                **_documents(RerankerAttributes.RERANKER_OUTPUT_DOCUMENTS, final, new_scores, metadata=False),
            },
        )

    if rng.random() < 0.05:
        answer = IDK
    else:
        cited = [rng.choice(final) for _ in range(rng.randint(2, 4))]
        answer = " ".join(f"{rng.choice(c.sentences)} [CIT:{c.doc_id}]." for c in cited)
    context = "\n\n".join(f"[{c.doc_id}] {c.title}\n{c.text}" for c in final)
    prompt = f"Context:\n{context}\n\nQuestion: {query}\nAnswer:"
    messages = [("system", SYSTEM_PROMPT)]
    for turn_question, turn_answer in history[-2:]:
        messages += [("user", turn_question), ("assistant", turn_answer)]
    messages.append(("user", prompt))
    prompt_tokens = sum(len(m) for _, m in messages) // 4 + rng.randint(-20, 20)
    completion_tokens = len(answer) // 4 + rng.randint(0, 8)

    synthesize_at = end + _ms(rng, 0.1, 0.3)
    at = synthesize_at + _ms(rng, 0.1, 0.3)
    end = at + _ms(rng, 0.5, 3)
    trace.leaf(
        "format_prompt",
        synthesize,
        at,
        end,
        {
            KIND: CHAIN,
            SpanAttributes.INPUT_VALUE: json.dumps({"query_str": query, "num_nodes": len(final)}, ensure_ascii=False),
            SpanAttributes.INPUT_MIME_TYPE: JSON_MIME,
            SpanAttributes.OUTPUT_VALUE: prompt,
        },
    )
    at = end + _ms(rng, 0.1, 0.3)
    end = at + _ms(rng, 600, 2500)
    trace.leaf(
        "llm",
        synthesize,
        at,
        end,
        {
            KIND: LLM,
            SpanAttributes.LLM_MODEL_NAME: "gpt-4o-mini-2024-07-18",
            SpanAttributes.LLM_PROVIDER: "openai",
            SpanAttributes.LLM_SYSTEM: "openai",
            SpanAttributes.LLM_INVOCATION_PARAMETERS: '{"temperature": 0.1, "max_tokens": 512}',
            **_messages(SpanAttributes.LLM_INPUT_MESSAGES, messages),
            **_messages(SpanAttributes.LLM_OUTPUT_MESSAGES, [("assistant", answer)]),
            SpanAttributes.LLM_TOKEN_COUNT_PROMPT: prompt_tokens,
            SpanAttributes.LLM_TOKEN_COUNT_COMPLETION: completion_tokens,
            SpanAttributes.LLM_TOKEN_COUNT_TOTAL: prompt_tokens + completion_tokens,
            SpanAttributes.OUTPUT_VALUE: answer,
        },
    )
    at = end + _ms(rng, 0.1, 0.3)
    end = at + _ms(rng, 0.3, 2)
    trace.leaf(
        "check_citations",
        synthesize,
        at,
        end,
        {
            KIND: CHAIN,
            SpanAttributes.INPUT_VALUE: answer,
            SpanAttributes.OUTPUT_VALUE: json.dumps(
                {"cited": sorted({c.doc_id for c in final if c.doc_id in answer}), "unknown": []}
            ),
            SpanAttributes.OUTPUT_MIME_TYPE: JSON_MIME,
        },
    )
    end += _ms(rng, 0.1, 0.3)
    trace.add(
        synthesize,
        "synthesize",
        root,
        synthesize_at,
        end,
        {KIND: CHAIN, SpanAttributes.INPUT_VALUE: query, SpanAttributes.OUTPUT_VALUE: answer},
    )
    if rng.random() < OUTPUT_GUARD_SHARE:
        at = end + _ms(rng, 0.1, 0.3)
        end = at + _ms(rng, 15, 60)
        trace.leaf("output_guardrail", root, at, end, {KIND: GUARDRAIL, SpanAttributes.INPUT_VALUE: answer, **guard})
    end += _ms(rng, 0.3, 1.5)
    trace.add(
        root,
        "rag_query",
        None,
        t0,
        end,
        {
            KIND: CHAIN,
            SpanAttributes.INPUT_VALUE: question,
            SpanAttributes.INPUT_MIME_TYPE: TEXT_MIME,
            SpanAttributes.OUTPUT_VALUE: answer,
            SpanAttributes.OUTPUT_MIME_TYPE: TEXT_MIME,
            SpanAttributes.SESSION_ID: session,
            SpanAttributes.USER_ID: user,
            SpanAttributes.METADATA: json.dumps(
                {"app_version": "2.3.1", "channel": rng.choice(("web", "slack", "api")), "locale": "en-US"}
            ),
            SpanAttributes.TAG_TAGS: ["production", "rag-v2"],
        },
    )
    return sorted(trace.spans, key=lambda pair: pair[0]), end, question, answer


@dataclass
class _Budget:
    left: int


def _worker(slot: int, rng: random.Random, chunks: list[Passage], budget: _Budget) -> Iterator[Timed]:
    """(end time, span) of the requests one server worker serves back to back, a session's turns in order,
    until the workers together have started ``budget`` traces."""
    now = START_NS + slot * 397 * MS
    while budget.left > 0:
        session = f"{rng.getrandbits(128):032x}"
        user = f"user-{rng.randrange(5_000):04d}"
        history: list[tuple[str, str]] = []
        for _ in range(rng.randint(1, 5)):
            if budget.left == 0:
                return
            budget.left -= 1
            spans, end, question, answer = rag_trace(rng, chunks, session, user, history, now)
            history.append((question, answer))
            yield from spans
            now = end + _ms(rng, 50, 1500)


def _line(spans: list[dict[str, Any]], resource: dict[str, Any]) -> str:
    request = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": SCOPE, "spans": spans}]}]}
    return json.dumps(request, ensure_ascii=False, separators=(",", ":")) + "\n"


def write_traces(path: Path, n: int, seed: int) -> dict[str, int]:
    """Write ``n`` traces to ``path`` as OTLP JSON lines (see the module docstring); counts and size."""
    # random.Random, as ragmeter.testing's synthetic records: millions of scalar draws, which numpy's
    # Generator makes slow one at a time.
    rng = random.Random(seed)
    chunks = corpus(rng)
    budget = _Budget(n)
    workers = [_worker(slot, rng, chunks, budget) for slot in range(IN_FLIGHT)]
    resource = {"attributes": key_values(RESOURCE)}
    spans = lines = most = 0
    batch: list[dict[str, Any]] = []
    exported = START_NS
    with path.open("w", encoding="utf-8") as out:
        for end, span in heapq.merge(*workers, key=lambda pair: pair[0]):
            if batch and end - exported >= SCHEDULE_DELAY_NS:  # the processor's timer fired before this ended
                out.write(_line(batch, resource))
                lines, most, batch = lines + 1, max(most, len(batch)), []
                exported += (end - exported) // SCHEDULE_DELAY_NS * SCHEDULE_DELAY_NS
            batch.append(span)
            spans += 1
            if len(batch) == BATCH_SPANS:
                out.write(_line(batch, resource))
                lines, most, batch, exported = lines + 1, max(most, len(batch)), [], end
        if batch:
            out.write(_line(batch, resource))
            lines, most = lines + 1, max(most, len(batch))
    return {"traces": n, "spans": spans, "lines": lines, "max_spans_per_line": most, "bytes": path.stat().st_size}


def write_native(traces: Path, path: Path, n: int) -> dict[str, int]:
    """Write the records of ``traces`` to ``path`` as native JSONL, then check that reading ``path`` gives
    ``n`` records, a sample of about ``SAMPLE`` of them equal to those of ``traces``; counts and size."""
    step = max(1, n // SAMPLE)
    sample = {}
    with path.open("w", encoding="utf-8") as out:
        for i, record in enumerate(ragmeter.read_records(traces)):
            out.write(json.dumps(record_to_dict(record), ensure_ascii=False) + "\n")
            if i % step == 0 or i == n - 1:
                sample[i] = record
    count = 0
    for i, record in enumerate(ragmeter.read_records(path)):
        count += 1
        if i in sample and record != sample[i]:
            raise AssertionError(f"record {i} ({record.id}) of {path} differs from that of {traces}")
    if count != n or max(sample, default=-1) != n - 1:
        raise AssertionError(f"{traces} gave {max(sample, default=-1) + 1} records, {path} {count}; expected {n}")
    return {"records": count, "checked": len(sample), "bytes": path.stat().st_size}


# --- reading, in a fresh interpreter ------------------------------------------------------------------------

_READ = """
import json, resource, sys, time
import ragmeter
baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for _ in ragmeter.read_records(sys.argv[2]):
    pass
ready = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
began = time.perf_counter()
count = 0
for _ in ragmeter.read_records(sys.argv[1]):
    count += 1
seconds = time.perf_counter() - began
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"records": count, "seconds": seconds, "baseline_kb": baseline, "ready_kb": ready,
                  "peak_kb": peak}))
"""
# A fresh small interpreter between this process and the read: a process's ru_maxrss starts from the peak of
# the one it was forked or vforked from, and this one holds the generator's and the check's memory.
_LAUNCHER = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"


def measure(path: Path, warm_up: Path) -> dict[str, float]:
    """One read of ``path`` in a fresh interpreter, after one of the one-record file ``warm_up`` (of the
    same format, so that the reader's modules are loaded): records, seconds, and RSS (MB) after
    ``import ragmeter``, after the warm-up read and at the peak."""
    command = [sys.executable, "-c", _LAUNCHER, sys.executable, "-c", _READ, str(path), str(warm_up)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"reading {path} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "records": out["records"],
        "seconds": out["seconds"],
        "baseline_mb": out["baseline_kb"] / 1024,
        "ready_mb": out["ready_kb"] / 1024,
        "peak_mb": out["peak_kb"] / 1024,
    }  # Linux: kilobytes


def _summary(runs: list[dict[str, float]], spans: int | None) -> dict[str, Any]:
    best = min(r["seconds"] for r in runs)
    peak = max(r["peak_mb"] for r in runs)
    ready = max(r["ready_mb"] for r in runs)
    out: dict[str, Any] = {
        "runs": runs,
        "seconds": best,
        "records_per_s": runs[0]["records"] / best,
        "peak_mb": peak,
        "baseline_mb": max(r["baseline_mb"] for r in runs),
        "ready_mb": ready,
        "above_ready_mb": peak - ready,
    }
    if spans is not None:
        out["spans_per_s"] = spans / best
    return out


def _note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _files(folder: Path, size: int, seed: int) -> tuple[Path, Path, dict[str, Any]]:
    """The trace file and the native file of ``size`` traces in ``folder``; what was written."""
    otlp, native = folder / f"traces-{size}.jsonl", folder / f"records-{size}.jsonl"
    began = time.perf_counter()
    written: dict[str, Any] = write_traces(otlp, size, seed)
    _note(
        f"[traces] {size:,} traces, {written['spans']:,} spans in {written['lines']:,} lines "
        f"({written['bytes'] / 2**20:.1f} MB) written in {time.perf_counter() - began:.0f} s"
    )
    began = time.perf_counter()
    written["native_file"] = write_native(otlp, native, size)
    native_mb = written["native_file"]["bytes"] / 2**20
    _note(
        f"[traces] {size:,} records as native JSONL ({native_mb:.1f} MB) written and "
        f"{written['native_file']['checked']:,} checked in {time.perf_counter() - began:.0f} s"
    )
    return otlp, native, written


# --- the run ------------------------------------------------------------------------------------------------


def run(
    *, traces: int | None = None, repeats: int = 1, quick: bool = False, workdir: Path | None = None, seed: int = SEED
) -> dict[str, Any]:
    n = traces or (QUICK_TRACES if quick else TRACES)
    folder = workdir or Path(tempfile.mkdtemp(prefix="ragmeter-bench-traces-"))
    folder.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    sizes = []
    try:
        warm_otlp, warm_native, _ = _files(folder, 1, seed)
        for size in (max(1, n // 4), n):
            otlp, native, written = _files(folder, size, seed)
            runs: dict[str, list[dict[str, float]]] = {"otlp": [], "native": []}
            for _ in range(repeats):
                for name, path, warm_up in (("otlp", otlp, warm_otlp), ("native", native, warm_native)):
                    last = measure(path, warm_up)
                    if last["records"] != size:
                        raise AssertionError(f"{path}: {last['records']} records, expected {size}")
                    runs[name].append(last)
                    _note(
                        f"[traces] {size:,} {name}: {last['seconds']:.2f} s, peak RSS "
                        f"{last['peak_mb']:.0f} MB (after import ragmeter {last['baseline_mb']:.0f} MB, "
                        f"after the warm-up {last['ready_mb']:.0f} MB)"
                    )
            sizes.append(
                {**written, "otlp": _summary(runs["otlp"], written["spans"]), "native": _summary(runs["native"], None)}
            )
    finally:
        if workdir is None:
            shutil.rmtree(folder, ignore_errors=True)
    small, large = sizes
    extra = large["traces"] - small["traces"]
    growth = {
        name: large[name]["above_ready_mb"] / small[name]["above_ready_mb"]
        if small[name]["above_ready_mb"] > 0
        else None
        for name in ("otlp", "native")
    }
    marginal = {
        name: (large[name]["peak_mb"] - small[name]["peak_mb"]) * 1024 / extra if extra else None
        for name in ("otlp", "native")
    }
    return {
        "name": "traces",
        "quick": quick,
        "seed": seed,
        "repeats": repeats,
        "in_flight": IN_FLIGHT,
        "batch_spans": BATCH_SPANS,
        "schedule_delay_s": SCHEDULE_DELAY_NS / 1e9,
        "sizes": sizes,
        "growth_above_ready": growth,
        "marginal_kb_per_trace": marginal,
        "traces_ratio": large["traces"] / small["traces"],
        "machine": {"python": platform.python_version(), "cpu_count": os.cpu_count(), "load_average_before": load},
        "ragmeter": ragmeter.__version__,
    }


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "–"


def _figure(value: float | None, form: str) -> str:
    return "–" if value is None else form.format(value)


def markdown(out: dict[str, Any]) -> str:
    """The result as Markdown tables, for ``benchmarks/README.md``."""
    small, large = out["sizes"]
    otlp, native = large["otlp"], large["native"]
    n, spans = large["traces"], large["spans"]
    timing = f"the best of {out['repeats']} runs" if out["repeats"] > 1 else "one run"
    if out["repeats"] > 1:
        timing += "; each: OTLP " + ", ".join(f"{r['seconds']:.2f}" for r in otlp["runs"]) + " s, native "
        timing += ", ".join(f"{r['seconds']:.2f}" for r in native["runs"]) + " s"
    machine = out["machine"]
    intro = (
        f"Reading {n:,} traces ({spans:,} spans) of OTLP JSON lines against the same {n:,} records as "
        f"native JSONL: `for _ in ragmeter.read_records(path)` in a fresh interpreter, after a "
        f"one-record file of the same format (seed {out['seed']}; time: {timing}; Python "
        f"{machine['python']}, {machine['cpu_count']} CPUs, load average "
        f"{machine['load_average_before'][0]:.2f} before; "
        f"ragmeter {out['ragmeter']}). RSS after `import ragmeter`: {otlp['baseline_mb']:.0f} MB; after "
        f"the one-record read: {otlp['ready_mb']:.0f} MB (OTLP), {native['ready_mb']:.0f} MB (native)."
    )
    file_otlp = (
        f"{large['bytes'] / 2**20:,.1f} MB, {large['lines']:,} lines "
        f"({spans / large['lines']:.0f} spans a line, at most {large['max_spans_per_line']})"
    )
    file_native = f"{large['native_file']['bytes'] / 2**20:,.1f} MB, {n:,} lines"
    bound = (
        f"Memory bound: peak RSS at {small['traces']:,} and {n:,} traces (×{out['traces_ratio']:.0f} "
        "the traces), and above the one-record read."
    )

    def bound_row(size: dict[str, Any]) -> str:
        cells = (f"{size[k]['peak_mb']:.0f} MB ({size[k]['above_ready_mb']:.0f} MB)" for k in ("otlp", "native"))
        return _row(f"{size['traces']:,}", *cells)

    growth, marginal = out["growth_above_ready"], out["marginal_kb_per_trace"]
    return "\n".join(
        [
            intro,
            "",
            _row("", "OTLP JSON lines", "native JSONL", "OTLP ÷ native"),
            _row("---", "---:", "---:", "---:"),
            _row("file", file_otlp, file_native, _ratio(large["bytes"], large["native_file"]["bytes"])),
            _row("records", f"{n:,} traces of {spans:,} spans", f"{n:,}", ""),
            _row(
                "read time",
                f"{otlp['seconds']:.2f} s",
                f"{native['seconds']:.2f} s",
                _ratio(otlp["seconds"], native["seconds"]),
            ),
            _row(
                "records/s",
                f"{otlp['records_per_s']:,.0f}",
                f"{native['records_per_s']:,.0f}",
                _ratio(otlp["records_per_s"], native["records_per_s"]),
            ),
            _row("spans/s", f"{otlp['spans_per_s']:,.0f}", "–", ""),
            _row(
                "peak RSS",
                f"{otlp['peak_mb']:.0f} MB",
                f"{native['peak_mb']:.0f} MB",
                _ratio(otlp["peak_mb"], native["peak_mb"]),
            ),
            _row(
                "peak RSS above the one-record read",
                f"{otlp['above_ready_mb']:.0f} MB",
                f"{native['above_ready_mb']:.0f} MB",
                # below 1 MB (the noise of a read that holds nothing), a ratio says nothing
                _ratio(otlp["above_ready_mb"], native["above_ready_mb"]) if native["above_ready_mb"] >= 1 else "–",
            ),
            "",
            bound,
            "",
            _row("traces", "OTLP JSON lines: peak (above)", "native JSONL: peak (above)"),
            _row("---:", "---:", "---:"),
            bound_row(small),
            bound_row(large),
            _row("growth above the one-record read", *(_figure(growth[k], "×{:.2f}") for k in ("otlp", "native"))),
            _row("peak RSS per extra trace", *(_figure(marginal[k], "{:.2f} KB") for k in ("otlp", "native"))),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, help=f"traces (default {TRACES:,}; --quick {QUICK_TRACES:,})")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_TRACES:,} traces")
    parser.add_argument(
        "--repeats", type=int, default=1, help="reads of each file (default 1; the best time is reported)"
    )
    parser.add_argument("--workdir", type=Path, help="write the files here and keep them (default: a temporary folder)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--save", action="store_true", help="also write results/traces[-quick].json")
    args = parser.parse_args()
    if args.repeats < 1 or (args.traces is not None and args.traces < 4):
        parser.error("--repeats must be at least 1 and --traces at least 4")
    out = run(traces=args.traces, repeats=args.repeats, quick=args.quick, workdir=args.workdir, seed=args.seed)
    print(markdown(out))
    if args.save:
        from _common import write_result

        _note(f"wrote {write_result('traces-quick' if args.quick else 'traces', out)}")


if __name__ == "__main__":
    main()
