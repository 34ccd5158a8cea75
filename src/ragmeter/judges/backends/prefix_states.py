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

The shared layout (:mod:`ragmeter.judges.layouts`) adds a second level: every call about one item starts with
the item (``ChatRequest.item_prefix``). Its tokens are computed once, from the lead's restored state, saved, and
restored before each of the item's calls: again the same bytes and batches whatever ran before. The states of
the last ``ITEM_STATES`` items are kept (each call about an item follows its first closely); an older one is
deleted from the server's save folder, and computed the same way again should a call still need it.

A lead's state is also kept across servers, in ``store`` (the local judge's: ``judge-states`` in ragmeter's cache
folder, for the packaged model), under a name drawn from the lead and the ``build`` it was computed with (the
model's checksum, llama.cpp's version, threads and context): a server started again with the same build
restores it instead of computing the same tokens again, which are the same bytes (checked: a stored state must
have the checksum kept beside it and restore exactly the lead's tokens, or it is computed afresh).

:class:`LocalBackend` is the local judge's :class:`~ragmeter.judges.backends.openai.OpenAIBackend`: one call at a
time (a restore and its call must not interleave with another call's), each right after its lead's restore. It
continues a reply begun for the judge (``ChatRequest.reply_start``): the start goes to the server as the last,
assistant, message, which llama.cpp's chat endpoint continues, under the request's ``continuation`` grammar.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import urllib.error
import urllib.request
from collections import OrderedDict
from dataclasses import replace
from itertools import takewhile
from pathlib import Path
from typing import Any

from ragmeter.core.errors import JudgeError
from ragmeter.core.files import file_sha256, writing
from ragmeter.judges.backends.openai import OpenAIBackend
from ragmeter.judges.protocol import ChatReply, ChatRequest

__all__ = ["LocalBackend", "PrefixStates", "begun", "lead"]

Messages = tuple[tuple[str, str], ...]
#: The two user messages whose renderings' common start is a lead's tokens.
_PROBES = ("A", "B")
#: How many item states are kept at once.
ITEM_STATES = 4


def lead(request: ChatRequest) -> Messages:
    """The messages of ``request`` before its first user message (a judge prompt's system message)."""
    return tuple(takewhile(lambda message: message[0] != "user", request.messages))


class PrefixStates:
    """Saved slot states of the leads and items seen so far, on the llama.cpp server at ``server_url`` (its root,
    not ``/v1``), which must have been started with a slot save folder (``folder``, where item states no longer
    kept are deleted; ``None``: none is deleted); ``slot`` is the slot the calls use (the one the states are
    restored into)."""

    def __init__(
        self,
        server_url: str,
        *,
        timeout_s: float,
        slot: int = 0,
        folder: Path | None = None,
        store: Path | None = None,
        build: str = "",
    ) -> None:
        self._url = server_url.rstrip("/")
        self._timeout_s = timeout_s
        self.slot = slot
        self._folder = folder
        self._store = store if folder is not None else None
        self._build = build
        self._files: dict[Messages, str] = {}
        self._items: OrderedDict[tuple[Messages, str], str] = OrderedDict()

    def restore(self, lead: Messages, item: str = "") -> None:
        """Put the computed tokens of ``lead`` (followed by a user message starting with ``item``) into the slot,
        computing and saving them the first time (the slot then holds them already: nothing to restore)."""
        name, held = self._state(lead, item)
        if not held:
            self._restore(name)

    def _restore(self, name: str) -> int:
        """Restore the saved state ``name``; the number of tokens restored."""
        return int(self._post(f"/slots/{self.slot}?action=restore", {"filename": name}).get("n_restored", -1))

    def _state(self, lead: Messages, item: str) -> tuple[str, bool]:
        """The file of the state of ``lead`` and ``item``, computed and saved the first time, and whether the slot
        holds that state now (just computed, or just restored from the store)."""
        if not item:
            name = self._files.get(lead)
            if name is not None:
                return name, False
            name = self._files[lead] = self._stored(lead) or self._save(lead, "", reuse=False)
            return name, True
        key = (lead, item)
        name = self._items.get(key)
        if name is not None:
            self._items.move_to_end(key)
            return name, False
        self.restore(lead)  # the item is computed after the lead's saved state, as every call is
        name = self._items[key] = self._save(lead, item, reuse=True)
        while len(self._items) > ITEM_STATES:
            _, old = self._items.popitem(last=False)
            if self._folder is not None:
                (self._folder / old).unlink(missing_ok=True)
        return name, True

    def _name(self, lead: Messages, item: str) -> str:
        kind = "item" if item else "lead"
        return f"{kind}-{hashlib.sha256(json.dumps([self._build, lead, item]).encode()).hexdigest()[:24]}.bin"

    def _stored(self, lead: Messages) -> str | None:
        """The name of ``lead``'s state copied from the store into the server's folder, once restored whole;
        ``None`` when there is none, or one whose bytes are not those saved (checked against the checksum kept
        beside it before the server reads it: a damaged state file can stop llama.cpp's server) or that does
        not restore the lead's tokens; such a one is deleted."""
        if self._store is None or self._folder is None:
            return None
        name = self._name(lead, "")
        stored, checksum = self._store / name, self._store / f"{name}.sha256"
        if not stored.is_file():
            return None
        if checksum.is_file() and checksum.read_text(encoding="ascii") == file_sha256(stored):
            shutil.copyfile(stored, self._folder / name)
            try:
                if self._restore(name) == len(self.lead_tokens(lead)):
                    return name
            except JudgeError:
                pass
        stored.unlink(missing_ok=True)
        checksum.unlink(missing_ok=True)
        return None

    def _save(self, lead: Messages, item: str, *, reuse: bool) -> str:
        """Compute the tokens of ``lead`` and ``item`` (whole from an empty slot, or after what the slot holds:
        ``reuse``), nothing generated, and save the slot's state; its file's name."""
        tokens = self.prefix_tokens(lead, item)
        self._post("/completion", {"prompt": tokens, "n_predict": 0, "cache_prompt": reuse, "id_slot": self.slot})
        name = self._name(lead, item)
        saved = self._post(f"/slots/{self.slot}?action=save", {"filename": name}).get("n_saved")
        if saved != len(tokens):
            what = "an item's prefix" if item else "a system message"
            raise JudgeError(
                f"the local judge server saved {saved} tokens of {what} of {len(tokens)} tokens: its "
                "slot did not hold the prompt just computed"
            )
        if not item and self._store is not None and self._folder is not None:
            with writing(self._store / name) as kept:
                shutil.copyfile(self._folder / name, kept)
            with writing(self._store / f"{name}.sha256") as checksum:
                checksum.write_text(file_sha256(self._store / name), encoding="ascii")
        return name

    def lead_tokens(self, lead: Messages) -> list[int]:
        """The tokens every call starting with ``lead`` starts with (see the module docstring)."""
        return self.prefix_tokens(lead, "")

    def prefix_tokens(self, lead: Messages, item: str) -> list[int]:
        """The tokens every call starting with ``lead`` and a user message starting with ``item`` starts with."""
        first, second = (self._tokens([*lead, ("user", item + probe)]) for probe in _PROBES)
        shared = next(
            (i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b), min(len(first), len(second))
        )
        return first[:shared]

    def _tokens(self, messages: list[tuple[str, str]]) -> list[int]:
        """``messages`` as the chat endpoint tokenizes them: the template applied, special tokens parsed."""
        prompt = self._post(
            "/apply-template", {"messages": [{"role": role, "content": content} for role, content in messages]}
        )["prompt"]
        return list(self._post("/tokenize", {"content": prompt, "add_special": True, "parse_special": True})["tokens"])

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self._url}{path}", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:
                return dict(json.load(response))
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:300]
            raise JudgeError(f"the local judge server refused {path} ({exc.code}): {detail}") from None
        except (OSError, ValueError) as exc:
            raise JudgeError(f"the local judge server did not answer {path}: {exc}") from None


