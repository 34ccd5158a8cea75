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

- :mod:`ragmeter.testing.pytest_plugin`: a pytest plugin (registered as ``pytest11``, so installing ragmeter
  enables it) whose fixture ``ragmeter_eval`` scores a records file in a test and writes it as a run folder;
  ``.require("token_f1 >= 0.6")`` and ``.require_no_regression("baseline/", metrics=["token_f1"])`` fail the
  test with a table of value, interval, threshold or baseline, p and the worst items' ids. The fixtures
  ``ragmeter_judge`` (default ``None``), ``ragmeter_embedder`` (default ``None``: the packaged one),
  ``ragmeter_settings`` and ``ragmeter_out`` can be overridden in a ``conftest.py`` (the judge, for
  instance, with one talking to :class:`FakeOpenAIServer`). ``--ragmeter-judge local`` starts the packaged
  judge once per session, in the pytest-xdist controller under ``-n``, and the workers share it;
  ``--ragmeter-judge URL --ragmeter-judge-model NAME`` points every process at an OpenAI-compatible endpoint::

      def test_rag_quality(ragmeter_eval):
          run = ragmeter_eval("eval/answers.jsonl", metrics=["token_f1", "overlap"])
          run.require("token_f1 >= 0.6").require_no_regression("baseline/", metrics=["token_f1"])

``import ragmeter.testing`` loads only the standard library's modules (the plugin, which pytest loads, also
pytest); nothing else in ragmeter imports it.

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

__all__ = [
    "FAULT_KINDS",
    "FakeOpenAIServer",
    "FaultPlan",
    "HTTPFault",
    "call_key",
    "synthetic_records",
    "write_synthetic_records",
]
