"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp, LiteLLM) through the ``openai`` client.

The client's own retries are off: :class:`~ragmeter.judges.engine.Judge` retries, so that backoff, Retry-After
and the concurrency limit are handled in one place. Every call asks for ``response_format: json_schema``,
which llama.cpp, vLLM and Ollama turn into a grammar and OpenAI enforces in strict mode. A prompt's schema
bounds its strings with ``maxLength`` and the claims list with ``maxItems``/``minItems``: with ``bounds="schema"``
they are sent, and a grammar that honours them closes a rambling reason at its limit instead of losing the
verdict at the token limit (llama.cpp's server, vLLM's xgrammar and guidance back ends, Ollama's llama.cpp
grammar); with ``bounds="instructions"`` they are left out of the schema, the instructions' limits in words
are all the judge has, and a reply cut off at the token limit gets a repair with more room
(:data:`~ragmeter.judges.engine.INSTRUCTED_REPAIR_ROOM`). :func:`endpoint_bounds` chooses per endpoint:
instructions for OpenAI's own API and Azure OpenAI, whose strict mode refuses ``maxLength``, the schema for
every other endpoint; ``--judge-bounds`` overrides it. An endpoint that refuses a bound stops the run at its
first call, saying to pass ``--judge-bounds instructions``; the judge's identity (and so every verdict's
signature) ends in ``/bounds:instructions`` when the bounds were not sent.

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
from urllib.parse import urlsplit

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

__all__ = ["BACKEND", "BOUNDS", "REMOTE_TIMEOUT_S", "OpenAIBackend", "endpoint_bounds"]

#: How a reply schema's bounds reach the endpoint: in the schema (a grammar enforces them), or only in the
#: instructions' words.
BOUNDS = ("schema", "instructions")
#: Hosts whose structured outputs refuse ``maxLength`` (OpenAI's strict mode; Azure OpenAI's is the same).
BOUNDS_REFUSED_BY = ("api.openai.com", ".openai.azure.com")
#: Where the ``openai`` client sends requests when no base URL is given (and ``$OPENAI_BASE_URL`` is unset).
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"

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
    connection: ``CONNECT_TIMEOUT_S`` at most). ``bounds``: ``schema`` sends the schemas' ``maxLength``/``maxItems``
    bounds, ``instructions`` leaves them out (see the module docstring). ``cache_prompt``: sent as llama.cpp's
    field of that name when not ``None`` (``False``: every request computed whole, whatever came before)."""

    def __init__(
        self,
        *,
        base_url: str | None,
        model: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        temperature: float = 0.0,
        seed: int = 0,
        timeout_s: float = 120.0,
        bounds: str = "schema",
        cache_prompt: bool | None = None,
    ) -> None:
        if bounds not in BOUNDS:
            raise ConfigError(f"the judge's bounds must be one of {', '.join(BOUNDS)}, got {bounds!r}")
        try:
            import openai
        except ImportError as exc:
            raise MissingDependencyError("openai", "judge", "an LLM judge") from exc
        key = NO_KEY
        if api_key_env is not None:
            key = os.environ.get(api_key_env, "")
            if not key:
                raise ConfigError(
                    f"the judge's API key is read from ${api_key_env}, which is not set: export it, "
                    "or name another variable with --judge-api-key-env"
                )
        self._key = key
        self._key_env = api_key_env
        self._openai = openai
        self.model = model
        self.temperature = temperature
        self.seed = seed
        self.timeout_s = timeout_s
        self.bounds = bounds
        self.cache_prompt = cache_prompt
        self._completion = openai.types.chat.ChatCompletion
        timeout = openai.Timeout(timeout_s, connect=min(timeout_s, CONNECT_TIMEOUT_S))
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=timeout)

    @property
    def base_url(self) -> str:
        """The endpoint's address (the client's default when none was given)."""
        return str(self._client.base_url).rstrip("/")

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body of ``request``'s chat completion."""
        schema = dict(request.schema) if self.bounds == "schema" else _without_bounds(request.schema)
        body = {
            "model": self.model,
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": request.max_tokens,
            "messages": [{"role": role, "content": content} for role, content in request.messages],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": request.schema_name, "strict": True, "schema": schema},
            },
        }
        if self.cache_prompt is not None:  # llama.cpp's own field: reuse the slot's cached prompt prefix or not
            body["cache_prompt"] = self.cache_prompt
        return body

    async def complete(self, request: ChatRequest) -> ChatReply:
        openai = self._openai
        body = self.request_body(request)
        try:
            # the client's generic POST (its documented way to send a ready body): the same HTTP, errors and
            # reply parsing as chat.completions.create, without re-walking the body against its parameter
            # types, which costs a third of the client's CPU time per call
            response = await self._client.post("/chat/completions", body=body, cast_to=self._completion)
        except openai.RateLimitError as exc:
            raise TransientJudgeError(
                self.redact(f"rate limited (429): {exc.message}"),
                retry_after=_retry_after(exc.response.headers),
                rate_limited=True,
            ) from None
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise JudgeError(
                self.redact(
                    f"the judge endpoint at {self.base_url} refused {self._key_source()} "
                    f"({exc.status_code}: {exc.message}): check the key, or name the "
                    "variable that holds the right one with --judge-api-key-env"
                )
            ) from None
        except openai.NotFoundError as exc:
            raise JudgeError(
                self.redact(
                    f"the judge endpoint has no model {self.model!r} or no chat completions route (404): {exc.message}"
                )
            ) from None
        except openai.APIStatusError as exc:
            if exc.status_code >= 500 or exc.status_code in (408, 409):
                raise TransientJudgeError(
                    self.redact(f"server error {exc.status_code}: {exc.message}"),
                    retry_after=_retry_after(exc.response.headers),
                ) from None
            if exc.status_code in (400, 413, 422):
                if self.bounds == "schema" and any(bound in str(exc.message) for bound in GRAMMAR_BOUNDS):
                    raise JudgeError(
                        self.redact(
                            f"the judge endpoint at {self.base_url} refuses the reply schema's bounds "
                            f"({exc.status_code}: {exc.message}): rerun with --judge-bounds instructions, which "
                            "states them in the instructions only"
                        )
                    ) from None
                raise RejectedCallError(self.redact(f"{exc.status_code}: {exc.message}")) from None
            raise JudgeError(
                self.redact(f"the judge endpoint rejected the call ({exc.status_code}): {exc.message}")
            ) from None
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
            return TransientJudgeError(
                self.redact(f"cannot connect to {self.base_url} ({type(cause).__name__}: {cause})"),
                connection_failed=True,
            )
        if isinstance(exc, self._openai.APITimeoutError):
            return TransientJudgeError(f"no reply within {self.timeout_s:g} s")
        return TransientJudgeError(
            self.redact(f"the connection to {self.base_url} failed ({type(cause).__name__}: {cause})")
        )

    def _key_source(self) -> str:
        return f"the key in ${self._key_env}" if self._key_env is not None else "to answer without a key"

    def redact(self, text: str) -> str:
        """``text`` with the API key blanked out (error messages may echo it)."""
        return text.replace(self._key, "***") if self._key != NO_KEY else text

    async def aclose(self) -> None:
        await self._client.close()


