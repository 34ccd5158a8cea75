"""LLM judges: one protocol, backends by kind (an OpenAI-compatible client, a local llama.cpp server; see
:mod:`ragmeter.judges.backends`), a cache, prompts.

>>> from ragmeter.judges import JudgeConfig, open_judge
>>> judge = open_judge(JudgeConfig(kind="local"))                     # doctest: +SKIP
>>> judge = open_judge(JudgeConfig(kind="openai", model="gpt-4o-mini"))  # key from $OPENAI_API_KEY  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ragmeter.core.errors import ConfigError, JudgeError
from ragmeter.judges.accounting import JudgeUsage
from ragmeter.judges.backends import backend_kind, backend_kinds
from ragmeter.judges.backends.local import LOCAL_TIMEOUT_S, LocalServer
from ragmeter.judges.backends.openai import BOUNDS, REMOTE_TIMEOUT_S, OpenAIBackend, endpoint_bounds
from ragmeter.judges.cache import JudgeCache
from ragmeter.judges.engine import Judge, JudgeCall, JudgeOutcome
from ragmeter.judges.prompts import CLAIM_MODES, LAYOUTS
from ragmeter.judges.protocol import ChatBackend, ChatReply, ChatRequest, ScriptedBackend

__all__ = [
    "CLAIM_MODES",
    "JUDGE_KINDS",
    "LAYOUTS",
    "LOCAL_TIMEOUT_S",
    "REMOTE_TIMEOUT_S",
    "ChatBackend",
    "ChatReply",
    "ChatRequest",
    "Judge",
    "JudgeCache",
    "JudgeCall",
    "JudgeConfig",
    "JudgeOutcome",
    "JudgeUsage",
    "LocalServer",
    "OpenAIBackend",
    "ScriptedBackend",
    "open_judge",
    "planning_judge",
]


def __getattr__(name: str) -> Any:
    if name == "JUDGE_KINDS":  # the registered kinds now, so that one registered after this import is among them
        return backend_kinds()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class JudgeConfig:
    """How to reach a judge.

    - ``kind``: a registered backend kind (:func:`ragmeter.judges.backends.backend_kinds`): ``local``
      (llama.cpp server started here, packaged model unless ``model_file``) or ``openai`` (any
      OpenAI-compatible endpoint at ``base_url``, serving ``model``; default: the ``openai`` client's,
      ``$OPENAI_BASE_URL`` or OpenAI's own), or one registered with
      :func:`~ragmeter.judges.backends.register_backend`.
    - ``api_key_env``: the environment variable holding the key (``openai`` only; ``None``: no key).
    - ``cache``: the SQLite verdict cache file, ``None`` for none.
    - ``concurrency``: requests in flight at most (default: the kind's; 8, local: the server's slots, 1).
    - ``timeout_s``, ``max_attempts``, ``backoff_s``: each request's time limit (default: the kind's; 120 s,
      local: 600 s, since a claims call can take two minutes on two CPU cores), tries per call, first retry
      delay.
    - ``temperature`` and ``seed``: sampling; both go into every verdict's signature.
    - ``claims``: how the judge is asked for claims (:data:`~ragmeter.judges.prompts.CLAIM_MODES`): ``verify``
      (split and check against the chunks in one call) or ``split`` (split only; the evidence check verifies);
      ``None``: the kind's; ``split`` for ``local``, whose verdicts add nothing to the check, ``verify`` for
      ``openai``.
    - ``bounds``: whether the reply schemas' length bounds go to the endpoint in the schema (``schema``: its
      grammar enforces them) or only in the instructions (``instructions``); ``None``: the kind's (``local``:
      schema) or the endpoint's (:func:`~ragmeter.judges.backends.openai.endpoint_bounds`: instructions for
      OpenAI's API and Azure OpenAI, schema elsewhere). See :attr:`reply_bounds`.
    - ``layout``: how the calls about one item are laid out (:data:`~ragmeter.judges.prompts.LAYOUTS`): ``calls``
      (each prompt a conversation of its own) or ``shared`` (one item prefix, verdicts without a reason;
      :mod:`ragmeter.judges.layouts`); ``None``: the kind's; ``shared`` for ``local``, ``calls`` for ``openai``.
    """

    kind: str = "local"
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = "OPENAI_API_KEY"
    model_file: Path | None = None
    cache: Path | None = None
    concurrency: int | None = None
    timeout_s: float | None = None
    max_attempts: int = 6
    backoff_s: float = 1.0
    temperature: float = 0.0
    seed: int = 0
    claims: str | None = None
    bounds: str | None = None
    layout: str | None = None

    def __post_init__(self) -> None:
        if backend_kind(self.kind).needs_model and not self.model:
            raise ConfigError(f"a judge of kind {self.kind!r} needs a model name")
        if self.concurrency is not None and self.concurrency < 1:
            raise ConfigError("judge concurrency must be at least 1")
        if (self.timeout_s is not None and self.timeout_s <= 0) or self.max_attempts < 1:
            raise ConfigError("the judge timeout must be positive and max_attempts at least 1")
        if self.base_url is not None:
            _check_url(self.base_url)
        if self.claims is not None and self.claims not in CLAIM_MODES:
            raise ConfigError(f"the judge's claims mode must be one of {', '.join(CLAIM_MODES)}, got {self.claims!r}")
        if self.layout is not None and self.layout not in LAYOUTS:
            raise ConfigError(f"the judge's layout must be one of {', '.join(LAYOUTS)}, got {self.layout!r}")
        if self.bounds is not None and self.bounds not in BOUNDS:
            raise ConfigError(f"the judge's bounds must be one of {', '.join(BOUNDS)}, got {self.bounds!r}")

    @property
    def reply_bounds(self) -> str:
        """``bounds``, or the kind's (a kind whose own server honours them: ``schema``), or the endpoint's."""
        if self.bounds is not None:
            return self.bounds
        return "schema" if backend_kind(self.kind).capabilities.schema_bounds else endpoint_bounds(self.base_url)

    @property
    def claim_mode(self) -> str:
        """``claims``, or the kind's default: ``split`` for ``local``, ``verify`` for ``openai``."""
        return self.claims or backend_kind(self.kind).claims

    @property
    def call_layout(self) -> str:
        """``layout``, or the kind's default: ``shared`` for ``local``, ``calls`` for ``openai``."""
        return self.layout or backend_kind(self.kind).layout


