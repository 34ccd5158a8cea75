"""What a judge backend is: one chat call in, one reply out, speaking the OpenAI chat protocol.

Backends come by kind, from the registry in :mod:`ragmeter.judges.backends`. The two real kinds share one
implementation, :class:`~ragmeter.judges.backends.openai.OpenAIBackend`: any OpenAI-compatible endpoint, and
the local llama.cpp server ragmeter starts itself. :class:`ScriptedBackend` is the deterministic test double:
it answers from a function of the request.

A backend raises :class:`~ragmeter.core.errors.TransientJudgeError` for a failure worth retrying (429, 5xx,
timeout; ``connection_failed`` set when no connection could be made at all) and
:class:`~ragmeter.core.errors.JudgeError` for one that no retry can fix (a rejected key). Retries, repair,
concurrency, caching and the decision that an endpoint is unreachable live in
:class:`~ragmeter.judges.engine.Judge`, not in backends.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["ChatBackend", "ChatReply", "ChatRequest", "ScriptedBackend"]


@dataclass(frozen=True)
class ChatRequest:
    """One judge call: ``messages`` as (role, content) pairs, and the JSON schema the reply must match.

    ``shared`` is how many characters of the first user message start every call about the same item (its
    *item prefix*, :mod:`ragmeter.judges.layouts`; 0: none): an endpoint that keeps computed prefixes can serve
    them from the item's first call. It changes nothing the judge reads, so it is not in the fingerprint.

    ``reply_start`` is the start of the reply, written for the judge (``'{"score": '``; '': none), and
    ``continuation`` the grammar, in llama.cpp's GBNF, of what the judge writes after it: a backend that continues
    an assistant message (``continues_replies``, the local judge's) sends it as one, and the reply is the start and
    what follows, which matches ``schema`` as a whole. The judge reads both, so both are in the fingerprint.
    """

    messages: tuple[tuple[str, str], ...]
    schema_name: str
    schema: Mapping[str, Any]
    max_tokens: int
    shared: int = 0
    reply_start: str = ""
    continuation: str = ""

    @property
    def item_prefix(self) -> str:
        """The start of the first user message that the item's other calls share ('' when none)."""
        if not self.shared:
            return ""
        return next(content for role, content in self.messages if role == "user")[: self.shared]

    def with_repair(self, reply: str, problem: str, *, max_tokens: int | None = None) -> ChatRequest:
        """The request that shows the judge its invalid reply and asks once more (with ``max_tokens`` as
        its token limit, the request's own by default)."""
        ask = (
            f"That reply cannot be used: {problem}. Reply again with one JSON object that matches the "
            "schema exactly, and nothing else."
        )
        return ChatRequest(
            (*self.messages, ("assistant", reply), ("user", ask)),
            self.schema_name,
            self.schema,
            max_tokens or self.max_tokens,
            self.shared,
            self.reply_start,
            self.continuation,
        )

    def fingerprint(self) -> str:
        """sha256 of everything the judge sees: messages, schema and token limit, and the reply's start and its
        continuation's grammar where the reply is begun for the judge."""
        seen: list[Any] = [self.messages, self.schema_name, self.schema, self.max_tokens]
        if self.reply_start:
            seen += [self.reply_start, self.continuation]
        body = json.dumps(seen, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(body.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChatReply:
    """The judge's text, why it stopped (``stop``, ``length``…) and the tokens the server counted."""

    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int


class ChatBackend(Protocol):
    """A chat endpoint. ``model`` and ``temperature`` go into every verdict's signature."""

    model: str
    temperature: float
    seed: int

    async def complete(self, request: ChatRequest) -> ChatReply:
        """One attempt; raises TransientJudgeError or JudgeError on failure."""
        ...

    async def aclose(self) -> None: ...


class ScriptedBackend:
    """A deterministic backend for tests: ``respond(request)`` gives the reply text (or raises).

    Token counts are the lengths of the messages and reply in characters // 4, so accounting is testable.
    ``requests`` keeps every request received.
    """

    def __init__(
        self, respond: Callable[[ChatRequest], str], *, model: str = "scripted", temperature: float = 0.0, seed: int = 0
    ) -> None:
        self.respond = respond
        self.model = model
        self.temperature = temperature
        self.seed = seed
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> ChatReply:
        self.requests.append(request)
        text = self.respond(request)
        prompt = sum(len(content) for _, content in request.messages) // 4
        return ChatReply(text, "stop", max(1, prompt), max(1, len(text) // 4))

    async def aclose(self) -> None:
        return None
