"""Saying when quality drops: the traces scored over a window, against a baseline, with the gate's rules.

A check takes the scores stored over the last ``window`` seconds and a baseline: the window before it, or a stored
run (``ragmeter run --out``, read as ``compare`` reads it). The two hold different traces, so nothing is paired:
for each rule's metric, ``d`` is the window's mean minus the baseline's over the defined scores, ``[lo, hi]`` its
bootstrap interval with each side resampled on its own, and ``p`` the two-sided permutation test's
(:mod:`ragmeter.stats.unpaired`); a conversation's turns (the trace's ``session.id``) move together in both. The
rules are the CI gate's (:func:`ragmeter.analysis.gate.parse_rule`), and read the same way:

- **regression** (``METRIC``): a *drop* when the window is worse and Holm's adjustment over the regression rules
  puts ``p`` below ``alpha``, so a check raises a false alarm on at most ``alpha`` of the windows where nothing
  changed, however many metrics it watches (``benchmarks/statistics/bench_serve_gate.py`` measures it);
- **non-inferiority** (``METRIC:MARGIN``): a drop unless the interval's worse end is within the margin.

A window with fewer than ``min_traces`` defined scores of a metric (a quiet hour), on either side, is
*unmeasured* for that rule: neither a drop nor a pass, said so. A side with more than ``max_undefined`` of its
scores undefined is unmeasured too, with the reason (the check would judge a part of the traffic only). Judged
metrics are scored on a random sample of the traces, so their window means estimate the traffic's without bias.
"""

from __future__ import annotations

import json
import logging
import math
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter.analysis.compare import ScoredRun
from ragmeter.analysis.gate import GateRule, check_gateable, unique_rules
from ragmeter.core.errors import ConfigError
from ragmeter.core.files import json_number
from ragmeter.metrics import get_metric
from ragmeter.serve.store import ScoredTrace, Store
from ragmeter.stats.paired import holm
from ragmeter.stats.unpaired import difference_interval, permutation_test

__all__ = ["MIN_TRACES", "DropWatch", "Sample", "WatchSettings", "WindowCheck", "WindowVerdict", "check_window"]

_LOG = logging.getLogger("ragmeter.serve")
#: Defined scores a side needs before a rule on it is checked.
MIN_TRACES = 30
#: How often, and after how many seconds, a webhook POST is tried again.
WEBHOOK_TRIES, WEBHOOK_WAIT_S, WEBHOOK_TIMEOUT_S = 3, 2.0, 10.0


@dataclass(frozen=True)
class Sample:
    """One side of a check: per metric, its scores (NaN where undefined) and each score's cluster (the
    conversation, or the trace alone)."""

    label: str
    scores: Mapping[str, np.ndarray]
    clusters: Mapping[str, tuple[str, ...]]

    @classmethod
    def from_outcomes(cls, label: str, outcomes: Iterable[ScoredTrace]) -> Sample:
        """The stored outcomes' scores; a trace that has no score of a metric (a judged metric outside the
        sample) is not one of that metric's."""
        values: dict[str, list[float]] = {}
        clusters: dict[str, list[str]] = {}
        for outcome in outcomes:
            cluster = str((outcome.record or {}).get("conversation_id") or outcome.trace_id)
            for metric, value in outcome.scores.items():
                values.setdefault(metric, []).append(math.nan if value is None else float(value))
                clusters.setdefault(metric, []).append(cluster)
        return cls(
            label, {m: np.array(v, dtype=float) for m, v in values.items()}, {m: tuple(c) for m, c in clusters.items()}
        )

    @classmethod
    def from_run(cls, run: ScoredRun) -> Sample:
        """A stored run's per-item scores, clustered by conversation where the run has them."""
        clusters = tuple(
            str(c) if c is not None else f"item:{k[0]}:{k[1]}"
            for c, k in zip(run.conversation_ids, run.keys, strict=True)
        )
        return cls(run.name, dict(run.scores), dict.fromkeys(run.scores, clusters))


@dataclass(frozen=True)
class WindowVerdict:
    """One rule on one check: ``status`` ``drop``, ``passed`` or ``unmeasured``, with ``reason`` in words; the
    figures where it was measured (``p_holm``: NaN for a non-inferiority rule)."""

    rule: GateRule
    status: str
    reason: str
    n_baseline: int = 0
    n_window: int = 0
    mean_baseline: float = math.nan
    mean_window: float = math.nan
    difference: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    p_holm: float = math.nan

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.rule.metric,
            "mode": self.rule.mode,
            "margin": self.rule.margin,
            "status": self.status,
            "reason": self.reason,
            "n_baseline": self.n_baseline,
            "n_window": self.n_window,
            **{
                name: json_number(getattr(self, name))
                for name in ("mean_baseline", "mean_window", "difference", "ci_low", "ci_high", "p_holm")
            },
        }


