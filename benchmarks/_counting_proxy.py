"""A counting proxy on loopback in front of one llama.cpp server (``bench_vs_ragas.py`` and the other side-by-sides).

:class:`CountingProxy` listens on 127.0.0.1 (a free port) and forwards every request, any path and method, to the
server's root, body and headers as they are, and the reply back as it came. It writes down each request:

- generation requests (``/v1/chat/completions``, ``/chat/completions``, ``/v1/completions``, ``/completions``,
  ``/completion``): the wall seconds from the request read to the reply's last byte received, the prompt and
  completion tokens the server counted (``usage``; for llama.cpp's own ``/completion``, ``tokens_evaluated`` and
  ``tokens_predicted``), and llama.cpp's ``timings`` (``cache_n``: prompt tokens taken from the slot's cache,
  ``prompt_n``: prompt tokens computed, ``predicted_n``: tokens generated, and their milliseconds);
- every other request (``/tokenize``, ``/apply-template``, ``/slots/…``, ``/health``, ``/v1/models``, …) as a
  *control* request, with its wall seconds.

Each record carries the proxy's :attr:`~CountingProxy.label` at the time the request arrived: the benchmark sets
it before each tool's pass and reads that pass's records with :meth:`~CountingProxy.records_for`.

A streamed reply (``text/event-stream``) is passed on as it comes, in chunks; its tokens are read from the last
event holding ``usage`` or ``timings`` (llama.cpp sends them in the final event).

:func:`counted_local_server` starts the packaged judge's server with a proxy in front of it, warmed up.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import urlsplit

__all__ = [
    "GENERATION_PATHS",
    "LOCAL_JUDGE_NEEDED",
    "CountingProxy",
    "counted_local_server",
    "judge_at_proxy",
    "summarise",
    "warm_up",
]

#: What a side-by-side benchmark needs to start the local judge's server (``_common.missing_modules``' form).
LOCAL_JUDGE_NEEDED = ("xllamacpp", "xllamacpp is not installed (the local judge: pip install 'ragmeter[local]')")
#: Paths (query left out) whose requests generate text and are counted as judge requests.
GENERATION_PATHS = frozenset(
    {"/v1/chat/completions", "/chat/completions", "/v1/completions", "/completions", "/completion"}
)
#: Headers that belong to one connection and are not forwarded (RFC 9110, 7.6.1), and those set again here.
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
_TIMINGS = ("cache_n", "prompt_n", "prompt_ms", "predicted_n", "predicted_ms")


class CountingProxy:
    """Forwards everything to ``upstream`` (``http://127.0.0.1:PORT``, with or without ``/v1``) and records
    each request (module docstring). Use as a context manager, or :meth:`start` and :meth:`stop`.

    ``keep_bodies``: also keep each generation request's body and the reply's text (for a log), not only counts.
    """

    def __init__(self, upstream: str, *, keep_bodies: bool = False, timeout_s: float = 900.0) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname or not parts.port:
            raise ValueError(f"expected http://HOST:PORT as the upstream, got {upstream!r}")
        self.upstream_host, self.upstream_port = parts.hostname, parts.port
        self.keep_bodies = keep_bodies
        self.timeout_s = timeout_s
        self.label = ""
        self.records: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- life --------------------------------------------------------------------------------------------------

    def start(self) -> Self:
        proxy = self

        class Handler(_Handler):
            owner = proxy

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="counting-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:PORT``: the proxy's address, standing for the server's root."""
        if self._server is None:
            raise RuntimeError("the proxy is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: the OpenAI-compatible base URL through the proxy."""
        return f"{self.root_url}/v1"

    # --- records -----------------------------------------------------------------------------------------------

    def add(self, record: dict[str, Any]) -> None:
        with self._lock:
            self.records.append(record)

    def records_for(self, label: str, *, prefix: bool = False) -> list[dict[str, Any]]:
        """The records made under ``label`` (``prefix``: under any label starting with it)."""
        with self._lock:
            return [r for r in self.records if (r["label"].startswith(label) if prefix else r["label"] == label)]


class _Handler(BaseHTTPRequestHandler):
    owner: CountingProxy
    protocol_version = "HTTP/1.1"  # keep-alive with the clients; every reply has a length or is chunked

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _forward(self) -> None:
        owner = self.owner
        label = owner.label
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path = urlsplit(self.path).path
        generation = path in GENERATION_PATHS
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        if body or self.command in ("POST", "PUT"):
            headers["Content-Length"] = str(len(body))
        started = time.perf_counter()
        connection = http.client.HTTPConnection(owner.upstream_host, owner.upstream_port, timeout=owner.timeout_s)
        record: dict[str, Any] = {
            "label": label,
            "method": self.command,
            "path": self.path,
            "kind": "generation" if generation else "control",
        }
        try:
            try:
                connection.request(self.command, self.path, body=body or None, headers=headers)
                response = connection.getresponse()
            except OSError as exc:
                record.update(status=502, wall_s=time.perf_counter() - started, error=f"{type(exc).__name__}: {exc}")
                owner.add(record)
                self._reply(
                    502,
                    {"Content-Type": "application/json"},
                    json.dumps({"error": {"message": f"proxy: upstream failed: {exc}"}}).encode(),
                )
                return
            reply_headers = {k: v for k, v in response.getheaders() if k.lower() not in _HOP}
            streamed = "text/event-stream" in (response.getheader("Content-Type") or "")
            if streamed and self.command != "HEAD":
                text = self._relay_stream(response, reply_headers)
                record["wall_s"] = time.perf_counter() - started
                record["streamed"] = True
                reply: Any = _last_event_with_counts(text)
            else:
                data = response.read()
                record["wall_s"] = time.perf_counter() - started
                text = data.decode("utf-8", errors="replace")
                reply = _json_or_none(text)
            record["status"] = response.status
            if generation:
                record.update(_counts(_json_or_none(body.decode("utf-8", errors="replace")), reply))
                if owner.keep_bodies:
                    record["request"] = body.decode("utf-8", errors="replace")
                    record["reply"] = text
            owner.add(record)
            if not streamed or self.command == "HEAD":
                self._reply(
                    response.status,
                    reply_headers,
                    data if self.command != "HEAD" else b"",
                    length=None if self.command != "HEAD" else response.getheader("Content-Length"),
                )
        finally:
            connection.close()

    # every method is forwarded as it came
    do_GET = do_POST = do_PUT = do_DELETE = do_OPTIONS = do_HEAD = _forward

    def _reply(self, status: int, headers: dict[str, str], data: bytes, length: str | None = None) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", length if length is not None else str(len(data)))
        self.end_headers()
        if data:
            self.wfile.write(data)

    def _relay_stream(self, response: http.client.HTTPResponse, headers: dict[str, str]) -> str:
        """Pass a streamed reply on in chunks (chunked transfer encoding); the whole text, for the counts."""
        self.send_response(response.status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        pieces: list[bytes] = []
        while piece := response.read1(65536):
            pieces.append(piece)
            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        return b"".join(pieces).decode("utf-8", errors="replace")


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _events(text: str) -> Iterator[Any]:
    for line in text.splitlines():
        if line.startswith("data:"):
            payload = line[5:].strip()
            if payload and payload != "[DONE]":
                event = _json_or_none(payload)
                if event is not None:
                    yield event


def _last_event_with_counts(text: str) -> Any:
    found = None
    for event in _events(text):
        if isinstance(event, dict) and (event.get("usage") or event.get("timings")):
            found = event
    return found


def _counts(request: Any, reply: Any) -> dict[str, Any]:
    """Tokens of one generation request, from the reply (``usage``, else llama.cpp's own fields) and its timings."""
    out: dict[str, Any] = {"prompt_tokens": None, "completion_tokens": None}
    if isinstance(request, dict):
        limit = request.get("max_tokens", request.get("max_completion_tokens", request.get("n_predict")))
        out["max_tokens"] = limit
        if "messages" in request:
            out["messages"] = len(request["messages"])
    if not isinstance(reply, dict):
        return out
    usage = reply.get("usage")
    if isinstance(usage, dict):
        out["prompt_tokens"] = usage.get("prompt_tokens")
        out["completion_tokens"] = usage.get("completion_tokens")
    else:  # llama.cpp's /completion
        out["prompt_tokens"] = reply.get("tokens_evaluated")
        out["completion_tokens"] = reply.get("tokens_predicted")
    timings = reply.get("timings")
    if isinstance(timings, dict):
        out.update({key: timings.get(key) for key in _TIMINGS})
    choices = reply.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        out["finish_reason"] = choices[0].get("finish_reason")
    elif "stop_type" in reply:
        out["finish_reason"] = reply.get("stop_type")
    return out


def summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals of some records: generation requests (judge calls), their tokens and seconds, and control
    requests with their seconds; ``/completion`` requests that generate nothing (``n_predict: 0``: a prompt
    computed for its slot state) are counted apart as ``prompt_computes``."""

    def total(rows: list[dict[str, Any]], key: str) -> float:
        return sum(r.get(key) or 0 for r in rows)

    generation = [r for r in records if r["kind"] == "generation"]
    computes = [r for r in generation if r["path"].startswith("/completion") and r.get("max_tokens") == 0]
    calls = [r for r in generation if r not in computes]
    control = [r for r in records if r["kind"] == "control"]
    return {
        "calls": len(calls),
        "prompt_tokens": int(total(calls, "prompt_tokens")),
        "completion_tokens": int(total(calls, "completion_tokens")),
        "prompt_tokens_computed": int(total(calls, "prompt_n")),
        "prompt_tokens_from_cache": int(total(calls, "cache_n")),
        "judge_s": total(calls, "wall_s"),
        "unanswered": sum(1 for r in calls if r.get("status") != 200),
        "without_usage": sum(1 for r in calls if r.get("prompt_tokens") is None),
        "cut_at_max_tokens": sum(1 for r in calls if r.get("finish_reason") in ("length", "limit")),
        "prompt_computes": len(computes),
        "prompt_computes_tokens": int(total(computes, "prompt_tokens")),
        "prompt_computes_s": total(computes, "wall_s"),
        "control_requests": len(control),
        "control_s": total(control, "wall_s"),
        "control_by_path": _by_path(control),
    }


def _by_path(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for r in records:
        path = urlsplit(r["path"]).path
        if path.startswith("/slots/"):
            path = "/slots/" + r["path"].partition("action=")[2] if "action=" in r["path"] else path
        entry = out.setdefault(path, {"requests": 0, "s": 0.0})
        entry["requests"] += 1
        entry["s"] += r.get("wall_s") or 0.0
    return out


def warm_up(proxy: CountingProxy, model: str) -> None:
    """One tiny chat request through ``proxy``, labelled ``warm-up`` (so no pass counts it)."""
    proxy.label = "warm-up"
    body = json.dumps(
        {"model": model, "messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 4, "temperature": 0}
    ).encode()
    request = urllib.request.Request(f"{proxy.base_url}/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        response.read()
    proxy.label = ""


@contextmanager
def counted_local_server(*, keep_bodies: bool = False) -> Iterator[tuple[Any, CountingProxy]]:
    """The packaged judge's llama.cpp server (:class:`ragmeter.judges.LocalServer`, its defaults) started here and a
    :class:`CountingProxy` in front of it, warmed up (:func:`warm_up`); both stopped on leaving."""
    from ragmeter.judges import LocalServer

    server = LocalServer()
    try:
        server.start()
        assert server.base_url is not None
        with CountingProxy(server.base_url.removesuffix("/v1"), keep_bodies=keep_bodies) as proxy:
            warm_up(proxy, server.model_id)
            yield server, proxy
    finally:
        server.stop()


def judge_at_proxy(server: Any, proxy: CountingProxy, *, layout: str, cache: Any) -> Any:
    """A ragmeter judge of ``server``'s model through ``proxy``, one call at a time, claims split: as ``--judge local``
    builds it (``layout`` "shared": :class:`LocalBackend` with the server's saved states) or as a remote judge is
    asked ("calls": plain requests, no state, no prompt cache); ``cache`` its verdict cache."""
    from ragmeter.judges import LOCAL_TIMEOUT_S, Judge
    from ragmeter.judges.backends.openai import OpenAIBackend
    from ragmeter.judges.backends.prefix_states import LocalBackend

    options = {"model": server.model_id, "api_key_env": None, "timeout_s": LOCAL_TIMEOUT_S, "bounds": "schema"}
    backend = (
        LocalBackend.at(proxy.base_url, states_folder=server.states_dir, **options)
        if layout == "shared"
        else OpenAIBackend(base_url=proxy.base_url, cache_prompt=False, **options)
    )
    return Judge(backend, cache=cache, concurrency=1, timeout_s=LOCAL_TIMEOUT_S, claims="split", layout=layout)
