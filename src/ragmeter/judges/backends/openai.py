"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp, LiteLLM) through the ``openai`` client.

The client's own retries are off: :class:`~ragmeter.judges.engine.Judge` retries, so that backoff, Retry-After
and the concurrency limit are handled in one place. Every call asks for ``response_format: json_schema``,
which llama.cpp and vLLM turn into a grammar and OpenAI enforces in strict mode. A prompt's schema bounds its
strings with ``maxLength`` and the claims list with ``maxItems``; llama.cpp's grammar honours both, while
OpenAI's strict mode refuses them, so the bounds are sent only where ``send_bounds`` says the endpoint takes
them (the ``openai`` kind's :class:`~ragmeter.judges.backends.registry.Capabilities` record that it sends none).

A failure to connect at all (refused, unknown host, connect timeout, proxy) is a
:class:`~ragmeter.core.errors.TransientJudgeError` with ``connection_failed`` set, so that the engine can tell a dead
or mistyped address from a server that answers with errors.

The API key is read from an environment variable at start and kept only in the client: it never enters a
signature, a cache entry, a report or an error message (:meth:`OpenAIBackend.redact`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ragmeter.core.errors import (
    ConfigError,
    JudgeError,
    MissingDependencyError,
    RejectedCallError,
    TransientJudgeError,
)
from ragmeter.judges.backends.registry import BackendKind, Capabilities, OpenedBackend
from ragmeter.judges.protocol import ChatReply, ChatRequest

if TYPE_CHECKING:
    from ragmeter.judges import JudgeConfig

__all__ = ["BACKEND", "REMOTE_TIMEOUT_S", "OpenAIBackend"]

#: Seconds per request to a remote endpoint, unless the config says otherwise.
REMOTE_TIMEOUT_S = 120.0

#: What the local server and other keyless endpoints get as a key (the client insists on one).
NO_KEY = "no-key"
#: Seconds to open a connection: far more than a reachable server needs, and short enough that a silent
#: address (packets dropped) is found out in seconds, not after the whole request timeout.
CONNECT_TIMEOUT_S = 10.0
#: The HTTP library's errors that mean no connection was made. The ``openai`` client raises them through
#: httpx or httpx2 (by version), whose classes share these names.
_CONNECT_FAILURES = frozenset({"ConnectError", "ConnectTimeout", "ProxyError"})


class OpenAIBackend:
    """Chat calls to ``base_url`` for ``model``; ``api_key_env`` names the variable holding the key
    (``None`` for a keyless endpoint such as the local server). ``timeout_s`` bounds each call (opening the
    connection: ``CONNECT_TIMEOUT_S`` at most). ``send_bounds``: send the schemas' ``maxLength``/``maxItems`` bounds
    (llama.cpp), else leave them out (OpenAI's strict mode rejects them)."""

    def __init__(self, *, base_url: str | None, model: str, api_key_env: str | None = "OPENAI_API_KEY",
                 temperature: float = 0.0, seed: int = 0, timeout_s: float = 120.0,
                 send_bounds: bool = False) -> None:
        try:
            import openai
        except ImportError as exc:
            raise MissingDependencyError("openai", "judge", "an LLM judge") from exc
        key = NO_KEY
        if api_key_env is not None:
            key = os.environ.get(api_key_env, "")
            if not key:
                raise ConfigError(f"the judge's API key is read from ${api_key_env}, which is not set: export it, "
                                  "or name another variable with --judge-api-key-env")
        self._key = key
        self._key_env = api_key_env
        self._openai = openai
        self.model = model
        self.temperature = temperature
        self.seed = seed
        self.timeout_s = timeout_s
        self.send_bounds = send_bounds
        self._completion = openai.types.chat.ChatCompletion
        timeout = openai.Timeout(timeout_s, connect=min(timeout_s, CONNECT_TIMEOUT_S))
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=timeout)

    @property
    def base_url(self) -> str:
        """The endpoint's address (the client's default when none was given)."""
        return str(self._client.base_url).rstrip("/")

    async def complete(self, request: ChatRequest) -> ChatReply:
        openai = self._openai
        schema = dict(request.schema) if self.send_bounds else _without_bounds(request.schema)
        body = {"model": self.model, "temperature": self.temperature, "seed": self.seed,
                "max_tokens": request.max_tokens,
                "messages": [{"role": role, "content": content} for role, content in request.messages],
                "response_format": {"type": "json_schema", "json_schema": {
                    "name": request.schema_name, "strict": True, "schema": schema}}}
        try:
            # the client's generic POST (its documented way to send a ready body): the same HTTP, errors and
            # reply parsing as chat.completions.create, without re-walking the body against its parameter
            # types, which costs a third of the client's CPU time per call
            response = await self._client.post("/chat/completions", body=body, cast_to=self._completion)
        except openai.RateLimitError as exc:
            raise TransientJudgeError(self.redact(f"rate limited (429): {exc.message}"),
                                      retry_after=_retry_after(exc.response.headers), rate_limited=True) from None
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise JudgeError(self.redact(f"the judge endpoint at {self.base_url} refused {self._key_source()} "
                                         f"({exc.status_code}: {exc.message}): check the key, or name the "
                                         "variable that holds the right one with --judge-api-key-env")) from None
        except openai.NotFoundError as exc:
            raise JudgeError(self.redact(f"the judge endpoint has no model {self.model!r} or no chat completions "
                                         f"route (404): {exc.message}")) from None
        except openai.APIStatusError as exc:
            if exc.status_code >= 500 or exc.status_code in (408, 409):
                raise TransientJudgeError(self.redact(f"server error {exc.status_code}: {exc.message}"),
                                          retry_after=_retry_after(exc.response.headers)) from None
            if exc.status_code in (400, 413, 422):
                raise RejectedCallError(self.redact(f"{exc.status_code}: {exc.message}")) from None
            raise JudgeError(self.redact(f"the judge endpoint rejected the call ({exc.status_code}): "
                                         f"{exc.message}")) from None
        except openai.APIConnectionError as exc:  # APITimeoutError included
            raise self._transport_error(exc) from None
        except openai.APIResponseValidationError as exc:
            raise TransientJudgeError(self.redact(f"malformed response: {exc.message}")) from None
        return _reply(response)

    def _transport_error(self, exc: Exception) -> TransientJudgeError:
        """The retryable error for a request that got no HTTP reply; ``connection_failed`` when the HTTP
        library's cause says that no connection was made at all."""
        cause = exc.__cause__
        if cause is not None and _CONNECT_FAILURES & {kind.__name__ for kind in type(cause).__mro__}:
            return TransientJudgeError(self.redact(f"cannot connect to {self.base_url} ({type(cause).__name__}: "
                                                   f"{cause})"), connection_failed=True)
        if isinstance(exc, self._openai.APITimeoutError):
            return TransientJudgeError(f"no reply within {self.timeout_s:g} s")
        return TransientJudgeError(self.redact(f"the connection to {self.base_url} failed "
                                               f"({type(cause).__name__}: {cause})"))

    def _key_source(self) -> str:
        return f"the key in ${self._key_env}" if self._key_env is not None else "to answer without a key"

    def redact(self, text: str) -> str:
        """``text`` with the API key blanked out (error messages may echo it)."""
        return text.replace(self._key, "***") if self._key != NO_KEY else text

    async def aclose(self) -> None:
        await self._client.close()


def _open(config: JudgeConfig, timeout_s: float) -> OpenedBackend:
    backend = OpenAIBackend(base_url=config.base_url, model=str(config.model), api_key_env=config.api_key_env,
                            temperature=config.temperature, seed=config.seed, timeout_s=timeout_s,
                            send_bounds=BACKEND.capabilities.schema_bounds)
    return OpenedBackend(backend)


def _model_id(config: JudgeConfig) -> str:
    return str(config.model)


#: ``openai``: any OpenAI-compatible endpoint at ``config.base_url`` serving ``config.model``. No schema bounds
#: are sent, since OpenAI's strict mode rejects them (other servers might take them; none is asked).
BACKEND = BackendKind("openai", _open, _model_id, "any OpenAI-compatible endpoint",
                      Capabilities(schema_bounds=False, starts_server=False), needs_model=True, concurrency=8,
                      timeout_s=REMOTE_TIMEOUT_S, claims="verify")


def _reply(response: Any) -> ChatReply:
    if not response.choices:
        raise TransientJudgeError("the reply has no choices")
    choice = response.choices[0]
    usage = response.usage
    return ChatReply(text=choice.message.content or "", finish_reason=choice.finish_reason or "unknown",
                     prompt_tokens=usage.prompt_tokens if usage else 0,
                     completion_tokens=usage.completion_tokens if usage else 0)


#: The schema keywords that bound a reply for the local grammar and that OpenAI's strict mode rejects.
GRAMMAR_BOUNDS = ("maxLength", "maxItems", "minItems")


def _without_bounds(schema: Any) -> Any:
    """``schema`` with every ``GRAMMAR_BOUNDS`` keyword left out. Our schemas have no property named like one,
    which this would drop too."""
    if isinstance(schema, Mapping):
        return {key: _without_bounds(value) for key, value in schema.items() if key not in GRAMMAR_BOUNDS}
    if isinstance(schema, list):
        return [_without_bounds(value) for value in schema]
    return schema


def _retry_after(headers: Any) -> float | None:
    """Retry-After in seconds (``retry-after-ms`` first, as OpenAI sends it); ``None`` when absent or an
    HTTP date, which the backoff then replaces."""
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue
        if 0 <= seconds <= 600:
            return seconds
    return None