@dataclass(frozen=True)
class WindowCheck:
    """A check of the window ``[since, until)`` against ``baseline`` at ``at``: every rule's verdict."""

    at: float
    since: float
    until: float
    baseline: str
    verdicts: tuple[WindowVerdict, ...]
    alpha: float

    @property
    def status(self) -> str:
        """``drop`` when any rule found one, else ``passed`` when any was measured, else ``unmeasured``."""
        statuses = {v.status for v in self.verdicts}
        return "drop" if "drop" in statuses else "passed" if "passed" in statuses else "unmeasured"

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "since": self.since,
            "until": self.until,
            "baseline": self.baseline,
            "status": self.status,
            "alpha": self.alpha,
            "verdicts": [v.to_dict() for v in self.verdicts],
        }


def _defined(sample: Sample, metric: str) -> tuple[np.ndarray, tuple[str, ...], int]:
    """A side's defined scores of ``metric``, their clusters, and how many are undefined."""
    values = sample.scores.get(metric, np.empty(0))
    keep = ~np.isnan(values)
    clusters = sample.clusters.get(metric, ())
    return values[keep], tuple(c for c, k in zip(clusters, keep, strict=True) if k), int(np.sum(~keep))


def _unmeasured(
    metric: str, sides: Sequence[tuple[str, np.ndarray, int]], min_traces: int, max_undefined: float
) -> str | None:
    """Why a rule on ``metric`` is not checked, or ``None``."""
    for label, defined, undefined in sides:
        total = len(defined) + undefined
        if total and undefined / total > max_undefined:
            return (
                f"{metric} is undefined on {undefined} of {total} traces of {label} ({undefined / total:.0%} > "
                f"{max_undefined:.0%}): the check would judge a part of the traffic only"
            )
        if len(defined) < min_traces:
            return f"{label} has {len(defined)} defined scores of {metric}, fewer than the {min_traces} a check needs"
    return None


def check_window(
    window: Sample,
    baseline: Sample,
    rules: Sequence[GateRule],
    *,
    alpha: float = 0.05,
    max_undefined: float = 0.2,
    min_traces: int = MIN_TRACES,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    n_permutations: int = 9999,
    seed: int = 0,
) -> tuple[WindowVerdict, ...]:
    """Each rule's verdict on ``window`` against ``baseline`` (see the module docstring), in the rules' order;
    ``n_resamples`` bootstrap resamples for each interval, ``n_permutations`` reassignments for each p-value."""
    rules = unique_rules(rules)
    verdicts: dict[int, WindowVerdict] = {}
    measured: dict[int, dict[str, Any]] = {}
    for k, rule in enumerate(rules):
        a, clusters_a, undefined_a = _defined(baseline, rule.metric)
        b, clusters_b, undefined_b = _defined(window, rule.metric)
        why = _unmeasured(
            rule.metric,
            [(f"the baseline ({baseline.label})", a, undefined_a), (f"the window ({window.label})", b, undefined_b)],
            min_traces,
            max_undefined,
        )
        if why is not None:
            verdicts[k] = WindowVerdict(rule, "unmeasured", why, len(a), len(b))
            continue
        low, high = difference_interval(
            a,
            b,
            clusters_a=clusters_a,
            clusters_b=clusters_b,
            n_resamples=n_resamples,
            confidence=confidence,
            seed=seed,
        )
        measured[k] = {
            "n_baseline": len(a),
            "n_window": len(b),
            "mean_baseline": float(a.mean()),
            "mean_window": float(b.mean()),
            "difference": float(b.mean() - a.mean()),
            "ci_low": low,
            "ci_high": high,
        }
        if rule.margin is None:
            measured[k]["p"] = permutation_test(
                a, b, clusters_a=clusters_a, clusters_b=clusters_b, n_resamples=n_permutations, seed=seed
            )
    regression = [k for k in measured if rules[k].margin is None]
    adjusted = dict(zip(regression, holm([measured[k].pop("p") for k in regression]), strict=True))
    for k, figures in measured.items():
        rule = rules[k]
        higher_is_better = bool(get_metric(rule.metric).higher_is_better)
        worse_by = -figures["difference"] if higher_is_better else figures["difference"]
        change = f"{figures['mean_baseline']:.4g} → {figures['mean_window']:.4g}"
        if rule.margin is None:
            p = adjusted[k]
            dropped = worse_by > 0 and p < alpha
            reason = f"{change}, Holm-adjusted p = {p:.3g} " + (
                f"< {alpha:g}" if dropped else f"≥ {alpha:g}: no drop shown" if worse_by > 0 else "(not worse)"
            )
            verdicts[k] = WindowVerdict(rule, "drop" if dropped else "passed", reason, **figures, p_holm=p)
        else:
            bound = figures["ci_low"] if higher_is_better else figures["ci_high"]
            dropped = not (-bound if higher_is_better else bound) <= rule.margin
            reason = (
                f"{change}; "
                + ("not shown to be " if dropped else "")
                + f"at most {rule.margin:g} worse: the interval's worse end is {bound:+.4g}"
            )
            verdicts[k] = WindowVerdict(rule, "drop" if dropped else "passed", reason, **figures)
    return tuple(verdicts[k] for k in range(len(rules)))


