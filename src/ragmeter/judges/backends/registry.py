"""The registry of judge backend kinds: a kind's name → how to open it, what it is, what it can do.

:func:`~ragmeter.judges.open_judge`, :func:`~ragmeter.judges.planning_judge`, the CLI's ``--judge`` choices and
help, and the Ray engine all read a kind from here, so that a new backend is one module that defines a
:class:`BackendKind` and one :func:`register_backend` line (in ``ragmeter/judges/backends/__init__.py``, or in
the user's own code).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragmeter.core.errors import ConfigError
from ragmeter.judges.prompts import CLAIM_MODES, LAYOUTS
from ragmeter.judges.protocol import ChatBackend

if TYPE_CHECKING:
    from ragmeter.judges import JudgeConfig

__all__ = ["BackendKind", "Capabilities", "OpenedBackend", "backend_kind", "backend_kinds", "register_backend"]


@dataclass(frozen=True)
class Capabilities:
    """What a kind's backend does that its callers plan for.

    - ``schema_bounds``: the endpoint it opens always honours the reply schemas' ``maxLength``/``maxItems``/
      ``minItems`` bounds (its own llama.cpp server turns them into its grammar), so they are always sent;
      otherwise where they go depends on the endpoint (``JudgeConfig.bounds``; for ``openai``,
      :func:`~ragmeter.judges.backends.openai.endpoint_bounds`).
    - ``starts_server``: opening it starts a model server in this process, so each process that opens it
      starts one (the Ray engine refuses such a kind).
    - ``continues_replies``: its backend continues a reply begun for the judge (``ChatRequest.reply_start``), so
      the shared layout begins the scores' replies (:mod:`ragmeter.judges.layouts`); a dry run plans the same calls.
    """

    schema_bounds: bool = False
    starts_server: bool = False
    continues_replies: bool = False


@dataclass(frozen=True)
class OpenedBackend:
    """What a kind's factory gives: the backend, and what to run when the judge is closed (``None``: nothing)."""

    backend: ChatBackend
    close: Callable[[], None] | None = None


@dataclass(frozen=True)
class BackendKind:
    """One kind of judge backend, as ``JudgeConfig(kind=name)`` names it.

    - ``factory(config, timeout_s)``: the opened backend for ``config``, each request bounded by ``timeout_s``
      (``config.timeout_s``, else this kind's ``timeout_s``). When it fails after starting something, it stops
      that before raising.
    - ``model_id(config)``: the model's name as the backend will report it (it goes into every verdict's
      signature), found without opening anything: a dry run calls it instead of ``factory``.
    - ``description``: one line for ``--help``.
    - ``needs_model``: ``config.model`` names the model and must be given; otherwise it is ignored.
    - ``concurrency``, ``timeout_s``, ``claims``, ``layout``: the defaults of the config's ``concurrency``
      (requests in flight), ``timeout_s`` (seconds per request), ``claims`` (a
      :data:`~ragmeter.judges.prompts.CLAIM_MODES` mode) and ``layout`` (one of
      :data:`~ragmeter.judges.prompts.LAYOUTS`) for this kind.
    """

    name: str
    factory: Callable[[JudgeConfig, float], OpenedBackend]
    model_id: Callable[[JudgeConfig], str]
    description: str
    capabilities: Capabilities = Capabilities()
    needs_model: bool = False
    concurrency: int = 8
    timeout_s: float = 120.0
    claims: str = "verify"
    layout: str = "calls"


_KINDS: dict[str, BackendKind] = {}


def register_backend(kind: BackendKind) -> BackendKind:
    """Make ``kind`` available as ``JudgeConfig(kind=kind.name)`` and ``--judge NAME``; returns it. A name is
    registered once: another kind under a taken name is refused, not swapped in silently."""
    if not kind.name or kind.name in _KINDS:
        raise ConfigError(f"a judge backend kind needs a name of its own, got {kind.name!r}")
    if kind.claims not in CLAIM_MODES or kind.layout not in LAYOUTS or kind.concurrency < 1 or kind.timeout_s <= 0:
        raise ConfigError(
            f"the judge backend kind {kind.name!r} needs a claims mode among "
            f"{', '.join(CLAIM_MODES)}, a layout among {', '.join(LAYOUTS)}, a concurrency of at "
            "least 1 and a positive timeout"
        )
    _KINDS[kind.name] = kind
    return kind


def backend_kind(name: str) -> BackendKind:
    """The registered kind called ``name``."""
    try:
        return _KINDS[name]
    except KeyError:
        raise ConfigError(f"judge kind must be one of {', '.join(_KINDS)}, got {name!r}") from None


def backend_kinds() -> tuple[str, ...]:
    """The registered kinds' names, in the order they were registered."""
    return tuple(_KINDS)
