"""Cost and speed of the system under test (seeds 000/001): tokens and latency, per item."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ragmeter.core.records import Record, Usage
from ragmeter.metrics._registry import Aggregation, Metric, register

__all__ = ["completion_tokens", "prompt_tokens", "total_tokens"]


def total_tokens(usage: Sequence[Usage]) -> float:
    """Σ over every LLM call of prompt + completion tokens (0 when no call was made)."""
    return float(sum(call.prompt_tokens + call.completion_tokens for call in usage))


def prompt_tokens(usage: Sequence[Usage]) -> float:
    """Σ over every LLM call of prompt tokens."""
    return float(sum(call.prompt_tokens for call in usage))


def completion_tokens(usage: Sequence[Usage]) -> float:
    """Σ over every LLM call of completion tokens."""
    return float(sum(call.completion_tokens for call in usage))


def _from_usage(fn: Callable[[Sequence[Usage]], float]) -> Callable[..., float]:
    def compute(record: Record, *_: object) -> float:
        return fn(record.usage or ())

    return compute


for _name, _fn, _what in (
    ("total_tokens", total_tokens, "Prompt + completion tokens over all LLM calls."),
    ("prompt_tokens", prompt_tokens, "Prompt tokens over all LLM calls."),
    ("completion_tokens", completion_tokens, "Completion tokens over all LLM calls."),
):
    register(
        Metric(
            name=_name,
            family="efficiency",
            description=_what,
            needs=("usage",),
            aggregation=Aggregation.MEAN,
            value_range=(0.0, None),
            higher_is_better=False,
            compute=_from_usage(_fn),
        )
    )

register(
    Metric(
        name="latency_ms",
        family="efficiency",
        description="End-to-end time per question in ms; reported as P50 and P95 (linear interpolation).",
        needs=("latency_ms",),
        aggregation=Aggregation.QUANTILES,
        value_range=(0.0, None),
        higher_is_better=False,
        compute=lambda record, item, run: float(record.latency_ms),
    )
)  # type: ignore[arg-type]
