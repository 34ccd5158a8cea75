"""A loopback fake of the OpenAI chat-completions API, for testing LLM judges over real TCP.

:class:`FakeOpenAIServer` listens on 127.0.0.1 (OS-chosen port) and answers ``POST /v1/chat/completions``
with ``responder(request_body)`` as the assistant message, so the real ``openai`` client (sync or
async), and so ragmeter's ``openai`` judge, can be pointed at ``server.base_url``. A :class:`FaultPlan` makes
the FIRST attempt of a deterministic, seed-chosen share of calls fail (429 with Retry-After, 500, a stall
longer than the client's timeout, truncated JSON, a wrong JSON shape, or finish_reason "length"); retries of
the same call succeed. A call is identified by its *call key* (:func:`call_key`): sha256 of the first user
message's content, which a repair request (original messages + assistant reply + new user message) shares.

A responder may raise :class:`HTTPFault` to answer with that HTTP status (a 401 for a bad key, a 500).
With ``token_limit=True`` a reply longer than the request's ``max_tokens`` (four characters a token, the
server's own count) is cut there with finish_reason "length", as a real server cuts a rambling model.

Standard library only; every request body (``server.requests``), its headers (``server.headers``), its
arrival time (``server.arrivals``, ``time.monotonic()``) and the kind of each reply (``server.statuses``) are
recorded. ``GET /v1/models`` lists ``model``; ``GET /health`` answers ``{"status": "ok"}``.

>>> import json, urllib.request
>>> body = json.dumps({"messages": [{"role": "user", "content": "Hi"}]}).encode()
>>> with FakeOpenAIServer(lambda body: '{"score": 4}') as server:
...     request = urllib.request.Request(f"{server.base_url}/chat/completions", data=body, method="POST")
...     with urllib.request.urlopen(request) as response:
...         reply = json.load(response)
>>> reply["choices"][0]["message"]["content"], server.statuses["ok"]
('{"score": 4}', 1)
"""

from __future__ import annotations

import collections
import hashlib
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = ["FAULT_KINDS", "FakeOpenAIServer", "FaultPlan", "HTTPFault", "call_key"]

#: The faults a :class:`FaultPlan` may inject.
FAULT_KINDS = ("429", "500", "stall", "truncated", "wrong_schema", "length")


class HTTPFault(Exception):
    """Raised by a responder: the fake answers with ``status`` and an OpenAI-style error body."""

    def __init__(self, status: int, message: str = "fault") -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class FaultPlan:
    """Which calls fail on their first attempt, and how: a ``rate`` share of distinct call keys, chosen by
    ``seed``, each given one of ``kinds`` (a subset of :data:`FAULT_KINDS`)."""

    rate: float = 0.3  # share of distinct calls whose FIRST attempt is faulty
    seed: int = 0
    kinds: tuple[str, ...] = FAULT_KINDS
    retry_after: str = "0.05"  # value of the Retry-After header sent with 429
    stall_s: float = 3.0  # a stall sleeps this long before answering (longer than the client's timeout)

    def __post_init__(self) -> None:
        unknown = set(self.kinds) - set(FAULT_KINDS)
        if unknown or not self.kinds:
            raise ValueError(f"fault kinds must be a non-empty subset of {FAULT_KINDS}, got {self.kinds}")

    def fault_for(self, key: str) -> str | None:
        """The fault kind of a call key's first attempt, or None if the call is not faulty."""
        draw = int(hashlib.sha256(f"{self.seed}:{key}".encode()).hexdigest()[:8], 16) / 16**8
        if draw >= self.rate:
            return None
        pick = int(hashlib.sha256(f"kind:{self.seed}:{key}".encode()).hexdigest()[:8], 16)
        return self.kinds[pick % len(self.kinds)]


