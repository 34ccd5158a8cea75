"""The judge: many calls at once, retried, validated, repaired once, cached, and accounted for.

:meth:`Judge.run` takes a batch of :class:`JudgeCall` and returns one :class:`JudgeOutcome` each, in order.
For every call:

1. The cache is asked first (key: judge signature + prompt hash + the exact request).
2. The call is sent under an adaptive concurrency limit: at most ``concurrency`` at once, halved on every
   rate limit (and paused for the server's Retry-After), grown back by one after as many successes. Where
   several run at once, the calls about one item prefix (the shared layout, :mod:`ragmeter.judges.layouts`)
   wait until the item's first call is answered, so that an endpoint caching prefixes serves the item to them.
3. A 429, 5xx, timeout or dropped connection is retried up to ``max_attempts`` times with exponential
   backoff and jitter, or after Retry-After when the server gives one.
4. The reply is validated against the prompt's schema. An invalid one (bad JSON, wrong shape, cut off at
   the token limit) gets one repair attempt that shows the judge its reply and the problem.
5. A reply still invalid becomes a *failure* with its reason and raw text; it is cached, like a verdict,
   because asking again would give the same reply. A call whose retries ran out is a failure too, not
   cached, so a later run tries it again. A failure is reported as undefined, never as a number.

A :class:`~ragmeter.core.errors.RejectedCallError` (the endpoint refused that one request) is a failure of that call.
Any other :class:`~ragmeter.core.errors.JudgeError`, which no retry can fix (a rejected key, an unknown model) stops the
run: the calls still running are cancelled at once (they send no more requests and write nothing to the cache) and
:meth:`Judge.run` raises it. So does an endpoint that cannot be reached at all: while no call has been answered,
``UNREACHABLE_AFTER`` failures to connect in a row (refused, unknown host, connect timeout) end the run with a
:class:`~ragmeter.core.errors.JudgeError` that says what to check, instead of retrying every call of the file; once one
call has been answered, connection failures are retried like any other.

Calls run on a private event loop in a background thread, so :meth:`Judge.run` works from plain synchronous
code and from inside a notebook's running loop alike. The cache is read and written off that loop (one
lookup per batch in a worker thread, writes in the cache's own thread), so a write waiting for another
process's lock on the file holds up only the calls that wait for that write, not every call in flight.
:meth:`Judge.close` cancels the calls still running.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

from ragmeter.core.errors import JudgeError, RejectedCallError, TransientJudgeError
from ragmeter.judges.accounting import ItemJudging, JudgeUsage
from ragmeter.judges.cache import CachedVerdict, JudgeCache
from ragmeter.judges.prompts import CLAIM_MODES, LAYOUTS, Prompt, VerdictError
from ragmeter.judges.protocol import ChatBackend, ChatReply, ChatRequest

__all__ = ["INSTRUCTED_REPAIR_ROOM", "REPAIR_ROOM", "UNREACHABLE_AFTER", "Judge", "JudgeCall", "JudgeOutcome"]

#: How many times its call's token limit a repair gets after a reply was cut off at that limit.
REPAIR_ROOM = 2
#: The same where the bounds were only in the instructions (no grammar closes a rambling reason): a small
#: model's correctness reason that repeated itself past 160 tokens was cut off again at 320 (issue 33).
INSTRUCTED_REPAIR_ROOM = 4
#: Failures to connect in a row, before any call was answered, that end a run: a dead or mistyped address
#: is told apart from a blip in seconds (at once with several calls in flight).
UNREACHABLE_AFTER = 3


@dataclass(frozen=True)
class JudgeCall:
    """One verdict to obtain: the prompt, its rendered request, and the chunk count its checker needs;
    ``decides_more``: its verdict decides which calls come after it (a question's nuggets, the answers' grades on
    them), so a plan made before it cannot count those."""

    prompt: Prompt
    request: ChatRequest
    n_chunks: int = 0
    decides_more: bool = False


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


class Judge:
    """Runs judge calls on ``backend`` with caching, retries, one repair and an adaptive concurrency limit.

    ``timeout_s`` bounds each request; ``on_close`` runs at :meth:`close` (stopping a local server);
    ``backoff_s`` is the first retry's delay (doubled each time, at most
    ``max_backoff_s``, times a jitter in [0.5, 1.5) drawn from ``seed``). ``on_call_done``, when set, is
    called as each call of a run finishes (cached ones included), on the judge's own thread, for a progress
    display; it must return quickly and not raise. ``claims`` is how the judge is asked for claims
    (:data:`~ragmeter.judges.prompts.CLAIM_MODES`): ``verify`` or ``split``; ``layout`` how its calls about one
    item are laid out (:data:`~ragmeter.judges.prompts.LAYOUTS`): ``calls`` or ``shared``.
    """

    def __init__(
        self,
        backend: ChatBackend,
        *,
        cache: JudgeCache | None = None,
        concurrency: int = 8,
        max_attempts: int = 6,
        timeout_s: float = 120.0,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        seed: int = 0,
        on_close: Callable[[], None] | None = None,
        claims: str = "verify",
        layout: str = "calls",
    ) -> None:
        if concurrency < 1 or max_attempts < 1:
            raise ValueError("concurrency and max_attempts must be at least 1")
        if claims not in CLAIM_MODES:
            raise ValueError(f"claims must be one of {', '.join(CLAIM_MODES)}, got {claims!r}")
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
        self.backend = backend
        self.claims = claims
        self.layout = layout
        self.cache = cache
        self.concurrency = concurrency
        self.max_attempts = max_attempts
        self.timeout_s = timeout_s
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.usage: dict[str, JudgeUsage] = {}
        self.on_call_done: Callable[[], None] | None = None
        self._rng = random.Random(seed)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._limit: _AdaptiveLimit | None = None
        self._on_close = on_close
        self._closed = False
        self._answered = False  # has any request succeeded? (until one has, failures to connect end the run)
        self._unreachable = 0  # failures to connect in a row while nothing has been answered
        self._cache_writes = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="ragmeter-judge-cache"
        )

    @property
    def bounds(self) -> str:
        """How the reply schemas' bounds reach the backend: ``schema`` (a grammar enforces them; a backend
        that says nothing) or ``instructions``."""
        return getattr(self.backend, "bounds", "schema")

    @property
    def continues_replies(self) -> bool:
        """Whether the backend continues a reply begun for it (a request's ``reply_start``; the local judge's)."""
        return bool(getattr(self.backend, "continues_replies", False))

    @property
    def identity(self) -> str:
        """What produced a verdict, apart from the prompt: model, temperature and sampling seed, and
        ``/bounds:instructions`` where the schemas' bounds were not sent."""
        bounds = "" if self.bounds == "schema" else f"/bounds:{self.bounds}"
        return f"{self.backend.model}@t{self.backend.temperature:g}/s{self.backend.seed}{bounds}"

    @property
    def description(self) -> str:
        """:attr:`identity` with the claims mode and the layout, which change the values too."""
        return f"{self.identity}, claims={self.claims}, layout={self.layout}"

    def signature(self, prompt: Prompt) -> str:
        return f"{self.identity}/{prompt.name}:{prompt.hash}"

    def key(self, call: JudgeCall) -> str:
        body = json.dumps([self.signature(call.prompt), call.request.fingerprint()])
        return hashlib.sha256(body.encode("utf-8")).hexdigest()

    def charge(self, calls: Sequence[Sequence[JudgeCall]], outcomes: Mapping[str, JudgeOutcome]) -> list[ItemJudging]:
        """Each item's cost and failures, from the ``outcomes`` (by :meth:`key`) of a batch's calls (``calls[i]``:
        item i's). A call several items asked for is charged to the first; one an item asked for twice, once."""
        charged: set[str] = set()
        costs = []
        for item_calls in calls:
            prompt = completion = 0
            failures = []
            for key, call in {self.key(call): call for call in item_calls}.items():
                outcome = outcomes[key]
                if outcome.failure is not None:
                    failures.append((call.prompt.name, outcome.failure, outcome.raw))
                if key not in charged:
                    charged.add(key)
                    prompt += outcome.prompt_tokens
                    completion += outcome.completion_tokens
            costs.append(ItemJudging(prompt, completion, tuple(failures)))
        return costs

    def run(self, calls: Sequence[JudgeCall]) -> list[JudgeOutcome]:
        """Outcomes of ``calls`` in order; identical calls are made once. Raises the first fatal
        :class:`~ragmeter.core.errors.JudgeError`, after the other calls have been cancelled."""
        if self._closed:
            raise JudgeError("this judge is closed: open another one")
        keys = [self.key(call) for call in calls]
        unique = dict(zip(keys, calls, strict=True))
        future = asyncio.run_coroutine_threadsafe(self._run_all(unique), self._event_loop())
        try:
            outcomes = future.result()
        except concurrent.futures.CancelledError:
            raise JudgeError("the judge was closed while these calls were running") from None
        finally:
            future.cancel()  # interrupted while waiting (Ctrl-C): stop the calls too; nothing once they are done
        return [outcomes[key] for key in keys]

    def close(self) -> None:
        """Cancel the calls still running and wait until they have stopped, close the backend's connections,
        the event loop thread and the cache, and run ``on_close`` (stopping a local server) even when one of
        these fails. A judge that never ran starts nothing here (no loop, no thread), so closing the planning
        judge of a dry run costs nothing. Closing twice does nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._loop is not None:
                self._stop_loop(self._loop)
            self._cache_writes.shutdown(wait=True)
            if self.cache is not None:
                self.cache.close()
        finally:
            if self._on_close is not None:
                on_close, self._on_close = self._on_close, None
                on_close()

    def _stop_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result()
        finally:
            loop.call_soon_threadsafe(loop.stop)
            if self._thread is not None:
                self._thread.join()
            loop.close()
            self._loop = self._thread = None

    async def _shutdown(self) -> None:
        """On the loop: cancel every task still running there (the loop is private: they are all ours) and
        wait for them and for a cache lookup still running in a worker thread, then close the backend's
        connections."""
        running = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        await asyncio.get_running_loop().shutdown_default_executor()
        await self.backend.aclose()

    def __enter__(self) -> Self:
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
        for call in calls.values():
            self.usage.setdefault(call.prompt.name, JudgeUsage()).calls += 1
        hits = await asyncio.to_thread(self.cache.get_many, calls) if self.cache is not None else {}
        outcomes = {key: self._cached(calls[key].prompt.name, hit) for key, hit in hits.items()}
        for _ in outcomes:
            self._call_done()
        firsts: dict[str, asyncio.Task[JudgeOutcome]] = {}  # the first call about each item prefix
        tasks: dict[str, asyncio.Task[JudgeOutcome]] = {}
        try:
            # a task group: the first call that raises cancels the others (no more requests, no cache writes)
            async with asyncio.TaskGroup() as group:
                for key, call in calls.items():
                    if key in hits:
                        continue
                    # one request at a time keeps an item's calls together anyway: only several need holding back
                    prefix = call.request.item_prefix if self.concurrency > 1 else ""
                    tasks[key] = group.create_task(self._outcome(key, call, after=firsts.get(prefix)))
                    if prefix:
                        firsts.setdefault(prefix, tasks[key])
        except BaseExceptionGroup as failed:
            first = failed.exceptions[0]
            raise first from first.__cause__  # the error itself, with its own cause, not the group around it
        return outcomes | {key: task.result() for key, task in tasks.items()}

    def cached_outcome(self, call: JudgeCall) -> JudgeOutcome | None:
        """The outcome of ``call`` in the verdict cache, read without asking the judge (nothing is counted in
        :attr:`usage`), or ``None``."""
        hit = self.cache.get(self.key(call)) if self.cache is not None else None
        return None if hit is None else JudgeOutcome(hit.verdict, hit.failure, hit.raw, 0, 0, 0, cached=True)

    def _cached(self, prompt: str, hit: CachedVerdict) -> JudgeOutcome:
        usage = self.usage[prompt]
        usage.cached += 1
        usage.cached_prompt_tokens += hit.prompt_tokens
        usage.cached_completion_tokens += hit.completion_tokens
        if hit.failure is not None:
            usage.failures += 1
            usage.failure_reasons[hit.failure.split(":")[0]] += 1
        return JudgeOutcome(hit.verdict, hit.failure, hit.raw, 0, 0, 0, cached=True)

    async def _outcome(
        self, key: str, call: JudgeCall, *, after: asyncio.Task[JudgeOutcome] | None = None
    ) -> JudgeOutcome:
        """The outcome of ``call``, sent once ``after`` (the first call about the same item prefix) is done,
        so that an endpoint caching prefixes serves the item from it instead of computing it again."""
        if after is not None:
            await asyncio.wait([after])
        usage = self.usage[call.prompt.name]
        spent = _Spent()
        try:
            outcome = await self._validated(call, spent, usage)
        except RejectedCallError as exc:
            outcome = JudgeOutcome(
                None, f"the endpoint rejected the call: {exc}", None, 0, 0, spent.requests, cached=False
            )
        except TransientJudgeError as exc:
            outcome = JudgeOutcome(
                None,
                f"no usable reply after {spent.requests} attempts: {exc}",
                None,
                0,
                0,
                spent.requests,
                cached=False,
            )
        outcome = JudgeOutcome(
            outcome.verdict,
            outcome.failure,
            outcome.raw,
            spent.prompt_tokens,
            spent.completion_tokens,
            spent.requests,
            cached=False,
        )
        usage.prompt_tokens += spent.prompt_tokens
        usage.completion_tokens += spent.completion_tokens
        if outcome.failure is not None:
            usage.failures += 1
            usage.failure_reasons[outcome.failure.split(":")[0]] += 1
        if self.cache is not None and (outcome.verdict is not None or outcome.raw is not None):
            entry = CachedVerdict(
                outcome.verdict, outcome.failure, outcome.raw, spent.prompt_tokens, spent.completion_tokens
            )
            # in the cache's writer thread: a write waiting for a lock holds up this call only; cancelled
            # before it starts (a fatal error elsewhere), it is never made
            await asyncio.get_running_loop().run_in_executor(
                self._cache_writes, self.cache.put, key, self.signature(call.prompt), entry
            )
        self._call_done()
        return outcome

    def _call_done(self) -> None:
        if self.on_call_done is not None:
            self.on_call_done()

    async def _validated(self, call: JudgeCall, spent: _Spent, usage: JudgeUsage) -> JudgeOutcome:
        reply = await self._send(call.request, spent, usage)
        verdict, problem = _check(call, reply, call.request.max_tokens)
        if problem is not None:
            usage.repairs += 1
            # a reply cut off at the limit needs more room to be written whole: give the repair twice as much
            # (four times, where no grammar bounds the reply)
            room = REPAIR_ROOM if self.bounds == "schema" else INSTRUCTED_REPAIR_ROOM
            limit = call.request.max_tokens * (room if reply.finish_reason == "length" else 1)
            repair = call.request.with_repair(reply.text[:4000], problem, max_tokens=limit)
            reply = await self._send(repair, spent, usage)
            verdict, problem = _check(call, reply, limit)
        if problem is not None:
            return JudgeOutcome(
                None, f"invalid reply after one repair attempt: {problem}", reply.text, 0, 0, 0, cached=False
            )
        return JudgeOutcome(verdict, None, None, 0, 0, 0, cached=False)

    async def _send(self, request: ChatRequest, spent: _Spent, usage: JudgeUsage) -> ChatReply:
        assert self._limit is not None
        for attempt in range(1, self.max_attempts + 1):
            async with self._limit:
                spent.requests += 1  # counted once it has its place: a call cancelled while waiting sent nothing
                usage.requests += 1
                try:
                    reply = await asyncio.wait_for(self.backend.complete(request), self.timeout_s)
                except TimeoutError:
                    error = TransientJudgeError(f"no reply within {self.timeout_s:g} s")
                except TransientJudgeError as exc:
                    error = exc
                else:
                    self._limit.succeeded()
                    self._answered = True
                    spent.prompt_tokens += reply.prompt_tokens
                    spent.completion_tokens += reply.completion_tokens
                    return reply
                self._check_reachable(error)  # still holding the place: a fatal error lets no queued call start
            if attempt == self.max_attempts:
                break
            usage.retries += 1
            if error.rate_limited:
                self._limit.rate_limited(error.retry_after)
            await asyncio.sleep(self._delay(attempt, error.retry_after))
        raise error

    def _check_reachable(self, error: TransientJudgeError) -> None:
        """Raise a fatal JudgeError once ``UNREACHABLE_AFTER`` attempts in a row failed to connect while no
        request has been answered: a dead or mistyped address, which retries would only repeat for every call."""
        if self._answered:
            return
        self._unreachable = self._unreachable + 1 if error.connection_failed else 0
        if self._unreachable >= UNREACHABLE_AFTER:
            raise JudgeError(
                f"{error}, {self._unreachable} times in a row, and no judge request has been answered: "
                "check that the judge server is running and listening at that address, the base URL "
                "(--judge-base-url), and any proxy settings (HTTP_PROXY, HTTPS_PROXY, NO_PROXY)"
            )

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter; never shorter than the server's Retry-After."""
        backoff = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)) * (0.5 + self._rng.random())
        return max(backoff, retry_after) if retry_after is not None else backoff


@dataclass
class _Spent:
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


def _check(call: JudgeCall, reply: ChatReply, limit: int) -> tuple[dict[str, Any] | None, str | None]:
    if reply.finish_reason == "length":
        return None, f"it was cut off at the limit of {limit} tokens; write shorter claims and reasons"
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
            try:
                await asyncio.sleep(pause)
            except asyncio.CancelledError:
                await self._release(wake=False)  # a failed __aenter__ gets no __aexit__
                raise

    async def __aexit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        # any error but one call's rejection ends the run (a fatal JudgeError, a cancellation): wake no
        # queued call, or it would start a request in the moment before it is cancelled too
        await self._release(wake=kind is None or issubclass(kind, RejectedCallError))

    async def _release(self, *, wake: bool) -> None:
        async with self._changed:
            self.in_flight -= 1
            if wake:
                # as many waiters as there are free places (usually one), not all of them: with thousands
                # of calls queued, waking every one on each release costs more than the calls
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
