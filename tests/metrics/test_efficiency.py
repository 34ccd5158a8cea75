"""Tokens and latency per item, and their run figures."""

import numpy as np
import pytest

from ragmeter import Record, Settings, Usage, completion_tokens, evaluate, prompt_tokens, total_tokens


def test_token_sums_over_every_call():
    usage = [Usage(800, 60), Usage(1200, 35), Usage(0, 5)]
    assert total_tokens(usage) == 2100.0
    assert prompt_tokens(usage) == 2000.0
    assert completion_tokens(usage) == 100.0
    assert total_tokens([]) == 0.0


def test_latency_quantiles_use_linear_interpolation_and_missing_values_are_undefined():
    latencies = [100.0, 200.0, 300.0, 400.0, 1000.0, None]
    records = [
        Record(id=str(i), question="q", answer="a", latency_ms=v, usage=None if i == 0 else (Usage(10, i),))
        for i, v in enumerate(latencies)
    ]
    result = evaluate(records, metrics=["latency_ms", "total_tokens"], settings=Settings(n_resamples=200))
    # P50 of [100,200,300,400,1000] = 300; P95: rank 0.95·4 = 3.8 → 400 + 0.8·600 = 880
    assert result.summary("latency_ms", "p50").value == 300.0
    assert result.summary("latency_ms", "p95").value == pytest.approx(880.0)
    assert result.summary("latency_ms", "p50").n_undefined == 1
    # tokens of records 1..5: 11, 12, 13, 14, 15 → mean 13; record 0 has no usage
    tokens = result.summary("total_tokens")
    assert tokens.value == 13.0 and tokens.n == 5 and dict(tokens.undefined_reasons) == {"record has no token usage": 1}
    assert np.isnan(result.scores["total_tokens"][0])