def call_key(body: dict) -> str:
    """sha256 hex of the content of the first message with role "user" (empty string if none)."""
    content: Any = ""
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content", "")
            break
    if not isinstance(content, str):
        content = json.dumps(content, sort_keys=True)
    return hashlib.sha256(content.encode()).hexdigest()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128
    fake: FakeOpenAIServer

    def handle_error(self, request: Any, client_address: Any) -> None:  # no tracebacks on stderr
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeOpenAI/1.0"
    timeout = 60  # idle keep-alive connections are closed after this long
    disable_nagle_algorithm = True  # headers and body go out in separate writes: avoid the 40 ms delayed-ACK stall
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, payload: dict, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (extra or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, OSError):
            self.close_connection = True  # the client gave up (e.g. timed out during a stall)

    def _error(self, status: int, message: str, type_: str, code: str | None = None) -> None:
        self._send(status, {"error": {"message": message, "type": type_, "code": code}})

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        fake = self.server.fake
        if path == "/health":
            self._send(200, {"status": "ok"})
        elif path in ("/v1/models", "/models"):
            model = {"id": fake.model, "object": "model", "created": 0, "owned_by": "ragmeter-tests"}
            self._send(200, {"object": "list", "data": [model]})
        else:
            self._error(404, f"no route for GET {path}", "invalid_request_error", "not_found")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        path = self.path.split("?", 1)[0].rstrip("/")
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._error(404, f"no route for POST {path}", "invalid_request_error", "not_found")
            return
        try:
            body = json.loads(raw)
        except ValueError as exc:
            self._error(400, f"bad request: {exc}", "invalid_request_error")
            return
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._error(400, "bad request: body must be a JSON object with a 'messages' list", "invalid_request_error")
            return
        self._send(*self.server.fake._complete(body, {k.lower(): v for k, v in self.headers.items()}))


class FakeOpenAIServer:
    """Context manager running the fake on 127.0.0.1; see the module docstring."""

    def __init__(
        self,
        responder: Callable[[dict], str],
        *,
        faults: FaultPlan | None = None,
        latency_s: float = 0.0,
        model: str = "fake-judge",
        token_limit: bool = False,
    ) -> None:
        self.responder = responder
        self.token_limit = token_limit
        self.faults = faults
        self.latency_s = latency_s
        self.model = model
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.arrivals: list[float] = []  # time.monotonic() of each request, in the order of ``requests``
        self.statuses: collections.Counter[str] = collections.Counter()
        self._attempts: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""

    def __enter__(self) -> Self:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()  # wakes handlers sleeping in a latency or a stall
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def calls_for(self, key: str) -> int:
        """Attempts received so far for a call key (see ``call_key``)."""
        with self._lock:
            return self._attempts[key]

    def _complete(self, body: dict, headers: dict) -> tuple[int, dict, dict[str, str] | None]:
        key = call_key(body)
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            self.arrivals.append(time.monotonic())
            self._attempts[key] += 1
            attempt = self._attempts[key]
        kind = self.faults.fault_for(key) if self.faults is not None and attempt == 1 else None
        with self._lock:
            self.statuses[kind or "ok"] += 1
        if self.latency_s > 0:
            self._stop.wait(self.latency_s)
        if kind == "429":
            error = {"message": "rate limited", "type": "rate_limit_error", "code": "rate_limit_exceeded"}
            return 429, {"error": error}, {"Retry-After": self.faults.retry_after}  # type: ignore[union-attr]
        if kind == "500":
            return 500, {"error": {"message": "internal error", "type": "server_error", "code": None}}, None
        if kind == "stall":
            self._stop.wait(self.faults.stall_s)  # type: ignore[union-attr]
        try:
            content = self.responder(body)
        except HTTPFault as fault:
            kinds = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}
            error = {"message": fault.message, "type": kinds.get(fault.status, "server_error"), "code": None}
            return fault.status, {"error": error}, None
        except Exception as exc:  # noqa: BLE001 -- a broken responder is a test bug: surface it as a 500
            return 500, {"error": {"message": f"responder failed: {exc!r}", "type": "server_error"}}, None
        finish = "stop"
        if kind == "truncated":
            content = content[: len(content) // 2]
        elif kind == "wrong_schema":
            content = '{"unexpected": "shape"}'
        elif kind == "length":
            content, finish = content[: len(content) // 2], "length"
        limit = body.get("max_tokens")
        if self.token_limit and isinstance(limit, int) and len(content) > 4 * limit:
            content, finish = content[: 4 * limit], "length"
        prompt_tokens = max(1, len(json.dumps(body["messages"])) // 4)
        completion_tokens = max(1, len(content) // 4)
        return (
            200,
            {
                "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": finish,
                        "logprobs": None,
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            },
            None,
        )
