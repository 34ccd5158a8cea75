"""The judge's hourly token budget in ``ragmeter serve``: a request is sent only when the tokens spent in the last
hour, those of the requests in flight and this request's most possible tokens stay within the budget.

A request's most possible tokens are its messages' UTF-8 bytes, 16 more per message (the chat template's), and its
token limit: a byte-level BPE tokenizer (GPT's, Llama 3's, Qwen's) never makes more tokens than bytes, so the
bound holds before the server has counted anything. What a request really spent (the server's count; a request that
failed, its most) is what is kept, in the store (:meth:`~ragmeter.serve.store.Store.add_spend`), so a restart does not
reset the hour.
A request the budget does not allow is refused as one the endpoint rejected: the judge records that call as failed
with the reason, and the trace's judged metrics are undefined with it, never a number. Without a budget
(``tokens_per_hour`` ``None``) every request is sent and counted the same way, for ``/metrics``.
"""

from __future__ import annotations

import asyncio
import time

from ragmeter.core.errors import RejectedCallError
from ragmeter.judges.protocol import ChatBackend, ChatReply, ChatRequest
from ragmeter.serve.store import Store

__all__ = ["HOUR_S", "BudgetedBackend", "most_tokens"]

HOUR_S = 3600.0
#: Tokens a chat template may add around one message, at most.
TEMPLATE_TOKENS = 16


def most_tokens(request: ChatRequest) -> int:
    """The most tokens ``request`` can spend: its messages' bytes, the template's per message, its token limit.

    >>> most_tokens(ChatRequest((("system", "Judge."), ("user", "Is it?")), "x", {}, 10))
    54
    """
    return sum(len(content.encode("utf-8")) + TEMPLATE_TOKENS for _, content in request.messages) + request.max_tokens


class BudgetedBackend:
    """``backend`` within ``tokens_per_hour`` (``None``: no limit), its requests and spend kept in ``store`` (see the
    module docstring)."""

    def __init__(self, backend: ChatBackend, store: Store, tokens_per_hour: int | None) -> None:
        if tokens_per_hour is not None and tokens_per_hour < 1:
            raise ValueError("the judge's budget must be at least one token an hour")
        self.backend = backend
        self.store = store
        self.tokens_per_hour = tokens_per_hour
        self.model, self.temperature, self.seed = backend.model, backend.temperature, backend.seed
        self.bounds = getattr(backend, "bounds", "schema")
        self._reserved = 0
        self._lock = asyncio.Lock()

    async def complete(self, request: ChatRequest) -> ChatReply:
        most = most_tokens(request)
        async with self._lock:
            spent = self.store.spent_since(time.time() - HOUR_S) if self.tokens_per_hour is not None else 0
            if self.tokens_per_hour is not None and spent + self._reserved + most > self.tokens_per_hour:
                self.store.add_spend(0, outcome="refused")
                raise RejectedCallError(
                    f"the judge's budget of {self.tokens_per_hour} tokens an hour would be passed ({spent} spent in "
                    f"the last hour, {self._reserved} in flight, this request up to {most})"
                )
            self._reserved += most
        try:
            reply = await self.backend.complete(request)
        except BaseException:  # the server may have spent it before failing: counted at its most
            self.store.add_spend(most, outcome="failed")
            raise
        else:
            self.store.add_spend(reply.prompt_tokens + reply.completion_tokens)
        finally:  # after its spend is counted, so that no moment counts it nowhere
            async with self._lock:
                self._reserved -= most
        return reply

    async def aclose(self) -> None:
        await self.backend.aclose()
