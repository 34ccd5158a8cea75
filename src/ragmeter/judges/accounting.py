"""What judging cost, in one place: per prompt (:class:`JudgeUsage`, counted by the engine), per item
(:class:`ItemJudging`, charged by :meth:`~ragmeter.judges.engine.Judge.charge`), and per run
(:class:`JudgingReport`: usage, each item's tokens, every failed call).

A call shared by several items of a batch (identical requests are made once) is charged to the first
item that asked for it; a call several metrics of one item read (claims: F, P and R) is charged once.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["ItemJudging", "JudgeUsage", "JudgingLog", "JudgingReport", "token_cost"]


def token_cost(prompt_tokens: float, completion_tokens: float, prices: tuple[float, float]) -> float:
    """What tokens cost at ``prices`` (prompt, completion) per million tokens: the one cost formula."""
    return (prompt_tokens * prices[0] + completion_tokens * prices[1]) / 1e6


@dataclass
class JudgeUsage:
    """Running totals for one prompt: calls asked for, answered from cache, requests sent, retries, repairs,
    failures and the tokens spent (``cached_*``: tokens the cached verdicts cost when first made)."""

    calls: int = 0
    cached: int = 0
    requests: int = 0
    retries: int = 0
    repairs: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    failure_reasons: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k != "failure_reasons"}
        return {**data, "failure_reasons": dict(self.failure_reasons)}


USAGE_COUNTERS = (
    "calls",
    "cached",
    "requests",
    "retries",
    "repairs",
    "failures",
    "prompt_tokens",
    "completion_tokens",
    "cached_prompt_tokens",
    "cached_completion_tokens",
)


@dataclass(frozen=True)
class ItemJudging:
    """What judging one item cost this run, and its failed calls as (prompt, reason, raw reply) triples."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: tuple[tuple[str, str, str | None], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The item's ``judge`` entry in ``items.jsonl`` (raw replies go to the failure log instead)."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "failures": [{"prompt": prompt, "reason": reason} for prompt, reason, _ in self.failures],
        }


@dataclass(frozen=True)
class JudgingReport:
    """What the judge did in a run: ``usage`` by prompt (calls, cache hits, requests, retries, repairs,
    failures, tokens), the tokens each item cost this run (0 where cached), and every failed call as
    ``{"id", "prompt", "reason", "raw"}`` (``raw``: the last reply, when there was one)."""

    judge: str
    usage: Mapping[str, JudgeUsage]
    prompt_tokens: np.ndarray
    completion_tokens: np.ndarray
    failures: tuple[Mapping[str, Any], ...]

    def totals(self) -> dict[str, int]:
        """Sums over prompts of every usage counter."""
        return {k: sum(getattr(u, k) for u in self.usage.values()) for k in USAGE_COUNTERS}

    def cost(self, prompt_price: float, completion_price: float) -> float:
        """This run's spend at the given prices per million prompt and completion tokens."""
        totals = self.totals()
        return token_cost(totals["prompt_tokens"], totals["completion_tokens"], (prompt_price, completion_price))

    def item(self, index: int, item_id: str) -> ItemJudging:
        """What item ``index`` (id ``item_id``) cost, with its failed calls."""
        failures = tuple((f["prompt"], f["reason"], f.get("raw")) for f in self.failures if f["id"] == item_id)
        return ItemJudging(int(self.prompt_tokens[index]), int(self.completion_tokens[index]), failures)

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "totals": self.totals(),
            "by_prompt": {name: u.to_dict() for name, u in self.usage.items()},
            "failures": len(self.failures),
        }


class JudgingLog:
    """Collects, batch by batch, what judging each item cost and which calls failed."""

    def __init__(self) -> None:
        self.prompt_tokens: list[int] = []
        self.completion_tokens: list[int] = []
        self.failures: list[dict[str, Any]] = []

    def add(self, item_ids: Sequence[str], costs: Sequence[ItemJudging]) -> None:
        for item_id, cost in zip(item_ids, costs, strict=True):
            self.prompt_tokens.append(cost.prompt_tokens)
            self.completion_tokens.append(cost.completion_tokens)
            self.failures.extend(
                {"id": item_id, "prompt": prompt, "reason": reason, "raw": raw} for prompt, reason, raw in cost.failures
            )

    def report(self, identity: str, usage: Mapping[str, JudgeUsage]) -> JudgingReport:
        """The run's judging: the judge's ``identity`` and its ``usage`` by prompt, with what each item cost."""
        return JudgingReport(
            identity,
            copy.deepcopy(dict(usage)),
            np.asarray(self.prompt_tokens, dtype=np.int64),
            np.asarray(self.completion_tokens, dtype=np.int64),
            tuple(self.failures),
        )