@dataclass(frozen=True)
class WatchSettings:
    """What to watch and how: the rules, the window and the time between checks (seconds), the baseline run
    (``None``: the window before), the webhook, the significance level, the undefined share and the defined scores
    a side needs; checked when made, so a command refuses them before it starts anything."""

    rules: tuple[GateRule, ...]
    window_s: float
    every_s: float
    baseline: ScoredRun | None = None
    webhook: str | None = None
    alpha: float = 0.05
    max_undefined: float = 0.2
    min_traces: int = MIN_TRACES
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.rules:
            raise ConfigError("watching for drops needs at least one --fail-on rule")
        for rule in self.rules:
            check_gateable(rule)
        object.__setattr__(self, "rules", unique_rules(self.rules))
        if not (self.window_s > 0 and self.every_s > 0):
            raise ConfigError("a window and the time between checks are positive durations, e.g. 1h and 5m")
        if not 0 < self.alpha < 1:
            raise ConfigError(f"alpha {self.alpha:g}: a significance level lies in (0, 1), e.g. 0.05")
        if not 0 <= self.max_undefined <= 1 or self.min_traces < 2:
            raise ConfigError(
                f"max_undefined {self.max_undefined:g} and min_traces {self.min_traces}: a share lies "
                "in [0, 1], and a check needs at least 2 scores a side"
            )
        if self.webhook is not None and not self.webhook.startswith(("http://", "https://")):
            raise ConfigError(f"--webhook {self.webhook}: give an http:// or https:// URL")


class DropWatch:
    """Checks ``store``'s last ``settings.window_s`` seconds every ``settings.every_s`` seconds against the baseline
    (the window before, when the settings name no run); each check is stored, a drop logged and POSTed as JSON to
    the webhook when there is one."""

    def __init__(self, store: Store, settings: WatchSettings) -> None:
        self.store, self.settings = store, settings
        self.baseline = None if settings.baseline is None else Sample.from_run(settings.baseline)
        last = store.last_check()
        self._next = (last + settings.every_s) if last is not None else 0.0

    def due(self, now: float | None = None) -> WindowCheck | None:
        """The check, when one is due at ``now`` (stored, logged, notified); else ``None``."""
        moment = time.time() if now is None else now
        if moment < self._next:
            return None
        self._next = moment + self.settings.every_s
        return self.check(moment)

    def check(self, now: float) -> WindowCheck:
        """Check the window ending at ``now``."""
        settings = self.settings
        since = now - settings.window_s
        window = Sample.from_outcomes(_span(since, now), self.store.scored(since, now))
        baseline = self.baseline or Sample.from_outcomes(
            _span(since - settings.window_s, since), self.store.scored(since - settings.window_s, since)
        )
        verdicts = check_window(
            window,
            baseline,
            settings.rules,
            alpha=settings.alpha,
            max_undefined=settings.max_undefined,
            min_traces=settings.min_traces,
            seed=settings.seed,
        )
        result = WindowCheck(now, since, now, baseline.label, verdicts, settings.alpha)
        notified = None
        if result.status == "drop":
            dropped = "; ".join(f"{v.rule}: {v.reason}" for v in verdicts if v.status == "drop")
            _LOG.warning("quality drop in %s against %s: %s", window.label, baseline.label, dropped)
            if settings.webhook is not None:
                notified = _post(settings.webhook, result.to_dict())
        self.store.save_check(result.to_dict(), notified=notified)
        return result


def _span(since: float, until: float) -> str:
    """A window's label: its ends in UTC, to the second."""

    def stamp(t: float) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))

    return f"{stamp(since)}–{stamp(until)}"


def _post(url: str, body: Mapping[str, Any]) -> str:
    """POST ``body`` as JSON to ``url``, tried up to ``WEBHOOK_TRIES`` times; what came of it, in words."""
    data = json.dumps(body).encode()
    problem = ""
    for attempt in range(1, WEBHOOK_TRIES + 1):
        request = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT_S) as reply:
                return f"POSTed to {url}: HTTP {reply.status}"
        except (urllib.error.URLError, OSError) as exc:
            problem = str(getattr(exc, "reason", exc))
            _LOG.warning("the webhook %s failed (try %d of %d): %s", url, attempt, WEBHOOK_TRIES, problem)
            if attempt < WEBHOOK_TRIES:
                time.sleep(WEBHOOK_WAIT_S * attempt)
    return f"not delivered to {url} after {WEBHOOK_TRIES} tries: {problem}"
