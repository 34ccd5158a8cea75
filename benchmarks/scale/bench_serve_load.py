"""``ragmeter serve`` under load (issue 49): traces a second taken and scored, acknowledgement latency, memory.

    python -m benchmarks.scale.bench_serve_load [--traces 18000] [--senders 4] [--batch 10] [--quick]
        [--store postgresql://…] [--processes 2]

An hour of traffic at 5 traces a second (18,000 traces) compressed into the run: ``--senders`` threads post
OTLP/HTTP JSON exports of ``--batch`` traces each, as fast as they are acknowledged, to ``ragmeter serve`` started
here with its default offline metrics (citation, lexical, efficiency) on a fresh store; a 503 is retried after its
``Retry-After``, as the OTLP exporters do. Each trace is one of the demo's 45 records as an application's
OpenInference spans (a chain with the question and answer, a retriever with the chunks, an LLM call's tokens), under
its own trace id. Reported: traces acknowledged a second while sending; traces scored a second, from the first post
to the last trace scored; p50, p99 and max acknowledgement latency of a request (send to 200); the 503s; the serve
process's resident memory (start, peak, end: bounded, or it grows with the traffic). With ``--store`` a PostgreSQL
URL and ``--processes N``, N serve processes share that database, each on its own port, the senders spread over
them (a load balancer's round robin): how it scales.

The senders and the server share the machine (2 cores here): a figure is the pair's, taken on an idle machine.
Writes ``results/serve_load.json`` (``serve_load-quick.json`` with ``--quick``: 1,000 traces).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

import ragmeter
from benchmarks._common import write_result
from ragmeter.io.demo import demo_path
from ragmeter.serve.stores import open_store

ENTRY = [sys.executable, "-c", "import sys; from ragmeter._entry import main; sys.exit(main())"]


def _attributes(**values: Any) -> list[dict[str, Any]]:
    kinds = {str: "stringValue", int: "intValue", float: "doubleValue"}
    return [{"key": key, "value": {kinds[type(value)]: value}} for key, value in values.items()]


def _spans(record: ragmeter.Record, trace: int) -> list[dict[str, Any]]:
    """One record as an application's spans under trace id ``trace``: chain, retriever, LLM."""
    start = 1_700_000_000_000_000_000 + trace * 1_000_000
    documents: dict[str, Any] = {}
    for i, chunk in enumerate(record.contexts):
        documents[f"retrieval.documents.{i}.document.id"] = chunk.doc_id
        documents[f"retrieval.documents.{i}.document.content"] = chunk.text
    usage = record.usage[0] if record.usage else None
    tokens = {}
    if usage is not None:
        tokens = {"llm.token_count.prompt": usage.prompt_tokens, "llm.token_count.completion": usage.completion_tokens}
    root = {"openinference.span.kind": "CHAIN", "input.value": record.question, "output.value": record.answer}
    parts = [
        ("root", None, root, 0, 900),
        ("retrieve", "root", {"openinference.span.kind": "RETRIEVER", **documents}, 10, 120),
        ("generate", "root", {"openinference.span.kind": "LLM", **tokens}, 130, 880),
    ]
    ids = {name: f"{trace * 4 + n + 1:016x}" for n, (name, *_) in enumerate(parts)}
    return [
        {
            "traceId": f"{trace + 1:032x}",
            "spanId": ids[name],
            "parentSpanId": ids[parent] if parent else "",
            "name": name,
            "startTimeUnixNano": str(start + begin * 1_000_000),
            "endTimeUnixNano": str(start + end * 1_000_000),
            "attributes": _attributes(**attributes),
        }
        for name, parent, attributes, begin, end in parts
    ]


