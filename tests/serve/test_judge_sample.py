"""The judge in ``ragmeter serve``: a share of the traces drawn by their id alone and recorded, the judged metrics on
those only, and an hourly token budget that no request may pass (counted across restarts, a refused call a failure
with its reason, never a number)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from ragmeter.core.errors import JudgeError, RejectedCallError
from ragmeter.judges import ChatRequest, Judge, ScriptedBackend
from ragmeter.serve.budget import HOUR_S, BudgetedBackend, most_tokens
from ragmeter.serve.scorer import Scorer
from ragmeter.serve.store import SqliteStore
from ragmeter.testing.scripted_judge import reply_to

REQUEST = ChatRequest((("system", "Judge the answer."), ("user", "Is the museum open on Mondays? " * 4)), "x", {}, 20)


def _trace(store: SqliteStore, n: int) -> str:
    trace = f"{n:032x}"
    attributes = [
        {"key": "openinference.span.kind", "value": {"stringValue": "CHAIN"}},
        {"key": "input.value", "value": {"stringValue": f"When does museum {n} open?"}},
        {"key": "output.value", "value": {"stringValue": f"Museum {n} opens at nine."}},
    ]
    span = {
        "traceId": trace,
        "spanId": f"{n:016x}",
        "name": "rag",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": attributes,
    }
    store.accept({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]})
    return trace


def test_the_draw_depends_on_the_id_and_seed_alone_and_takes_its_share(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "s.sqlite") as store:
        scorer = Scorer(store, judge=Judge(ScriptedBackend(reply_to)), sample=0.2, seed=7)
        ids = [f"{n:032x}" for n in range(10_000)]
        share = sum(map(scorer.drawn, ids)) / len(ids)
        assert abs(share - 0.2) < 0.012  # three standard errors of a binomial share
        assert [scorer.drawn(i) for i in ids[:50]] == [scorer.drawn(i) for i in ids[:50]]
        other = Scorer(store, judge=scorer.judge, sample=0.2, seed=8)
        assert [other.drawn(i) for i in ids[:200]] != [scorer.drawn(i) for i in ids[:200]]


def test_the_judged_metrics_score_the_drawn_traces_only(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "s.sqlite") as store, Judge(ScriptedBackend(reply_to)) as judge:
        traces = [_trace(store, n) for n in range(12)]
        scorer = Scorer(store, metrics=["lexical"], judge=judge, judged=["judge_relevance"], sample=0.5, seed=3)
        assert scorer.score_due() == 12
        outcomes = {o.trace_id: o for o in store.scored()}
        drawn = [t for t in traces if scorer.drawn(t)]
        assert 0 < len(drawn) < 12 and all(outcomes[t].judged == (t in drawn) for t in traces)
        for trace in traces:
            relevance = outcomes[trace].scores.get("judge_relevance")
            assert (relevance is not None and 1 <= relevance <= 5) if trace in drawn else relevance is None
            assert "token_f1" in outcomes[trace].scores


def test_no_request_passes_the_hourly_budget(tmp_path: Path) -> None:
    async def ask(backend: BudgetedBackend) -> None:
        await backend.complete(REQUEST)

    with SqliteStore(tmp_path / "s.sqlite") as store:
        most = most_tokens(REQUEST)
        store.add_spend(10_000, now=time.time() - HOUR_S - 1)  # more than an hour ago: not counted
        backend = BudgetedBackend(ScriptedBackend(lambda request: "{}"), store, tokens_per_hour=most + 5)
        asyncio.run(ask(backend))
        spent = store.spent_since(time.time() - HOUR_S)
        assert 5 < spent <= most  # the scripted server's count, within the bound
        with pytest.raises(RejectedCallError, match=f"budget of {most + 5} tokens an hour would be passed"):
            asyncio.run(ask(backend))
        broken = BudgetedBackend(ScriptedBackend(lambda request: 1 / 0), store, tokens_per_hour=None)  # no limit
        with pytest.raises(ZeroDivisionError):
            asyncio.run(ask(broken))
        assert store.judge_calls(time.time() - HOUR_S) == {"answered": 1, "failed": 1, "refused": 1}
        assert store.spent_since(time.time() - HOUR_S) == spent + most  # a failed request: counted at its most
    with SqliteStore(tmp_path / "s.sqlite") as reopened:  # a restart remembers the hour
        again = BudgetedBackend(ScriptedBackend(lambda request: "{}"), reopened, tokens_per_hour=most + 5)
        with pytest.raises(RejectedCallError):
            asyncio.run(ask(again))
        assert reopened.spent_since(time.time() - HOUR_S) == spent + most


def _relevance_requests(tmp_path: Path) -> list[ChatRequest]:
    """The relevance calls the two traces make, seen by an unbudgeted judge on a store of their own."""
    backend = ScriptedBackend(reply_to)
    with SqliteStore(tmp_path / "seen.sqlite") as store, Judge(backend) as judge:
        for n in range(2):
            _trace(store, n)
        Scorer(store, metrics=["lexical"], judge=judge, judged=["judge_relevance"], sample=1.0).score_due()
    return backend.requests


def test_a_trace_the_budget_refuses_keeps_its_judged_metric_undefined_with_the_reason(tmp_path: Path) -> None:
    first, second = _relevance_requests(tmp_path)
    # room for either request at its most, not for the first one's real spend (above 1 token) and the second's most
    allowed = max(most_tokens(first), most_tokens(second)) + 1
    with SqliteStore(tmp_path / "s.sqlite") as store:
        traces = [_trace(store, n) for n in range(2)]
        budget = BudgetedBackend(ScriptedBackend(reply_to), store, tokens_per_hour=allowed)
        with Judge(budget, max_attempts=1) as judge:
            scorer = Scorer(store, metrics=["lexical"], judge=judge, judged=["judge_relevance"], sample=1.0)
            assert scorer.score_due() == 2
        outcomes = list(store.scored())
        judged = [o for o in outcomes if o.scores.get("judge_relevance") is not None]
        refused = [o for o in outcomes if "judge_relevance" in o.undefined]
        assert len(judged) == 1 and len(refused) == 1 and {o.trace_id for o in outcomes} == set(traces)
        assert "tokens an hour would be passed" in refused[0].undefined["judge_relevance"]
        assert store.spent_since(0) <= allowed
        assert store.judge_calls(0) == {"answered": 1, "failed": 0, "refused": 1}  # what /metrics shows


def test_a_dead_judge_leaves_the_offline_scores_and_says_why_the_judged_are_missing(tmp_path: Path) -> None:
    def dead(request: ChatRequest) -> str:
        raise JudgeError("connection refused at http://127.0.0.1:9/v1")

    with SqliteStore(tmp_path / "s.sqlite") as store, Judge(ScriptedBackend(dead), max_attempts=1) as judge:
        trace = _trace(store, 1)
        assert Scorer(store, metrics=["lexical"], judge=judge, judged=["judge_relevance"], sample=1.0).score_due() == 1
        (outcome,) = store.scored()
    assert outcome.trace_id == trace and outcome.judged and "token_f1" in outcome.undefined  # no reference: offline
    assert outcome.undefined["judge_relevance"].startswith("the judge could not be reached: connection refused")
