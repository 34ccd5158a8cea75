"""Test helpers for code that uses ragmeter: a fake judge server, a scripted judge and synthetic records.

ragmeter's own tests and benchmarks use these, and so can yours:

- :class:`FakeOpenAIServer` (:mod:`ragmeter.testing.fake_openai`): a loopback fake of the OpenAI
  chat-completions API on 127.0.0.1, so a judge (or any ``openai`` client) runs over real TCP with no model
  and no network; a :class:`FaultPlan` makes a seed-chosen share of first attempts fail (429, 500, a stall,
  truncated or wrongly shaped JSON, a reply cut at the length limit) to test retries and repairs; a responder
  may raise :class:`HTTPFault`. Every request is recorded (``server.requests``, ``server.statuses``).
- :mod:`ragmeter.testing.scripted_judge`: a responder whose verdicts follow fixed rules from the request,
  and records whose judged scores can therefore be worked out by hand.
- :func:`synthetic_records` and :func:`write_synthetic_records` (:mod:`ragmeter.testing.synthetic`): any
  number of native records shaped like a multi-turn RAG log, deterministic for a seed.

``import ragmeter.testing`` loads only the standard library's modules; nothing else in ragmeter imports it.

A test of your own judged evaluation, against the scripted judge with faults injected:

>>> import ragmeter
>>> from ragmeter.judges import JudgeConfig, open_judge
>>> from ragmeter.testing import FakeOpenAIServer, FaultPlan, scripted_judge
>>> with FakeOpenAIServer(scripted_judge.respond, faults=FaultPlan(rate=0.3, kinds=("429", "500"))) as server:
...     judge = open_judge(JudgeConfig(kind="openai", model="fake-judge", base_url=server.base_url,
...                                    api_key_env=None))
...     try:
...         records = [ragmeter.record_from_dict(r) for r in scripted_judge.records(5)]
...         result = ragmeter.evaluate(records, metrics=["judge_correctness"], judge=judge)
...     finally:
...         judge.close()
>>> [float(v) for v in result.scores["judge_correctness"]]   # 5 when the answer is the reference, else 2
[2.0, 2.0, 2.0, 2.0, 5.0]
>>> server.statuses["ok"], len(server.requests) > 5          # the faulty first attempts were retried
(5, True)
"""

from __future__ import annotations

from ragmeter.testing.fake_openai import FAULT_KINDS, FakeOpenAIServer, FaultPlan, HTTPFault, call_key
from ragmeter.testing.synthetic import synthetic_records, write_synthetic_records

__all__ = ["FAULT_KINDS", "FakeOpenAIServer", "FaultPlan", "HTTPFault", "call_key", "synthetic_records",
           "write_synthetic_records"]