def _bodies(n_traces: int, batch: int) -> list[bytes]:
    records = list(ragmeter.read_records(demo_path()))
    bodies = []
    for first in range(0, n_traces, batch):
        spans = [s for t in range(first, min(first + batch, n_traces)) for s in _spans(records[t % len(records)], t)]
        resource = {"attributes": _attributes(**{"service.name": "demo-rag"})}
        bodies.append(json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": spans}]}]}))
    return [body.encode() for body in bodies]


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start(store: str, port: int) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [*ENTRY, "serve", "--store", store, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if "receiving OTLP/HTTP traces at" not in line:
        raise SystemExit(f"ragmeter serve did not start: {line}{process.stdout.read()}")
    time.sleep(1.0)
    return process


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _post(url: str, body: bytes) -> tuple[float, int]:
    """Seconds until the body was acknowledged, and how many 503s came before."""
    refused = 0
    while True:
        request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
        began = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=120) as reply:
                reply.read()
                return time.perf_counter() - began, refused
        except urllib.error.HTTPError as error:
            if error.code != 503:
                raise
            refused += 1
            time.sleep(float(error.headers.get("Retry-After") or 1))


def run(n_traces: int, senders: int, batch: int, store: str | None, processes: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ragmeter-serve-load-") as folder:
        target = store or str(Path(folder) / "serve.sqlite")
        ports = [_free_port() for _ in range(processes)]
        servers = [_start(target, port) for port in ports]
        urls = [f"http://127.0.0.1:{port}/v1/traces" for port in ports]
        bodies = _bodies(n_traces, batch)
        latencies: list[float] = []
        refusals = [0]
        memory = {p.pid: [_rss_mb(p.pid)] for p in servers}
        lock = threading.Lock()
        queue = iter(enumerate(bodies))
        sending = threading.Event()
        sending.set()

        def sender() -> None:
            while True:
                with lock:
                    item = next(queue, None)
                if item is None:
                    return
                number, body = item
                seconds, refused = _post(urls[number % len(urls)], body)
                with lock:
                    latencies.append(seconds)
                    refusals[0] += refused

        def sample_memory() -> None:
            while sending.is_set():
                for p in servers:
                    memory[p.pid].append(_rss_mb(p.pid))
                time.sleep(0.5)

        watcher = threading.Thread(target=sample_memory, daemon=True)
        watcher.start()
        began = time.perf_counter()
        threads = [threading.Thread(target=sender) for _ in range(senders)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        sent_s = time.perf_counter() - began
        with open_store(target, read_only=True) as opened:
            while True:
                counts = opened.backlog()
                if counts["scored"] >= n_traces or time.perf_counter() - began > 3600:
                    break
                time.sleep(0.5)
        scored_s = time.perf_counter() - began
        sending.clear()
        watcher.join()
        for p in servers:
            p.terminate()
            p.wait(timeout=60)
    seconds = np.array(latencies)
    return {
        "traces": n_traces,
        "requests": len(bodies),
        "traces_per_request": batch,
        "senders": senders,
        "processes": processes,
        "store": "postgresql" if store else "sqlite",
        "scored": counts["scored"],
        "acknowledged_per_s": round(n_traces / sent_s, 1),
        "scored_per_s": round(counts["scored"] / scored_s, 1),
        "seconds_sending": round(sent_s, 1),
        "seconds_to_last_scored": round(scored_s, 1),
        "ack_latency_ms": {
            "p50": round(float(np.percentile(seconds, 50)) * 1000, 1),
            "p99": round(float(np.percentile(seconds, 99)) * 1000, 1),
            "max": round(float(seconds.max()) * 1000, 1),
        },
        "refused_503": refusals[0],
        "rss_mb": {
            str(pid): {"start": round(v[0], 1), "peak": round(max(v), 1), "end": round(v[-1], 1)}
            for pid, v in memory.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=18_000, help="traces sent (18,000: an hour at 5 a second)")
    parser.add_argument("--senders", type=int, default=4, help="threads posting at once (4)")
    parser.add_argument("--batch", type=int, default=10, help="traces a request (10)")
    parser.add_argument("--store", help="a postgresql:// URL the serve processes share (default: a fresh SQLite file)")
    parser.add_argument("--processes", type=int, default=1, help="serve processes (1; more need --store postgresql)")
    parser.add_argument("--quick", action="store_true", help="1,000 traces")
    args = parser.parse_args()
    if args.processes > 1 and not (args.store or "").startswith("postgresql"):
        parser.error("--processes above 1 needs --store postgresql://… (SQLite has one writer)")
    out = run(1_000 if args.quick else args.traces, args.senders, args.batch, args.store, args.processes)
    print(json.dumps(out, indent=2))
    name = "serve_load" + ("-quick" if args.quick else "") + (f"-pg{args.processes}" if args.store else "")
    write_result(name, out)


if __name__ == "__main__":
    main()
