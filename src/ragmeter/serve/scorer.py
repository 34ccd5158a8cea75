"""Scoring the stored traces as they complete: each due trace made a record by the trace reader's rules
(:func:`ragmeter.io.traces.openinference.trace_record`), scored with the offline metrics, and its outcome stored
once (:meth:`ragmeter.serve.store.Store.save_scores`).

With a judge, a random share of the traces (``sample``) is also scored with the judged metrics. Whether a trace is
drawn depends on its trace id and the seed alone (sha256, read as a number in [0, 1)), never on its content or on
what came before it, and is stored with its scores (``judged``), so the judged figures estimate the whole
traffic's without bias, and people's labels of stored traces (``labels template --sample``) calibrate them. A drawn
trace whose judge calls fail (the hourly budget spent, :mod:`ragmeter.serve.budget`, or the endpoint down) keeps
its judged metrics undefined with the reason, and its offline scores.

A trace that gives no record (no root, no question) is stored with why, never dropped. A conversation's earlier
turns are the history of its later ones, as the file reader gives them: those the store holds (scored by this
process or another, before a restart too) and those of the batch being made. The embedder and the other models load
once, with the first batch.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Sequence

from ragmeter.core.errors import ConfigError, InputError, JudgeError
from ragmeter.core.records import Record
from ragmeter.core.settings import Settings
from ragmeter.engine.evaluation import evaluate
from ragmeter.io.native import record_to_dict
from ragmeter.io.traces.assemble import TraceSpans
from ragmeter.io.traces.openinference import HISTORY_TURNS, Sessions, TraceRules, trace_record
from ragmeter.io.traces.otlp import SpanRow
from ragmeter.judges import Judge
from ragmeter.metrics import resolve_metrics
from ragmeter.serve.store import ScoredTrace, Store

__all__ = ["QUIET_S", "Scorer"]

#: Seconds without a new span after which a trace whose root has not ended is scored as it is.
QUIET_S = 30.0


class Scorer:
    """Scores ``store``'s due traces with ``metrics`` (the default families when ``None``) under ``settings``."""

    def __init__(
        self,
        store: Store,
        *,
        metrics: Sequence[str] | None = None,
        settings: Settings | None = None,
        rules: TraceRules | None = None,
        quiet_s: float = QUIET_S,
        batch: int = 64,
        judge: Judge | None = None,
        judged: Sequence[str] = ("judged",),
        sample: float = 0.0,
        seed: int = 0,
    ) -> None:
        if not 0.0 <= sample <= 1.0 or (sample > 0 and judge is None):
            raise ConfigError("a judge sample is a share from 0 to 1, and needs a judge")
        self.store = store
        self.metrics = list(metrics) if metrics is not None else None
        self.judge, self.judged, self.sample, self.seed = judge, list(judged), sample, seed
        self.settings = settings or Settings(n_resamples=100)
        self.rules = rules or TraceRules()
        self.quiet_s = quiet_s
        self.batch = batch

    def score_due(self, now: float | None = None) -> int:
        """Mark the complete traces due and score up to one batch of them; how many were stored."""
        self.store.mark_due(quiet_s=self.quiet_s, now=now)
        trace_ids = self.store.due(self.batch)
        if not trace_ids:
            return 0
        sessions = _StoredSessions(self.store)
        made = {trace_id: self._record(trace_id, sessions) for trace_id in trace_ids}
        records = {trace_id: record for trace_id, record in made.items() if not isinstance(record, InputError)}
        scored_at = time.time() if now is None else now
        outcomes: dict[str, ScoredTrace] = {
            trace_id: ScoredTrace(trace_id, None, str(problem), {}, {}, False, {}, scored_at)
            for trace_id, problem in made.items()
            if isinstance(problem, InputError)
        }
        if records:
            drawn = [trace_id for trace_id in records if self.drawn(trace_id)]
            results = [(list(records), evaluate(list(records.values()), metrics=self.metrics, settings=self.settings))]
            judge_down = None
            if drawn:
                try:
                    results.append(
                        (
                            drawn,
                            evaluate(
                                [records[t] for t in drawn],
                                metrics=self.judged,
                                settings=self.settings,
                                judge=self.judge,
                            ),
                        )
                    )
                except JudgeError as exc:  # the endpoint is gone: the offline scores are kept, the judged say why
                    judge_down = f"the judge could not be reached: {exc}"
            signatures = {name: result.signatures[name].render() for _, result in results for name in result.metrics}
            for trace_id, record in records.items():
                scores: dict[str, float | None] = {}
                undefined: dict[str, str] = {}
                for ids, result in results:
                    if trace_id in ids:
                        i = ids.index(trace_id)
                        scores.update({name: _number(result.scores[name][i]) for name in result.metrics})
                        undefined.update(
                            {name: result.undefined[name][i] for name in result.metrics if i in result.undefined[name]}
                        )
                if judge_down is not None and trace_id in drawn:
                    undefined.update(dict.fromkeys((m.name for m in resolve_metrics(self.judged)), judge_down))
                outcomes[trace_id] = ScoredTrace(
                    trace_id, record_to_dict(record), None, scores, undefined, trace_id in drawn, signatures, scored_at
                )
        return sum(self.store.save_scores(outcomes[trace_id]) for trace_id in trace_ids)

    def drawn(self, trace_id: str) -> bool:
        """Whether ``trace_id`` is in the judge's sample: sha256 of the seed and the id, as a number in [0, 1),
        below the share."""
        digest = hashlib.sha256(f"{self.seed}:{trace_id}".encode()).digest()
        return self.sample > 0 and int.from_bytes(digest[:8], "big") / 2**64 < self.sample

    def _record(self, trace_id: str, sessions: Sessions) -> Record | InputError:
        spans = [span for span in self.store.spans(trace_id) if isinstance(span, SpanRow)]
        trace = TraceSpans(trace_id, spans, [span for span in spans if span.parent_id is None])
        return trace_record(trace, self.rules, sessions, "ragmeter serve")


class _StoredSessions(Sessions):
    """A batch's conversations: each one's turns as the store holds them, read when the batch first meets it, then
    the batch's own."""

    def __init__(self, store: Store) -> None:
        super().__init__()
        self._store = store
        self._read: set[str] = set()

    def history(self, session: str | None) -> list[dict[str, str]]:
        if session is not None and session not in self._read:
            self._read.add(session)
            for question, answer in self._store.session_turns(session, HISTORY_TURNS):
                self.add(session, question, answer)
        return super().history(session)


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)