def _check_url(url: str) -> None:
    """An endpoint address the client can use: ``http(s)://host[:port][/path]``."""
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        parts = parts._replace(netloc="")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"the judge's base URL {url!r} is not an http(s) address: give one such as "
            "http://localhost:8000/v1 (--judge-base-url)"
        )


def open_judge(config: JudgeConfig) -> Judge:
    """A ready :class:`Judge` with a backend of ``config.kind``; anything its opening started (the ``local``
    server) is stopped by ``Judge.close()``, or here when anything after its start fails (or is interrupted)."""
    kind = backend_kind(config.kind)
    timeout_s = config.timeout_s or kind.timeout_s
    opened = kind.factory(config, timeout_s)
    try:
        cache = JudgeCache(config.cache) if config.cache is not None else None
        return Judge(
            opened.backend,
            cache=cache,
            concurrency=config.concurrency or kind.concurrency,
            max_attempts=config.max_attempts,
            timeout_s=timeout_s,
            backoff_s=config.backoff_s,
            seed=config.seed,
            on_close=opened.close,
            claims=config.claim_mode,
            layout=config.call_layout,
        )
    except BaseException:
        if opened.close is not None:
            opened.close()
        raise


def planning_judge(config: JudgeConfig) -> Judge:
    """A judge with ``config``'s identity and cache that calls nothing, for a dry run: it starts no server,
    needs no key, and reads the cache without writing to it (no file made, none changed). Close it (it then
    holds an open cache file); closing starts nothing."""
    kind = backend_kind(config.kind)
    cache = JudgeCache(config.cache, read_only=True) if config.cache is not None and config.cache.exists() else None
    return Judge(
        _NoCalls(
            kind.model_id(config),
            config.temperature,
            config.seed,
            config.reply_bounds,
            continues_replies=kind.capabilities.continues_replies,
        ),
        cache=cache,
        claims=config.claim_mode,
        layout=config.call_layout,
    )


class _NoCalls:
    """The backend of :func:`planning_judge`: same identity, and a call is a bug."""

    def __init__(self, model: str, temperature: float, seed: int, bounds: str, *, continues_replies: bool) -> None:
        self.model = model
        self.temperature = temperature
        self.seed = seed
        self.bounds = bounds
        self.continues_replies = continues_replies

    async def complete(self, request: ChatRequest) -> ChatReply:
        raise JudgeError("a dry run makes no judge call")

    async def aclose(self) -> None:
        return None
