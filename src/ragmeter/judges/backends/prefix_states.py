"""The local judge's prompt reuse that cannot change a verdict: each system message computed once, alone, and put
back into the slot before every call that starts with it (issue 34).

Every call of one judge prompt starts with the same system message. llama.cpp can take such a shared start from
its slot's cache instead of computing it again (``cache_prompt``), but what the slot holds depends on the calls
before, and a start computed in other batches than before can turn a near-tie the other way (issue 33: 4 of 24
demo verdicts changed with the order of the calls). :class:`PrefixStates` reuses one thing only: the tokens of
the messages before the first user message (the *lead*), computed alone from an empty slot, saved to a file
once (llama.cpp's slot save), and restored into the slot right before every call that starts with that lead. A
call then always starts from the same bytes, whatever ran before, and computes the rest in the same batches:
the same reply every time, for the cost of the part after the lead.

A lead's tokens are the longest common start of the chat template applied, by the server's own template and
tokenizer, to the lead and each of two different one-letter user messages. A call whose own tokens leave that
start earlier (where its user message merges with the template's text) reuses fewer tokens: always the same
number for that call, so its reply does not change either.

:class:`LocalBackend` is the local judge's :class:`~ragmeter.judges.backends.openai.OpenAIBackend`: one call at a
time (a restore and its call must not interleave with another call's), each right after its lead's restore.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import urllib.error
import urllib.request
from itertools import takewhile
from typing import Any

from ragmeter.core.errors import JudgeError
from ragmeter.judges.backends.openai import OpenAIBackend
from ragmeter.judges.protocol import ChatReply, ChatRequest

__all__ = ["LocalBackend", "PrefixStates", "lead"]

Messages = tuple[tuple[str, str], ...]
#: The two user messages whose renderings' common start is a lead's tokens.
_PROBES = ("A", "B")


def lead(request: ChatRequest) -> Messages:
    """The messages of ``request`` before its first user message (a judge prompt's system message)."""
    return tuple(takewhile(lambda message: message[0] != "user", request.messages))


class PrefixStates:
    """Saved slot states of the leads seen so far, on the llama.cpp server at ``server_url`` (its root, not
    ``/v1``), which must have been started with a slot save folder; ``slot`` is the slot the calls use (the
    one the states are restored into)."""

    def __init__(self, server_url: str, *, timeout_s: float, slot: int = 0) -> None:
        self._url = server_url.rstrip("/")
        self._timeout_s = timeout_s
        self.slot = slot
        self._files: dict[Messages, str] = {}

    def restore(self, lead: Messages) -> None:
        """Put the computed tokens of ``lead`` into the slot, computing and saving them the first time."""
        name = self._files.get(lead)
        if name is None:
            name = self._files[lead] = self._save(lead)
        self._post(f"/slots/{self.slot}?action=restore", {"filename": name})

    def _save(self, lead: Messages) -> str:
        tokens = self.lead_tokens(lead)
        # computed whole from an empty slot (no reuse of whatever it held), nothing generated
        self._post("/completion", {"prompt": tokens, "n_predict": 0, "cache_prompt": False, "id_slot": self.slot})
        name = f"lead-{hashlib.sha256(json.dumps(lead).encode()).hexdigest()[:24]}.bin"
        saved = self._post(f"/slots/{self.slot}?action=save", {"filename": name}).get("n_saved")
        if saved != len(tokens):
            raise JudgeError(f"the local judge server saved {saved} tokens of a {len(tokens)}-token system "
                             "message: its slot did not hold the prompt just computed")
        return name

    def lead_tokens(self, lead: Messages) -> list[int]:
        """The tokens every call starting with ``lead`` starts with (see the module docstring)."""
        first, second = (self._tokens([*lead, ("user", probe)]) for probe in _PROBES)
        shared = next((i for i, (a, b) in enumerate(zip(first, second)) if a != b), min(len(first), len(second)))
        return first[:shared]

    def _tokens(self, messages: list[tuple[str, str]]) -> list[int]:
        """``messages`` as the chat endpoint tokenizes them: the template applied, special tokens parsed."""
        prompt = self._post("/apply-template", {"messages": [{"role": role, "content": content}
                                                             for role, content in messages]})["prompt"]
        return list(self._post("/tokenize", {"content": prompt, "add_special": True,
                                             "parse_special": True})["tokens"])

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(f"{self._url}{path}", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:
                return dict(json.load(response))
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:300]
            raise JudgeError(f"the local judge server refused {path} ({exc.code}): {detail}") from None
        except (OSError, ValueError) as exc:
            raise JudgeError(f"the local judge server did not answer {path}: {exc}") from None


class LocalBackend(OpenAIBackend):
    """:class:`OpenAIBackend` for the local server, each call made right after its lead's restore
    (``states``), one call at a time; the other arguments are :class:`OpenAIBackend`'s."""

    def __init__(self, *, states: PrefixStates, **kwargs: Any) -> None:
        super().__init__(cache_prompt=True, **kwargs)
        self._states = states
        self._locks: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}

    @classmethod
    def at(cls, base_url: str, *, timeout_s: float, **kwargs: Any) -> LocalBackend:
        """The backend for the llama.cpp server whose chat endpoint is ``base_url`` (``…/v1``), with states of
        its own; ``timeout_s`` bounds each call and each state request."""
        states = PrefixStates(base_url.removesuffix("/").removesuffix("/v1"), timeout_s=timeout_s)
        return cls(states=states, base_url=base_url, timeout_s=timeout_s, **kwargs)

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """:meth:`OpenAIBackend.request_body`, sent to the slot the state was restored into."""
        return {**super().request_body(request), "id_slot": self._states.slot}

    async def complete(self, request: ChatRequest) -> ChatReply:
        lock = self._locks.setdefault(asyncio.get_running_loop(), asyncio.Lock())
        async with lock:
            await asyncio.to_thread(self._states.restore, lead(request))
            return await super().complete(request)
