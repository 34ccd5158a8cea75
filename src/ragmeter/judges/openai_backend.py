"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp, LiteLLM) through the ``openai`` client.

The client's own retries are off: :class:`~ragmeter.judges.engine.Judge` retries, so that backoff, Retry-After
and the concurrency limit are handled in one place. Every call asks for ``response_format: json_schema``,
which llama.cpp and vLLM turn into a grammar and OpenAI enforces in strict mode.

The API key is read from an environment variable at start and kept only in the client: it never enters a
signature, a cache entry, a report or an error message (:meth:`OpenAIBackend.redact`).
"""

from __future__ import annotations

import os
from typing import Any

from ragmeter.errors import ConfigError, JudgeError, MissingDependencyError, RejectedCallError, TransientJudgeError
from ragmeter.judges.protocol import ChatReply, ChatRequest

__all__ = ["OpenAIBackend"]

#: What the local server and other keyless endpoints get as a key (the client insists on one).
NO_KEY = "no-key"


class OpenAIBackend:
    """Chat calls to ``base_url`` for ``model``; ``api_key_env`` names the variable holding the key
    (``None`` for a keyless endpoint such as the local server). ``timeout_s`` bounds each call."""

    def __init__(self, *, base_url: str | None, model: str, api_key_env: str | None = "OPENAI_API_KEY",
                 temperature: float = 0.0, seed: int = 0, timeout_s: float = 120.0) -> None:
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
        self._openai = openai
        self.model = model
        self.temperature = temperature
        self.seed = seed
        self.timeout_s = timeout_s
        self._completion = openai.types.chat.ChatCompletion
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=timeout_s)

    async def complete(self, request: ChatRequest) -> ChatReply:
        openai = self._openai
        body = {"model": self.model, "temperature": self.temperature, "seed": self.seed,
                "max_tokens": request.max_tokens,
                "messages": [{"role": role, "content": content} for role, content in request.messages],
                "response_format": {"type": "json_schema", "json_schema": {
                    "name": request.schema_name, "strict": True, "schema": dict(request.schema)}}}
        try:
            # the client's generic POST (its documented way to send a ready body): the same HTTP, errors and
            # reply parsing as chat.completions.create, without re-walking the body against its parameter
            # types, which costs a third of the client's CPU time per call
            response = await self._client.post("/chat/completions", body=body, cast_to=self._completion)
        except openai.RateLimitError as exc:
            raise TransientJudgeError(self.redact(f"rate limited (429): {exc.message}"),
                                      retry_after=_retry_after(exc.response.headers), rate_limited=True) from None
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise JudgeError(self.redact(f"the judge endpoint refused the key ({exc.status_code}): {exc.message}")
                             ) from None
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
        except openai.APITimeoutError:
            raise TransientJudgeError(f"no reply within {self.timeout_s:g} s") from None
        except openai.APIConnectionError as exc:
            raise TransientJudgeError(self.redact(f"connection failed: {exc}")) from None
        except openai.APIResponseValidationError as exc:
            raise TransientJudgeError(self.redact(f"malformed response: {exc.message}")) from None
        return _reply(response)

    def redact(self, text: str) -> str:
        """``text`` with the API key blanked out (error messages may echo it)."""
        return text.replace(self._key, "***") if self._key != NO_KEY else text

    async def aclose(self) -> None:
        await self._client.close()


def _reply(response: Any) -> ChatReply:
    if not response.choices:
        raise TransientJudgeError("the reply has no choices")
    choice = response.choices[0]
    usage = response.usage
    return ChatReply(text=choice.message.content or "", finish_reason=choice.finish_reason or "unknown",
                     prompt_tokens=usage.prompt_tokens if usage else 0,
                     completion_tokens=usage.completion_tokens if usage else 0)


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
