"""The exceptions ragmeter raises.

::

    RagmeterError
     ├── InputError (also ValueError)          a bad record: .path .line .field
     ├── ConfigError (also ValueError)         an unknown metric, a bad option
     ├── ModelError                            a packaged model is missing or corrupt
     ├── JudgeError                            a judge cannot be used (bad key, unknown model, server down)
     │    ├── TransientJudgeError              one call failed in a way worth retrying (429, 5xx, timeout)
     │    └── RejectedCallError                the endpoint refused one call (400, 413, 422)
     └── MissingDependencyError (also ImportError)   an optional extra is not installed

Every message says what to do next.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "InputError",
    "JudgeError",
    "MissingDependencyError",
    "ModelError",
    "RagmeterError",
    "RejectedCallError",
    "TransientJudgeError",
]


class RagmeterError(Exception):
    """Root of every error ragmeter raises on purpose."""


class InputError(RagmeterError, ValueError):
    """A record that cannot be read, located by file, line and field.

    ``line`` is the 1-based line of a JSONL or CSV file (row number for Parquet, position for
    in-memory records); ``field`` is a dotted path such as ``contexts[2].doc_id``.
    """

    def __init__(
        self, message: str, *, path: str | None = None, line: int | None = None, field: str | None = None
    ) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.reason = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = ":".join(str(part) for part in (self.path, self.line) if part is not None)
        if self.field:
            where = f"{where} field '{self.field}'" if where else f"field '{self.field}'"
        return f"{where}: {self.reason}" if where else self.reason


class ConfigError(RagmeterError, ValueError):
    """A setting, option or metric name that ragmeter cannot use."""


class ModelError(RagmeterError):
    """A model file that is missing, unreadable or fails its checksum."""


class JudgeError(RagmeterError):
    """A judge that cannot be used at all: a rejected key, an unknown model, a server that does not start."""


class TransientJudgeError(JudgeError):
    """One judge call failed in a way worth retrying: a rate limit (``rate_limited``), a 5xx, a timeout or a
    dropped connection. ``retry_after`` is the server's Retry-After in seconds, when it sent one;
    ``connection_failed``: no connection could be made at all (refused, unknown host, connect timeout)."""

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        rate_limited: bool = False,
        connection_failed: bool = False,
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.rate_limited = rate_limited
        self.connection_failed = connection_failed


class RejectedCallError(JudgeError):
    """The endpoint refused one call (400, 413, 422: a prompt too long, say); that verdict is a failure."""


class MissingDependencyError(RagmeterError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        super().__init__(f"{purpose} needs the package '{package}': pip install 'ragmeter[{extra}]'")
