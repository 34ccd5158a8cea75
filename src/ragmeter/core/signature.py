"""Signatures: what produced a score.

A signature lists every setting that can change a value, sacrebleu-style, so two numbers are
comparable exactly when their signatures are equal::

    >>> Signature("overlap", {"tau_sim": 0.65, "embedder": "minilm"}).render()
    'overlap|embedder:minilm|tau_sim:0.65|ragmeter:0.1.0'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ragmeter._version import __version__

__all__ = ["Signature"]


@dataclass(frozen=True)
class Signature:
    """The metric name, its settings (sorted by key when rendered) and the ragmeter version."""

    metric: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    version: str = __version__

    def render(self) -> str:
        parts = [self.metric]
        parts += [f"{key}:{_format(value)}" for key, value in sorted(self.settings.items())]
        parts.append(f"ragmeter:{self.version}")
        return "|".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "settings": dict(self.settings), "version": self.version,
                "text": self.render()}

    def __str__(self) -> str:
        return self.render()


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple, frozenset, set)):
        items = sorted(value) if isinstance(value, (set, frozenset)) else value
        return ",".join(str(item) for item in items)
    return str(value)
