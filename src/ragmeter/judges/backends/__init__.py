"""Chat backends a judge talks to, by kind: the registry (:mod:`~ragmeter.judges.backends.registry`) and the
kinds that come with ragmeter, one module each.

A new kind is a module here that defines a :class:`BackendKind` (a factory from a ``JudgeConfig`` to a
:class:`~ragmeter.judges.protocol.ChatBackend`, a one-line description, its capabilities and defaults), and one
``register_backend`` line below; ``JudgeConfig(kind=...)``, ``open_judge``, the CLI's ``--judge`` and the Ray
engine then know it.
"""

from ragmeter.judges.backends import local, openai
from ragmeter.judges.backends.registry import (
    BackendKind,
    Capabilities,
    OpenedBackend,
    backend_kind,
    backend_kinds,
    register_backend,
)

__all__ = ["BackendKind", "Capabilities", "OpenedBackend", "backend_kind", "backend_kinds", "register_backend"]

register_backend(local.BACKEND)
register_backend(openai.BACKEND)
