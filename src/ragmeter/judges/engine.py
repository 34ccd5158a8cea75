"""The judge: many calls at once, retried, validated, repaired once, cached, and accounted for.

:meth:`Judge.run` takes a batch of :class:`JudgeCall` and returns one :class:`JudgeOutcome` each, in order.
For every call:

1. The cache is asked first (key: judge signature + prompt hash + the exact request).
2. The call is sent under an adaptive concurrency limit: at most ``concurrency`` at once, halved on every
   rate limit (and paused for the server's Retry-After), grown back by one after as many successes.
3. A 429, 5xx, timeout or dropped connection is retried up to ``max_attempts`` times with exponential
   backoff and jitter, or after Retry-After when the server gives one.
4. The reply is validated against the prompt's schema. An invalid one (bad JSON, wrong shape, cut off at
   the token limit) gets one repair attempt that shows the judge its reply and the problem.
5. A reply still invalid becomes a *failure* with its reason and raw text; it is cached, like a verdict,
   because asking again would give the same reply. A call whose retries ran out is a failure too, not
   cached, so a later run tries it again. A failure is reported as undefined, never as a number.

A :class:`~ragmeter.errors.RejectedCallError` (the endpoint refused that one request) is a failure of that
call. Any other :class:`~ragmeter.errors.JudgeError`, which no retry can fix (a rejected key, an unknown model) stops
the run. Calls run on a private event loop in a background thread, so :meth:`Judge.run` works from
plain synchronous code and from inside a notebook's running loop alike.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable, Sequence

from ragmeter.errors import RejectedCallError, TransientJudgeError
from ragmeter.judges.cache import CachedVerdict, JudgeCache
from ragmeter.judges.prompts import Prompt, VerdictError
from ragmeter.judges.protocol import ChatBackend, ChatReply, ChatRequest

__all__ = ["Judge", "JudgeCall", "JudgeOutcome", "JudgeUsage"]


@dataclass(frozen=True)
class JudgeCall:
    """One verdict to obtain: the prompt, its rendered request, and the chunk count its checker needs."""

    prompt: Prompt
    request: ChatRequest
    n_chunks: int = 0


@dataclass(frozen=True)
class JudgeOutcome:
    """A verdict (``verdict``) or a failure (``failure``, with the ``raw`` reply when there was one).

    ``prompt_tokens`` and ``completion_tokens`` are what this run spent on the call (every attempt,
    repair included; 0 when ``cached``); ``attempts`` is the number of requests sent.
    """

    verdict: dict[str, Any] | None
    failure: str | None
    raw: str | None
    prompt_tokens: int
    completion_tokens: int
    attempts: int
    cached: bool


@dataclass
class JudgeUsage:
    """Running totals for one prompt: calls asked for, answered from cache, requests sent, retries, repairs,
    failures and the tokens spent (``cached_*``: tokens the cached verdicts cost when first made)."""

    calls: int = 0
    cached: int = 0
    requests: int = 0
    retries: int = 0
    repairs: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    failure_reasons: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k != "failure_reasons"}
        return {**data, "failure_reasons": dict(self.failure_reasons)}


class Judge:
    """Runs judge calls on ``backend`` with caching, retries, one repair and an adaptive concurrency limit.

    ``timeout_s`` bounds each request; ``on_close`` runs at :meth:`close` (stopping a local server);
    ``backoff_s`` is the first retry's delay (doubled each time, at most
    ``max_backoff_s``, times a jitter in [0.5, 1.5) drawn from ``seed``).
    """

    def __init__(self, backend: ChatBackend, *, cache: JudgeCache | None = None, concurrency: int = 8,
                 max_attempts: int = 6, timeout_s: float = 120.0, backoff_s: float = 1.0,
                 max_backoff_s: float = 60.0, seed: int = 0, on_close: Callable[[], None] | None = None) -> None:
        if concurrency < 1 or max_attempts < 1:
            raise ValueError("concurrency and max_attempts must be at least 1")
        self.backend = backend
        self.cache = cache
        self.concurrency = concurrency
        self.max_attempts = max_attempts
        self.timeout_s = timeout_s
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.usage: dict[str, JudgeUsage] = {}
        self._rng = random.Random(seed)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._limit: _AdaptiveLimit | None = None
        self._on_close = on_close
        self._closed = False

    @property
    def identity(self) -> str:
        """What produced a verdict, apart from the prompt: model, temperature and sampling seed."""
        return f"{self.backend.model}@t{self.backend.temperature:g}/s{self.backend.seed}"

    def signature(self, prompt: Prompt) -> str:
        return f"{self.identity}/{prompt.name}:{prompt.hash}"

    def key(self, call: JudgeCall) -> str:
        body = json.dumps([self.signature(call.prompt), call.request.fingerprint()])
        return hashlib.sha256(body.encode("utf-8")).hexdigest()

    def run(self, calls: Sequence[JudgeCall]) -> list[JudgeOutcome]:
        """Outcomes of ``calls`` in order; identical calls are made once."""
        keys = [self.key(call) for call in calls]
        unique = dict(zip(keys, calls, strict=True))
        future = asyncio.run_coroutine_threadsafe(self._run_all(unique), self._event_loop())
        outcomes = future.result()
        return [outcomes[key] for key in keys]

    def close(self) -> None:
        """Close the backend's connections, stop the event loop thread, the cache and (``on_close``) a local
        server. Closing twice does nothing."""
        if self._closed:
            return
        self._closed = True
        loop = self._event_loop()
        asyncio.run_coroutine_threadsafe(self.backend.aclose(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join()
        loop.close()
        self._loop = self._thread = None
        if self.cache is not None:
            self.cache.close()
        if self._on_close is not None:
            self._on_close()
            self._on_close = None

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever, name="ragmeter-judge", daemon=True)
            self._thread.start()
        return self._loop

    async def _run_all(self, calls: dict[str, JudgeCall]) -> dict[str, JudgeOutcome]:
        if self._limit is None:
            self._limit = _AdaptiveLimit(self.concurrency)
        results = await asyncio.gather(*(self._outcome(key, call) for key, call in calls.items()))
        return dict(zip(calls, results, strict=True))

    async def _outcome(self, key: str, call: JudgeCall) -> JudgeOutcome:
        usage = self.usage.setdefault(call.prompt.name, JudgeUsage())
        usage.calls += 1
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None:
            usage.cached += 1
            usage.cached_prompt_tokens += hit.prompt_tokens
            usage.cached_completion_tokens += hit.completion_tokens
            if hit.failure is not None:
                usage.failures += 1
                usage.failure_reasons[hit.failure.split(":")[0]] += 1
            return JudgeOutcome(hit.verdict, hit.failure, hit.raw, 0, 0, 0, cached=True)
        spent = _Spent()
        try:
            outcome = await self._validated(call, spent, usage)
        except RejectedCallError as exc:
            outcome = JudgeOutcome(None, f"the endpoint rejected the call: {exc}", None, 0, 0, spent.requests,
                                   cached=False)
        except TransientJudgeError as exc:
            outcome = JudgeOutcome(None, f"no usable reply after {spent.requests} attempts: {exc}", None, 0, 0,
                                   spent.requests, cached=False)
        outcome = JudgeOutcome(outcome.verdict, outcome.failure, outcome.raw, spent.prompt_tokens,
                               spent.completion_tokens, spent.requests, cached=False)
        usage.prompt_tokens += spent.prompt_tokens
        usage.completion_tokens += spent.completion_tokens
        if outcome.failure is not None:
            usage.failures += 1
            usage.failure_reasons[outcome.failure.split(":")[0]] += 1
        if self.cache is not None and (outcome.verdict is not None or outcome.raw is not None):
            self.cache.put(key, self.signature(call.prompt),
                           CachedVerdict(outcome.verdict, outcome.failure, outcome.raw, spent.prompt_tokens,
                                         spent.completion_tokens))
        return outcome

    async def _validated(self, call: JudgeCall, spent: _Spent, usage: JudgeUsage) -> JudgeOutcome:
        reply = await self._send(call.request, spent, usage)
        verdict, problem = _check(call, reply)
        if problem is not None:
            usage.repairs += 1
            reply = await self._send(call.request.with_repair(reply.text[:4000], problem), spent, usage)
            verdict, problem = _check(call, reply)
        if problem is not None:
            return JudgeOutcome(None, f"invalid reply after one repair attempt: {problem}", reply.text, 0, 0, 0,
                                cached=False)
        return JudgeOutcome(verdict, None, None, 0, 0, 0, cached=False)

    async def _send(self, request: ChatRequest, spent: _Spent, usage: JudgeUsage) -> ChatReply:
        assert self._limit is not None
        for attempt in range(1, self.max_attempts + 1):
            spent.requests += 1
            usage.requests += 1
            async with self._limit:
                try:
                    reply = await asyncio.wait_for(self.backend.complete(request), self.timeout_s)
                except TimeoutError:
                    error = TransientJudgeError(f"no reply within {self.timeout_s:g} s")
                except TransientJudgeError as exc:
                    error = exc
                else:
                    self._limit.succeeded()
                    spent.prompt_tokens += reply.prompt_tokens
                    spent.completion_tokens += reply.completion_tokens
                    return reply
            if attempt == self.max_attempts:
                break
            usage.retries += 1
            if error.rate_limited:
                self._limit.rate_limited(error.retry_after)
            await asyncio.sleep(self._delay(attempt, error.retry_after))
        raise error

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter; never shorter than the server's Retry-After."""
        backoff = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)) * (0.5 + self._rng.random())
        return max(backoff, retry_after) if retry_after is not None else backoff