def endpoint_bounds(base_url: str | None) -> str:
    """How the bounds reach the endpoint at ``base_url`` (``None``: the client's default, ``$OPENAI_BASE_URL``
    or OpenAI's API): ``instructions`` for OpenAI's own API and Azure OpenAI (``BOUNDS_REFUSED_BY``), ``schema``
    for every other endpoint (self-hosted servers' grammars honour them)."""
    host = (urlsplit(base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_URL).hostname or "").lower()
    refused = any(host == name or (name.startswith(".") and host.endswith(name)) for name in BOUNDS_REFUSED_BY)
    return "instructions" if refused else "schema"


def _open(config: JudgeConfig, timeout_s: float) -> OpenedBackend:
    backend = OpenAIBackend(
        base_url=config.base_url,
        model=str(config.model),
        api_key_env=config.api_key_env,
        temperature=config.temperature,
        seed=config.seed,
        timeout_s=timeout_s,
        bounds=config.reply_bounds,
    )
    return OpenedBackend(backend)


def _model_id(config: JudgeConfig) -> str:
    return str(config.model)


#: ``openai``: any OpenAI-compatible endpoint at ``config.base_url`` serving ``config.model``; the schemas'
#: bounds go where :func:`endpoint_bounds` says, unless ``config.bounds`` chooses.
BACKEND = BackendKind(
    "openai",
    _open,
    _model_id,
    "any OpenAI-compatible endpoint",
    Capabilities(schema_bounds=False, starts_server=False),
    needs_model=True,
    concurrency=8,
    timeout_s=REMOTE_TIMEOUT_S,
    claims="verify",
)


def _reply(response: Any) -> ChatReply:
    if not response.choices:
        raise TransientJudgeError("the reply has no choices")
    choice = response.choices[0]
    usage = response.usage
    return ChatReply(
        text=choice.message.content or "",
        finish_reason=choice.finish_reason or "unknown",
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
    )


#: The schema keywords that bound a reply, which a grammar honours and OpenAI's strict mode refuses (maxLength).
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