def begun(body: dict[str, Any], request: ChatRequest) -> dict[str, Any]:
    """``body``, the chat completion of ``request`` for llama.cpp's server, with the reply begun where ``request``
    begins it: the start as the last, assistant, message, and the grammar of its continuation in the schema's
    place."""
    if not request.reply_start:
        return body
    rest = {key: value for key, value in body.items() if key != "response_format"}
    messages = [*body["messages"], {"role": "assistant", "content": request.reply_start}]
    return {**rest, "messages": messages, "grammar": request.continuation}


class LocalBackend(OpenAIBackend):
    """:class:`OpenAIBackend` for the local server, each call made right after its prefix's restore
    (``states``: the lead's, or the item's when the request has an item prefix), one call at a time; the other
    arguments are :class:`OpenAIBackend`'s. A reply begun for the judge is continued (see the module docstring)."""

    continues_replies = True

    def __init__(self, *, states: PrefixStates, **kwargs: Any) -> None:
        super().__init__(cache_prompt=True, **kwargs)
        self._states = states
        self._locks: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}

    @classmethod
    def at(
        cls,
        base_url: str,
        *,
        timeout_s: float,
        states_folder: Path | None = None,
        store: Path | None = None,
        build: str = "",
        **kwargs: Any,
    ) -> LocalBackend:
        """The backend for the llama.cpp server whose chat endpoint is ``base_url`` (``…/v1``), with states of
        its own, saved in ``states_folder`` (the server's slot save folder) and, for leads, ``store`` under
        ``build`` (see :class:`PrefixStates`); ``timeout_s`` bounds each call and each state request."""
        states = PrefixStates(
            base_url.removesuffix("/").removesuffix("/v1"),
            timeout_s=timeout_s,
            folder=states_folder,
            store=store,
            build=build,
        )
        return cls(states=states, base_url=base_url, timeout_s=timeout_s, **kwargs)

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """:meth:`OpenAIBackend.request_body`, sent to the slot the state was restored into; a reply begun for the
        judge goes as the last message, and the grammar of its continuation takes the schema's place."""
        return begun({**super().request_body(request), "id_slot": self._states.slot}, request)

    async def complete(self, request: ChatRequest) -> ChatReply:
        lock = self._locks.setdefault(asyncio.get_running_loop(), asyncio.Lock())
        async with lock:
            await asyncio.to_thread(self._states.restore, lead(request), request.item_prefix)
            reply = await super().complete(request)
        # llama.cpp's server answers a continued message with the whole of it, its start included; a build that
        # answers with the continuation alone gets the start put back
        if request.reply_start and not reply.text.startswith(request.reply_start):
            reply = replace(reply, text=request.reply_start + reply.text)
        return reply