@dataclass
class _Spent:
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


def _check(call: JudgeCall, reply: ChatReply) -> tuple[dict[str, Any] | None, str | None]:
    if reply.finish_reason == "length":
        return None, (f"it was cut off at the limit of {call.request.max_tokens} tokens; write shorter claims "
                      "and reasons")
    try:
        return call.prompt.check(reply.text, call.n_chunks), None
    except VerdictError as exc:
        return None, str(exc)


class _AdaptiveLimit:
    """At most ``limit`` requests in flight; a rate limit halves it and pauses new requests for the
    server's Retry-After; every ``limit`` successes in a row raise it by one, up to ``maximum``."""

    def __init__(self, maximum: int) -> None:
        self.maximum = maximum
        self.limit = maximum
        self.in_flight = 0
        self._successes = 0
        self._resume_at = 0.0
        self._changed = asyncio.Condition()

    async def __aenter__(self) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: self.in_flight < self.limit)
            self.in_flight += 1
        pause = self._resume_at - asyncio.get_running_loop().time()
        if pause > 0:
            await asyncio.sleep(pause)

    async def __aexit__(self, *exc: object) -> None:
        async with self._changed:
            self.in_flight -= 1
            # wake as many waiters as there are free places (usually one), not all of them: with
            # thousands of calls queued, waking every one on each release costs more than the calls
            self._changed.notify(max(0, self.limit - self.in_flight))

    def succeeded(self) -> None:
        """Called inside the limit (the place is still held); a raised limit frees its place at release."""
        self._successes += 1
        if self._successes >= self.limit and self.limit < self.maximum:
            self.limit += 1
            self._successes = 0

    def rate_limited(self, retry_after: float | None) -> None:
        self.limit = max(1, self.limit // 2)
        self._successes = 0
        if retry_after:
            self._resume_at = max(self._resume_at, asyncio.get_running_loop().time() + retry_after)
